"""XGNN's training points under the timed-epoch rule (experiments/kit/training.py): enough
mini-batches per GPU in the epochs E2E and S/E/T come from, the per-epoch samples an interval on
XGNN's speedup over DGL+C needs (issue 36), and the caption saying so."""

from __future__ import annotations

from experiments.kit import training as kit
from harness import datasets, registry
from harness.config import RunConfig


def table4_points(**params):
    registry.discover()
    exp = registry.get_experiment("xgnn.table4")
    cfg = RunConfig(device="cpu", world_size=2, params={"datasets": "TW", "models": "gcn",
                                                        "systems": "dgl_cache,xgnn", **params})
    return exp, cfg, list(exp.points(cfg))


def test_cpu_defaults_keep_the_asked_epochs():
    _, _, points = table4_points()
    assert {(p.params["synced_epochs"], p.params["epochs"]) for p in points} == {(1, 2)}   # CPU: 2 epochs


def test_table4_cells_hold_enough_mini_batches_and_epochs_for_an_interval():
    """Both systems of a cell get the same epochs: E2E from free-running epochs holding the rule's
    mini-batches per GPU, at least timed_epochs of them; S/E/T from synchronized epochs as long."""
    exp, cfg, points = table4_points(timed_batches="40", timed_epochs="3", epochs="2")
    p = points[0].params
    per_epoch = datasets.epoch_batches(p["dataset"], p["scale"], p["batch_size"], 2)
    assert per_epoch >= 4                                   # min_batches: the auto batch keeps 4 per GPU
    enough = -(-40 // per_epoch)
    want = (max(1, enough), max(1, 3, enough))
    for point in points:
        synced = point.params["synced_epochs"]
        assert (synced, point.params["epochs"] - synced) == want
        assert (point.params["epochs"] - synced) * per_epoch >= 40
    assert {p.impl for p in points} == {"dgl_cache", "xgnn"}
    cheaper = exp.cheaper(points[0], 1, cfg)
    assert cheaper.point.params["epochs"] == want[0] + 1    # the budget level keeps S/E/T, one E2E epoch


def test_fig15b_every_epoch_free_running_keeps_its_count():
    registry.discover()
    exp = registry.get_experiment("xgnn.fig15")
    cfg = RunConfig(device="cpu", world_size=2, params={"parts": "b", "conv_epochs": "4", "timed_epochs": "3",
                                                        "timed_batches": "1"})
    (point, *_) = [p for p in exp.points(cfg)]
    assert point.params["synced_epochs"] == 0 and point.params["epochs"] == 4


def test_cuda_defaults_time_fifty_mini_batches_per_gpu():
    exp = registry.get_experiment("xgnn.table4")
    cuda = RunConfig(device="cuda", world_size=4)
    assert exp.setting(cuda, "timed_batches") == 50 and exp.setting(cuda, "timed_epochs") == 3
    assert exp.setting(cuda, "min_batches") == 10 and exp.setting(cuda, "max_edges") == 1.2e8
    # the auto batch on 4 GPUs at the CUDA default: 10 mini-batches per GPU per epoch, 5 timed epochs
    scale = exp.default_scale(cuda, "twitter-2010")
    batch = exp.batch_for("twitter-2010", scale, "gcn", 4, cuda)
    per_epoch = datasets.epoch_batches("twitter-2010", scale, batch, 4)
    assert 10 <= per_epoch <= 11 and 1500 <= batch <= 6000
    assert kit.timed_epoch_counts(per_epoch, 1, 2, 50, 3) == (5, 5)


def test_the_table4_caption_states_the_timed_epochs_of_committed_runs(tmp_path):
    """The 4xH200 run of Table 4 timed 2 free-running epochs of 5 mini-batches per GPU per cell:
    its caption says so, and that every point fell short of the rule."""
    from pathlib import Path

    from harness.report import report_runs

    results = Path(__file__).resolve().parents[2] / "results"
    report_runs([results / "0096_h200x4_xgnn.table4-fused-tiers"], tmp_path, only=["xgnn.table4"])
    caption = (tmp_path / "xgnn" / "table4.md").read_text().split("\n\n")[1]
    assert "Epoch times: the median of 2 timed epochs per point, 8-10 mini-batches per GPU in all" in caption
    assert "points were timed over fewer than 50 mini-batches per GPU" in caption
