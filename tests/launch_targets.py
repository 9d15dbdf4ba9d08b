"""Rank functions for launcher tests. Module level, so spawn can pickle them by reference."""

from __future__ import annotations

import os
import threading
import time


def all_reduce_sum(ctx, base):
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(base + ctx.rank + 1)])
    dist.all_reduce(t)
    return {"rank": ctx.rank, "world": ctx.world_size, "local_rank": ctx.local_rank,
            "backend": ctx.backend, "device": ctx.device, "is_main": ctx.is_main,
            "sum": float(t.item()), "env_rank": os.environ.get("RANK"),
            "dist_rank": dist.get_rank(), "dist_world": dist.get_world_size(),
            "dist_backend": dist.get_backend()}


def _write_pid(pid_dir, rank):
    if pid_dir:
        with open(os.path.join(pid_dir, f"rank{rank}.pid"), "w") as fh:
            fh.write(str(os.getpid()))


def raise_on_rank(ctx, bad_rank, pid_dir=None):
    """``bad_rank`` raises at once; the others sleep far beyond any test's timeout."""
    _write_pid(pid_dir, ctx.rank)
    if ctx.rank == bad_rank:
        raise ValueError(f"deliberate failure on rank {ctx.rank}")
    time.sleep(120)
    if pid_dir:                                   # reached only by a rank nobody stopped
        open(os.path.join(pid_dir, f"rank{ctx.rank}.woke"), "w").close()
    return ctx.rank


def raise_on_rank1_while_rank0_waits_in_barrier(ctx):
    """Rank 1 fails first; rank 0 then fails too, inside a collective (a consequence).

    Rank 1 keeps its process alive a little after raising (a non-daemon thread), as a
    rank busy tearing down would, so its exit code is not yet known when its error arrives.
    """
    import torch.distributed as dist

    if ctx.rank == 1:
        threading.Thread(target=time.sleep, args=(2.0,), daemon=False).start()
        raise ValueError("root cause on rank 1")
    dist.barrier()
    return ctx.rank


def hang(ctx, pid_dir=None):
    _write_pid(pid_dir, ctx.rank)
    time.sleep(600)


def hard_exit_on_rank(ctx, bad_rank, code):
    if ctx.rank == bad_rank:
        os._exit(code)
    time.sleep(120)


def kill_rank_in_a_collective(ctx, bad_rank):
    """``bad_rank`` kills itself with SIGKILL while its peers wait in a barrier for it."""
    import signal

    import torch.distributed as dist

    ctx.set_activity("the first barrier")
    dist.barrier()
    ctx.set_activity("the second barrier")
    if ctx.rank == bad_rank:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()


def return_nothing_on_rank(ctx, rank):
    return None if ctx.rank == rank else ctx.rank


class RankTimer:
    """A timer reporting a fixed, rank-dependent time: rank r sees r + 1 seconds."""

    def __init__(self, rank):
        self.rank = rank
        self.calls = 0

    def time(self, fn):
        fn()
        self.calls += 1
        return float(self.rank + 1)


def collective_timing(ctx):
    from harness.timing import measure_collective, reduce_across_ranks

    spread = reduce_across_ranks(float(ctx.rank + 1))
    calls = []
    timer = RankTimer(ctx.rank)
    stats, per_rank = measure_collective(lambda: calls.append(1), timer=timer, warmup=2, repeats=5)
    return {"spread": (spread.min, spread.avg, spread.max),
            "stats": (stats.repeats, stats.median, stats.min, stats.max),
            "per_rank": (per_rank.min, per_rank.avg, per_rank.max),
            "fn_calls": len(calls), "timer_calls": timer.calls}


def reduce_floats(ctx):
    mine = [float(ctx.rank), 10.0 * (ctx.rank + 1)]
    return ctx.all_reduce_floats(mine, "max"), ctx.all_reduce_floats(mine, "sum")


def ranks_decide_together(ctx, prepare_dir):
    """Every helper of harness.ranks on each rank: what it returns or raises, by name."""
    from harness.errors import HarnessError, SkipPoint
    from harness.ranks import agree, all_gather, broadcast, load_on_ranks, prepare_on_rank0

    def outcome(fn):
        try:
            return ("ok", fn())
        except SkipPoint as exc:
            return ("skip", str(exc))
        except Exception as exc:  # noqa: BLE001
            return ("error", f"{type(exc).__name__}: {exc}")

    marker = os.path.join(prepare_dir, "prepared")

    def load():                                   # rank 0 writes what the others then read
        if ctx.rank == 0:
            with open(marker, "w") as fh:
                fh.write("cache")
        with open(marker) as fh:
            return fh.read() + f"@{ctx.rank}"

    def refuse():
        raise HarnessError("scale too small for this graph")

    def crash():
        raise ValueError("bug on rank 0")

    return {"agree_all": agree(ctx, True), "agree_one_no": agree(ctx, ctx.rank != 1),
            "broadcast": broadcast(ctx, f"from {ctx.rank}"), "all_gather": all_gather(ctx, ctx.rank * 10),
            "load": outcome(lambda: load_on_ranks(ctx, load)), "refuse": outcome(lambda: load_on_ranks(ctx, refuse)),
            "crash": outcome(lambda: prepare_on_rank0(ctx, crash)),
            "prepared": outcome(lambda: prepare_on_rank0(ctx, lambda: {"rank0": ctx.rank}))}


