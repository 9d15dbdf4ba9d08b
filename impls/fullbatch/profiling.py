"""Timestamps on the device that did the work: CUDA events on GPUs, perf_counter on CPU ranks.

Marks are only turned into seconds after the work is done (one synchronize per epoch), so
timing an operation never stalls the stream it times.  ``OpProfiler`` sums time per operation
kind (MG-GCN Fig. 5); ``StageTimeline`` keeps every broadcast and every tile multiply of the
staged SpMM as an interval (MG-GCN Figs. 6 and 8).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass


class Clock:
    def __init__(self, device):
        import torch

        self.cuda = torch.device(device).type == "cuda"
        self._torch = torch

    def mark(self, stream=None):
        if not self.cuda:
            return time.perf_counter()
        event = self._torch.cuda.Event(enable_timing=True)
        event.record(stream)
        return event

    def synchronize(self) -> None:
        if self.cuda:
            self._torch.cuda.synchronize()

    def seconds(self, start, end) -> float:
        """Seconds from ``start`` to ``end`` (both marks; call after synchronize())."""
        if not self.cuda:
            return end - start
        return start.elapsed_time(end) / 1e3


class OpProfiler:
    """Sums, per operation kind, the time between marks around each operation of an epoch."""

    KINDS = ("spmm", "gemm", "activation", "loss", "allreduce", "adam")

    def __init__(self, clock: Clock, enabled: bool = False):
        self.clock = clock
        self.enabled = enabled
        self._pending: list[tuple[str, object, object]] = []

    @contextmanager
    def op(self, kind: str):
        if not self.enabled:
            yield
            return
        start = self.clock.mark()
        yield
        self._pending.append((kind, start, self.clock.mark()))

    def collect(self) -> dict[str, float]:
        """Seconds per kind since the last collect (synchronizes the device)."""
        self.clock.synchronize()
        totals = {kind: 0.0 for kind in self.KINDS}
        for kind, start, end in self._pending:
            totals[kind] = totals.get(kind, 0.0) + self.clock.seconds(start, end)
        self._pending.clear()
        return totals


@dataclass(frozen=True)
class Interval:
    spmm: str        # which SpMM of the epoch: "fwd1" = forward of layer 1, "bwd2" = backward of layer 2
    stage: int       # j: the stage multiplying the tile whose rows rank j broadcast
    kind: str        # comm | compute
    start_s: float   # from the epoch's origin
    end_s: float


class StageTimeline:
    """Per-stage communication and computation intervals of every staged SpMM in an epoch."""

    def __init__(self, clock: Clock, enabled: bool = False):
        self.clock = clock
        self.enabled = enabled
        self._origin = None
        self._pending: list[tuple[str, int, str, object, object]] = []

    def start(self) -> None:
        if self.enabled:
            self._origin = self.clock.mark()
            self._pending.clear()

    def mark(self, stream=None):
        return self.clock.mark(stream) if self.enabled else None

    def add(self, spmm: str, stage: int, kind: str, start, end) -> None:
        if self.enabled:
            self._pending.append((spmm, stage, kind, start, end))

    def collect(self) -> list[Interval]:
        if not self.enabled or self._origin is None:
            return []
        self.clock.synchronize()
        seconds = self.clock.seconds
        out = [Interval(spmm, stage, kind, seconds(self._origin, start), seconds(self._origin, end))
               for spmm, stage, kind, start, end in self._pending]
        self._pending.clear()
        self._origin = None
        return out
