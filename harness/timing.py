"""The one timing engine: clocks, warm-up and repeats, per-iteration device events, robust stats.

Every timed number of the harness, and every clock reading besides (a time budget's deadline, a
launcher's timeout, a progress line), goes through this module; tests/test_timing_primitives.py
fails on a clock or CUDA timing event read anywhere else.

- :func:`now`: the one host clock (monotonic seconds, one clock for every process of the machine);
  :func:`injected_clock` replaces it for a test.
- :func:`measure` / :func:`measure_collective`: warm up first (compilation, handles, pools), then
  time every iteration with its own timer reading (a CUDA event pair, or the host clock around a
  device synchronization), optionally flushing the L2 (:class:`CacheFlush`) before each, and
  summarize with the median and its quantiles (:class:`Stats`); across ranks, barriers around
  every iteration, an iteration's time its slowest rank's, and the spread of the ranks' medians
  (:class:`RankSpread`). Counts are minimums; time budgets (:class:`RepeatBudget`, in
  milliseconds, as in Triton's ``do_bench``) add warm-ups and repeats where one iteration is short.
- :class:`DeviceClock`, :class:`Laps`, :class:`Spans`: timestamps on the device that does the
  work, read once it is done (the steps of a gather, the operations of an epoch).
- :class:`Phases`: seconds per stage of an epoch's loop (sample / gather / train).
"""

from __future__ import annotations

import math
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Callable, Iterator, Sequence

# The host clock: CLOCK_MONOTONIC on Linux (time.get_clock_info("perf_counter")), so a time read in
# one process compares with one read in another (the launcher's heartbeats).
_clock: Callable[[], float] = time.perf_counter


def now() -> float:
    """Seconds on the one host clock (read at call time, so :func:`injected_clock` reaches every
    caller, however it imported this function)."""
    return _clock()


def clock_is_real() -> bool:
    """Whether :func:`now` reads the host's clock (no test injected another): what a signal timer,
    which runs on the host's time, can be set from."""
    return _clock is time.perf_counter


def process_start() -> float:
    """When this process started, on :func:`now`'s clock (the interpreter's start-up and imports
    are part of what a user waits for); now where the process table cannot say (no psutil) or a
    test injected the clock."""
    if not clock_is_real():
        return now()
    try:
        import os

        import psutil

        started = psutil.Process(os.getpid()).create_time()
    except Exception:         # noqa: BLE001 - no process table: count from now
        return now()
    # the process table keeps the wall clock; the host clock is monotonic: carry the age across
    return now() - max(0.0, time.time() - started)


