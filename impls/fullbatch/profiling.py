"""MG-GCN's instrumentation on the timing engine's device marks (``harness.timing.DeviceClock``:
CUDA events on GPUs, the host clock on CPU ranks).

Marks are only turned into seconds after the work is done (one synchronize per epoch), so
timing an operation never stalls the stream it times.  ``OpProfiler`` sums time per operation
kind (MG-GCN Fig. 5); ``StageTimeline`` keeps every broadcast and every tile multiply of the
staged SpMM as an interval (MG-GCN Figs. 6 and 8).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.timing import DeviceClock, Spans


class OpProfiler:
    """Sums, per operation kind, the time between marks around each operation of an epoch."""

    KINDS = ("spmm", "gemm", "activation", "loss", "allreduce", "adam")

    def __init__(self, clock: DeviceClock, enabled: bool = False):
        self.spans = Spans(clock, enabled)

    @property
    def enabled(self) -> bool:
        return self.spans.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self.spans.enabled = value

    def op(self, kind: str):
        return self.spans.span(kind)

    def collect(self) -> dict[str, float]:
        """Seconds per kind since the last collect (synchronizes the device)."""
        return {**{kind: 0.0 for kind in self.KINDS}, **self.spans.totals()}


@dataclass(frozen=True)
class Interval:
    spmm: str        # which SpMM of the epoch: "fwd1" = forward of layer 1, "bwd2" = backward of layer 2
    stage: int       # j: the stage multiplying the tile whose rows rank j broadcast
    kind: str        # comm | compute
    start_s: float   # from the epoch's origin
    end_s: float


class StageTimeline:
    """Per-stage communication and computation intervals of every staged SpMM in an epoch."""

    def __init__(self, clock: DeviceClock, enabled: bool = False):
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
