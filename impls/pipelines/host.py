"""What the host-memory pipelines (PyG's and DGL's recipes) share.

- ``HostFeatureGather``: the features stay in host memory (the dataset's memory map, one copy in
  the page cache for every rank); each mini-batch's rows are sliced by the CPU into a pinned
  staging buffer and copied to the GPU asynchronously. Two staging buffers alternate, and a
  buffer is refilled only after the copy that last read it has finished (a CUDA event), so
  the loop needs no synchronization of its own.
- ``LoaderBatches``: a batch sampler whose batches are set before each pass, so one loader
  with persistent worker processes serves every epoch and evaluation with the base loop's
  batches (the same seeds, in the same order, on every pipeline).
- ``loader_workers``: the default number of loader worker processes per rank.
"""

from __future__ import annotations

import os

import torch


def loader_workers(option, device: torch.device, world: int) -> int:
    """``option`` when given; else none on CPU ranks (CI) and the cores per rank minus one
    (the training process needs one) on GPUs, at most 8."""
    if option is not None and option != "auto":
        return max(0, int(option))
    if device.type != "cuda":
        return 0
    cores = os.cpu_count() or 1
    return max(1, min(8, cores // max(1, world) - 1))


def limit_threads(device: torch.device, world: int, workers: int) -> None:
    """GPU ranks of host pipelines slice features with torch's CPU threads while their loader
    workers sample: the rank's share of the cores left to its workers, at most half (at least one)."""
    if device.type == "cuda":
        share = (os.cpu_count() or 1) // max(1, world)
        torch.set_num_threads(max(1, min(share - workers, share // 2)))


class HostFeatureGather:
    def __init__(self, features: torch.Tensor, device: torch.device, buffers: int = 2):
        self.features = features
        self.device = device
        self._bufs: list[torch.Tensor | None] = [None] * buffers
        self._events: list = [None] * buffers
        self._next = 0

    def _staging(self, slot: int, n: int) -> torch.Tensor:
        buf = self._bufs[slot]
        if buf is None or buf.shape[0] < n:
            rows = max(n, int(1.25 * (0 if buf is None else buf.shape[0])), 1)
            buf = torch.empty((rows,) + tuple(self.features.shape[1:]), dtype=self.features.dtype,
                              pin_memory=True)
            self._bufs[slot] = buf
        return buf[:n]

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.to("cpu", torch.int64)
        if self.device.type != "cuda":
            return torch.index_select(self.features, 0, ids)
        slot = self._next
        self._next = (slot + 1) % len(self._bufs)
        if self._events[slot] is not None:
            self._events[slot].synchronize()          # the last copy out of this buffer is done
        staged = torch.index_select(self.features, 0, ids, out=self._staging(slot, ids.numel()))
        out = staged.to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        self._events[slot] = event
        return out

    def staging_bytes(self) -> int:
        return sum(int(b.numel()) * b.element_size() for b in self._bufs if b is not None)

    def describe(self) -> str:
        where = "pinned staging, async H2D copy" if self.device.type == "cuda" else "no copy (CPU rank)"
        return f"features in host memory (dataset memory map); CPU index_select per mini-batch, {where}"


class LoaderBatches:
    """A batch sampler (``DataLoader(batch_sampler=...)``) over node ids set per pass."""

    def __init__(self):
        self.batches: list[torch.Tensor] = []

    def __iter__(self):
        for b in self.batches:
            yield b.tolist()

    def __len__(self) -> int:
        return len(self.batches)


def stop_workers(loader) -> None:
    """Shut a DataLoader's persistent workers down (they would outlive the pipeline)."""
    it = getattr(loader, "_iterator", None)
    if it is not None and hasattr(it, "_shutdown_workers"):
        it._shutdown_workers()
    if loader is not None:
        loader._iterator = None
