"""The timing engine on CUDA: device marks (DeviceClock, Laps, Spans) time the work they bracket on
the stream, Phases with a device sync count queued work in its phase and without one do not, a
RepeatBudget adds repeats where an iteration is short, and on NCCL ranks every rank runs the slowest
rank's count. The work is ``torch.cuda._sleep`` (a spin of a given number of GPU cycles), so the
checks compare 8x longer spins with shorter ones, never a duration with a fixed bound."""

from __future__ import annotations

import pytest

from tests.gpu import require_gpus

torch = require_gpus(packages=())

from harness.launcher import launch  # noqa: E402
from harness.timing import (DeviceClock, Laps, Phases, RepeatBudget, Spans, TorchCudaTimer,  # noqa: E402
                            measure)
from tests.gpu import timing_targets  # noqa: E402

pytestmark = pytest.mark.gpu
CYCLES = timing_targets.CYCLES


def test_laps_and_spans_time_the_work_on_the_stream():
    clock = DeviceClock("cuda:0")
    torch.cuda.synchronize()
    laps = Laps(clock)
    torch.cuda._sleep(CYCLES)
    laps.lap("short")
    torch.cuda._sleep(8 * CYCLES)
    laps.lap("long")
    seconds = laps.seconds()
    assert list(seconds) == ["short", "long"]
    assert 0 < seconds["short"] < seconds["long"]
    spans = Spans(clock)
    for _ in range(3):
        with spans.span("short"):
            torch.cuda._sleep(CYCLES)
    with spans.span("long"):
        torch.cuda._sleep(8 * CYCLES)
    totals = spans.totals()
    assert 0 < totals["short"] < totals["long"]          # 3 spins against 8
    assert spans.totals() == {}


def test_phases_count_queued_work_only_where_they_sync():
    event = DeviceClock("cuda:0")
    torch.cuda.synchronize()
    start = event.mark()
    torch.cuda._sleep(8 * CYCLES)
    end = event.mark()
    event.synchronize()
    spin_s = event.seconds(start, end)
    synced = Phases(("spin", "after"), sync=torch.cuda.synchronize)
    synced.start()
    torch.cuda._sleep(8 * CYCLES)
    synced.lap("spin")
    synced.lap("after")
    assert synced.seconds["spin"] >= 0.5 * spin_s > synced.seconds["after"]
    free = Phases(("launch", "rest"))
    free.start()
    torch.cuda._sleep(8 * CYCLES)
    free.lap("launch")                                     # the launch returns before the spin ends
    torch.cuda.synchronize()
    free.lap("rest")
    assert free.seconds["launch"] < 0.5 * spin_s <= free.seconds["rest"]


def test_a_budget_adds_repeats_where_an_iteration_is_short():
    counted = measure(lambda: torch.cuda._sleep(CYCLES), timer=TorchCudaTimer(), warmup=2, repeats=3)
    budgeted = measure(lambda: torch.cuda._sleep(CYCLES), timer=TorchCudaTimer(),
                       budget=RepeatBudget(warmup=2, repeats=3, warmup_ms=10.0, repeat_ms=50.0))
    assert counted.repeats == 3
    assert 3 < budgeted.repeats <= 1000


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_every_nccl_rank_runs_the_slowest_ranks_budget():
    results = launch(timing_targets.budget_on_nccl_ranks, (), world_size=2, device="cuda", timeout_s=120)
    assert len({(r["calls"], r["repeats"]) for r in results}) == 1      # the same iterations everywhere
    assert results[0]["repeats"] > 2
    lo, hi = results[0]["spread"]
    assert lo < hi                                                     # rank 1 spins twice as long
    assert all(r["median"] >= hi for r in results)                     # an iteration is its slowest rank's
