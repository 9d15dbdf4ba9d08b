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
    walk = {(r["params"]["variant"], r["metric"]): r["value"] for r in rows if r["status"] == "ok"}
    for variant in ("original", "batched"):
        assert walk[(variant, "row_positions_per_epoch")] >= walk[(variant, "sampled_positions_per_epoch")] > 0
        assert walk[(variant, "longest_row_per_kernel")] > 0 and walk[(variant, "kernels_per_epoch")] > 0
    report_runs([outcome.store.path], tmp_path / "rep")
    md = (tmp_path / "rep" / "xgnn" / "fig14.md").read_text()
    assert "batched / original remote bytes" in md
    assert "original KHop: its threads walk" in md and "ns per position of the kernels' longest rows" in md
    assert "the longest rows (the stand-ins' hubs) set the original kernel's time" in md


def test_row_walk_counts_the_rows_a_sampling_kernel_walks():
    """Node 0's row has 5 positions, node 1's 2, node 2's none: seeds [0, 1, 2, 0] at fanout 3 walk
    12 positions, keep 3 + 2 + 0 + 3, and the longest row is 5; a second call adds its own."""
    import numpy as np
    import torch

    from experiments.xgnn.fig14 import RowWalk

    calls = []

    class Inner:
        id_bound = 7

        def sample(self, seeds, fanout, **kw):
            calls.append((seeds.tolist(), fanout))
            return "sampled"

    walk = RowWalk(Inner(), np.array([0, 5, 7, 7]))
    assert walk.sample(torch.tensor([0, 1, 2, 0]), 3, seed=1) == "sampled" and walk.id_bound == 7
    assert (walk.positions, walk.sampled, walk.longest, walk.calls) == (12, 8, 5, 1)
    walk.sample(torch.tensor([1]), 0)
    assert (walk.positions, walk.sampled, walk.longest, walk.longest_max, walk.calls) == (14, 10, 7, 5, 2)
    assert calls == [([0, 1, 2, 0], 3), ([1], 0)]


def test_uniform_graph_spec_and_loader_points(tmp_path):
    """The synthetic uniform graph of the PyG measurement of docs/machines.md, and one loader target per
    loader dataset with our side of it on one rank."""
    import numpy as np
    import pytest

    from experiments.kit.samplers import UniformGraph
    from harness.errors import HarnessError

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
