"""`p2p_shared`: WholeGraph's global gather as one kernel per rank over the shared store.

GPU ranks: a single launch of impls/core/kernels/gather.cu reads local and peer rows over NVLink P2P.
``chunked`` (default backend ``symm``, or ``ipc``/``vmm``): through a pointer per rank, the
kernel picks the part from the global id. ``continuous`` (backend ``vmm``): every shard is
mapped into one virtual range, so the kernel gets ONE part and global row i is read at
``base + i * row_bytes``. ``load`` says how the kernel issues its reads (impls/core/row_gather.py:
``plain`` 16-byte loads, ``l2_256`` with the L2::256B prefetch-size hint, ``bulk`` a whole row per
bulk-copy instruction): a remote read costs a request packet on the links, and its share of the
link's bytes falls as the requests grow. CPU ranks: the same store in host shared memory, gathered
with index operations on the mapped shards (chunked) or on the one shared table (continuous); the
load does not apply there.

Across nodes (torchrun's, harness/launcher.py) a rank maps only its own node's shards: the kernel
(or the index operations) reads the rows of this node, and the rows of other nodes come through
NCCL's alltoallv (``exchange_rows``, WholeGraph's distributed memory; gloo on CPU ranks), so a
gather is then collective. ``count_reads`` counts the rows each path served per owner rank
(``store.reads``).
"""

from __future__ import annotations

import torch

from harness.needs import Needs
from harness.registry import Variant, register_impl
from impls.core.layout import TableSpec, check_ids
from impls.storage import ShardedTable

from .nccl_alltoallv import exchange_rows


