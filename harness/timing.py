"""The one timing engine: warm-up, repeats, per-iteration device events, robust stats.

Modelled on the usual GPU practice: warm up first (compilation, handles, caches),
then time every iteration with its own event pair (CUDA) or perf counter (CPU),
optionally flushing L2 between iterations, and report the median with the spread.
Across ranks: barrier, timed region, and min/avg/max reduction of what each rank saw.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field, fields
from typing import Callable, Sequence


@dataclass(frozen=True)
class Stats:
    """Summary of repeated samples; ``median`` is what results report as ``value``."""

    repeats: int
    median: float
    min: float
    max: float
    p10: float
    p90: float
    mean: float
    std: float
    samples: tuple[float, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> "Stats":
        values = sorted(float(x) for x in samples)
        if not values:
            raise ValueError("no samples to summarize")
        if any(math.isnan(v) for v in values):
            raise ValueError("NaN sample")
        return cls(
            repeats=len(values),
            median=statistics.median(values),
            min=values[0],
            max=values[-1],
            p10=quantile(values, 0.10),
            p90=quantile(values, 0.90),
            mean=statistics.fmean(values),
            std=statistics.pstdev(values) if len(values) > 1 else 0.0,
            samples=tuple(float(x) for x in samples),
        )

    def scaled(self, factor: float) -> "Stats":
        """Same statistics in another unit (``factor`` > 0), e.g. seconds -> us/step."""
        if factor <= 0:
            raise ValueError("scale factor must be positive")
        if self.samples:
            return Stats.from_samples([x * factor for x in self.samples])
        return Stats(self.repeats, self.median * factor, self.min * factor, self.max * factor,
                     self.p10 * factor, self.p90 * factor, self.mean * factor, self.std * factor)

    def rate(self, amount: float) -> "Stats":
        """Statistics of ``amount / sample``: a time turned into a rate (bytes/s, edges/s)."""
        if not self.samples:
            raise ValueError("rate() needs the raw samples")
        if min(self.samples) <= 0:
            raise ValueError("cannot turn a non-positive time into a rate")
        return Stats.from_samples([amount / x for x in self.samples])

    def to_dict(self) -> dict:
        """The ``stats`` object of a result row (raw samples are not stored)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "samples"}


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (numpy's default rule)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError("quantile must be in [0, 1]")
    n = len(sorted_values)
    if n == 1:
        return float(sorted_values[0])
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return float(sorted_values[lo] * (1 - frac) + sorted_values[hi] * frac)


def now() -> float:
    """The host clock of every :class:`CpuTimer` (read at call time, so a test can replace it and
    inject what a call costs)."""
    return time.perf_counter()


class CpuTimer:
    """Wall-clock timer; ``sync`` is called before reading the clock (e.g. a device sync)."""

    def __init__(self, sync: Callable[[], None] | None = None):
        self._sync = sync or (lambda: None)

    def time(self, fn: Callable[[], object]) -> float:
        self._sync()
        start = now()
        fn()
        self._sync()
        return now() - start


class TorchCudaTimer:
    """One CUDA event pair per iteration on the current torch stream."""

    def __init__(self, device=None):
        import torch

        self._torch = torch
        self._device = device

    def time(self, fn: Callable[[], object]) -> float:
        torch = self._torch
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3


class CupyCudaTimer:
    """One CUDA event pair per iteration on CuPy's current stream of the current device."""

    def __init__(self):
        import cupy

        self._cupy = cupy

    def time(self, fn: Callable[[], object]) -> float:
        cp = self._cupy
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3


def cpu_cache_bytes(default: int = 32 << 20) -> int:
    """The CPU's largest cache (Linux sysfs): the host's counterpart of a GPU's L2."""
    from pathlib import Path

    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    best = (0, 0)
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip().upper()
            size = int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)
        except (OSError, ValueError):
            continue
        best = max(best, (level, size))
    return best[1] or default


class CacheFlush:
    """Evicts what earlier work left in a cache before a timed repeat (call it untimed, e.g. as
    ``measure``'s ``flush``): overwrites ``multiple`` x the L2 of each listed CUDA device (on its
    current stream, so it completes before a timer's start event), or, with no devices,
    once the CPU's last-level cache (a toy-scale path: its data are a few such caches, and a larger
    flush would cost more than the work). ``cache_bytes`` and ``flush_bytes`` are what a row
    records."""

    def __init__(self, devices=(), multiple: int = 4):
        self.devices = list(devices)
        if self.devices:
            import torch

            self.devices = [torch.device(d) for d in self.devices]
            self.cache_bytes = max(torch.cuda.get_device_properties(d).L2_cache_size for d in self.devices)
        else:
            self.cache_bytes = cpu_cache_bytes()
            multiple = 1
        self.flush_bytes = multiple * self.cache_bytes
        self._buffers: list = []
        self._fills = 0

    def __call__(self) -> int:
        if not self._buffers:          # allocated on first use: a flush that never runs costs nothing
            if self.devices:
                import torch

                self._buffers = [torch.empty(self.flush_bytes, dtype=torch.uint8, device=d) for d in self.devices]
            else:
                import numpy as np

                self._buffers = [np.empty(self.flush_bytes, dtype=np.uint8)]
        self._fills += 1
        for buf in self._buffers:
            buf.fill(self._fills & 0xFF) if hasattr(buf, "ctypes") else buf.fill_(self._fills & 0xFF)
        return self.flush_bytes

    def extra(self) -> dict:
        """Row fields: the cache and the bytes written before each timed repeat, in MiB."""
        return {"l2_mib": round(self.cache_bytes / (1 << 20), 3),
                "flush_mib": round(self.flush_bytes / (1 << 20), 3)}


