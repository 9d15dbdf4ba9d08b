"""The timing engine: statistics, measure() by counts and by time budgets, cross-rank reduction,
device marks, epoch phases and the injected clock."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.launcher import launch
from harness.timing import CpuTimer, DeviceClock, Laps, Phases, RankSpread, RepeatBudget, Spans, Stats, \
    injected_clock, measure, measure_collective, quantile, reduce_across_ranks

from . import launch_targets


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 11, 97, 1000])
def test_stats_match_numpy(n):
    rng = np.random.default_rng(1000 + n)
    samples = rng.lognormal(mean=-3.0, sigma=1.0, size=n).tolist()
    s = Stats.from_samples(samples)
    assert s.repeats == n
    assert s.median == pytest.approx(float(np.median(samples)), rel=1e-12, abs=0)
    assert s.min == min(samples) and s.max == max(samples)
    assert s.p10 == pytest.approx(float(np.percentile(samples, 10, method="linear")), rel=1e-12)
    assert s.p90 == pytest.approx(float(np.percentile(samples, 90, method="linear")), rel=1e-12)
    assert s.mean == pytest.approx(float(np.mean(samples)), rel=1e-12)
    assert s.std == pytest.approx(float(np.std(samples)), rel=1e-9, abs=1e-300)
    assert s.min <= s.p10 <= s.median <= s.p90 <= s.max
    assert s.samples == tuple(samples)  # raw samples in the order taken


def test_quantile_known_values():
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.1) == pytest.approx(1.4)
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.9) == pytest.approx(4.6)
    assert quantile([0.0, 10.0], 0.25) == pytest.approx(2.5)
    assert quantile([7.0], 0.9) == 7.0
    assert quantile([1.0, 3.0], 0.0) == 1.0 and quantile([1.0, 3.0], 1.0) == 3.0
    with pytest.raises(ValueError):
        quantile([1.0], 1.5)


def test_stats_rejects_empty_and_nan():
    with pytest.raises(ValueError):
        Stats.from_samples([])
    with pytest.raises(ValueError):
        Stats.from_samples([1.0, float("nan")])


def test_to_dict_has_the_row_stats_keys_and_no_samples():
    d = Stats.from_samples([3.0, 1.0, 2.0]).to_dict()
    assert set(d) == {"repeats", "median", "min", "max", "p10", "p90", "mean", "std"}
    assert d["repeats"] == 3 and d["median"] == 2.0 and d["min"] == 1.0 and d["max"] == 3.0


def test_scaled_is_exact_on_samples():
    rng = random.Random(5)
    samples = [rng.uniform(1e-3, 2e-3) for _ in range(11)]
    s = Stats.from_samples(samples)
    factor = 1e6 / 100_000  # seconds per chain -> us per step
    got = s.scaled(factor)
    want = Stats.from_samples([x * factor for x in samples])
    assert got == want
    assert got.samples == want.samples
    assert got.median == pytest.approx(s.median * factor, rel=1e-12)
    assert got.p90 == pytest.approx(s.p90 * factor, rel=1e-12)
    with pytest.raises(ValueError):
        s.scaled(0)
    with pytest.raises(ValueError):
        s.scaled(-2.0)


def test_scaled_without_samples_scales_every_field():
    s = Stats(repeats=4, median=2.0, min=1.0, max=4.0, p10=1.5, p90=3.5, mean=2.5, std=0.5)
    got = s.scaled(10.0)
    assert got.to_dict() == {"repeats": 4, "median": 20.0, "min": 10.0, "max": 40.0, "p10": 15.0,
                             "p90": 35.0, "mean": 25.0, "std": 5.0}


def test_rate_is_exact_on_samples():
    samples = [0.5, 0.25, 2.0, 1.0, 4.0]
    s = Stats.from_samples(samples)
    r = s.rate(8.0)
    assert r == Stats.from_samples([8.0 / x for x in samples])
    # a rate is decreasing in time: the fastest sample gives the highest rate
    assert r.max == 8.0 / s.min == 32.0 and r.min == 8.0 / s.max == 2.0
    assert r.median == 8.0 / s.median == 8.0  # odd count: the same sample is the median
    with pytest.raises(ValueError, match="samples"):
        Stats(1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0).rate(1.0)
    with pytest.raises(ValueError, match="non-positive"):
        Stats.from_samples([0.0, 1.0]).rate(1.0)


class FixedTimer:
    """Runs fn and reports a fixed duration, recording the call order."""

    def __init__(self, seconds, log):
        self.seconds, self.log = seconds, log

    def time(self, fn):
        fn()
        self.log.append("timed")
        return self.seconds


def test_measure_runs_warmup_plus_repeats_with_setup_and_flush_each_time():
    log = []
    stats = measure(lambda: log.append("fn"), timer=FixedTimer(0.5, log), warmup=2, repeats=3,
                    setup=lambda: log.append("setup"), flush=lambda: log.append("flush"))
    assert log == ["setup", "flush", "fn", "timed"] * 5
    assert stats.repeats == 3  # warm-up iterations are not in the statistics
    assert stats.median == 0.5


def test_measure_without_warmup_or_hooks():
    calls = []
    stats = measure(lambda: calls.append(1), timer=FixedTimer(1.0, []), warmup=0, repeats=4)
    assert len(calls) == 4 and stats.repeats == 4


def test_measure_reads_the_injected_host_clock_by_default():
    """The default timer is the host clock (harness.timing.now), read right before and after fn."""
    ticks = iter([10.0, 10.5, 20.0, 20.25, 30.0, 31.0])
    log = []

    def clock():
        log.append("clock")
        return next(ticks)

    with injected_clock(clock):
        stats = measure(lambda: log.append("fn"), warmup=0, repeats=3)
        assert list(stats.samples) == [0.5, 0.25, 1.0]
        assert log == ["clock", "fn", "clock"] * 3
        synced = []
        ticks = iter([1.0, 3.0])
        assert CpuTimer(sync=lambda: synced.append(len(log))).time(lambda: log.append("fn")) == 2.0
        assert len(synced) == 2                                           # before and after fn


def test_the_injected_clock_reaches_callers_that_imported_now_by_name():
    from harness.timing import now as imported

    with injected_clock(lambda: 42.0):
        assert imported() == 42.0
    assert imported() != 42.0


@pytest.mark.parametrize("repeat_ms, repeats, max_repeats, expected", [
    (2000.0, 3, 1000, 8),   # 2 s / 0.25 s per iteration
    (100.0, 3, 1000, 3),    # the budget never goes below `repeats`
    (1e6, 3, 20, 20),       # nor above `max_repeats`
    (0.0, 3, 20, 3),        # no budget: exactly `repeats`
])
def test_measure_repeat_budget_bounds(repeat_ms, repeats, max_repeats, expected):
    log = []
    stats = measure(lambda: None, timer=FixedTimer(0.25, log), setup=lambda: log.append("setup"),
                    budget=RepeatBudget(warmup=2, repeats=repeats, repeat_ms=repeat_ms, max_repeats=max_repeats))
    assert stats.repeats == expected
    assert log.count("timed") == 2 + expected
    assert log.count("setup") == 2 + expected


@pytest.mark.parametrize("warmup_ms, warmup, max_warmup, expected", [
    (2000.0, 2, 1000, 8),   # warm-ups until 2 s are spent at 0.25 s each
    (100.0, 2, 1000, 2),    # the count stays the floor
    (1e6, 2, 20, 20),       # bounded by `max_warmup`
    (0.0, 2, 20, 2),        # no budget: exactly `warmup`
])
def test_measure_warmup_budget_bounds(warmup_ms, warmup, max_warmup, expected):
    log = []
    stats = measure(lambda: None, timer=FixedTimer(0.25, log),
                    budget=RepeatBudget(warmup=warmup, repeats=3, warmup_ms=warmup_ms, max_warmup=max_warmup))
    assert stats.repeats == 3
    assert log.count("timed") == expected + 3


def test_a_budget_runs_one_warm_up_to_estimate_and_estimates_from_the_median():
    stats = measure(lambda: None, timer=FixedTimer(0.25, []),
                    budget=RepeatBudget(warmup=0, repeats=3, repeat_ms=1000.0))
    assert stats.repeats == 4                     # one warm-up at 0.25 s: 1 s holds 4
    # a first call that compiles (1 s) does not make the estimate: the median of 1, 0.1, 0.1 is 0.1
    timer = launch_targets.SequenceTimer([1.0, 0.1, 0.1] + [0.1] * 10)
    assert measure(lambda: None, timer=timer, budget=RepeatBudget(warmup=3, repeats=2, repeat_ms=1000.0)).repeats == 10


def test_budget_for_a_run_keeps_the_counts_as_its_floor_and_budgets_only_full_gpu_runs():
    from harness.config import RunConfig

    full = RepeatBudget.for_run(RunConfig(device="cuda"), warmup=(3, 1), repeats=(20, 5))
    assert (full.warmup, full.repeats, full.warmup_ms, full.repeat_ms) == (3, 20, 25.0, 100.0)
    assert full.extra() == {"warmup_ms": 25.0, "repeat_ms": 100.0}
    quick = RepeatBudget.for_run(RunConfig(device="cuda", quick=True), warmup=(3, 1), repeats=(20, 5))
    assert (quick.warmup, quick.repeats, quick.timed) == (1, 5, False) and quick.extra() == {}
    cpu = RepeatBudget.for_run(RunConfig(device="cpu"), warmup=(3, 1), repeats=(20, 5))
    assert (cpu.warmup, cpu.repeats, cpu.timed) == (3, 20, False)
    asked = RepeatBudget.for_run(RunConfig(device="cuda", repeats=2), warmup=(3, 1), repeats=(20, 5))
    assert (asked.repeats, asked.repeat_ms, asked.warmup_ms) == (2, 0.0, 25.0)    # --repeats 2 is 2 repeats
    with pytest.raises(ValueError, match="repeats"):
        RepeatBudget(repeats=0)
    with pytest.raises(ValueError, match="budgets"):
        RepeatBudget(repeat_ms=-1.0)


def test_measure_rejects_bad_counts():
    with pytest.raises(ValueError, match="repeats"):
        measure(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        measure(lambda: None, warmup=-1)


def test_outside_a_process_group_the_reduction_is_the_identity():
    assert reduce_across_ranks(2.5) == RankSpread(2.5, 2.5, 2.5)
    stats, spread = measure_collective(lambda: None, timer=FixedTimer(0.5, []), warmup=1, repeats=3)
    assert stats.repeats == 3 and stats.median == 0.5
    assert spread == RankSpread(0.5, 0.5, 0.5)


@pytest.fixture(scope="module")
def two_rank_timing():
    """tests/launch_targets.timing_cases on two gloo ranks: one launch for every case."""
    return launch(launch_targets.timing_cases, (), world_size=2, device="cpu", timeout_s=120)


def test_collective_timing_across_two_gloo_ranks(two_rank_timing):
    """Rank r reports r + 1: min 1, avg 1.5, max 2; each iteration counts as its slowest rank."""
    assert len(two_rank_timing) == 2
    for res in (r["fixed"] for r in two_rank_timing):
        assert res["spread"] == (1.0, 1.5, 2.0)
        assert res["per_rank"] == (1.0, 1.5, 2.0)
        assert res["stats"] == (5, 2.0, 2.0, 2.0)  # repeats; every iteration's max is rank 1's 2 s
        assert res["fn_calls"] == 7 and res["timer_calls"] == 7  # 2 warm-up + 5 timed


def test_every_rank_runs_the_slowest_ranks_budget(two_rank_timing):
    """Rank 0 iterates in 1/256 s, rank 1 in 1/64 s: both run 10 warm-ups and 25 repeats (rank 0
    alone would run 40 and 100, and the ranks would wait for each other in different iterations)."""
    for res in (r["budget"] for r in two_rank_timing):
        assert res["calls"] == 10 + 25 and res["repeats"] == 25
        assert res["median"] == launch_targets.BUDGET_SECONDS[1]


def test_measure_collective_flushes_before_every_iteration_outside_the_timing():
    calls = []

    class Clock:
        def time(self, fn):
            calls.append("timed")
            fn()
            return 1.0

    stats, _ = measure_collective(lambda: calls.append("fn"), timer=Clock(), warmup=2, repeats=3,
                                  setup=lambda: calls.append("setup"), flush=lambda: calls.append("flush"))
    assert stats.repeats == 3
    assert calls == ["setup", "flush", "timed", "fn"] * 5


def test_cache_flush_on_the_cpu_overwrites_the_last_level_cache():
    from harness.timing import CacheFlush, cpu_cache_bytes

    flush = CacheFlush()
    assert flush.cache_bytes == cpu_cache_bytes() > 0
    assert flush() == flush.flush_bytes == flush.cache_bytes
    assert flush.extra() == {"l2_mib": round(flush.cache_bytes / (1 << 20), 3),
                             "flush_mib": round(flush.cache_bytes / (1 << 20), 3)}


def test_one_rank_figure_is_the_median_of_its_iterations_not_their_min_or_mean():
    """3, 1, 2, 10, 4 s: min 1, median 3, mean 4; only the median is the rank's figure."""
    seconds = launch_targets.DISTINCT_SECONDS[0]
    stats, spread = measure_collective(lambda: None, timer=launch_targets.SequenceTimer(seconds),
                                       warmup=0, repeats=5)
    assert (stats.min, stats.median, stats.mean, stats.max) == (1.0, 3.0, 4.0, 10.0)
    assert spread == RankSpread(3.0, 3.0, 3.0)
    assert list(stats.samples) == [float(x) for x in seconds]


