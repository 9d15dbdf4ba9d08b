"""The CSR a sampler reads: where it lives, and which rows count as remote.

``SamplingCSR(where, indptr, indices, store=...)``:

- ``store="local"``: the whole CSR on the sampler's device (GPU memory, or host NumPy arrays
  for the CPU path); one part.
- ``store="split"``: the sharded layout (one part per rank of the counting partition) in one
  process on one device; the kernels take the multi-part path, so tests check it without peers.
- ``store="sharded"`` (CUDA ranks of a process group): rows split by ``RowPartition`` over the
  ranks; rank r keeps the indptr entries of its rows (``rows_per_rank + 1`` global edge
  offsets) and their neighbor ids in one torch symmetric-memory buffer, and every rank maps
  every peer's buffer, so kernels read remote rows directly over NVLink (XGNN's GGMS,
  WholeGraph's chunked WholeMemory). Kernels find row v in part v // rows_per_rank.

Counting (both stores): reads of rows not owned by ``count_rank`` under a RowPartition over
``count_world`` ranks are remote (defaults: the rank's own rank and world size). For the local
store this is a model of the sharded layout; for the sharded one it is what crosses NVLink.
A request's bytes are counted as distinct ``sector_bytes`` sectors of the owner's shard
(impls/core/kernels/common.cuh, ``count_request``).

The kernels get everything through one int64 descriptor (layout in impls/core/kernels/common.cuh).
"""

from __future__ import annotations

import numpy as np
import torch

from harness.errors import HarnessError, SkipPoint
from impls.core.layout import RowPartition

MAXP = 16
DESC_WORDS = 8 + 4 * MAXP


def where_of(where) -> tuple[torch.device, object | None]:
    """(device, rank context or None) for a RankContext, torch.device or device string."""
    if hasattr(where, "torch_device"):
        return where.torch_device(), where
    device = torch.device(where)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device, None


