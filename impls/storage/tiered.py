"""Tiered stores: a graph's CSR and feature rows over the GPUs' memory and the host, by TierLayouts.

One engine serves GGMS (ggms.py), DGL+C (dgl_cache.py) and Quiver (quiver.py): they differ only in
their two :class:`~impls.storage.tiers.TierLayout` (topology, features) and in the sampler variant.
Every id here is a hot-order id (impls/storage/reorder.py); the store keeps the reordering.

Physical memory (``rank.device == "cuda"``):

- each GPU's buffer holds its slots of the layout (``rows_per_gpu`` rows). When some worker reads
  another GPU's buffer, the buffers are torch symmetric memory and every rank maps every peer
  (XGNN's DAM: "each Worker synchronizes with its neighbors to exchange data pointers");
  otherwise (replicated layouts) a plain device allocation;
- the host rows are one file in /dev/shm that every rank maps, page-locked and mapped
  (cudaHostRegister) so kernels read it directly over PCIe (zero copy, UVA);
- kernels reach every tier through a part-pointer table: the gather kernel
  (impls/core/kernels/gather.cu) for features, the sampling kernels' graph descriptor
  (impls/core/kernels/common.cuh) for the CSR: parts 0..G-1 are the GPU buffers, part G the
  host rows (the last part takes every index past the GPU buffers).

CPU ranks: host shared memory stands in for both tiers. The physical index space (every GPU buffer,
then the host rows) is one /dev/shm table that every rank maps; each rank fills its own GPU
buffer's region. Reads go through the same physical indices and the same counters, so which tier
each access would hit is accounted exactly as on GPUs.

Counters (:class:`TierCounters`) add, per access, the bytes a request needs from its tier: a
feature row (``row_bytes``); a row lookup (16 bytes of indptr) plus the neighbour ids returned
(sampled ones for the sampler, all for :meth:`TieredStore.neighbors`). Sampling kernels that scan
whole rows (the reservoir KHop) read more than they return; xgnn.fig14 counts those requests.
"""

from __future__ import annotations

import uuid
import warnings

import numpy as np
import torch
import torch.distributed as dist

from harness.errors import HarnessError
from harness.shm import segment_path
from impls.core import cuda
from impls.core.layout import RowPartition, check_ids

from .budget import SYMM_ALIGN_WORDS, DegreeIndex, layout_memory
from .gpu import KERNELS
from .reorder import Reordering
from .tiers import HOST, LOCAL_GPU, REMOTE_GPU, TIERS, TierLayout

MAXP = 16                       # parts of a sampling descriptor / gather pointer table
_HOST_REGISTER_PORTABLE = 1
_HOST_REGISTER_MAPPED = 2
_U32 = (1 << 32) - 1


# --- process group helpers (a world of one needs no group) ------------------------------------

def _grouped() -> bool:
    return dist.is_available() and dist.is_initialized()


def _barrier() -> None:
    if _grouped():
        dist.barrier()


def _shared_tag(rank) -> str:
    tag = [uuid.uuid4().hex if rank.rank == 0 else None]
    if _grouped():
        dist.broadcast_object_list(tag, src=0)
    elif rank.world_size > 1:
        raise HarnessError("a store over several ranks needs an initialized process group")
    return tag[0]


def _id_dtype(num_nodes: int) -> torch.dtype:
    return torch.int32 if num_nodes < 2 ** 31 else torch.int64


# --- memory of one tier ------------------------------------------------------------------------

class SharedHostArray:
    """A flat host array every rank maps (/dev/shm); page-locked and mapped on CUDA ranks."""

    def __init__(self, rank, tag: str, name: str, numel: int, dtype: torch.dtype, register: bool):
        rank.require_one_node("a host array every rank maps")
        self.rank = rank
        elem = torch.empty(0, dtype=dtype).element_size()
        self.nbytes = max(int(numel) * elem, 1)
        self.path = segment_path(f"{tag}-{name}")
        if rank.rank == 0:
            with open(self.path, "wb") as fh:
                fh.truncate(self.nbytes)
        _barrier()
        flat = torch.from_file(str(self.path), shared=True, size=self.nbytes, dtype=torch.uint8)
        self._flat = flat
        self.tensor = flat[: int(numel) * elem].view(dtype)
        self.registered_ptr: int | None = None
        if register:
            import cupy as cp

            with cp.cuda.Device(rank.local_rank):
                cp.cuda.runtime.hostRegister(flat.data_ptr(), self.nbytes,
                                             _HOST_REGISTER_PORTABLE | _HOST_REGISTER_MAPPED)
            self.registered_ptr = flat.data_ptr()   # unified addressing: valid on the device too

    @property
    def ptr(self) -> int:
        return self.tensor.data_ptr()

    def close(self) -> None:
        if self.registered_ptr is not None:
            import cupy as cp

            with cp.cuda.Device(self.rank.local_rank):
                cp.cuda.runtime.hostUnregister(self.registered_ptr)
            self.registered_ptr = None
        self.tensor = self._flat = None
        if self.rank.rank == 0:
            self.path.unlink(missing_ok=True)


