"""Fake CUDA streams for the staged SpMM's GPU schedule on CPU tensors.

:class:`FakeCuda` stands in for ``torch.cuda`` in ``staged.StreamLanes``: every operation runs at
once, and the fake records, in the order the host enqueued them, which stream each operation,
event record and event wait went to, and counts host synchronizations (a stream's, an event's,
the device's). :func:`races` then replays the trace with stream semantics (an operation waits for
the earlier ones of its stream and for the events its stream waited for) and lists every pair of
operations on a receive buffer that a real GPU could run in either order.
"""

from __future__ import annotations

from contextlib import contextmanager


class FakeStream:
    def __init__(self, cuda: "FakeCuda", name: str):
        self.cuda, self.name = cuda, name

    def wait_event(self, event: "FakeEvent") -> None:
        self.cuda.trace.append((self.name, "wait", event.id))

    def synchronize(self) -> None:
        self.cuda.host_syncs += 1


class FakeEvent:
    def __init__(self, cuda: "FakeCuda", ident: int):
        self.cuda, self.id = cuda, ident

    def record(self, stream: FakeStream | None = None) -> None:
        stream = stream or self.cuda.current_stream()
        self.cuda.trace.append((stream.name, "record", self.id))

    def synchronize(self) -> None:
        self.cuda.host_syncs += 1

    def query(self) -> bool:
        self.cuda.host_syncs += 1
        return True


class FakeCuda:
    def __init__(self):
        self.trace: list[tuple] = []
        self.host_syncs = 0
        self._events = 0
        self._streams = 0
        self._stack = [FakeStream(self, "compute")]

    def Stream(self, device=None) -> FakeStream:  # noqa: N802 (torch.cuda's name)
        self._streams += 1
        return FakeStream(self, f"side{self._streams}")

    def Event(self, **_) -> FakeEvent:  # noqa: N802
        self._events += 1
        return FakeEvent(self, self._events)

    def current_stream(self, device=None) -> FakeStream:
        return self._stack[-1]

    @contextmanager
    def stream(self, stream: FakeStream):
        self._stack.append(stream)
        try:
            yield
        finally:
            self._stack.pop()

    def synchronize(self, device=None) -> None:
        self.host_syncs += 1

    def trace_op(self, stream: FakeStream, label: tuple) -> None:
        self.trace.append((stream.name, "op", tuple(label)))

    def trace_labels(self) -> list[tuple]:
        return list(self.trace)


@contextmanager
def counting_host_syncs(fake: FakeCuda):
    """Count, into ``fake.host_syncs``, every call of torch.cuda's host synchronizations too."""
    import torch

    patched = [(torch.cuda, "synchronize"), (torch.cuda.Stream, "synchronize"),
               (torch.cuda.Event, "synchronize"), (torch.cuda.Event, "query")]
    saved = [(owner, name, getattr(owner, name)) for owner, name in patched]

    def count(*_, **__):
        fake.host_syncs += 1

    try:
        for owner, name in patched:
            setattr(owner, name, count)
        yield fake
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _clocks(trace):
    """Each operation of ``trace`` with its vector clock (what it is ordered after)."""
    streams: dict[str, dict[str, int]] = {}
    events: dict[int, dict[str, int]] = {}
    ops = []
    for stream, kind, payload in trace:
        clock = streams.setdefault(stream, {})
        if kind == "record":
            events[payload] = dict(clock)
        elif kind == "wait":
            for other, tick in events.get(payload, {}).items():
                clock[other] = max(clock.get(other, 0), tick)
        else:
            clock[stream] = clock.get(stream, 0) + 1
            ops.append((stream, payload, dict(clock)))
    return ops


def _before(a, b) -> bool:
    stream, _, clock = a
    return b[2].get(stream, 0) >= clock[stream]


def _slot_access(label):
    """(receive buffer, writes?) an operation touches, or None."""
    if label[0] in ("transfer", "multiply") and label[2] is not None:
        return label[2], label[0] == "transfer"
    return None


def races(trace) -> list[str]:
    """Pairs of operations a GPU could reorder: a transfer into a receive buffer and a multiply
    reading it (or another transfer into it) with no stream order or event between them; and a
    transfer of one SpMM not ordered before the multiplies of the next (which may overwrite the
    rows it sends)."""
    ops = _clocks(trace)
    problems = []
    for i, a in enumerate(ops):
        access_a = _slot_access(a[1])
        if access_a is None:
            continue
        for b in ops[i + 1:]:
            access_b = _slot_access(b[1])
            if access_b and access_b[0] == access_a[0] and (access_a[1] or access_b[1]) and not _before(a, b):
                problems.append(f"{a[1]} on {a[0]} and {b[1]} on {b[0]} are not ordered")
    spmm, transfers = -1, {}
    for op in ops:
        if op[1][0] == "begin":
            spmm += 1
        elif op[1][0] == "transfer":
            transfers.setdefault(spmm, []).append(op)
        elif op[1][0] == "multiply":
            for earlier in transfers.get(spmm - 1, []):
                if not _before(earlier, op):
                    problems.append(f"{earlier[1]} of SpMM {spmm - 1} is not ordered before {op[1]} of SpMM {spmm}")
    return problems
