"""Timing and checking a probe: shared by wholegraph.table1 and xgnn.fig6."""

from __future__ import annotations

from contextlib import nullcontext

from harness.timing import CpuTimer, CupyCudaTimer, Stats, measure

from . import chain


def verify_chain(probe, steps: int, start: int) -> None:
    """The probe must read exactly the words the reference chain reads (every config)."""
    got = probe.run_chase(steps, start)
    want = chain.chase(probe.nparts_used, probe.part_elems, probe.salt, start, steps)
    if got != want:
        raise RuntimeError(f"pointer chase read wrong memory: got {got}, reference {want}")


def time_chase(probe, device: str, steps: int, start: int, warmup: int, repeats: int,
               reset_each: bool) -> Stats:
    """Seconds per chain of ``steps`` dependent reads (one launch per repeat)."""
    if device == "cuda":
        import cupy as cp

        ctx = cp.cuda.Device(probe.chaser)
        timer = CupyCudaTimer()
        fn = lambda: probe.launch_chase(steps, start)  # noqa: E731
    else:
        ctx = nullcontext()
        timer = CpuTimer()
        fn = lambda: probe.run_chase(steps, start)  # noqa: E731
    with ctx:
        return measure(fn, timer=timer, warmup=warmup, repeats=repeats,
                       setup=probe.reset if reset_each else None)


def time_random_reads(probe, threads: int, reads_per_thread: int, warmup: int, repeats: int,
                      reset_each: bool) -> Stats:
    """Seconds per launch of ``threads`` x ``reads_per_thread`` independent 8-byte reads."""
    import cupy as cp

    with cp.cuda.Device(probe.chaser):
        out = cp.empty(threads, dtype=cp.uint64)
        salts = iter(range(1, 1 << 30))
        fn = lambda: probe.launch_random_reads(threads, reads_per_thread, next(salts), out)  # noqa: E731
        return measure(fn, timer=CupyCudaTimer(), warmup=warmup, repeats=repeats,
                       setup=probe.reset if reset_each else None)
