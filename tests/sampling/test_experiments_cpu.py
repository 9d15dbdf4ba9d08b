"""The sampling experiments end to end on the CPU (tiny stand-ins), and their reports."""

from __future__ import annotations

import pytest

from harness.config import RunConfig
from harness.needs import _import_problem
from harness.report import report_runs
from harness.runner import run as run_experiments
from harness.store import load_run


OURS = ("path_doubling", "reservoir", "khop_batched", "hash_append", "dense_append", "sort", "wholegraph_lib", "dgl")


def _run(tmp_path, ids, impls=(), **params):
    cfg = RunConfig(device="cpu", quick=True, repeats=2, warmup=1, out_dir=tmp_path, impl_patterns=impls,
                    params={k: str(v) for k, v in params.items()}, timeout_s=600)
    outcome = run_experiments(ids, cfg, ["test"])
    assert outcome.errors == 0
    return outcome, load_run(outcome.store.path).rows


def test_sampling_and_unique_tables(tmp_path):
    outcome, rows = _run(tmp_path, ["wholegraph.sampling", "wholegraph.unique"], impls=OURS,
                         datasets="products", fanouts="10-5", batches="64", hops="1", kinds="minibatch,hop")
    ok = [r for r in rows if r["status"] == "ok"]
    dgl = set() if _import_problem("dgl") else {"dgl"}                 # DGL's sample_neighbors where it imports
    mini = {r["impl"] for r in ok if r["params"].get("kind") == "minibatch" and r["metric"] == "edges_per_s"}
    assert mini == {"path_doubling", "reservoir", "khop_batched"} | dgl
    hop = {r["impl"] for r in ok if r["params"].get("kind") == "hop"}
    assert hop == {"path_doubling", "reservoir", "khop_batched"} | dgl
    assert {r["impl"] for r in ok if r["experiment"] == "wholegraph.unique"} == {"hash_append", "dense_append", "sort"}
    skipped = {r["impl"] for r in rows if r["status"] == "skipped"}
    assert ({"wholegraph_lib", "dgl"} - dgl) <= skipped                # rows, not gaps
    assert all(r["value"] > 0 for r in ok)
    report_runs([outcome.store.path], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "sampling.md").read_text()
    assert "path_doubling ms" in md and "one hop of" in md
    md = (tmp_path / "rep" / "wholegraph" / "unique.md").read_text()
    assert "sort / hash" in md and "sort / dense" in md and "torch.unique" in md


def test_our_samplers_with_both_append_uniques(tmp_path):
    """--param uniques=hash_append,dense_append: a point per append-unique for our samplers only, and
    a column per pair in the report."""
    outcome, rows = _run(tmp_path, ["wholegraph.sampling"], impls=("path_doubling", "pyg"), datasets="products",
                         fanouts="10-5", batches="64", kinds="minibatch", uniques="hash_append,dense_append")
    mine = {r["params"]["unique"]: r for r in rows if r["impl"] == "path_doubling" and r["metric"] == "time"}
    assert set(mine) == {"hash_append", "dense_append"}
    assert "direct-mapped" in mine["dense_append"]["extra"]["placement"]
    assert all("unique" not in r["params"] for r in rows if r["impl"] == "pyg")
    report_runs([outcome.store.path], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "sampling.md").read_text()
    assert "path_doubling+dense_append ms" in md and "path_doubling ms" in md


def test_fig14_counts_remote_bytes(tmp_path):
    outcome, rows = _run(tmp_path, ["xgnn.fig14"], datasets="papers100M")
    per_kernel = {r["params"]["variant"]: r["value"] for r in rows
                  if r["status"] == "ok" and r["metric"] == "remote_bytes_per_kernel"}
    assert 0 < per_kernel["batched"] < per_kernel["original"]
    report_runs([outcome.store.path], tmp_path / "rep")
    md = (tmp_path / "rep" / "xgnn" / "fig14.md").read_text()
    assert "batched / original remote bytes" in md


