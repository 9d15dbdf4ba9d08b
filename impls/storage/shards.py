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

Across nodes (``rank.nodes > 1``: torchrun's nodes, harness/launcher.py) the rows stay split over
every rank, but a rank maps only the shards of its own node (``mapped``: those ranks, contiguous, and
``mapped_rows``: their rows); the rows of other nodes are reached through NCCL, WholeGraph's
distributed memory (impls/gather's ``exchange_rows``), never through a peer mapping or a host file.
``chunked`` only (symm or ipc on GPUs): continuous addressing is one node's range. ``node_aware=False``
builds the single-node store anyway, mapping every rank: what the tests show must never serve a row
of another node. ``reads`` (:class:`ReadCounts`, on where ``count_reads``) counts the rows read per
owner rank and path.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import torch

from harness.errors import SkipPoint
from harness.ranks import all_gather, barrier, broadcast
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


class ReadCounts:
    """Rows read from each owner rank's shard, by path: ``mapped`` (a shard of this node mapped: P2P
    over NVLink, or a host shared-memory file) and ``nccl`` (rows of another node, through NCCL's
    alltoallv; gloo on CPU ranks)."""

    PATHS = ("mapped", "nccl")

    def __init__(self, world: int):
        self.rows = {path: [0] * world for path in self.PATHS}

    def add(self, path: str, owners: torch.Tensor) -> None:
        if owners.numel():
            counts = torch.bincount(owners.to(torch.int64), minlength=len(self.rows[path])).tolist()
            self.rows[path] = [a + b for a, b in zip(self.rows[path], counts)]

    def mapped_from_other_nodes(self, rank) -> dict[int, int]:
        """{owner rank on another node than ``rank``'s: rows read through a mapping}: empty when every
        row of another node came through NCCL."""
        return {owner: n for owner, n in enumerate(self.rows["mapped"])
                if n and rank.topology is not None and rank.topology.node_of[owner] != rank.node}


class ShardedTable:
    """Collective constructor: every rank of the current process group builds it together."""

    def __init__(self, rank, spec: TableSpec, mode: str = "chunked", backend: str | None = None,
                 node_aware: bool = True, count_reads: bool = False):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        backend = backend or default_backend(mode)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}")
        self.rank, self.spec, self.mode, self.backend = rank, spec, mode, backend
        self.partition = RowPartition(spec.num_rows, rank.world_size)
        self.start, self.end = self.partition.bounds(rank.rank)
        self.device = rank.torch_device()
        # the ranks whose shards this one maps (their group: the node's, across nodes), in rank order
        self.mapping = self._mapping(node_aware) if mode != "distributed" else rank
        self.mapped: tuple[int, ...] = tuple(self.mapping.global_rank(r) for r in range(self.mapping.world_size)) \
            if self.mapping is not rank else tuple(range(rank.world_size))
        self.reads = ReadCounts(rank.world_size) if count_reads else None
        self.peers: list[torch.Tensor] = []     # shard views of the ``mapped`` ranks (mapped modes)
        self.peer_ptrs: list[int] = []
        self.whole: torch.Tensor | None = None  # continuous: the whole table (a view)
        self.base_ptr: int | None = None        # GPU vmm: the range's start, global row 0
        self._vmm = None
        self._closers = []
        if rank.device == "cuda":
            self._build_device()
        else:
            try:
                self._build_host()
            except BaseException:
                self._run_closers()             # this rank's own file goes (every rank fails here alike)
                raise
        barrier(self.rank)

    def _mapping(self, node_aware: bool):
        """The ranks that map each other's shards: every rank on one node (or ``node_aware=False``),
        else this node's (module doc)."""
        rank = self.rank
        if rank.nodes == 1 or not node_aware:
            return rank
        if self.mode == "continuous":
            raise SkipPoint(f"continuous addressing maps one node's shards into one range: these ranks span "
                            f"{rank.topology_label()} (chunked maps the node's peers and reaches the other nodes "
                            "through NCCL; distributed reaches every peer through NCCL)")
        if rank.device == "cuda" and self.backend == "vmm":
            raise SkipPoint("the CUDA VMM store maps the shards of every rank of its group: across nodes use "
                            "backend symm or ipc (chunked)")
        mine = rank.node_ranks
        if list(mine) != list(range(mine[0], mine[0] + len(mine))):
            raise SkipPoint(f"the ranks of node {rank.node} ({', '.join(map(str, mine))}) are not consecutive: a "
                            "node's mapped shards must be one run of rows")
        return rank.node_view()

    @property
    def mapped_rows(self) -> tuple[int, int]:
        """[first, end) of the rows of the ``mapped`` ranks' shards (every row on one node)."""
        first = self.partition.bounds(self.mapped[0])[0]
        return first, self.partition.bounds(self.mapped[-1])[1]

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
        handles = all_gather(self.mapping, bytes(rt.ipcGetMemHandle(self._mem.ptr)))
        for r, handle in enumerate(handles):
            if r == self.mapping.rank:
                ptr = self._mem.ptr
            else:
                with cp.cuda.Device(self.rank.local_rank):
                    ptr = rt.ipcOpenMemHandle(handle, _IPC_LAZY_ENABLE_PEER_ACCESS)
                self._closers.append(lambda p=ptr: rt.ipcCloseMemHandle(p))
            self.peer_ptrs.append(int(ptr))
            self.peers.append(self._view(ptr, rpp))

    def _build_symmetric(self) -> None:
        import warnings

        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        spec, rpp = self.spec, self.partition.rows_per_rank
        group = self.mapping.group or dist.group.WORLD
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
        me = self.mapping.rank
        offset = self._symm_local.data_ptr() - int(self._symm.buffer_ptrs[me])
        self.peer_ptrs = [int(p) + offset for p in self._symm.buffer_ptrs]
        self.peers = [self.local if r == me else
                      self._symm.get_buffer(r, (max(rpp, 1), spec.row_elems), spec.torch_dtype,
                                            offset // spec.elem_bytes)[:rpp]
                      for r in range(self.mapping.world_size)]

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
        problems = all_gather(self.rank, problem)
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
        part, the range's base (global row i at base + i * row_bytes); otherwise a part per mapped rank
        (across nodes this node's: the kernel then reads row i - ``mapped_rows[0]``)."""
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
        self._tag = broadcast(self.rank, uuid.uuid4().hex if self.rank.rank == 0 else None)
        if self.mode == "continuous":
            path = segment_path(f"{self._tag}-whole")
            if self.rank.rank == 0:
                self._create_file(path, spec.nbytes)
            barrier(self.rank)
            self.whole = self._map(path, spec.num_rows)
            self.local = self.whole[self.start:self.end]
            _fill(self.local, self.start, self.end, spec)
            return
        path = segment_path(f"{self._tag}-r{self.rank.rank}")
        self._create_file(path, max(rpp * spec.row_bytes, 1))
        self.local = self._map(path, rpp)
        _fill(self.local, self.start, self.end, spec)
        barrier(self.rank)
        if self.mode == "chunked":
            # the files of the mapped ranks alone: under torchrun each node's files carry its own prefix
            self.peers = [self.local if r == self.rank.rank else
                          self._map(segment_path(f"{self._tag}-r{r}"), rpp)
                          for r in self.mapped]

    def _create_file(self, path: Path, nbytes: int) -> None:
        with open(path, "wb") as fh:
            fh.truncate(nbytes)
        self._closers.append(lambda: path.unlink(missing_ok=True))

    def _map(self, path: Path, rows: int) -> torch.Tensor:
        if not path.exists():       # torch.from_file(shared=True) would create it: an empty shard, never a peer's
            raise FileNotFoundError(f"no shared-memory shard {path} (a rank of another node, or of another "
                                    "launch, made it under its own prefix)")
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
        text = f"{self.mode} store in {where}, {self.rank.world_size} ranks x {self.partition.rows_per_rank} rows"
        if self.rank.nodes > 1 and self.mode != "distributed":
            text += (f"; {self.rank.topology_label()}: the {len(self.mapped)} shards of this node mapped, "
                     "other nodes' rows through NCCL" if len(self.mapped) < self.rank.world_size else
                     f"; {self.rank.topology_label()}, every rank's shard mapped (not node aware)")
        return text

    def _run_closers(self) -> None:
        for close in reversed(self._closers):
            try:
                close()
            except Exception:
                pass
        self._closers.clear()

    def close(self) -> None:
        """Collective: peers unmap before owners free."""
        if self.rank.device == "cuda":
            torch.cuda.synchronize(self.device)   # this rank's reads of peer memory are done
        barrier(self.rank)
        self.peers.clear()
        self.whole = None
        self._run_closers()
        barrier(self.rank)
        self._mem = None
        self._symm = None
        self._symm_local = None