@contextmanager
def injected_clock(clock: Callable[[], float]) -> Iterator[Callable[[], float]]:
    """Within the block, :func:`now` (and every timer, deadline and phase on the host) reads
    ``clock``: what a test injects instead of waiting."""
    global _clock
    saved, _clock = _clock, clock
    try:
        yield clock
    finally:
        _clock = saved


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

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the samples (linear interpolation, the rule of ``p10`` and ``p90``)."""
        if not self.samples:
            raise ValueError("quantile() needs the raw samples")
        return quantile(sorted(self.samples), q)

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


# --- warm-up and repeats --------------------------------------------------------------

# Time budgets where a run asks for none explicitly (Triton's do_bench: 25 ms of warm-up, 100 ms of
# repeats); applied on GPUs only: CPU ranks are the tests' toy stand-ins, timed by counts.
WARMUP_MS = 25.0
REPEAT_MS = 100.0


@dataclass(frozen=True)
class RepeatBudget:
    """How long a measurement warms up and repeats: counts that are minimums, and time budgets in
    milliseconds on top of them (0: none), each bounded by a maximum count.

    With a budget, the time of one iteration is estimated from the warm-ups (their median; at least
    one warm-up then runs): warm-ups continue until ``warmup_ms`` is spent, and the timed repeats
    are as many as ``repeat_ms`` holds. Counts stay the floor, so a measurement moved from counts
    to a budget never takes fewer repeats than it did, and its rows stay comparable."""

    warmup: int = 3
    repeats: int = 10
    warmup_ms: float = 0.0
    repeat_ms: float = 0.0
    max_warmup: int = 1000
    max_repeats: int = 1000

    def __post_init__(self):
        if self.repeats < 1:
            raise ValueError("repeats must be >= 1")
        if self.warmup < 0:
            raise ValueError("warmup must be >= 0")
        if self.warmup_ms < 0 or self.repeat_ms < 0:
            raise ValueError("time budgets are >= 0 ms")

    @classmethod
    def for_run(cls, cfg, warmup: tuple[int, int] = (3, 1), repeats: tuple[int, int] = (10, 3),
                warmup_ms: float = WARMUP_MS, repeat_ms: float = REPEAT_MS) -> "RepeatBudget":
        """A run's budget: the counts (default, ``--quick``) unless ``--warmup`` / ``--repeats``
        set them, and the time budgets on GPUs, except where the run set the count itself
        (``--repeats 3`` is 3 repeats, as is a ``--time-budget`` run's cheaper level) or is
        ``--quick``."""
        budgets = cfg.device == "cuda" and not cfg.quick
        return cls(cfg.warmup_or(*warmup), cfg.repeats_or(*repeats),
                   warmup_ms if budgets and cfg.warmup is None else 0.0,
                   repeat_ms if budgets and cfg.repeats is None else 0.0)

    @property
    def timed(self) -> bool:
        return self.warmup_ms > 0 or self.repeat_ms > 0

    def warmups(self, per_iteration_s: float | None = None) -> int:
        """Warm-up iterations in all, ``per_iteration_s`` the estimate after the counted ones."""
        if not self.warmup_ms or per_iteration_s is None:
            return max(self.warmup, 1 if self.timed else 0)
        wanted = int(self.warmup_ms / 1e3 / max(per_iteration_s, 1e-9))
        return max(self.warmup, 1, min(wanted, self.max_warmup))

    def timed_repeats(self, per_iteration_s: float | None = None) -> int:
        """Timed iterations, ``per_iteration_s`` the estimate from the warm-ups."""
        if not self.repeat_ms or per_iteration_s is None:
            return self.repeats
        wanted = int(self.repeat_ms / 1e3 / max(per_iteration_s, 1e-9))
        return max(self.repeats, min(wanted, self.max_repeats))

    def extra(self) -> dict:
        """Row fields: the time budgets a measurement ran under (none where it ran by counts)."""
        return {"warmup_ms": self.warmup_ms, "repeat_ms": self.repeat_ms} if self.timed else {}


def _iterate(fn, timer, setup, flush, before=None) -> float:
    if setup:
        setup()
    if flush:
        flush()
    if before:
        before()
    return timer.time(fn)


def measure(fn: Callable[[], object], *, timer=None, warmup: int = 3, repeats: int = 10,
            setup: Callable[[], object] | None = None, flush: Callable[[], object] | None = None,
            budget: RepeatBudget | None = None) -> Stats:
    """Time ``fn`` and summarize in seconds.

    ``setup`` runs before every iteration outside the timed region (re-initializing
    state such as migrated pages); ``flush`` likewise (e.g. an L2 flush). ``warmup`` and
    ``repeats`` are counts; ``budget`` replaces them with counts at least and time budgets on top
    (:class:`RepeatBudget`).
    """
    plan = budget or RepeatBudget(warmup, repeats)
    timer = timer or CpuTimer()
    warm_times = [_iterate(fn, timer, setup, flush) for _ in range(plan.warmups())]
    estimate = statistics.median(warm_times) if warm_times and plan.timed else None
    if plan.warmup_ms and estimate is not None:
        warm_times += [_iterate(fn, timer, setup, flush) for _ in range(plan.warmups(estimate) - len(warm_times))]
        estimate = statistics.median(warm_times)
    samples = [_iterate(fn, timer, setup, flush) for _ in range(plan.timed_repeats(estimate))]
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
                       flush: Callable[[], object] | None = None,
                       budget: RepeatBudget | None = None) -> tuple[Stats, RankSpread]:
    """Time a region that every rank runs together.

    ``setup`` and ``flush`` run before every iteration, outside the timed region (as in
    ``measure``). Each iteration is bracketed by barriers; the iteration's time is the slowest
    rank's (a collective finishes when its last rank does). Returns the statistics of
    those per-iteration maxima and the min/avg/max over ranks of each rank's median. Counts and
    time budgets as in ``measure``; every rank runs as many iterations as the others, from the
    slowest rank's estimate of one.
    """
    import torch.distributed as dist

    plan = budget or RepeatBudget(warmup, repeats)
    timer = timer or CpuTimer()
    distributed = dist.is_available() and dist.is_initialized()

    def barrier():
        if distributed:
            dist.barrier(group=group)

    def agreed_estimate(times):
        return reduce_across_ranks(statistics.median(times), group).max if times and plan.timed else None

    warm_times = [_iterate(fn, timer, setup, flush, barrier) for _ in range(plan.warmups())]
    estimate = agreed_estimate(warm_times)
    if plan.warmup_ms and estimate is not None:
        warm_times += [_iterate(fn, timer, setup, flush, barrier)
                       for _ in range(plan.warmups(estimate) - len(warm_times))]
        estimate = agreed_estimate(warm_times)
    barrier()
    per_iter_max = []
    mine = []
    for _ in range(plan.timed_repeats(estimate)):
        t = _iterate(fn, timer, setup, flush, barrier)
        mine.append(t)
        per_iter_max.append(reduce_across_ranks(t, group).max)
    barrier()
    spread = reduce_across_ranks(statistics.median(mine), group)
    return Stats.from_samples(per_iter_max), spread


# --- timestamps on the device that does the work ------------------------------------

class DeviceClock:
    """Marks on the device that does the work: a CUDA event recorded on a stream (the current one
    by default) on GPUs, the host clock on CPU. A mark is turned into seconds only once the work
    is done (:meth:`synchronize`, or :meth:`wait` for one mark), so marking an operation never
    stalls the stream it times."""

    def __init__(self, device):
        import torch

        self._torch = torch
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"

    def mark(self, stream=None):
        if not self.cuda:
            return now()
        event = self._torch.cuda.Event(enable_timing=True)
        event.record(stream)
        return event

    def synchronize(self) -> None:
        if self.cuda:
            self._torch.cuda.synchronize(self.device)

    def wait(self, mark) -> None:
        """Until the work before ``mark`` is done (that mark only, not the whole device)."""
        if self.cuda:
            mark.synchronize()

    def seconds(self, start, end) -> float:
        """Seconds from mark ``start`` to mark ``end`` (both done)."""
        if not self.cuda:
            return end - start
        return start.elapsed_time(end) / 1e3


class Laps:
    """Consecutive named intervals on a :class:`DeviceClock`, from its construction: ``lap(name)``
    ends the interval ``name`` and starts the next (the steps of one call)."""

    def __init__(self, clock: DeviceClock):
        self.clock = clock
        self.names: list[str] = []
        self.marks = [clock.mark()]

    def lap(self, name: str) -> None:
        self.names.append(name)
        self.marks.append(self.clock.mark())

    def seconds(self) -> dict[str, float]:
        """Seconds per interval (waits for the last mark)."""
        self.clock.wait(self.marks[-1])
        return {name: self.clock.seconds(a, b) for name, a, b in zip(self.names, self.marks, self.marks[1:])}


class Spans:
    """Seconds of labelled regions, summed per label (the operations of an epoch, the sampler calls
    inside a timed loop): ``with spans.span(label):`` marks the region's ends on the device;
    :meth:`totals` reads them after one synchronize and starts over. ``enabled=False`` marks
    nothing (an instrumented loop that is not being profiled)."""

    def __init__(self, clock: DeviceClock, enabled: bool = True):
        self.clock = clock
        self.enabled = enabled
        self._pending: list[tuple[str, object, object]] = []

    @contextmanager
    def span(self, label: str):
        if not self.enabled:
            yield
            return
        start = self.clock.mark()
        yield
        self._pending.append((label, start, self.clock.mark()))

    def totals(self) -> dict[str, float]:
        """Seconds per label since the last call (synchronizes the device)."""
        self.clock.synchronize()
        out: dict[str, float] = {}
        for label, start, end in self._pending:
            out[label] = out.get(label, 0.0) + self.clock.seconds(start, end)
        self._pending.clear()
        return out


# --- phases of a loop -----------------------------------------------------------------

class Phases:
    """Host seconds per phase of a loop, summed over its iterations (an epoch's sample / gather /
    train stages): :meth:`start` once, then ``lap(name)`` at the end of each phase. ``sync`` (a
    device synchronization) and ``barrier`` (all ranks) run before every lap's clock reading, so
    work still queued on the device, or a peer still in its phase, counts in the phase it belongs
    to; without them a lap is one clock reading and the loop runs as it would untimed."""

    def __init__(self, names: Sequence[str], *, sync: Callable[[], object] | None = None,
                 barrier: Callable[[], object] | None = None):
        self.seconds = {name: 0.0 for name in names}
        self._sync, self._barrier = sync, barrier
        self.started = self._last = 0.0

    def start(self) -> float:
        self.started = self._last = now()
        return self.started

    def lap(self, name: str) -> float:
        if self._sync:
            self._sync()
        if self._barrier:
            self._barrier()
        t = now()
        self.seconds[name] += t - self._last
        self._last = t
        return t

    def skip(self) -> None:
        """The time since the last lap belongs to no phase (a hook between iterations)."""
        self._last = now()

    def elapsed(self) -> float:
        """Seconds since :meth:`start` (every phase and what no phase counts)."""
        return now() - self.started