def test_uniform_graph_spec_and_loader_points(tmp_path):
    """The synthetic uniform graph of the PyG measurement of docs/machines.md, and one loader target per
    loader dataset with our side of it on one rank."""
    import numpy as np
    import pytest

    from harness.errors import HarnessError
    from impls.sampling.bench import UniformGraph

    g = UniformGraph.build("uniform:20000:50", 1.0, 0)
    assert g.num_nodes == 20_000 and g.indptr.size == 20_001 and g.indptr[-1] == g.indices.size
    assert abs(g.indices.size / g.num_nodes - 50) < 1.0                     # Poisson(50) out-degrees
    assert g.indices.min() >= 0 and g.indices.max() < g.num_nodes
    assert np.array_equal(g.train_idx, np.arange(20_000))
    assert UniformGraph.build("uniform:20000:50", 0.5, 0).num_nodes == 10_000
    assert np.array_equal(UniformGraph.build("uniform:20000:50", 1.0, 0).indices, g.indices)   # seeded
    for bad in ("uniform:20000", "uniform:x:5", "uniform:1:5", "uniform:100:0"):
        with pytest.raises(HarnessError, match="NODES:DEGREE"):
            UniformGraph.build(bad, 1.0, 0)

    outcome, rows = _run(tmp_path, ["wholegraph.sampling"], impls=("path_doubling", "pyg"),
                         datasets="products,uniform:200000:20", fanouts="10-5", batches="64",
                         kinds="minibatch,loader", loader_datasets="uniform:200000:20")
    mine = [r for r in rows if r["impl"] == "path_doubling" and r["metric"] == "time"]
    assert {r["params"]["dataset"] for r in mine} == {"ogbn-products", "uniform:200000:20"}
    assert any(r["params"]["fanouts"] == [15, 10, 5] and r["params"]["dataset"] == "uniform:200000:20"
               for r in mine), "our side of the loader target"
    loader = [r for r in rows if r["params"].get("kind") == "loader"]
    assert [r["params"]["dataset"] for r in loader] == ["uniform:200000:20"]
    report_runs([outcome.store.path], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "sampling.md").read_text()
    assert "uniform random 0.2M nodes, degree 20 (synthetic)" in md


def test_loader_rate_from_windows_and_from_old_median_gap_rows():
    """A windowed row is its own value; a row of the old median-gap timing is read by its mean gap
    (the median is the spacing inside a wave of workers), and says so."""
    from experiments.wholegraph.sampling import loader_ms

    ms, how = loader_ms({"value": 2164.4, "p_window": 8, "stats": {"mean": 2186.0, "repeats": 3}})
    assert ms == 2164.4 and how == "median of windows of 8 batches"
    ms, how = loader_ms({"value": 35.6, "p_window": float("nan"), "stats": {"mean": 1569.0, "repeats": 12}})
    assert ms == 1569.0 and "mean gap over 12 consecutive batches" in how and "35.6 ms" in how


@pytest.mark.skipif(_import_problem("dgl") is not None, reason=str(_import_problem("dgl")))
def test_dgl_loader_target_is_timed_in_whole_waves(tmp_path):
    """DGL's DataLoader with 2 forked workers beside PyG's: time per batch over windows of one wave."""
    outcome, rows = _run(tmp_path, ["wholegraph.sampling"], impls=("dgl",), datasets="products", kinds="loader",
                         loader_workers="2")
    timed = next(r for r in rows if r["impl"] == "dgl" and r["metric"] == "time")
    assert timed["status"] == "ok" and timed["value"] > 0 and timed["params"]["kind"] == "loader"
    assert timed["extra"]["window"] == 2 and timed["extra"]["placement"].startswith("DGL 2.1")
    report_runs([outcome.store.path], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "sampling.md").read_text()
    assert "DGL DataLoader (NeighborSampler) [15, 10, 5] x 64 with 2 workers" in md
