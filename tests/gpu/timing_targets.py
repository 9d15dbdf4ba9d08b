"""Rank targets of tests/gpu/test_timing_gpu.py (imported by the spawned ranks)."""

from __future__ import annotations

CYCLES = 2_000_000          # torch.cuda._sleep: about 1 ms on an H100 or H200


def budget_on_nccl_ranks(ctx):
    """Rank r sleeps (r + 1) x CYCLES per iteration under one RepeatBudget: every rank must run the
    slowest rank's count of warm-ups and repeats, and each iteration counts as the slowest rank's."""
    import torch

    from harness.timing import RepeatBudget, TorchCudaTimer, measure_collective

    calls = []

    def work():
        calls.append(1)
        torch.cuda._sleep((ctx.rank + 1) * CYCLES)

    stats, spread = measure_collective(work, timer=TorchCudaTimer(),
                                       budget=RepeatBudget(warmup=1, repeats=2, warmup_ms=20.0, repeat_ms=100.0))
    return {"calls": len(calls), "repeats": stats.repeats, "median": stats.median,
            "spread": (spread.min, spread.max)}
