"""The timed-epoch rule of every training experiment (experiments/kit/training.py): how many
epochs are measured, what the epoch_time row keeps of them, how captions state it; WholeGraph's
points under it. XGNN's points: tests/xgnn/test_timed_epochs.py."""

from __future__ import annotations

import pytest

from experiments.kit import training as kit
from harness import datasets, registry
from harness.config import RunConfig
from impls.pipelines.base import EpochStats


@pytest.mark.parametrize("per_epoch, synced, free, batches, epochs, free_running, want", [
    (5, 1, 2, 50, 3, True, (10, 10)),      # XGNN Table 4 on 4 GPUs before: 5 mini-batches per epoch
    (96, 1, 1, 50, 3, True, (1, 3)),       # enough mini-batches, too few epochs for a spread
    (96, 1, 5, 50, 3, True, (1, 5)),       # asked for more: kept
    (16, 0, 1, 50, 3, True, (0, 4)),       # every epoch free-running (XGNN Fig. 15b)
    (10, 3, 0, 50, 3, False, (5, 0)),      # every epoch synchronized (timing=synced)
    (5, 1, 0, 50, 3, True, (10, 10)),      # one synchronized epoch asked: free-running ones added
    (5, 1, 0, 1, 1, True, (1, 0)),         # CPU defaults: as asked
    (200, 2, 0, 50, 1, True, (2, 0)),      # enough already
])
def test_timed_epoch_counts(per_epoch, synced, free, batches, epochs, free_running, want):
    got = kit.timed_epoch_counts(per_epoch, synced, free, batches, epochs, free_running=free_running)
    assert got == want
    s, f = got
    timed = f or s
    assert timed >= epochs and timed * per_epoch >= batches      # the rule holds for the timed epochs
    assert s >= synced and (f >= free)


def test_timed_epoch_counts_refuses_nonsense():
    for args in ((0, 1, 1, 50, 3), (5, 0, 0, 50, 3), (5, -1, 2, 50, 3)):
        with pytest.raises(ValueError):
            kit.timed_epoch_counts(*args)


def stats(epoch_s, batches=10, full=10, breakdown=False):
    return EpochStats(0, epoch_s, 0.1 if breakdown else None, 0.1 if breakdown else None, 0.1 if breakdown else None,
                      batches, full, 1.0, 0, 0, breakdown)


def test_epoch_time_row_keeps_its_timed_epochs():
    trained = kit.Trained([stats(3.0, breakdown=True), stats(1.0), stats(1.2), stats(0.9, batches=5)], [0.5], 0.0)
    rows = {m.metric: m for m in kit.epoch_measurements(trained, {"graph": {}})}
    e = rows["epoch_time"]
    assert e.extra["timed_epoch_s"] == [1.0, 1.2, 1.8] and e.stats.median == 1.2   # capped epoch extrapolated
    assert e.extra["timed_epochs"] == 3 and e.extra["timed_batches_per_gpu"] == 25
    assert e.extra["timed_from"] == "free-running" and e.extra["graph"] == {}
    assert rows["train_time"].stats.median == 0.1


class FirstEpochCost:
    """A pipeline whose first train_epoch call (the warm-up steps) costs 100 s and every epoch 1 s."""

    def __init__(self):
        self.calls, self.closed = [], False
        self.config = None

    def setup(self):
        pass

    def train_epoch(self, epoch, breakdown=False, max_batches=None):
        self.calls.append(epoch)
        return stats(100.0 if len(self.calls) == 1 else 1.0, batches=max_batches or 10, breakdown=breakdown)

    def evaluate(self, split):
        return 0.5

    def close(self):
        self.closed = True


@pytest.mark.parametrize("warmup", [2, 0])
def test_a_first_steps_cost_stays_in_the_untimed_warm_up(warmup):
    pipe = FirstEpochCost()
    trained = kit.run_epochs(pipe, None, "fake", 3, warmup_batches=warmup, lifetime=kit.no_lifetime())
    value = kit.epoch_measurements(trained, {})[0].stats
    if warmup:
        assert pipe.calls[0] == -1 and value.max == 1.0
    else:                               # without warm-up steps the first epoch carries it: the check fails
        assert value.max == 100.0


def record(extra):
    return {"status": "ok", "extra": {"epoch_time": extra}}


def test_timed_samples_read_new_and_older_rows():
    assert kit.timed_samples(record({"timed_epoch_s": [1, 2]})) == [1.0, 2.0]
    xgnn = record({"timing": ["synced", "pipelined", "pipelined"], "epoch_s_per_epoch": [3.0, 1.0, 1.1],
                   "batches_run": 5})
    assert kit.timed_samples(xgnn) == [1.0, 1.1] and kit.timed_batches(xgnn) == 10
    wholegraph = record({"timing": ["synced", "free"], "epoch_s_measured": [2.0, 1.0], "batches_run": 4,
                         "batches_full": 8})
    assert kit.timed_samples(wholegraph) == [2.0]          # capped: extrapolated to the full epoch
    one_synced = record({"timing": ["synced"], "epoch_s_measured": [2.0], "batches_run": 4})
    assert kit.timed_samples(one_synced) == [2.0] and kit.timed_samples(record({})) == []


def test_timing_caption_states_epochs_batches_spread_and_points_below_the_rule():
    new = record({"timed_epoch_s": [1.0, 1.1, 0.9, 1.0, 1.0], "timed_batches_per_gpu": 50})
    old = record({"timing": ["synced", "pipelined", "pipelined"], "epoch_s_per_epoch": [3.0, 1.0, 1.2],
                  "batches_run": 5})
    text = kit.timing_caption([new, old])
    assert "the median of 2-5 timed epochs per point, 10-50 mini-batches per GPU in all" in text
    assert "spread (max - min over median) 18-20%" in text
    assert "1 of 2 points were timed over fewer than 50 mini-batches per GPU" in text
    assert "fewer than" not in kit.timing_caption([new])
    assert kit.timing_caption([record({})]) == ""


def wholegraph_points(**params):
    exp = registry.get_experiment("wholegraph.table5")
    cfg = RunConfig(device="cpu", world_size=2, params={"datasets": "ogbn-products", "models": "sage",
                                                        "max_edges": "1e5", **params})
    return exp, cfg, [p for p in exp.points(cfg) if p.impl == "wholegraph"]


def test_wholegraph_points_follow_the_rule():
    registry.discover()
    exp, cfg, (point,) = wholegraph_points()
    assert (point.params["synced_epochs"], point.params["epochs"]) == (1, 2)     # CPU: as asked
    p = point.params
    per_epoch = datasets.epoch_batches(p["dataset"], p["scale"], p["batch_size"], 2)
    exp, cfg, (point,) = wholegraph_points(timed_batches=str(3 * per_epoch + 1), timed_epochs="2")
    assert (point.params["synced_epochs"], point.params["epochs"]) == (4, 8)     # 4 free epochs hold enough
    exp, cfg, (point,) = wholegraph_points(timed_batches="1", timed_epochs="3", epochs="1")
    assert (point.params["synced_epochs"], point.params["epochs"]) == (1, 4)     # free-running epochs added
    exp, cfg, (point,) = wholegraph_points(timed_epochs="3", timing="synced", epochs="1")
    assert (point.params["synced_epochs"], point.params["epochs"]) == (3, 3)
    cheaper = exp.cheaper(point, 1, cfg)
    assert cheaper.point.params["epochs"] == 1 and cheaper.point.params["synced_epochs"] == 1
