"""`p2p_shared`: WholeGraph's global gather as one kernel per rank over the shared store.

GPU ranks: a single launch of impls/core/kernels/gather.cu reads local and peer rows over NVLink P2P.
``chunked`` (default backend ``symm``, or ``ipc``/``vmm``): through a pointer per rank, the
kernel picks the part from the global id. ``continuous`` (backend ``vmm``): every shard is
mapped into one virtual range, so the kernel gets ONE part and global row i is read at
``base + i * row_bytes``. CPU ranks: the same store in host shared memory, gathered with index
operations on the mapped shards (chunked) or on the one shared table (continuous).
"""

from __future__ import annotations

import torch

from harness.needs import Needs
from harness.registry import register_impl
from impls.core.layout import TableSpec, check_ids
from impls.storage import ShardedTable


class SharedMemoryGather:
    def __init__(self, rank, spec: TableSpec, mode: str = "chunked", backend: str | None = None,
                 launch: str | None = None):
        if mode not in ("chunked", "continuous"):
            raise ValueError("p2p_shared reads through a mapping: mode chunked or continuous")
        from impls.core.row_gather import parse_launch

        self.launch = parse_launch(launch)          # GPU kernel geometry; checked on CPU ranks too
        self.spec = spec
        self.store = ShardedTable(rank, spec, mode, backend)
        self.rows_per_rank = self.store.partition.rows_per_rank
        self.device = self.store.device
        if rank.device == "cuda":
            parts, self.rows_per_part = self.store.kernel_parts()
            self.table = torch.tensor(parts, dtype=torch.int64, device=self.device)

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        if check:
            check_ids(ids, self.spec.num_rows)
        ids = ids.to(self.device, torch.int64)
        out = torch.empty((ids.numel(), self.spec.row_elems), dtype=self.spec.torch_dtype, device=self.device)
        if self.device.type == "cuda":
            from impls.core.row_gather import gather_into

            return gather_into(out, self.table, self.rows_per_part, ids, self.spec.row_bytes, self.launch)
        if self.store.whole is not None:
            return torch.index_select(self.store.whole, 0, ids, out=out)
        owner = torch.div(ids, self.rows_per_rank, rounding_mode="floor")
        for r, shard in enumerate(self.store.peers):
            where = (owner == r).nonzero().squeeze(1)
            if where.numel():
                # index_copy_ moves whole rows; boolean/advanced assignment goes element-wise
                out.index_copy_(0, where, shard.index_select(0, ids[where] - r * self.rows_per_rank))
        return out

    def describe(self) -> str:
        if self.device.type != "cuda":
            kernel = "index ops on mapped host shards"
        elif self.table.numel() == 1:
            kernel = "one CuPy kernel reading base + id * row_bytes"
        else:
            kernel = "one CuPy kernel over the pointer table"
        if self.device.type == "cuda":
            b, t, u = self.launch
            kernel += f" ({b} blocks per SM x {t} threads, {u} loads in flight per thread)"
        return f"{self.store.describe()}; {kernel}"

    def close(self) -> None:
        self.store.close()


@register_impl("gather", "p2p_shared",
               needs=Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), peer_access=True),
               summary="one gather kernel per rank reading peer shards: a pointer per rank (symmetric "
                       "memory, CUDA IPC) or one CUDA VMM range (continuous)")
def make(rank, spec: TableSpec, mode: str = "chunked", backend: str | None = None, launch: str | None = None, **_):
    return SharedMemoryGather(rank, spec, mode, backend, launch)
