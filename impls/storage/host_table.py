"""The whole table in host shared memory, as the PyG/DGL baselines keep features.

Rank 0 creates one file in /dev/shm, every rank fills its slice of rows and maps the
whole file; with ``register=True`` each GPU rank also page-locks the mapping
(cudaHostRegister, mapped) so its kernels can read it directly (zero copy, UVA).
"""

from __future__ import annotations

import uuid

import torch
import torch.distributed as dist

from harness.shm import segment_path
from impls.core.layout import RowPartition, TableSpec

from .shards import _fill

_HOST_REGISTER_PORTABLE = 1
_HOST_REGISTER_MAPPED = 2


class HostTable:
    def __init__(self, rank, spec: TableSpec, register: bool = False):
        rank.require_one_node("the host table (one file in host shared memory)")
        self.rank, self.spec = rank, spec
        tag = [uuid.uuid4().hex if rank.rank == 0 else None]
        dist.broadcast_object_list(tag, src=0)
        self.path = segment_path(f"{tag[0]}-host")
        if rank.rank == 0:
            with open(self.path, "wb") as fh:
                fh.truncate(spec.nbytes)
        dist.barrier()
        flat = torch.from_file(str(self.path), shared=True, size=spec.nbytes, dtype=torch.uint8)
        self.rows = flat.view(spec.torch_dtype).view(spec.num_rows, spec.row_elems)
        start, end = RowPartition(spec.num_rows, rank.world_size).bounds(rank.rank)
        _fill(self.rows[start:end], start, end, spec)
        self.registered_ptr: int | None = None
        if register:
            import cupy as cp

            with cp.cuda.Device(rank.local_rank):
                cp.cuda.runtime.hostRegister(self.rows.data_ptr(), spec.nbytes,
                                             _HOST_REGISTER_PORTABLE | _HOST_REGISTER_MAPPED)
            self.registered_ptr = self.rows.data_ptr()  # unified addressing: valid on the device
        dist.barrier()

    def describe(self) -> str:
        how = "page-locked and mapped (zero copy)" if self.registered_ptr else "pageable"
        return f"whole table in host shared memory (/dev/shm), {how}"

    def close(self) -> None:
        dist.barrier()
        if self.registered_ptr is not None:
            import cupy as cp

            with cp.cuda.Device(self.rank.local_rank):
                cp.cuda.runtime.hostUnregister(self.registered_ptr)
            self.registered_ptr = None
        self.rows = None
        dist.barrier()
        if self.rank.rank == 0:
            self.path.unlink(missing_ok=True)