def test_the_cross_rank_figures_are_each_ranks_median_and_each_iterations_slowest_rank(two_rank_timing):
    """Rank 0: 3, 1, 2, 10, 4 s (median 3); rank 1: 5, 6, 2, 7, 20 s (median 6). A rank figure
    from its fastest iteration would give (1, 1.5, 2), from its mean (4, 6, 8)."""
    for res in (r["distinct"] for r in two_rank_timing):
        assert res["spread"] == (3.0, 4.5, 6.0)
        assert list(res["samples"]) == [5.0, 6.0, 2.0, 10.0, 20.0]     # iteration by iteration, the slower rank
        assert (res["min"], res["median"], res["max"]) == (2.0, 6.0, 20.0)
        assert res["mean"] == pytest.approx(8.6)


@pytest.mark.parametrize("engine", ["measure", "measure_collective"])
def test_a_first_call_cost_stays_in_the_warm_up(monkeypatch, engine):
    """The host clock is injected (harness.timing.now): a fake whose first call costs 1 s and every
    later one 2 ms reports 2 ms after one warm-up, and 1 s at its max without one."""
    clock = {"t": 0.0, "calls": 0}

    def fake():
        clock["t"] += 1.0 if clock["calls"] == 0 else 0.002
        clock["calls"] += 1

    monkeypatch.setattr("harness.timing.now", lambda: clock["t"])
    run = (lambda **k: measure(fake, **k)) if engine == "measure" else (lambda **k: measure_collective(fake, **k)[0])
    warm = run(warmup=1, repeats=5)
    assert warm.repeats == 5 and warm.max == pytest.approx(0.002) and warm.median == pytest.approx(0.002)
    clock["calls"] = 0
    cold = run(warmup=0, repeats=5)
    assert cold.max == pytest.approx(1.0) and cold.median == pytest.approx(0.002)