class SharedMemoryGather:
    def __init__(self, rank, spec: TableSpec, mode: str = "chunked", backend: str | None = None,
                 launch: str | None = None, load: str | None = None, node_aware: bool = True,
                 count_reads: bool = False):
        if mode not in ("chunked", "continuous"):
            raise ValueError("p2p_shared reads through a mapping: mode chunked or continuous")
        from impls.core.row_gather import check_load, parse_launch

        self.launch = parse_launch(launch)          # GPU kernel geometry; checked on CPU ranks too
        self.load = check_load(load)
        self.spec = spec
        self.store = ShardedTable(rank, spec, mode, backend, node_aware=node_aware, count_reads=count_reads)
        self.rows_per_rank = self.store.partition.rows_per_rank
        self.device = self.store.device
        # rows outside the mapped shards (other nodes') come through NCCL: the gather is collective
        self.mapped_rows = self.store.mapped_rows
        self.across_nodes = self.mapped_rows != (0, spec.num_rows)
        if rank.device == "cuda":
            parts, self.rows_per_part = self.store.kernel_parts()
            self.table = torch.tensor(parts, dtype=torch.int64, device=self.device)

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        if check:
            check_ids(ids, self.spec.num_rows)
        ids = ids.to(self.device, torch.int64)
        if not self.across_nodes:
            return self._read_mapped(ids)
        first, end = self.mapped_rows
        near = (ids >= first) & (ids < end)
        here, there = near.nonzero().squeeze(1), (~near).nonzero().squeeze(1)
        out = torch.empty((ids.numel(), self.spec.row_elems), dtype=self.spec.torch_dtype, device=self.device)
        out.index_copy_(0, here, self._read_mapped(ids[here]))
        out.index_copy_(0, there, exchange_rows(self.store, ids[there]))
        return out

    def _read_mapped(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows ``ids`` (global, within ``mapped_rows``) through the mapping: the kernel over the
        mapped shards' pointers, or index operations on the mapped host shards."""
        out = torch.empty((ids.numel(), self.spec.row_elems), dtype=self.spec.torch_dtype, device=self.device)
        if self.device.type != "cuda":
            return gather_mapped(self.store, ids, out)
        from impls.core.row_gather import gather_into

        first = self.mapped_rows[0]
        local = ids - first if first else ids
        if self.store.reads is not None:
            self.store.reads.add("mapped", torch.div(ids, self.rows_per_rank, rounding_mode="floor"))
        return gather_into(out, self.table, self.rows_per_part, local, self.spec.row_bytes, self.launch, self.load)

    def describe(self) -> str:
        if self.device.type != "cuda":
            kernel = "index ops on mapped host shards"
        elif self.table.numel() == 1:
            kernel = "one CuPy kernel reading base + id * row_bytes"
        else:
            kernel = "one CuPy kernel over the pointer table"
        if self.device.type == "cuda":
            from impls.core.row_gather import bulk_stages, effective_load

            b, t, u = self.launch
            load = effective_load(self.load, self.spec.row_bytes, self.device, self.launch)
            if load == "bulk":
                kernel += (f" ({b} blocks per SM x {t} threads, a row per bulk-copy load, "
                           f"{bulk_stages(self.spec.row_bytes, t)} rows in flight per warp)")
            else:
                hint = ", L2::256B prefetch hint" if load == "l2_256" else ""
                ran = f"; load {self.load} does not apply to these rows here" if load != self.load else ""
                kernel += f" ({b} blocks per SM x {t} threads, {u} loads in flight per thread{hint}{ran})"
        return f"{self.store.describe()}; {kernel}"

    def close(self) -> None:
        self.store.close()


def gather_mapped(store: ShardedTable, ids: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out[i] = row ids[i]`` read from a CPU rank's mapped store with index operations: the one
    shared table (continuous) or the mapped shards (chunked; ids of the mapped ranks' rows)."""
    rows_per_rank = store.partition.rows_per_rank
    owner = torch.div(ids, rows_per_rank, rounding_mode="floor")
    if store.whole is not None:
        if store.reads is not None:
            store.reads.add("mapped", owner)
        return torch.index_select(store.whole, 0, ids, out=out)
    for r, shard in zip(store.mapped, store.peers):
        where = (owner == r).nonzero().squeeze(1)
        if where.numel():
            # index_copy_ moves whole rows; boolean/advanced assignment goes element-wise
            out.index_copy_(0, where, shard.index_select(0, ids[where] - r * rows_per_rank))
            if store.reads is not None:
                store.reads.add("mapped", owner[where])
    return out


_GPU = ("cuda",)       # variants that differ from another only on GPUs: how GPU memory is shared or loaded


@register_impl("gather", "p2p_shared",
               needs=Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), peer_access=True),
               summary="one gather kernel per rank reading peer shards: a pointer per rank (symmetric "
                       "memory, CUDA IPC) or one CUDA VMM range (continuous)",
               label="ours p2p_shared", order=10, traits=("peer_read", "id_orders"), variants=(
                   Variant("chunked", {"mode": "chunked"}, "ours: chunked", traits=frozenset({"paper", "launch"})),
                   Variant("chunked-ipc", {"mode": "chunked", "backend": "ipc"}, "ours: chunked, CUDA IPC",
                           traits=frozenset({"tuned"})),
                   Variant("chunked-vmm", {"mode": "chunked", "backend": "vmm"}, "ours: chunked, CUDA VMM", _GPU,
                           frozenset({"tuned"})),
                   Variant("continuous", {"mode": "continuous"}, "ours: continuous (VMM)",
                           traits=frozenset({"launch"})),
                   Variant("chunked-l2_256", {"mode": "chunked", "load": "l2_256"}, "ours: chunked, L2::256B prefetch",
                           _GPU, frozenset({"tuned", "launch"})),
                   Variant("chunked-bulk", {"mode": "chunked", "load": "bulk"}, "ours: chunked, bulk-copy loads", _GPU,
                           frozenset({"tuned", "bulk_copy"}))))
def make(rank, spec: TableSpec, mode: str = "chunked", backend: str | None = None, launch: str | None = None,
         load: str | None = None, node_aware: bool = True, count_reads: bool = False, **_):
    return SharedMemoryGather(rank, spec, mode, backend, launch, load, node_aware, count_reads)