def _as_numpy(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return np.asarray(a)


class SamplingCSR:
    def __init__(self, where, indptr, indices, *, store: str = "local", count_world: int | None = None,
                 count_rank: int | None = None, sector_bytes: int = 32):
        self.device, self.rank = where_of(where)
        indptr_np = _as_numpy(indptr)
        indices_np = _as_numpy(indices)
        if indptr_np.ndim != 1 or indptr_np.size < 2:
            raise HarnessError("a sampler needs indptr of length num_nodes + 1 >= 2")
        if indices_np.dtype not in (np.int32, np.int64):
            raise HarnessError(f"neighbor ids must be int32 or int64, not {indices_np.dtype}")
        if int(indptr_np[0]) != 0 or int(indptr_np[-1]) != indices_np.size:
            raise HarnessError(f"indptr must run from 0 to len(indices) = {indices_np.size}")
        self.indptr_np = indptr_np.astype(np.int64, copy=False)
        self.indices_np = indices_np
        self.num_nodes = indptr_np.size - 1
        self.num_edges = int(indices_np.size)
        self.id_bytes = indices_np.dtype.itemsize
        self.max_degree = int(np.diff(self.indptr_np).max()) if self.num_nodes else 0
        if self.max_degree >= 1 << 31:
            raise HarnessError("rows of 2^31 neighbors or more are not supported")
        world = self.rank.world_size if self.rank is not None else 1
        me = self.rank.rank if self.rank is not None else 0
        self.count_world = int(count_world or world)
        self.count_rank = int(me if count_rank is None else count_rank)
        if not (1 <= self.count_world <= MAXP and 0 <= self.count_rank < self.count_world):
            raise HarnessError(f"counting partition: rank {self.count_rank} of {self.count_world} "
                               f"(at most {MAXP} parts)")
        if sector_bytes & (sector_bytes - 1) or sector_bytes < 1:
            raise HarnessError("sector_bytes must be a power of two")
        self.sector_bytes = sector_bytes
        self.shift = sector_bytes.bit_length() - 1
        self.count_part = RowPartition(self.num_nodes, self.count_world)
        rpp = self.count_part.rows_per_rank
        self.vstart = np.array([self.indptr_np[min(q * rpp, self.num_nodes)] for q in range(self.count_world)],
                               dtype=np.int64)
        self.store = store
        self._keep: list = []
        self._symm = None
        if store == "local":
            self._build_local()
        elif store == "split":
            self._build_split()
        elif store == "sharded":
            self._build_sharded()
        else:
            raise HarnessError(f"store must be local, split or sharded, not '{store}'")
        self.counters = torch.zeros(4, dtype=torch.int64, device=self.device)
        self._descs: dict[bool, torch.Tensor] = {}

    # --- layouts ------------------------------------------------------------------------
    def _build_local(self) -> None:
        self.nparts, self.rows_per_part = 1, max(1, self.num_nodes)
        if self.device.type == "cpu":
            self.indptr_t = torch.from_numpy(np.ascontiguousarray(self.indptr_np))
            self.indices_t = torch.from_numpy(np.ascontiguousarray(self.indices_np))
        else:
            self.indptr_t = torch.from_numpy(np.ascontiguousarray(self.indptr_np)).to(self.device)
            self.indices_t = torch.from_numpy(np.ascontiguousarray(self.indices_np)).to(self.device)
        self.part_ptrs = [(self.indptr_t.data_ptr(), self.indices_t.data_ptr(), 0)]

    def _build_split(self) -> None:
        self._build_local()            # the numba path and fanout <= 0 read the whole arrays
        part = self.count_part
        self.nparts, self.rows_per_part = self.count_world, part.rows_per_rank
        self.part_ptrs = []
        for r in range(self.count_world):
            lo, hi = part.bounds(r)
            e_lo, e_hi = int(self.indptr_np[lo]), int(self.indptr_np[hi])
            ip = torch.from_numpy(np.ascontiguousarray(self.indptr_np[lo:hi + 1])).to(self.device)
            ids = self.indices_np[e_lo:e_hi] if e_hi > e_lo else np.zeros(1, dtype=self.indices_np.dtype)
            ix = torch.from_numpy(np.ascontiguousarray(ids)).to(self.device)
            self._keep += [ip, ix]
            self.part_ptrs.append((ip.data_ptr(), ix.data_ptr(), e_lo))

    def _build_sharded(self) -> None:
        import warnings

        import torch.distributed as dist

        if self.device.type != "cuda" or self.rank is None:
            raise SkipPoint("the sharded CSR store needs CUDA ranks of a process group")
        self.rank.require_one_node("the sharded CSR store")
        world, me = self.rank.world_size, self.rank.rank
        if world > MAXP:
            raise SkipPoint(f"the sharded CSR store takes at most {MAXP} ranks")
        import torch.distributed._symmetric_memory as symm_mem

        part = RowPartition(self.num_nodes, world)
        rpp = part.rows_per_rank
        bounds = [part.bounds(r) for r in range(world)]
        edge_lo = [int(self.indptr_np[lo]) for lo, _ in bounds]
        edge_hi = [int(self.indptr_np[hi]) for _, hi in bounds]
        max_edges = max(h - l for l, h in zip(edge_lo, edge_hi))
        head = -(-(rpp + 1) // 32) * 32                                  # indptr words, 256-B aligned
        words = head + -(-max(1, max_edges) * self.id_bytes // 8)
        group = self.rank.group or dist.group.WORLD          # a node view's group: its node's ranks
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            if hasattr(symm_mem, "enable_symm_mem_for_group"):
                symm_mem.enable_symm_mem_for_group(group.group_name)
        buf = symm_mem.empty(words, dtype=torch.int64, device=self.device)
        lo, hi = bounds[me]
        buf[: hi - lo + 1].copy_(torch.from_numpy(np.ascontiguousarray(self.indptr_np[lo:hi + 1])))
        ids = buf[head:].view(torch.int32 if self.id_bytes == 4 else torch.int64)
        src = np.ascontiguousarray(self.indices_np[edge_lo[me]:edge_hi[me]])
        if src.size:
            ids[: src.size].copy_(torch.from_numpy(src))
        torch.cuda.synchronize(self.device)
        handle = symm_mem.rendezvous(buf, group)
        offset = buf.data_ptr() - int(handle.buffer_ptrs[me])
        bases = [int(p) + offset for p in handle.buffer_ptrs]
        self._keep += [buf, handle]
        self._symm = handle
        self.nparts, self.rows_per_part = world, rpp
        self.part_ptrs = [(bases[r], bases[r] + head * 8, edge_lo[r]) for r in range(world)]
        self.indptr_t = self.indices_t = None
        dist.barrier(group=self.rank.group)

    # --- kernel descriptor ------------------------------------------------------------------
    def desc(self, counting: bool) -> torch.Tensor:
        if counting not in self._descs:
            w = np.zeros(DESC_WORDS, dtype=np.int64)
            w[0], w[1] = self.nparts, self.rows_per_part
            if counting:
                w[2], w[3], w[4] = self.count_world, self.count_part.rows_per_rank, self.count_rank
                w[6] = self.counters.data_ptr()
            w[5] = self.shift
            for p, (ip, ix, es) in enumerate(self.part_ptrs):
                w[8 + p], w[8 + MAXP + p], w[8 + 2 * MAXP + p] = ip, ix, es
            w[8 + 3 * MAXP: 8 + 3 * MAXP + self.count_world] = self.vstart
            self._descs[counting] = torch.from_numpy(w).to(self.device)
        return self._descs[counting]

    def check_seeds(self, seeds: torch.Tensor) -> None:
        if seeds.numel():
            lo, hi = (int(x) for x in torch.aminmax(seeds))
            if lo < 0 or hi >= self.num_nodes:
                raise HarnessError(f"seed out of range: seeds span [{lo}, {hi}], graph has {self.num_nodes} nodes")

    def describe(self) -> str:
        ids = "int32" if self.id_bytes == 4 else "int64"
        if self.store == "split":
            where = f"rows split into {self.nparts} parts on {self.device}"
        elif self.store == "sharded":
            where = (f"rows split over {self.nparts} GPUs ({self.rows_per_part} rows each) in torch "
                     f"symmetric memory, peers read directly")
        elif self.device.type == "cuda":
            where = "whole CSR in this GPU's memory"
        else:
            where = "whole CSR in host memory"
        return f"CSR of {self.num_nodes} nodes, {self.num_edges} {ids} edges: {where}"

    def close(self) -> None:
        if self.store == "sharded" and self._keep:
            import torch.distributed as dist

            torch.cuda.synchronize(self.device)
            dist.barrier(group=self.rank.group)
        self._keep.clear()
        self._symm = None
        self._descs.clear()
