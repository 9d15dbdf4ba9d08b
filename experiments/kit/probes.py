"""Timing and checking a probe: shared by wholegraph.table1 and xgnn.fig6.

A point's launches (the verification chain, the warm-ups, the timed repeats) read
consecutive index ranges of one line permutation (``chain.py``), so no launch reads a line an
earlier one read until the region's lines run out, and every GPU whose L2 could hold the
memory is flushed before each launch. ``LineReuse`` says, per point, how far that held.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass

from harness.timing import CpuTimer, CupyCudaTimer, Stats, measure

from impls.probes import chain

PAPER_STEPS = 100_000          # WholeGraph section III-A: a chain of 100K dependent reads
CACHE_MULTIPLE = 4             # a timed chain reads at least this many L2s' worth of lines


@dataclass(frozen=True)
class Launches:
    """Index ranges of one point's launches, in order: verification, warm-ups, timed repeats."""

    verify: int
    per_launch: int
    warmup: int
    repeats: int

    def ranges(self) -> list[tuple[str, int, int]]:
        out, first = [], 0
        for role, count, n in (("verify", 1, self.verify), ("warmup", self.warmup, self.per_launch),
                               ("timed", self.repeats, self.per_launch)):
            for _ in range(count if n else 0):
                out.append((role, first, n))
                first += n
        return out


def chase_steps(l2_bytes: int, region_lines: int, launches: int, verify_steps: int,
                paper_steps: int = PAPER_STEPS) -> int:
    """Default steps of a timed chain: the paper's 100K, or enough to read ``CACHE_MULTIPLE`` L2s of
    distinct lines if that is more, but no more than the region holds for the point's verification
    and ``launches`` chains (a small region is read once over, not twice)."""
    wanted = max(paper_steps, math.ceil(CACHE_MULTIPLE * l2_bytes / chain.LINE_BYTES))
    return max(paper_steps, min(wanted, (region_lines - verify_steps) // max(1, launches)))


@dataclass(frozen=True)
class LineReuse:
    """What the timed launches of a point read, in 128-byte lines."""

    region_lines: int
    distinct_lines: int          # fewest distinct lines one timed launch reads
    lines_read_before: int       # most lines a timed launch reads that an earlier launch read

    def extra(self, l2_bytes: int, flush_bytes: int) -> dict:
        """The row fields that say what was cold: cache sizes in MiB, counts in lines."""
        return {"l2_mib": round(l2_bytes / (1 << 20), 3), "flush_mib": round(flush_bytes / (1 << 20), 3),
                "region_lines": self.region_lines, "distinct_lines": self.distinct_lines,
                "lines_read_before": self.lines_read_before,
                "distinct_over_l2": round(self.distinct_lines * chain.LINE_BYTES / l2_bytes, 3)}


def _residues(first: int, count: int, lines: int) -> list[tuple[int, int]]:
    """Indices ``first .. first + count - 1`` modulo ``lines``, as half-open intervals."""
    if count >= lines:
        return [(0, lines)]
    lo = first % lines
    hi = lo + count
    return [(lo, hi)] if hi <= lines else [(lo, lines), (0, hi - lines)]


def _covered(intervals: list[tuple[int, int]], lo: int, hi: int) -> int:
    """How much of ``[lo, hi)`` the disjoint, sorted ``intervals`` cover."""
    return sum(max(0, min(hi, b) - max(lo, a)) for a, b in intervals)


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def line_reuse(ranges: list[tuple[str, int, int]], lines: int) -> LineReuse:
    """Reuse of the timed ranges: a permutation maps index ``i`` to a line one-to-one modulo
    ``lines``, so it is interval arithmetic on the indices modulo ``lines`` (checked by the tests
    against the lines themselves)."""
    distinct, before = lines, 0
    seen: list[tuple[int, int]] = []
    for role, first, count in ranges:
        mine = _residues(first, count, lines)
        if role == "timed":
            distinct = min(distinct, sum(hi - lo for lo, hi in mine))
            before = max(before, sum(_covered(seen, lo, hi) for lo, hi in mine))
        seen = _merge(seen + mine)
    return LineReuse(lines, distinct, before)


def verify_chain(probe, steps: int, start: int, first_step: int = 0) -> None:
    """The probe must read exactly the words the reference chain reads (every config)."""
    got = probe.run_chase(steps, start, first_step)
    want = chain.chase(probe.nparts_used, probe.part_elems, probe.salt, start, steps, first_step)
    if got != want:
        raise RuntimeError(f"pointer chase read wrong memory: got {got}, reference {want}")


def time_chase(probe, device: str, launches: Launches, start: int, reset_each: bool,
               tlb_flush=None) -> tuple[Stats, dict]:
    """Seconds per timed chain of ``launches.per_launch`` dependent reads (one launch per repeat),
    after the verification chain; returns the statistics and the row fields of ``LineReuse``.
    ``tlb_flush`` (a :class:`harness.timing.TlbFlush`) runs before the L2 flush of every launch, so
    no launch finds the translations an earlier one left either; its fields join the row's."""
    ranges = launches.ranges()
    verify_chain(probe, ranges[0][2], start, ranges[0][1])
    pending = iter(ranges[1:])

    def next_launch(run):
        _, first, count = next(pending)
        return run(count, start + first, first)

    if device == "cuda":
        import cupy as cp

        ctx, timer = cp.cuda.Device(probe.chaser), CupyCudaTimer()
        fn = lambda: next_launch(probe.launch_chase)  # noqa: E731
    else:
        ctx, timer = nullcontext(), CpuTimer()
        fn = lambda: next_launch(probe.run_chase)  # noqa: E731
    flushed = []

    def flush():
        if tlb_flush is not None:
            tlb_flush()
        flushed.append(probe.flush_caches())

    with ctx:
        stats = measure(fn, timer=timer, warmup=launches.warmup, repeats=launches.repeats,
                        setup=probe.reset if reset_each else None, flush=flush)
    reuse = line_reuse(ranges, chain.region_lines(probe.nparts_used, probe.part_elems))
    return stats, {**reuse.extra(probe.l2_bytes, max(flushed)), **(tlb_flush.extra() if tlb_flush else {})}


def time_random_reads(probe, threads: int, reads_per_thread: int, warmup: int, repeats: int,
                      reset_each: bool, salt: int) -> tuple[Stats, dict]:
    """Seconds per launch of ``threads`` x ``reads_per_thread`` independent 8-byte reads, each launch
    from the next index range of the line permutation; statistics and ``LineReuse`` row fields."""
    import cupy as cp

    per_launch = threads * reads_per_thread
    ranges = Launches(0, per_launch, warmup, repeats).ranges()
    pending = iter(ranges)
    flushed = []
    with cp.cuda.Device(probe.chaser):
        out = cp.empty(threads, dtype=cp.uint64)
        fn = lambda: probe.launch_random_reads(threads, reads_per_thread, salt, next(pending)[1], out)  # noqa: E731
        stats = measure(fn, timer=CupyCudaTimer(), warmup=warmup, repeats=repeats,
                        setup=probe.reset if reset_each else None,
                        flush=lambda: flushed.append(probe.flush_caches()))
    reuse = line_reuse(ranges, chain.region_lines(probe.nparts_used, probe.part_elems))
    return stats, reuse.extra(probe.l2_bytes, max(flushed))
