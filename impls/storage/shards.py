"""A row table split over ranks: device memory shared between GPUs, or host shared memory.

Each rank allocates its own shard (``rows_per_rank`` rows) and fills it with the
closed-form content. ``chunked`` and ``continuous`` modes then map every peer's shard.
On GPUs, by backend:

- ``symm`` (chunked; the default there): torch symmetric memory, a pointer per rank;
- ``ipc`` (chunked): CUDA IPC handles exchanged with an all-gather (cudaIpcGetMemHandle /
  cudaIpcOpenMemHandle, WholeGraph section III-B), a pointer per rank;
- ``vmm`` (continuous, its default; chunked too): every rank's shard mapped into ONE virtual
  address range on every GPU with the CUDA driver's VMM API (vmm.py), so global row i lives at
  ``base + i * row_bytes``; shards are padded to the allocation granularity by rounding the
  rows per rank up (``partition.align_rows``), so rank r's rows start at ``r * rows_per_rank``.
  Chunked over vmm uses ``base + r * shard_bytes`` per rank.

On CPU ranks ``chunked`` maps every rank's file in /dev/shm and ``continuous`` is one shared
file holding the whole table, i.e. a single address space (the backend does not apply).
``distributed`` maps nothing: peers are reached by communication only.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import torch
import torch.distributed as dist

from harness.errors import SkipPoint
from harness.shm import segment_path

from impls.core.layout import RowPartition, TableSpec, closed_form_rows

MODES = ("continuous", "chunked", "distributed")
# How GPU shards are shared: torch symmetric memory (CUDA VMM allocations exchanged by
# torch), legacy CUDA IPC handles (cudaIpcGetMemHandle / cudaIpcOpenMemHandle), or our own
# CUDA VMM range holding every shard (vmm.py; the only one offering continuous addressing).
BACKENDS = ("symm", "ipc", "vmm")
_IPC_LAZY_ENABLE_PEER_ACCESS = 1


def default_backend(mode: str) -> str:
    """The GPU backend used when none is named: vmm for continuous, symm otherwise."""
    return "vmm" if mode == "continuous" else "symm"


def _fill(local: torch.Tensor, start: int, end: int, spec: TableSpec, chunk_rows: int = 1 << 20) -> None:
    for lo in range(start, end, chunk_rows):
        hi = min(end, lo + chunk_rows)
        ids = torch.arange(lo, hi, device=local.device)
        local[lo - start:hi - start] = closed_form_rows(ids, spec.row_elems, spec.torch_dtype)


class ShardedTable:
    """Collective constructor: every rank of the current process group builds it together."""

    def __init__(self, rank, spec: TableSpec, mode: str = "chunked", backend: str | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        backend = backend or default_backend(mode)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}")
        self.rank, self.spec, self.mode, self.backend = rank, spec, mode, backend
        self.partition = RowPartition(spec.num_rows, rank.world_size)
        self.start, self.end = self.partition.bounds(rank.rank)
        self.device = rank.torch_device()
        self.peers: list[torch.Tensor] = []     # per-rank shard views (mapped modes)
        self.peer_ptrs: list[int] = []
        self.whole: torch.Tensor | None = None  # continuous: the whole table (a view)
        self.base_ptr: int | None = None        # GPU vmm: the range's start, global row 0
        self._vmm = None
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
        if self.backend == "vmm" and self.mode != "distributed":
            self._build_vmm()
            return
        if self.mode == "continuous":
            raise SkipPoint(f"continuous addressing on GPUs maps every shard into one address range "
                            f"through CUDA VMM: backend {self.backend} gives a pointer per rank "
                            f"(use backend vmm, the default for continuous)")
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

    def _build_vmm(self) -> None:
        """Every shard in one CUDA VMM range (collective; all ranks raise together)."""
        from .vmm import VmmRange

        spec, world = self.spec, self.rank.world_size
        self._vmm = VmmRange(self.rank, spec.num_rows, spec.row_bytes)
        self._closers.append(self._release_vmm)
        self.partition = self._vmm.layout.partition()      # rows per rank padded to granules
        self.start, self.end = self.partition.bounds(self.rank.rank)
        rpp = self.partition.rows_per_rank
        self.base_ptr = self._vmm.base
        self.peer_ptrs = [self._vmm.segment(r) for r in range(world)]
        problem = None
        try:
            self.peers = [self._device_view(ptr, rpp) for ptr in self.peer_ptrs]
            self.local = self.peers[self.rank.rank]
            if self.mode == "continuous":
                self.whole = self._device_view(self.base_ptr, spec.num_rows)
            _fill(self.local, self.start, self.end, spec)
            torch.cuda.synchronize(self.device)
        except Exception as exc:  # noqa: BLE001 - every rank must learn of it, or the others hang
            problem = f"{type(exc).__name__}: {exc}"
        problems: list = [None] * world
        dist.all_gather_object(problems, problem)
        failed = next(((r, p) for r, p in enumerate(problems) if p), None)
        if failed:
            self.peers, self.whole = [], None
            torch.cuda.synchronize(self.device)
            self._closers.remove(self._release_vmm)
            self._release_vmm()
            raise RuntimeError(f"continuous addressing (CUDA VMM), filling the shard on rank {failed[0]}: "
                               f"{failed[1]}")

    def _release_vmm(self) -> None:
        self.local = None                       # views of memory about to be unmapped
        problems = self._vmm.release()
        if problems:
            import warnings

            warnings.warn("CUDA VMM teardown: " + "; ".join(problems), RuntimeWarning, stacklevel=2)

    def _device_view(self, ptr: int, rows: int) -> torch.Tensor:
        """A torch view of mapped device memory through DLPack (CuPy UnownedMemory), on this
        rank's GPU whatever GPU holds the memory, and never a copy."""
        import cupy as cp

        nbytes = max(rows * self.spec.row_bytes, 1)
        mem = cp.cuda.UnownedMemory(ptr, nbytes, self, device_id=self.rank.local_rank)
        raw = cp.ndarray((nbytes,), dtype=cp.uint8, memptr=cp.cuda.MemoryPointer(mem, 0))
        flat = torch.from_dlpack(raw)
        if flat.device != self.device or flat.data_ptr() != ptr:
            raise RuntimeError(f"DLPack view of 0x{ptr:x} came back as 0x{flat.data_ptr():x} on {flat.device}")
        return flat[: rows * self.spec.row_bytes].view(self.spec.torch_dtype).view(rows, self.spec.row_elems)

    def kernel_parts(self) -> tuple[list[int], int]:
        """(part base addresses, rows per part) for impls/core/kernels/gather.cu. Continuous on GPUs: ONE
        part, the range's base (global row i at base + i * row_bytes); otherwise a part per rank."""
        if self.mode == "continuous" and self.base_ptr is not None:
            return [self.base_ptr], self.partition.rows_per_rank
        return list(self.peer_ptrs), self.partition.rows_per_rank

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
            path = segment_path(f"{self._tag}-whole")
            if self.rank.rank == 0:
                self._create_file(path, spec.nbytes)
            dist.barrier()
            self.whole = self._map(path, spec.num_rows)
            self.local = self.whole[self.start:self.end]
            _fill(self.local, self.start, self.end, spec)
            return
        path = segment_path(f"{self._tag}-r{self.rank.rank}")
        self._create_file(path, max(rpp * spec.row_bytes, 1))
        self.local = self._map(path, rpp)
        _fill(self.local, self.start, self.end, spec)
        dist.barrier()
        if self.mode == "chunked":
            self.peers = [self.local if r == self.rank.rank else
                          self._map(segment_path(f"{self._tag}-r{r}"), rpp)
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
        elif self._vmm is not None:
            where = f"device memory in {self._vmm.describe()}"
        elif self.backend == "symm":
            where = "device memory shared as torch symmetric memory (CUDA VMM)"
        else:
            where = "device memory (cudaMalloc) shared by CUDA IPC handles"
        return f"{self.mode} store in {where}, {self.rank.world_size} ranks x {self.partition.rows_per_rank} rows"

    def close(self) -> None:
        """Collective: peers unmap before owners free."""
        if self.rank.device == "cuda":
            torch.cuda.synchronize(self.device)   # this rank's reads of peer memory are done
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
