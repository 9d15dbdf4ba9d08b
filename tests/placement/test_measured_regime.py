"""How the ICS'22 loading figures measure (issue 34): launches as large as a paper mini-batch, repeats
with their spread, the launch floor in the same launch, overhead-bound points labelled and left out
of the measured ratios, and what tells NAIVE from RAND."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from experiments.placement.breakdown_report import breakdown_report
from experiments.placement.common import Modeled, batches_per_region, host_locality, measured_rows
from harness import figlint, registry
from harness.artifact import RunInfo

matplotlib.use("Agg")


def test_batches_per_region_reach_the_papers_rows_per_launch():
    batches = [[np.arange(1000)] * 40, [np.arange(1000)] * 38]
    assert batches_per_region("paper", batches, 25_088) == 19          # ceil(25088 / 1000), under 38 // 2
    assert batches_per_region(3000, batches, 25_088) == 3
    assert batches_per_region("paper", [[np.arange(30_000)] * 4], 25_088) == 1   # paper-sized batches
    assert batches_per_region("paper", [[np.arange(10)] * 6], 25_088) == 3       # two regions at least


def test_host_locality_counts_the_pages_the_host_rows_touch():
    class Lookup:
        dev_num = np.where(np.arange(100) < 10, 0, -1)         # nodes 0-9 on GPU 0, the rest on the host

    class Placement:
        def lookup(self, gpu):
            return Lookup()

    class Sim:
        meta = {"input_batches": [[np.array([0, 1, 20, 21, 22, 99])]]}

    # 1024-byte rows: nodes 20-22 share 4 KiB page 5, node 99 is on page 24; all in one 2 MiB region
    out = host_locality(Sim(), Placement(), 1024)
    assert out == {"host_rows_per_batch": 4.0, "host_pages_4k_per_batch": 2.0, "host_regions_2m_per_batch": 1.0}


def _result(per_batch, floor, reads):
    return {"batch_reads": reads, "device": "cuda", "per_batch_s": per_batch, "floor_per_batch_s": floor,
            "mean_s": float(np.median(per_batch)), "checked": 2, "store": "s", "host": "h", "gather": "fused",
            "flush_bytes": 0, "batches_per_region": 4, "rows_per_region": 24_000.0}


@pytest.mark.parametrize("measured_ms, floor_ms, modeled_ms, bound", [
    (1.00, 0.05, 0.8, False),        # transfers dominate
    (0.09, 0.05, 0.8, True),         # within 2x of the floor
    (1.00, 0.05, 0.01, True),        # the modelled transfer is below the floor
])
def test_measured_rows_label_overhead_bound_points(measured_ms, floor_ms, modeled_ms, bound):
    reads = np.array([[5, 1, 4]])
    modeled = Modeled({}, modeled_ms, 400, [reads, reads], {"local": 0.5, "peer": 0.1, "host": 0.4}, {})
    slow = [measured_ms * 1e-3 * f for f in (1.0, 1.1, 0.9)]
    fast = [v * 0.5 for v in slow]
    rows = {m.metric: m for m in measured_rows(modeled, [_result(fast, [floor_ms * 1e-3] * 3, reads),
                                                         _result(slow, [floor_ms * 0.5e-3] * 3, reads)])}
    loading = rows["loading_time"]
    assert loading.value == pytest.approx(measured_ms)                  # slowest GPU, median of the repeats
    assert loading.stats.repeats == 3 and loading.stats.max == pytest.approx(1.1 * measured_ms)
    assert rows["launch_floor"].value == pytest.approx(floor_ms)       # the slowest rank's floor
    assert loading.extra["overhead_bound"] is bound


def _point(impl, topology, loading, *, floor=0.05, spread=0.02, bound=False, pages=900.0):
    params = {"topology": topology, "buffer": "0.1N", "las": False, "scale": 0.2}
    rows = []
    for mode in ("simulated", "measured"):
        p = {**params, "mode": mode}
        extra = {"batch_size": 102, "layer_nodes": 1638}
        value = loading * 2
        stats = None
        if mode == "measured":
            value = loading
            extra.update(measured_on="cuda", measured_gather="fused", modeled_ms=loading * 2, launch_floor_ms=floor,
                         overhead_bound=bound, overhead_factor=2.0, measured_repeats=5, batches_per_region=5,
                         rows_per_region=25_000.0, host_pages_4k_per_batch=pages, host_rows_per_batch=800.0,
                         host_regions_2m_per_batch=pages / 20)
            stats = {"repeats": 5, "p10": loading - spread, "p90": loading + spread, "min": loading - spread,
                     "max": loading + spread}
        rows.append({"run_id": "0001_a", "experiment": "placement.fig4", "impl": impl, "metric": "loading_time",
                     "value": value, "status": "ok", "params": p, "extra": extra, "stats": stats})
        rows += [{"run_id": "0001_a", "experiment": "placement.fig4", "impl": impl, "metric": f"{tier}_fraction",
                  "value": share, "status": "ok", "params": p}
                 for tier, share in (("local", 0.1), ("peer", 0.1), ("host", 0.8))]
    return rows


def test_the_report_shows_spread_floor_and_leaves_overhead_bound_points_out_of_the_ratios():
    exp = registry.get_experiment("placement.fig4")
    rows = (_point("naive", "2GPU", 1.00) + _point("random", "2GPU", 1.02) + _point("clique_opt", "2GPU", 0.50)
            + _point("naive", "4GPU", 0.09, bound=True) + _point("random", "4GPU", 0.08, bound=True)
            + _point("clique_opt", "4GPU", 0.07, bound=True))
    runs = [RunInfo("0001_a", "4xH200", {"config": {"quick": False, "params": {}}})]
    artifact = breakdown_report(exp, pd.DataFrame(rows), runs)
    table = artifact.table.set_index(["Topology", "Policy"])
    assert len(artifact.table.columns) <= 12
    assert table.loc[("2GPU", "Our"), "RAND / this (measured)"] == pytest.approx(1.02 / 0.5)
    assert table.loc[("4GPU", "Our"), "RAND / this (measured)"].endswith("(overhead-bound)")
    assert table.loc[("2GPU", "Our"), "Repeats p10-p90"] == "0.48-0.52 (n=5)"
    assert table.loc[("2GPU", "RAND"), "Reads local/peer/host %"] == "10/10/80"
    notes = "\n".join(artifact.notes)
    assert "Our loads 2.04x (2GPU 0.1N) faster than RAND (1 of 2 configurations left out as overhead-bound)" in notes
    assert "3 of 6 measured points overhead-bound" in notes
    assert "5 consecutive replayed batches per timed launch" in artifact.caption
    assert "NAIVE vs RAND: the simulator gives both local/peer/host shares within 0.0 points" in artifact.caption
    assert "touch 1.00 times RAND's 4 KiB pages and 1.00 times its 2 MiB regions" in artifact.caption
    assert "0 of 2 differences lie outside the repeats' p10-p90" in artifact.caption
    fig = artifact.figure
    assert figlint.figure_problems(fig) == []
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "measured on GPU (p10-p90)" in labels and "measured on GPU, overhead-bound (p10-p90)" in labels
    assert "measured launch floor" in labels


def test_replays_sampled_once_per_training_split_equal_fresh_replays(monkeypatch, tmp_path):
    """Policies that shuffle globally share one sampling of the batches (and every buffer size of
    one that splits the training nodes): the reads equal a fresh replay of each point."""
    from harness.config import RunConfig
    from harness.experiment import Point, RunContext
    from impls.placement.simulate import replay

    monkeypatch.setenv("HARNESS_DATA_ROOT", str(tmp_path / "data"))
    exp = registry.get_experiment("placement.fig4")
    ctx = RunContext(RunConfig(device="cpu", quick=True, scale=0.005, seed=3))
    for impl in ("naive", "random", "clique_opt", "pagraph"):
        for buffer, fraction in (("0.1N", 0.1), ("N/4", 0.25)):
            point = Point(impl, {"dataset": "reddit", "scale": 0.005, "topology": "4GPU", "buffer": buffer,
                                 "buffer_fraction": fraction, "las": False, "mode": "simulated"})
            setup = exp.setup(point, ctx)
            cached = exp.replay(point, ctx, setup, keep_batches=True)
            fresh = replay(setup.graph.indptr, setup.graph.indices, setup.graph.train_idx, setup.placement,
                           setup.sampler_for, setup.batch, max_batches=setup.max_batches, seed=3, keep_batches=True)
            for a, b in zip(cached.batch_reads, fresh.batch_reads):
                assert np.array_equal(a, b)
            for a, b in zip(cached.meta["input_batches"], fresh.meta["input_batches"]):
                assert all(np.array_equal(x, y) for x, y in zip(a, b))
    from harness import graphs

    kinds = [k for k in ctx.cache if k[0] == graphs.ON_GRAPH and k[2] == "placement-batches"]   # built on the graph
    assert len(kinds) == 2                      # one sampling for the global shufflers, one for PaGraph's split
