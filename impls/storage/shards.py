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
# How GPU shards are shared: torch symmetric memory (CUDA VMM allocations exchanged by
# torch) or legacy CUDA IPC handles (cudaIpcGetMemHandle / cudaIpcOpenMemHandle).
BACKENDS = ("symm", "ipc")
_IPC_LAZY_ENABLE_PEER_ACCESS = 1
SHM_DIR = Path(os.environ.get("HARNESS_SHM_DIR", "/dev/shm"))


def _fill(local: torch.Tensor, start: int, end: int, spec: TableSpec, chunk_rows: int = 1 << 20) -> None:
    for lo in range(start, end, chunk_rows):
        hi = min(end, lo + chunk_rows)
        ids = torch.arange(lo, hi, device=local.device)
        local[lo - start:hi - start] = closed_form_rows(ids, spec.row_elems, spec.torch_dtype)


class ShardedTable:
    """Collective constructor: every rank of the current process group builds it together."""

    def __init__(self, rank, spec: TableSpec, mode: str = "chunked", backend: str = "symm"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}")
        self.rank, self.spec, self.mode, self.backend = rank, spec, mode, backend
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
        if self.backend == "symm" and self.mode != "distributed":
            self._build_symmetric()
            return
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

    def _build_symmetric(self) -> None:
        import warnings

        import torch.distributed._symmetric_memory as symm_mem

        spec, rpp = self.spec, self.partition.rows_per_rank
        group = dist.group.WORLD
        with warnings.catch_warnings():  # required before torch 2.12, deprecated after
            warnings.simplefilter("ignore", FutureWarning)
            if hasattr(symm_mem, "enable_symm_mem_for_group"):
                symm_mem.enable_symm_mem_for_group(group.group_name)
        self._symm_local = symm_mem.empty(max(rpp, 1), spec.row_elems, dtype=spec.torch_dtype,
                                          device=self.device)
        self.local = self._symm_local[:rpp]
        _fill(self.local, self.start, self.end, spec)
        torch.cuda.synchronize(self.device)
        self._symm = symm_mem.rendezvous(self._symm_local, group)
        offset = self._symm_local.data_ptr() - int(self._symm.buffer_ptrs[self.rank.rank])
        self.peer_ptrs = [int(p) + offset for p in self._symm.buffer_ptrs]
        self.peers = [self.local if r == self.rank.rank else
                      self._symm.get_buffer(r, (max(rpp, 1), spec.row_elems), spec.torch_dtype,
                                            offset // spec.elem_bytes)[:rpp]
                      for r in range(self.rank.world_size)]

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
        if self.rank.device != "cuda":
            where = "host shared memory (/dev/shm)"
        elif self.mode == "distributed":
            where = "device memory (cudaMalloc), not mapped by peers"
        elif self.backend == "symm":
            where = "device memory shared as torch symmetric memory (CUDA VMM)"
        else:
            where = "device memory (cudaMalloc) shared by CUDA IPC handles"
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
        self._symm = None
        self._symm_local = None