class GpuBuffers:
    """Every rank's device buffer of ``numel`` elements; with ``shared``, torch symmetric memory
    that every rank maps (peer views and pointers), else a plain allocation read by its owner."""

    def __init__(self, rank, numel: int, dtype: torch.dtype, shared: bool):
        if shared:
            rank.require_one_node("GPU buffers every rank maps")
        self.rank, self.numel, self.dtype, self.shared = rank, int(numel), dtype, shared
        device = rank.torch_device()
        self._symm = None
        if shared:
            import torch.distributed._symmetric_memory as symm_mem

            group = dist.group.WORLD
            with warnings.catch_warnings():          # required before torch 2.12, deprecated after
                warnings.simplefilter("ignore", FutureWarning)
                if hasattr(symm_mem, "enable_symm_mem_for_group"):
                    symm_mem.enable_symm_mem_for_group(group.group_name)
            self._alloc = symm_mem.empty(max(self.numel, 1), dtype=dtype, device=device)
        else:
            self._alloc = torch.empty(max(self.numel, 1), dtype=dtype, device=device)
        self.local = self._alloc[: self.numel]
        self.ptrs = [0] * rank.world_size
        self.ptrs[rank.rank] = self._alloc.data_ptr()
        self.views: list[torch.Tensor | None] = [None] * rank.world_size
        self.views[rank.rank] = self.local

    def map_peers(self) -> None:
        """Collective (shared buffers): exchange pointers once every rank filled its buffer."""
        if not self.shared:
            return
        import torch.distributed._symmetric_memory as symm_mem

        torch.cuda.synchronize(self.rank.torch_device())
        handle = symm_mem.rendezvous(self._alloc, dist.group.WORLD)
        me = self.rank.rank
        offset = self._alloc.data_ptr() - int(handle.buffer_ptrs[me])
        elem = self._alloc.element_size()
        self._symm = handle
        for r in range(self.rank.world_size):
            self.ptrs[r] = int(handle.buffer_ptrs[r]) + offset
            if r != me:
                self.views[r] = handle.get_buffer(r, (max(self.numel, 1),), self.dtype, offset // elem)[: self.numel]

    def nbytes(self) -> int:
        return max(self.numel, 1) * self._alloc.element_size()

    def barrier(self, channel: int = 0) -> None:
        """Device-side barrier of every rank's current stream (shared buffers, after map_peers):
        work enqueued after it on a rank's stream starts once every rank's stream has reached it,
        and no host waits."""
        self._symm.barrier(channel=channel)

    def close(self) -> None:
        self.views = []
        self.local = None
        self._symm = None
        self._alloc = None


# --- counters ------------------------------------------------------------------------------------

class TierCounters:
    """Accesses and bytes per tier (local GPU, remote GPU over NVLink, host over PCIe), for the
    topology and the features. Device-side sums without synchronization; read with snapshot()."""

    KINDS = ("topology", "features")

    def __init__(self, device):
        self.device = torch.device(device)
        self.accesses = torch.zeros((2, 3), dtype=torch.int64, device=self.device)
        self.bytes = torch.zeros((2, 3), dtype=torch.int64, device=self.device)
        self.enabled = True
        self._tiers = torch.arange(3, device=self.device)

    def add(self, kind: str, tier: torch.Tensor, nbytes) -> None:
        if not self.enabled or tier.numel() == 0:
            return
        k = self.KINDS.index(kind)
        onehot = (tier.reshape(-1, 1) == self._tiers).to(torch.int64)        # [n, 3], no atomics, no sync
        counts = onehot.sum(0)
        self.accesses[k] += counts
        if isinstance(nbytes, torch.Tensor):
            self.bytes[k] += (onehot * nbytes.reshape(-1, 1).to(torch.int64)).sum(0)
        else:
            self.bytes[k] += counts * int(nbytes)

    def add_rows(self, kind: str, layout, index: torch.Tensor, worker: int, const_bytes: int,
                 offsets: torch.Tensor | None = None, per_item_bytes: int = 0) -> None:
        """Counts reads of the physical rows ``index`` of ``layout`` by ``worker``: ``const_bytes``
        each, plus ``per_item_bytes`` per item of a neighbor list when ``offsets`` (its CSR offsets
        over ``index``) is given; negative indices (no read) are skipped. One kernel (tiers.cu
        tier_count) where the kernels run."""
        if not self.enabled or index.numel() == 0:
            return
        if cuda.kernel_device_ok(index.device):
            k = self.KINDS.index(kind)
            index = index.contiguous()
            KERNELS.launch(index.device, "tiers.cu", "tier_count", cuda.grid_for(index.device, index.numel()), 256,
                           (cuda.ptr(index), np.int64(index.numel()),
                            cuda.ptr(offsets.contiguous() if offsets is not None else None), np.int64(const_bytes),
                            np.int64(per_item_bytes), np.int64(layout.rows_per_gpu), np.int64(layout.host_base),
                            np.int64(worker), cuda.ptr(self.accesses[k]), cuda.ptr(self.bytes[k])))
            return
        nbytes = const_bytes if offsets is None else const_bytes + (offsets[1:] - offsets[:-1]) * per_item_bytes
        read = index >= 0
        if not bool(read.all()):
            index = index[read]
            nbytes = nbytes if offsets is None else nbytes[read]
        self.add(kind, layout.tier_of_physical(index, worker), nbytes)

    def reset(self) -> None:
        self.accesses.zero_()
        self.bytes.zero_()

    def snapshot(self, all_ranks: bool = False) -> dict:
        """{'topology'|'features': {tier: {'accesses', 'bytes'}, 'hit_rate', 'accesses', 'bytes'}}.

        ``all_ranks``: summed over the process group (collective: every rank must call it)."""
        acc, byt = self.accesses.clone(), self.bytes.clone()
        if all_ranks and _grouped():
            dist.all_reduce(acc)
            dist.all_reduce(byt)
        acc, byt = acc.cpu().tolist(), byt.cpu().tolist()
        out = {}
        for k, kind in enumerate(self.KINDS):
            total = sum(acc[k])
            entry = {t: {"accesses": acc[k][i], "bytes": byt[k][i]} for i, t in enumerate(TIERS)}
            entry["accesses"], entry["bytes"] = total, sum(byt[k])
            entry["hit_rate"] = (acc[k][LOCAL_GPU] + acc[k][REMOTE_GPU]) / total if total else None
            entry["local_rate"] = acc[k][LOCAL_GPU] / total if total else None
            out[kind] = entry
        return out


# --- filling -------------------------------------------------------------------------------------

def _fill_rows(dst: torch.Tensor, row_ids: np.ndarray, order: np.ndarray | None, features: torch.Tensor,
               chunk: int = 1 << 16) -> None:
    """dst[i] = features[order[row_ids[i]]] (zeros where row_ids is -1), chunk by chunk."""
    for lo in range(0, len(row_ids), chunk):
        r = row_ids[lo:lo + chunk]
        valid = r >= 0
        old = r[valid] if order is None else order[r[valid]]
        block = torch.zeros((len(r), features.shape[1]), dtype=features.dtype)
        if valid.any():
            block[torch.from_numpy(valid)] = features[torch.from_numpy(np.ascontiguousarray(old))]
        dst[lo:lo + len(r)].copy_(block)


def _segments(starts: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Concatenated ranges [starts[i], starts[i] + lengths[i])."""
    total = int(lengths.sum()) if lengths.numel() else 0
    if total == 0:
        return torch.zeros(0, dtype=torch.int64, device=starts.device)
    excl = torch.cumsum(lengths, 0) - lengths
    return torch.repeat_interleave(starts - excl, lengths, output_size=total) + \
        torch.arange(total, device=starts.device)


def _fill_edges(dst: torch.Tensor, row_ids: np.ndarray, order: np.ndarray | None, rank_of: np.ndarray | None,
                indptr: np.ndarray, indices_t: torch.Tensor, chunk_edges: int = 1 << 24) -> None:
    """dst = the neighbour lists of rows ``row_ids`` (hot order, -1 padding: no edges) in order,
    relabelled to hot-order ids, chunk by chunk of about ``chunk_edges`` edges."""
    valid = row_ids >= 0
    old = np.where(valid, row_ids if order is None else order[np.where(valid, row_ids, 0)], 0)
    deg = np.where(valid, indptr[old + 1] - indptr[old], 0)
    rank_t = None if rank_of is None else torch.from_numpy(rank_of)
    out = 0
    lo = 0
    cum = np.cumsum(deg)
    while lo < len(row_ids):
        base = cum[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + chunk_edges, side="right")))
        hi = min(hi, len(row_ids))
        d = torch.from_numpy(deg[lo:hi])
        pos = _segments(torch.from_numpy(indptr[old[lo:hi]]), d)
        nb = indices_t.index_select(0, pos).to(torch.int64)
        if rank_t is not None:
            nb = rank_t.index_select(0, nb)
        dst[out:out + nb.numel()].copy_(nb.to(dst.dtype))
        out += nb.numel()
        lo = hi


# --- features ------------------------------------------------------------------------------------

class TieredFeatures:
    """Collective: the feature rows (hot order) laid out by ``layout`` over the ranks' GPUs and the
    host. ``gather(ids)`` returns rows in the order of ``ids`` on the rank's device."""

    def __init__(self, rank, layout: TierLayout, features: torch.Tensor, order: np.ndarray | None,
                 counters: TierCounters | None = None):
        if layout.num_gpus != rank.world_size:
            raise HarnessError(f"feature layout for {layout.num_gpus} GPUs on {rank.world_size} ranks")
        if features.shape[0] != layout.num_rows:
            raise HarnessError(f"{features.shape[0]} feature rows for a layout of {layout.num_rows}")
        if layout.physical_rows >= _U32:
            raise HarnessError("the gather kernel indexes rows with 32 bits: too many physical rows")
        self.rank, self.layout, self.counters = rank, layout, counters
        self.worker = rank.rank
        self.device = rank.torch_device()
        self.dtype = features.dtype
        self.row_elems = int(features.shape[1])
        self.row_bytes = self.row_elems * features.element_size()
        tag = _shared_tag(rank)
        G, rpg, me = layout.num_gpus, layout.rows_per_gpu, rank.rank
        hlo, hhi = RowPartition(max(layout.host_rows, 1), G).bounds(me)
        hhi = min(hhi, layout.host_rows)
        hlo = min(hlo, hhi)
        host_ids = np.arange(layout.gpu_rows + hlo, layout.gpu_rows + hhi, dtype=np.int64)
        self.gpu: GpuBuffers | None = None
        self.host: SharedHostArray | None = None
        self.whole: SharedHostArray | None = None
        if rank.device == "cuda":
            if rpg:
                self.gpu = GpuBuffers(rank, rpg * self.row_elems, self.dtype, layout.reads_peers())
                _fill_rows(self.gpu.local.view(rpg, self.row_elems), layout.buffer_row_ids(me), order, features)
            if layout.host_rows:
                self.host = SharedHostArray(rank, tag, "feat-host", layout.host_rows * self.row_elems,
                                            self.dtype, register=True)
                rows = self.host.tensor.view(layout.host_rows, self.row_elems)
                _fill_rows(rows[hlo:hhi], host_ids, order, features)
            _barrier()
            if self.gpu is not None:
                self.gpu.map_peers()
            ptrs = (list(self.gpu.ptrs) if self.gpu is not None else []) + \
                ([self.host.registered_ptr] if self.host is not None else [])
            if len(ptrs) > MAXP:
                raise HarnessError(f"at most {MAXP - 1} GPUs per feature store")
            self.rows_per_part = rpg if rpg else _U32
            self.table = torch.tensor(ptrs, dtype=torch.int64, device=self.device)
        else:
            self.whole = SharedHostArray(rank, tag, "feat", layout.physical_rows * self.row_elems, self.dtype,
                                         register=False)
            rows = self.whole.tensor.view(layout.physical_rows, self.row_elems)
            if rpg:
                _fill_rows(rows[me * rpg:(me + 1) * rpg], layout.buffer_row_ids(me), order, features)
            base = layout.host_base
            _fill_rows(rows[base + hlo:base + hhi], host_ids, order, features)
            self.rows = rows
        _barrier()

    def physical(self, ids: torch.Tensor) -> torch.Tensor:
        return self.layout.physical(ids, self.worker)

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        ids = ids.to(self.device, torch.int64)
        if check:
            check_ids(ids, self.layout.num_rows)
        index = self.physical(ids)
        if self.counters is not None:
            self.counters.add_rows("features", self.layout, index, self.worker, self.row_bytes)
        if self.whole is not None:
            return torch.index_select(self.rows, 0, index)
        from impls.core.row_gather import gather_into

        out = torch.empty((ids.numel(), self.row_elems), dtype=self.dtype, device=self.device)
        return gather_into(out, self.table, self.rows_per_part, index, self.row_bytes)

    def gpu_bytes(self) -> int:
        """Bytes this rank allocated on its GPU (0 on CPU ranks: see TieredStore.memory)."""
        return self.gpu.nbytes() if self.gpu is not None and self.layout.rows_per_gpu else 0

    def close(self) -> None:
        """Collective: every rank's kernels are done before peers unmap and owners free."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        _barrier()
        for part in (self.gpu, self.host, self.whole):
            if part is not None:
                part.close()
        self.gpu = self.host = self.whole = None
        self.rows = None
        _barrier()


# --- topology ------------------------------------------------------------------------------------

class TieredCSR:
    """Collective: the CSR (hot-order rows and neighbour ids) laid out by ``layout``.

    Duck-types :class:`impls.sampling.csr.SamplingCSR` for the samplers (``desc``, ``indptr_np``
    and ``indices_np`` on CPU ranks for the numba engine), with the physical index space as rows:
    a sampler is given physical indices (:meth:`TieredStore.sampler` translates) and returns
    hot-order neighbour ids. Parts of the descriptor: the GPU buffers, then the host rows.
    """

    store = "tiered"

    def __init__(self, rank, layout: TierLayout, indptr, indices, reordering: Reordering | None):
        if layout.num_gpus != rank.world_size:
            raise HarnessError(f"topology layout for {layout.num_gpus} GPUs on {rank.world_size} ranks")
        indptr = np.asarray(indptr, dtype=np.int64)
        if indptr.size != layout.num_rows + 1:
            raise HarnessError(f"indptr of {indptr.size - 1} rows for a layout of {layout.num_rows}")
        self.rank, self.layout = rank, layout
        self.worker = rank.rank
        self.device = rank.torch_device()
        self.num_rows = layout.num_rows
        self.num_nodes = layout.physical_rows          # what samplers index (physical rows)
        self.id_dtype = _id_dtype(layout.num_rows)
        self.id_bytes = torch.empty(0, dtype=self.id_dtype).element_size()
        order = None if reordering is None or reordering.is_identity() else reordering.order
        rank_of = None if order is None else reordering.rank
        indices_t = torch.from_numpy(np.asarray(indices))
        deg_old = np.diff(indptr)
        self.degrees_hot = deg_old if order is None else deg_old[order]
        G, rpg, me = layout.num_gpus, layout.rows_per_gpu, rank.rank
        index = DegreeIndex(self.degrees_hot)
        self.gpu_edges = index.gpu_edges(layout) if rpg else [0] * G
        self.host_edges = index.host_edges(layout)
        self.num_edges = sum(self.gpu_edges) + self.host_edges       # physical (copies included)
        # first global (physical) edge of every part: GPU buffers in order, then the host
        self.part_first_edge = list(np.concatenate([[0], np.cumsum(self.gpu_edges)]).astype(int)) if rpg else [0]
        host_first = self.part_first_edge[-1]
        self.max_degree = int(self.degrees_hot.max()) if self.degrees_hot.size else 0
        if self.max_degree >= 1 << 31:
            raise HarnessError("rows of 2^31 neighbors or more are not supported")
        hlo, hhi = RowPartition(max(layout.host_rows, 1), G).bounds(me)
        hhi = min(hhi, layout.host_rows)
        hlo = min(hlo, hhi)
        host_deg = self.degrees_hot[layout.gpu_rows:]
        host_indptr = host_first + np.concatenate([[0], np.cumsum(host_deg)]).astype(np.int64)
        my_rows = layout.buffer_row_ids(me) if rpg else np.zeros(0, dtype=np.int64)
        my_deg = np.where(my_rows >= 0, self.degrees_hot[np.maximum(my_rows, 0)], 0)
        my_indptr = self.part_first_edge[me] + np.concatenate([[0], np.cumsum(my_deg)]).astype(np.int64) \
            if rpg else None
        host_ids = np.arange(layout.gpu_rows + hlo, layout.gpu_rows + hhi, dtype=np.int64)
        tag = _shared_tag(rank)
        self._closers: list = []
        self.gpu: GpuBuffers | None = None
        self.part_views: list = []      # per descriptor part: (indptr view, indices view, first edge) or None
        self.indptr_np = self.indices_np = None
        self.indptr_t = self.indices_t = None
        if rank.device == "cuda":
            self._build_device(tag, my_indptr, my_rows, order, rank_of, indptr, indices_t, host_indptr, host_ids,
                               hlo, hhi)
        else:
            self._build_host(tag, my_indptr, my_rows, order, rank_of, indptr, indices_t, host_indptr, host_ids,
                             hlo, hhi)
        self.counters = torch.zeros(4, dtype=torch.int64, device=self.device)   # sampler API (unused)
        self.sector_bytes, self.shift = 32, 5
        self.count_part = RowPartition(max(self.num_nodes, 1), 1)
        self.count_rank = 0
        self.vstart = np.zeros(1, dtype=np.int64)
        self._desc: torch.Tensor | None = None
        _barrier()

    # --- building -------------------------------------------------------------------------
    def _build_host(self, tag, my_indptr, my_rows, order, rank_of, indptr, indices_t, host_indptr, host_ids,
                    hlo, hhi) -> None:
        layout, rpg, me = self.layout, self.layout.rows_per_gpu, self.rank.rank
        K = layout.physical_rows
        ip = SharedHostArray(self.rank, tag, "csr-indptr", K + 1, torch.int64, register=False)
        ix = SharedHostArray(self.rank, tag, "csr-indices", self.num_edges, self.id_dtype, register=False)
        self._closers += [ip, ix]
        if rpg:
            ip.tensor[me * rpg: (me + 1) * rpg + 1] = torch.from_numpy(my_indptr)
            e0, e1 = int(my_indptr[0]), int(my_indptr[-1])
            _fill_edges(ix.tensor[e0:e1], my_rows, order, rank_of, indptr, indices_t)
        base = layout.host_base
        if layout.host_rows:
            ip.tensor[base + hlo: base + hhi + 1] = torch.from_numpy(host_indptr[hlo:hhi + 1])
            e0, e1 = int(host_indptr[hlo]), int(host_indptr[hhi])
            _fill_edges(ix.tensor[e0:e1], host_ids, order, rank_of, indptr, indices_t)
        _barrier()
        self.indptr_t, self.indices_t = ip.tensor, ix.tensor
        self.indptr_np, self.indices_np = ip.tensor.numpy(), ix.tensor.numpy()
        for g in range(layout.num_gpus if rpg else 0):
            es = self.part_first_edge[g]
            self.part_views.append((ip.tensor[g * rpg:(g + 1) * rpg + 1], ix.tensor[es:], es))
        if layout.host_rows:
            es = int(host_indptr[0])
            self.part_views.append((ip.tensor[base:], ix.tensor[es:], es))

    def _build_device(self, tag, my_indptr, my_rows, order, rank_of, indptr, indices_t, host_indptr, host_ids,
                      hlo, hhi) -> None:
        layout, rpg, me, G = self.layout, self.layout.rows_per_gpu, self.rank.rank, self.layout.num_gpus
        shared = layout.reads_peers()
        self.head_words = -(-(rpg + 1) // SYMM_ALIGN_WORDS) * SYMM_ALIGN_WORDS
        if rpg:
            edges = max(self.gpu_edges) if shared else self.gpu_edges[me]
            words = self.head_words + -(-max(1, edges) * self.id_bytes // 8)
            self.gpu = GpuBuffers(self.rank, words, torch.int64, shared)
            buf = self.gpu.local
            buf[: rpg + 1].copy_(torch.from_numpy(my_indptr))
            ids = buf[self.head_words:].view(self.id_dtype)
            staging = torch.empty(self.gpu_edges[me], dtype=self.id_dtype)
            _fill_edges(staging, my_rows, order, rank_of, indptr, indices_t)
            ids[: staging.numel()].copy_(staging)
        if layout.host_rows:
            ip = SharedHostArray(self.rank, tag, "csr-host-indptr", layout.host_rows + 1, torch.int64, register=True)
            ix = SharedHostArray(self.rank, tag, "csr-host-indices", self.host_edges, self.id_dtype, register=True)
            self._closers += [ip, ix]
            ip.tensor[hlo: hhi + 1] = torch.from_numpy(host_indptr[hlo:hhi + 1])
            e0, e1 = int(host_indptr[hlo]) - int(host_indptr[0]), int(host_indptr[hhi]) - int(host_indptr[0])
            _fill_edges(ix.tensor[e0:e1], host_ids, order, rank_of, indptr, indices_t)
        _barrier()
        if self.gpu is not None:
            self.gpu.map_peers()
            for g in range(G):
                view = self.gpu.views[g]
                if view is None:
                    self.part_views.append(None)
                    continue
                self.part_views.append((view[: rpg + 1], view[self.head_words:].view(self.id_dtype),
                                        self.part_first_edge[g]))
        if layout.host_rows:
            self.part_views.append((ip.tensor, ix.tensor, int(host_indptr[0])))
            self._host_ptrs = (ip.registered_ptr, ix.registered_ptr, int(host_indptr[0]))

    # --- the sampler's view -----------------------------------------------------------------
    def _parts(self) -> list[tuple[int, int, int]]:
        """(indptr pointer, indices pointer, first edge) of every descriptor part (0: unmapped)."""
        layout, rpg = self.layout, self.layout.rows_per_gpu
        parts = []
        if self.rank.device == "cuda":
            for g in range(layout.num_gpus if rpg else 0):
                ptr = self.gpu.ptrs[g]
                parts.append((ptr, ptr + 8 * self.head_words if ptr else 0, self.part_first_edge[g]))
            if layout.host_rows:
                parts.append(self._host_ptrs)
            return parts
        for ip, ix, es in self.part_views:
            parts.append((ip.data_ptr(), ix.data_ptr(), es))
        return parts

    def desc(self, counting: bool = False) -> torch.Tensor:
        """The sampling kernels' graph descriptor (impls/core/kernels/common.cuh); no request counting."""
        if self._desc is None:
            parts = self._parts()
            if len(parts) > MAXP:
                raise HarnessError(f"at most {MAXP - 1} GPUs per tiered CSR")
            w = np.zeros(8 + 4 * MAXP, dtype=np.int64)
            w[0], w[1] = len(parts), max(self.layout.rows_per_gpu, 1)
            w[5] = self.shift
            for p, (ip, ix, es) in enumerate(parts):
                w[8 + p], w[8 + MAXP + p], w[8 + 2 * MAXP + p] = ip, ix, es
            self._desc = torch.from_numpy(w).to(self.device)
        return self._desc

    def check_seeds(self, seeds: torch.Tensor) -> None:
        if seeds.numel():
            lo, hi = (int(x) for x in torch.aminmax(seeds))
            if lo < 0 or hi >= self.num_nodes:
                raise HarnessError(f"physical row out of range: [{lo}, {hi}] of {self.num_nodes}")

    # --- the access functions (XGNN Fig. 5) ------------------------------------------------------
    def _part_of(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rpg = self.layout.rows_per_gpu
        if rpg == 0:
            return torch.zeros_like(index), index
        part = torch.clamp(torch.div(index, rpg, rounding_mode="floor"), max=len(self.part_views) - 1)
        return part, index - part * rpg

    def rows(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(first physical edge, degree) of physical rows, read from each row's part."""
        index = index.to(self.device, torch.int64)
        start = torch.empty_like(index)
        deg = torch.empty_like(index)
        part, local = self._part_of(index)
        for q, view in enumerate(self.part_views):
            sel = (part == q).nonzero().squeeze(1)
            if sel.numel() == 0:
                continue
            if view is None:
                raise HarnessError(f"worker {self.worker} reads GPU {q}'s buffer, which it does not map")
            ip = view[0]
            loc = local[sel].to(ip.device)
            s, e = ip[loc], ip[loc + 1]
            start[sel] = s.to(self.device)
            deg[sel] = (e - s).to(self.device)
        return start, deg

    def neighbors(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(offsets, every neighbour in hot-order ids) of physical rows, as a CSR over them."""
        index = index.to(self.device, torch.int64)
        start, deg = self.rows(index)
        offsets = torch.zeros(index.numel() + 1, dtype=torch.int64, device=self.device)
        torch.cumsum(deg, 0, out=offsets[1:])
        out = torch.empty(int(offsets[-1]), dtype=torch.int64, device=self.device)
        part, _ = self._part_of(index)
        for q, view in enumerate(self.part_views):
            sel = (part == q).nonzero().squeeze(1)
            if sel.numel() == 0:
                continue
            ip, ix, es = view
            src = _segments(start[sel] - es, deg[sel]).to(ix.device)
            dst = _segments(offsets[:-1][sel], deg[sel])
            out[dst] = ix[src].to(torch.int64).to(self.device)
        return offsets, out

    def describe(self) -> str:
        where = "GPU buffers + pinned host (zero copy)" if self.rank.device == "cuda" else \
            "host shared memory standing in for GPU buffers and host"
        return f"tiered CSR, {self.layout.describe()}; {where}"

    def gpu_bytes(self) -> int:
        """Bytes this rank allocated on its GPU (0 on CPU ranks: see TieredStore.memory)."""
        return self.gpu.nbytes() if self.gpu is not None else 0

    def close(self) -> None:
        """Collective (see TieredFeatures.close)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        _barrier()
        if self.gpu is not None:
            self.gpu.close()
            self.gpu = None
        self.part_views = []
        self.indptr_np = self.indices_np = self.indptr_t = self.indices_t = None
        for c in self._closers:
            c.close()
        self._closers.clear()
        self._desc = None
        _barrier()


# --- sampler over a tiered CSR -------------------------------------------------------------------

class _OverTieredCSR:
    """What the samplers over a tiered CSR share: ids below the layout's rows (append-unique's
    table bound), the inner sampler's description, nothing to close."""

    @property
    def id_bound(self) -> int:
        return int(self.layout.num_rows)

    def describe(self) -> str:
        return f"{self.inner.algorithm}; {self.csr.describe()}"

    def close(self) -> None:
        pass


class TieredSampler(_OverTieredCSR):
    """A sampler of impls/sampling over a tiered CSR: ``sample(seeds, fanout)`` takes and returns
    hot-order ids (the samplers' convention otherwise), counting topology bytes per tier.

    ``variant="batched"`` is XGNN's KHop (shared-memory de-duplicated positions, batched reads),
    ``"original"`` the reservoir KHop of DGL+C / the codebase XGNN starts from."""

    def __init__(self, csr: TieredCSR, counters: TierCounters | None = None, *, variant: str = "batched",
                 engine: str = "auto", seed: int | None = 0):
        from impls.sampling import KHopBatchedSampler

        self.csr, self.counters = csr, counters
        self.layout, self.worker, self.device = csr.layout, csr.worker, csr.device
        self.inner = KHopBatchedSampler(None, None, None, csr=csr, variant=variant, engine=engine, seed=seed)
        self.variant, self.engine = variant, self.inner.engine

    def sample(self, seeds, fanout: int, *, seed: int | None = None, generator=None,
               check: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        seeds = torch.as_tensor(seeds).reshape(-1).to(self.device, torch.int64)
        if check:
            check_ids(seeds, self.layout.num_rows)
        index = self.layout.physical(seeds, self.worker)
        offsets, neighbors = self.inner.sample(index, fanout, seed=seed, generator=generator, check=False)
        if self.counters is not None:
            self.counters.add_rows("topology", self.layout, index, self.worker, 16, offsets, self.csr.id_bytes)
        return offsets, neighbors


class TieredWalkSampler(_OverTieredCSR):
    """PinSAGE's random-walk sampler (impls/sampling/random_walk.py) over a tiered CSR: every step
    of every walk reads its row through the layout (local GPU, peer GPU or pinned host) and is
    counted per tier (16 bytes of indptr and one neighbour id). Hot-order ids in and out."""

    weighted = True

    def __init__(self, csr: TieredCSR, counters: TierCounters | None = None, *, random_walks: int = 4,
                 walk_length: int = 3, restart_prob: float = 0.5, engine: str = "auto", seed: int | None = 0):
        from impls.sampling import RandomWalkSampler

        self.csr, self.counters = csr, counters
        self.layout, self.worker, self.device = csr.layout, csr.worker, csr.device
        self.inner = RandomWalkSampler(None, None, None, csr=csr, layout=csr.layout, worker=csr.worker,
                                       random_walks=random_walks, walk_length=walk_length,
                                       restart_prob=restart_prob, engine=engine, seed=seed)
        self.variant, self.engine = "pinsage_walk", self.inner.engine

    def sample_weighted(self, seeds, fanout: int, *, seed: int | None = None, generator=None,
                        check: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out = self.inner.sample_weighted(seeds, fanout, seed=seed, generator=generator, check=check)
        if self.counters is not None and self.counters.enabled:
            self.counters.add_rows("topology", self.layout, self.inner.rows_read.reshape(-1), self.worker,
                                   16 + self.csr.id_bytes)
        return out

    def sample(self, seeds, fanout: int, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
        offsets, neighbors, _ = self.sample_weighted(seeds, fanout, **kwargs)
        return offsets, neighbors


# --- the store -----------------------------------------------------------------------------------

class TieredStore:
    """A graph's topology and features over GPUs and host memory, and XGNN Fig. 5's access functions.

    Collective constructor and ``close``. Ids are hot-order ids (``reordering.to_new`` maps
    original ids). ``graph_layout`` / ``feat_layout`` None: that part is not stored.
    """

    def __init__(self, rank, name: str, indptr, indices, features, reordering: Reordering,
                 graph_layout: TierLayout | None, feat_layout: TierLayout | None, *, fit=None,
                 counters: bool = True, sampler_variant: str = "batched"):
        rank.require_one_node(f"the tiered store {name}")
        self.rank, self.name, self.reordering = rank, name, reordering
        self.graph_layout, self.feat_layout, self.fit = graph_layout, feat_layout, fit
        self.device = rank.torch_device()
        self.worker = rank.rank
        self.num_nodes = reordering.num_nodes
        self.sampler_variant = sampler_variant
        self.counters = TierCounters(self.device)
        self.counters.enabled = bool(counters)
        indptr = np.asarray(indptr, dtype=np.int64)
        order = None if reordering.is_identity() else reordering.order
        deg = np.diff(indptr)
        self._degrees = DegreeIndex(deg if order is None else deg[order])
        self.id_bytes = torch.empty(0, dtype=_id_dtype(self.num_nodes)).element_size()
        self.graph = TieredCSR(rank, graph_layout, indptr, indices, reordering) if graph_layout else None
        self.feats = None
        self.row_bytes = 0
        if feat_layout is not None and features is not None:
            features = _as_tensor(features)
            self.row_bytes = int(features.shape[1]) * features.element_size()
            self.feats = TieredFeatures(rank, feat_layout, features, order, self.counters)

    # --- XGNN Fig. 5 -----------------------------------------------------------------------------
    def locate_topology(self, ids: torch.Tensor):
        """(tier, owner GPU or -1, local offset) of each node's topology, as this worker reads it."""
        return self.graph_layout.locate(ids.to(self.device), self.worker)

    def locate_features(self, ids: torch.Tensor):
        return self.feat_layout.locate(ids.to(self.device), self.worker)

    def num_neighbors(self, ids: torch.Tensor) -> torch.Tensor:
        """NumNeighbor(node_id) for every id: degrees (a 16-byte indptr read per id)."""
        ids = ids.to(self.device, torch.int64)
        check_ids(ids, self.num_nodes)
        index = self.graph_layout.physical(ids, self.worker)
        self.counters.add_rows("topology", self.graph_layout, index, self.worker, 16)
        return self.graph.rows(index)[1]

    def neighbors(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Neighbors(node_id) for every id: (offsets, neighbour ids) as a CSR over ``ids``."""
        ids = ids.to(self.device, torch.int64)
        check_ids(ids, self.num_nodes)
        index = self.graph_layout.physical(ids, self.worker)
        offsets, out = self.graph.neighbors(index)
        self.counters.add_rows("topology", self.graph_layout, index, self.worker, 16, offsets, self.graph.id_bytes)
        return offsets, out

    def features(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        """Features(node_id) for every id: rows in the order of ``ids`` on this rank's device."""
        return self.feats.gather(ids, check=check)

    gather = features

    def sampler(self, variant: str | None = None, engine: str = "auto", seed: int | None = 0) -> TieredSampler:
        """A KHop sampler over this store's topology (``variant``: batched | original)."""
        return TieredSampler(self.graph, self.counters, variant=variant or self.sampler_variant, engine=engine,
                             seed=seed)

    def walk_sampler(self, random_walks: int = 4, walk_length: int = 3, restart_prob: float = 0.5,
                     engine: str = "auto", seed: int | None = 0) -> TieredWalkSampler:
        """PinSAGE's random-walk sampler over this store's topology (weighted neighbours)."""
        return TieredWalkSampler(self.graph, self.counters, random_walks=random_walks, walk_length=walk_length,
                                 restart_prob=restart_prob, engine=engine, seed=seed)

    # --- accounting -----------------------------------------------------------------------------
    def memory(self) -> dict:
        """Bytes per GPU (topology, features; as allocated) and in host memory, from the layouts.

        Also ``this_gpu``: what this rank actually allocated on its GPU (0 on CPU ranks)."""
        out = layout_memory(self.graph_layout, self.feat_layout, self._degrees, self.id_bytes, self.row_bytes)
        actual = (self.graph.gpu_bytes() if self.graph else 0) + (self.feats.gpu_bytes() if self.feats else 0)
        out["this_gpu"] = {"gpu": self.worker, "allocated_bytes": actual}
        return out

    def hit_rates(self, all_ranks: bool = False) -> dict:
        """Counters since the last reset (see TierCounters.snapshot)."""
        return self.counters.snapshot(all_ranks)

    def reset_counters(self) -> None:
        self.counters.reset()

    def summary(self) -> dict:
        """Ratios, layouts and memory: what an experiment row's ``extra`` may carry."""
        mem = self.memory()
        return {"store": self.name, "num_nodes": self.num_nodes,
                "graph_ratio": self.graph_layout.ratio if self.graph_layout else None,
                "feat_ratio": self.feat_layout.ratio if self.feat_layout else None,
                "graph_layout": self.graph_layout.describe() if self.graph_layout else None,
                "feat_layout": self.feat_layout.describe() if self.feat_layout else None,
                "reordering": self.reordering.policy,
                "gpu_topology_bytes": mem["gpu_topology_bytes"], "gpu_feature_bytes": mem["gpu_feature_bytes"],
                "per_gpu_bytes": max(e["total_bytes"] for e in mem["per_gpu"]),
                "fit": self.fit.to_dict() if self.fit is not None else None}

    def describe(self) -> str:
        parts = [f"{self.name}: topology {self.graph_layout.describe() if self.graph_layout else 'not stored'}",
                 f"features {self.feat_layout.describe() if self.feat_layout else 'not stored'}"]
        where = "GPU memory + pinned host (zero copy)" if self.rank.device == "cuda" else \
            "host shared memory standing in for GPU and host tiers"
        return "; ".join(parts) + f"; {where}"

    def close(self) -> None:
        if self.graph is not None:
            self.graph.close()
            self.graph = None
        if self.feats is not None:
            self.feats.close()
            self.feats = None


def row_bytes_of(features) -> int:
    """Bytes of one feature row (0 without features)."""
    if features is None:
        return 0
    t = _as_tensor(features)
    return int(t.shape[1]) * t.element_size()


def _as_tensor(features) -> torch.Tensor:
    if isinstance(features, torch.Tensor):
        return features
    if hasattr(features, "feature_tensor"):
        return features.feature_tensor()
    arr = np.asarray(features)
    with warnings.catch_warnings():          # read-only memory maps: torch warns, we only read
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(arr)


__all__ = ["LOCAL_GPU", "REMOTE_GPU", "HOST", "TIERS", "SharedHostArray", "GpuBuffers", "TierCounters",
           "TieredFeatures", "TieredCSR", "TieredSampler", "TieredWalkSampler", "TieredStore"]