def test_stats_quantiles_come_from_the_samples():
    s = Stats.from_samples([5.0, 1.0, 4.0, 2.0, 3.0])
    assert s.quantile(0.5) == s.median == 3.0
    assert s.quantile(0.1) == s.p10 and s.quantile(0.9) == s.p90
    assert s.quantile(0.25) == 2.0
    with pytest.raises(ValueError, match="samples"):
        Stats(1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0).quantile(0.5)


def test_device_clock_laps_and_spans_on_the_host_read_the_injected_clock():
    ticks = iter(float(t) for t in (0, 1, 3, 6, 10, 20, 21, 30, 32, 40))
    with injected_clock(lambda: next(ticks)):
        clock = DeviceClock("cpu")
        laps = Laps(clock)                        # 0
        laps.lap("bucket")                        # 1
        laps.lap("exchange")                      # 3
        laps.lap("gather")                        # 6
        assert laps.seconds() == {"bucket": 1.0, "exchange": 2.0, "gather": 3.0}
        spans = Spans(clock)
        with spans.span("spmm"):                  # 10 .. 20
            pass
        with spans.span("gemm"):                  # 21 .. 30
            pass
        with spans.span("spmm"):                  # 32 .. 40
            pass
        assert spans.totals() == {"spmm": 18.0, "gemm": 9.0}
        assert spans.totals() == {}               # read once, then started over
        off = Spans(clock, enabled=False)
        with off.span("spmm"):
            pass
        assert off.totals() == {}                 # no clock read: the ticks are not used up


