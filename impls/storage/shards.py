"""A row table split over ranks: device memory shared by CUDA IPC, or host shared memory.

Each rank allocates its own shard (``rows_per_rank`` rows) and fills it with the
closed-form content. ``chunked`` and ``continuous`` modes then map every peer's shard:
on GPUs through CUDA IPC handles exchanged with an all-gather (cudaIpcGetMemHandle /
cudaIpcOpenMemHandle, WholeGraph section III-B), on CPU ranks through files in
/dev/shm that every rank maps. ``distributed`` maps nothing: peers are reached by
communication only. On CPU ranks ``continuous`` is one shared file holding the whole
table, i.e. a single address space; on GPUs continuous addressing needs CUDA virtual
memory mapping, which this store does not do yet.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import torch
import torch.distributed as dist

from harness.errors import SkipPoint

from .layout import RowPartition, TableSpec, closed_form_rows

MODES = ("continuous", "chunked", "distributed")
_IPC_LAZY_ENABLE_PEER_ACCESS = 1
SHM_DIR = Path(os.environ.get("HARNESS_SHM_DIR", "/dev/shm"))


def _fill(local: torch.Tensor, start: int, end: int, spec: TableSpec, chunk_rows: int = 1 << 20) -> None:
    for lo in range(start, end, chunk_rows):
        hi = min(end, lo + chunk_rows)
        ids = torch.arange(lo, hi, device=local.device)
        local[lo - start:hi - start] = closed_form_rows(ids, spec.row_elems, spec.torch_dtype)


class ShardedTable:
    """Collective constructor: every rank of the current process group builds it together."""

    def __init__(self, rank, spec: TableSpec, mode: str = "chunked"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.rank, self.spec, self.mode = rank, spec, mode
        self.partition = RowPartition(spec.num_rows, rank.world_size)
        self.start, self.end = self.partition.bounds(rank.rank)
        self.device = rank.torch_device()
        self.peers: list[torch.Tensor] = []     # per-rank shard views (mapped modes)
        self.peer_ptrs: list[int] = []
        self.whole: torch.Tensor | None = None  # CPU continuous: the whole table
        self._closers = []
        if rank.device == "cuda":
            self._build_device()
        else:
            self._build_host()
        dist.barrier()

    # --- GPU: cudaMalloc shards, IPC handles --------------------------------------------
    def _build_device(self) -> None:
        import cupy as cp

        spec, rpp = self.spec, self.partition.rows_per_rank
        if self.mode == "continuous":
            raise SkipPoint("continuous addressing on GPUs needs CUDA VMM mapping of peer memory "
                            "into one address range; this store offers chunked and distributed")
        nbytes = max(rpp * spec.row_bytes, 1)
        with cp.cuda.Device(self.rank.local_rank):
            self._mem = cp.cuda.memory.Memory(nbytes)  # a plain cudaMalloc, exportable by IPC
        self.local = self._view(self._mem.ptr, rpp)
        _fill(self.local, self.start, self.end, spec)
        torch.cuda.synchronize(self.device)
        if self.mode == "distributed":
            return
        rt = cp.cuda.runtime
        handles: list = [None] * self.rank.world_size
        dist.all_gather_object(handles, bytes(rt.ipcGetMemHandle(self._mem.ptr)))
        for r, handle in enumerate(handles):
            if r == self.rank.rank:
                ptr = self._mem.ptr
            else:
                with cp.cuda.Device(self.rank.local_rank):
                    ptr = rt.ipcOpenMemHandle(handle, _IPC_LAZY_ENABLE_PEER_ACCESS)
                self._closers.append(lambda p=ptr: rt.ipcCloseMemHandle(p))
            self.peer_ptrs.append(int(ptr))
            self.peers.append(self._view(ptr, rpp))

    def _view(self, ptr: int, rows: int) -> torch.Tensor:
        """A torch view of raw device memory (no copy), through CuPy's array interface."""
        import cupy as cp

        nbytes = max(rows * self.spec.row_bytes, 1)
        mem = cp.cuda.UnownedMemory(ptr, nbytes, self, device_id=self.rank.local_rank)
        raw = cp.ndarray((nbytes,), dtype=cp.uint8, memptr=cp.cuda.MemoryPointer(mem, 0))
        flat = torch.as_tensor(raw, device=self.device)
        return flat[: rows * self.spec.row_bytes].view(self.spec.torch_dtype).view(rows, self.spec.row_elems)

    # --- CPU: files in /dev/shm ---------------------------------------------------------
    def _build_host(self) -> None:
        spec, rpp = self.spec, self.partition.rows_per_rank
        tag = [uuid.uuid4().hex if self.rank.rank == 0 else None]
        dist.broadcast_object_list(tag, src=0)
        self._tag = tag[0]
        if self.mode == "continuous":
            path = SHM_DIR / f"harness-{self._tag}-whole"
            if self.rank.rank == 0:
                self._create_file(path, spec.nbytes)
            dist.barrier()
            self.whole = self._map(path, spec.num_rows)
            self.local = self.whole[self.start:self.end]
            _fill(self.local, self.start, self.end, spec)
            return
        path = SHM_DIR / f"harness-{self._tag}-r{self.rank.rank}"
        self._create_file(path, max(rpp * spec.row_bytes, 1))
        self.local = self._map(path, rpp)
        _fill(self.local, self.start, self.end, spec)
        dist.barrier()
        if self.mode == "chunked":
            self.peers = [self.local if r == self.rank.rank else
                          self._map(SHM_DIR / f"harness-{self._tag}-r{r}", rpp)
                          for r in range(self.rank.world_size)]

    def _create_file(self, path: Path, nbytes: int) -> None:
        with open(path, "wb") as fh:
            fh.truncate(nbytes)
        self._closers.append(lambda: path.unlink(missing_ok=True))

    def _map(self, path: Path, rows: int) -> torch.Tensor:
        nbytes = max(rows * self.spec.row_bytes, 1)
        flat = torch.from_file(str(path), shared=True, size=nbytes, dtype=torch.uint8)
        return flat[: rows * self.spec.row_bytes].view(self.spec.torch_dtype).view(rows, self.spec.row_elems)

    def describe(self) -> str:
        where = "device memory (cudaMalloc + CUDA IPC)" if self.rank.device == "cuda" else \
            "host shared memory (/dev/shm)"
        return f"{self.mode} store in {where}, {self.rank.world_size} ranks x {self.partition.rows_per_rank} rows"

    def close(self) -> None:
        """Collective: peers unmap before owners free."""
        dist.barrier()
        self.peers.clear()
        self.whole = None
        for close in reversed(self._closers):
            try:
                close()
            except Exception:
                pass
        self._closers.clear()
        dist.barrier()
        self._mem = None