class TlbFlush:
    """Evicts the address translations earlier work left in a TLB before a timed repeat (call it
    untimed, before a :class:`CacheFlush`, whose overwrite then evicts the lines this one read):
    reads one byte every ``stride_bytes`` of a ``span_bytes`` buffer on each listed CUDA device (or
    of one host buffer with no devices), so the TLB ends up holding translations of that buffer's
    ``span_bytes / stride_bytes`` pages instead. It evicts every earlier translation where
    ``span_bytes`` exceeds the TLB's reach and the stride is at most the page size, and says nothing
    about a TLB that reaches further: rows record both (``extra``)."""

    def __init__(self, devices=(), span_bytes: int = 16 << 30, stride_bytes: int = 64 << 10):
        if span_bytes < stride_bytes or stride_bytes < 1:
            raise ValueError("a TLB flush reads at least one page: span_bytes >= stride_bytes >= 1")
        self.devices = list(devices)
        self.span_bytes, self.stride_bytes = int(span_bytes), int(stride_bytes)
        self._buffers: list = []

    @property
    def pages(self) -> int:
        """Pages (strides) each flush reads, on each device."""
        return self.span_bytes // self.stride_bytes

    def _allocate(self) -> None:
        if self.devices:
            import torch

            self._buffers = [torch.zeros(self.span_bytes, dtype=torch.uint8, device=d) for d in self.devices]
        else:
            import numpy as np

            self._buffers = [np.zeros(self.span_bytes, dtype=np.uint8)]

    def __call__(self) -> int:
        """Reads every page of the buffers; returns the pages read per device."""
        if not self._buffers:          # allocated (and zeroed: every page mapped) on first use
            self._allocate()
        for buf in self._buffers:
            strided = buf[:: self.stride_bytes]     # one byte of every page, read by one reduction
            if self.devices:
                import torch

                strided.sum(dtype=torch.int64)
            else:
                import numpy as np

                strided.sum(dtype=np.int64)
        return self.pages

    def extra(self) -> dict:
        """Row fields: the buffer each flush reads through and the stride, in MiB and KiB."""
        return {"tlb_flush_mib": round(self.span_bytes / (1 << 20), 3),
                "tlb_flush_stride_kib": round(self.stride_bytes / (1 << 10), 3)}

    def close(self) -> None:
        self._buffers = []


def timer_for(device: str):
    if device == "cuda":
        return TorchCudaTimer()
    return CpuTimer()


def measure(fn: Callable[[], object], *, timer=None, warmup: int = 3, repeats: int = 10,
            setup: Callable[[], object] | None = None, budget_s: float | None = None,
            max_repeats: int = 1000, flush: Callable[[], object] | None = None) -> Stats:
    """Time ``fn`` and summarize in seconds.

    ``setup`` runs before every iteration outside the timed region (re-initializing
    state such as migrated pages); ``flush`` likewise (e.g. an L2 flush). With
    ``budget_s`` the repeat count grows to fill the budget, between ``repeats`` and
    ``max_repeats``, estimated from the warm-up iterations.
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    if warmup < 0:
        raise ValueError("warmup must be >= 0")
    timer = timer or CpuTimer()
    warm_times = []
    for _ in range(warmup):
        if setup:
            setup()
        if flush:
            flush()
        warm_times.append(timer.time(fn))
    count = repeats
    if budget_s is not None and warm_times:
        per_iter = max(statistics.median(warm_times), 1e-9)
        count = int(min(max(repeats, budget_s / per_iter), max_repeats))
    samples = []
    for _ in range(count):
        if setup:
            setup()
        if flush:
            flush()
        samples.append(timer.time(fn))
    return Stats.from_samples(samples)


# --- across ranks -----------------------------------------------------------------

@dataclass(frozen=True)
class RankSpread:
    """What the ranks saw for one quantity: the slowest rank decides a collective's time."""

    min: float
    avg: float
    max: float


def reduce_across_ranks(value: float, group=None) -> RankSpread:
    """min / avg / max of ``value`` over all ranks of ``group`` (identity without one)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return RankSpread(value, value, value)
    backend = dist.get_backend(group)
    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    t = torch.tensor([value, -value, value], dtype=torch.float64, device=device)
    mins = t[:2].clone()
    dist.all_reduce(mins, op=dist.ReduceOp.MIN, group=group)
    total = t[2:].clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
    world = dist.get_world_size(group)
    return RankSpread(min=float(mins[0]), avg=float(total[0]) / world, max=-float(mins[1]))


def measure_collective(fn: Callable[[], object], *, timer=None, warmup: int = 3, repeats: int = 10,
                       setup: Callable[[], object] | None = None, group=None,
                       flush: Callable[[], object] | None = None) -> tuple[Stats, RankSpread]:
    """Time a region that every rank runs together.

    ``setup`` and ``flush`` run before every iteration, outside the timed region (as in
    ``measure``). Each iteration is bracketed by barriers; the iteration's time is the slowest
    rank's (a collective finishes when its last rank does). Returns the statistics of
    those per-iteration maxima and the min/avg/max over ranks of each rank's median.
    """
    import torch.distributed as dist

    timer = timer or CpuTimer()
    distributed = dist.is_available() and dist.is_initialized()

    def barrier():
        if distributed:
            dist.barrier(group=group)

    for _ in range(warmup):
        if setup:
            setup()
        if flush:
            flush()
        barrier()
        timer.time(fn)
    barrier()
    per_iter_max = []
    mine = []
    for _ in range(repeats):
        if setup:
            setup()
        if flush:
            flush()
        barrier()
        t = timer.time(fn)
        mine.append(t)
        per_iter_max.append(reduce_across_ranks(t, group).max)
    barrier()
    spread = reduce_across_ranks(statistics.median(mine), group)
    return Stats.from_samples(per_iter_max), spread