def test_phases_sum_each_stage_and_sync_then_barrier_before_every_reading():
    t = {"now": 0.0}
    log = []

    def clock():
        log.append(f"clock@{t['now']:g}")
        return t["now"]

    with injected_clock(clock):
        phases = Phases(("sample", "gather", "train"), sync=lambda: log.append("sync"),
                        barrier=lambda: log.append("barrier"))
        phases.start()
        for cost in ((1.0, 2.0, 4.0), (0.5, 0.25, 8.0)):
            for name, seconds in zip(("sample", "gather", "train"), cost):
                t["now"] += seconds
                phases.lap(name)
            t["now"] += 100.0                     # a hook's time is no stage's
            phases.skip()
        assert phases.seconds == {"sample": 1.5, "gather": 2.25, "train": 12.0}
        assert phases.elapsed() == 1.5 + 2.25 + 12.0 + 200.0
    assert log[:4] == ["clock@0", "sync", "barrier", "clock@1"]
    bare = Phases(("a",))
    bare.start()
    bare.lap("a")
    assert bare.seconds["a"] >= 0.0


def test_the_process_start_is_carried_onto_the_host_clock():
    """A time budget counts from the process's start (the process table keeps it on the wall clock):
    on the host clock it is no later than now; with an injected clock it is that clock's now."""
    from harness.timing import clock_is_real, now, process_start

    assert clock_is_real()
    assert process_start() <= now()
    with injected_clock(lambda: 5.0):
        assert not clock_is_real() and process_start() == 5.0
    assert clock_is_real()