def shared_store_then_fail_on_rank(ctx, bad_rank):
    """Every rank maps a chunked host store (files in shared memory); ``bad_rank`` then raises
    while the others wait in a collective, so nobody closes the store."""
    import torch.distributed as dist

    from impls.core.layout import TableSpec
    from impls.storage.shards import ShardedTable

    ShardedTable(ctx, TableSpec(64, 4), "chunked")
    if ctx.rank == bad_rank:
        raise ValueError(f"deliberate failure on rank {ctx.rank} holding shared memory")
    dist.barrier()
    time.sleep(120)


class SequenceTimer:
    """A timer reporting the given durations in turn (seconds)."""

    def __init__(self, seconds):
        self.seconds = list(seconds)

    def time(self, fn):
        fn()
        return float(self.seconds.pop(0))


# Iteration times whose min, median and mean differ on every rank, so a figure taken from the
# wrong one of them is told apart: rank 0 min 1, median 3, mean 4; rank 1 min 2, median 6, mean 8.
DISTINCT_SECONDS = ([3, 1, 2, 10, 4], [5, 6, 2, 7, 20])


def collective_timing_of_distinct_iterations(ctx):
    """Each rank's times from DISTINCT_SECONDS; what measure_collective makes of them."""
    from harness.timing import measure_collective

    stats, spread = measure_collective(lambda: None, timer=SequenceTimer(DISTINCT_SECONDS[ctx.rank]),
                                       warmup=0, repeats=5)
    return {"median": stats.median, "min": stats.min, "max": stats.max, "mean": stats.mean,
            "samples": stats.samples, "spread": (spread.min, spread.avg, spread.max)}


# A time budget on ranks of different speed: rank 0's iterations take 1/256 s, rank 1's 1/64 s; 10
# and 25 of the slower one fill the budgets, 40 and 100 of the faster one would.
BUDGET_SECONDS = (1 / 256, 1 / 64)
BUDGET = dict(warmup=2, repeats=3, warmup_ms=156.25, repeat_ms=390.625)


def collective_timing_under_a_budget(ctx):
    """Every rank runs as many warm-ups and repeats as the slowest rank's estimate gives."""
    from harness.timing import RepeatBudget, measure_collective

    calls = []

    class Fixed:
        def time(self, fn):
            fn()
            return BUDGET_SECONDS[ctx.rank]

    stats, _ = measure_collective(lambda: calls.append(1), timer=Fixed(), budget=RepeatBudget(**BUDGET))
    return {"calls": len(calls), "repeats": stats.repeats, "median": stats.median}


def timing_cases(ctx):
    """Every cross-rank timing case of tests/test_timing.py in one launch."""
    return {"fixed": collective_timing(ctx), "distinct": collective_timing_of_distinct_iterations(ctx),
            "budget": collective_timing_under_a_budget(ctx)}


SKIPPED = "__skipped__"


def run_calls(ctx, calls):
    """``fn(ctx, *args)`` for every ``(fn, args)`` of ``calls``, in order, in one launch (see
    tests.helpers.SharedLaunch). A SkipPoint (which ranks raise together) is kept as that call's
    result and the next call runs; any other failure names its call and ends the launch, as it
    must: the other ranks may be waiting for this one in a collective."""
    from harness.errors import SkipPoint

    out = []
    for fn, args in calls:
        try:
            out.append(fn(ctx, *args))
        except SkipPoint as exc:
            out.append({SKIPPED: str(exc)})
        except Exception as exc:
            raise RuntimeError(f"{fn.__name__}{tuple(args)!r}: {type(exc).__name__}: {exc}") from exc
    return out


def block_in_a_collective(ctx, pid_dir):
    """Every rank waits to receive from the other, for ever (no peer ends, so no connection drops to
    end the wait). Each rank writes its pid file from a thread once it sees its main thread there."""
    import sys

    import torch
    import torch.distributed as dist

    from harness.launcher import WAITING, where_is

    main = threading.main_thread().ident

    def report_when_blocked():
        while not where_is(sys._current_frames().get(main)).startswith(WAITING):
            time.sleep(0.05)
        _write_pid(pid_dir, ctx.rank)

    threading.Thread(target=report_when_blocked, daemon=True).start()
    dist.recv(torch.zeros(1), src=1 - ctx.rank)


def hang_in_a_point(ctx, points, hang_point, hang_rank, seconds):
    """``points`` points, each ``seconds`` of work then a barrier; in ``hang_point`` the rank
    ``hang_rank`` works for ever while the others wait for it in the barrier."""
    import torch.distributed as dist

    for i in range(points):
        ctx.set_activity(f"point {i}")
        time.sleep(600 if (i, ctx.rank) == (hang_point, hang_rank) else seconds)
        dist.barrier()
    return ctx.rank
