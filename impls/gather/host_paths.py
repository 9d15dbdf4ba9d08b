"""Host-memory gathers the PyG/DGL pipelines pay: CPU gather + copy, or zero-copy reads.

`host_copy`: rows gathered by the CPU into a pinned staging buffer, then copied to the
GPU asynchronously (what a DataLoader-based pipeline does per mini-batch).
`host_uva`: the GPU gather kernel reads the rows straight from page-locked host memory.
"""

from __future__ import annotations

import torch

from harness.needs import Needs
from harness.registry import register_impl
from impls.core.layout import TableSpec, check_ids
from impls.storage import HostTable


class HostCopyGather:
    def __init__(self, rank, spec: TableSpec, **_):
        self.spec = spec
        self.device = rank.torch_device()
        self.table = HostTable(rank, spec)
        self._staging = torch.empty(0)

    def _stage(self, n: int) -> torch.Tensor:
        if self._staging.shape[0] < n:
            pin = self.device.type == "cuda"
            self._staging = torch.empty((max(n, 1), self.spec.row_elems), dtype=self.spec.torch_dtype,
                                        pin_memory=pin)
        return self._staging[:n]

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        if check:
            check_ids(ids, self.spec.num_rows)
        cpu_ids = ids.to("cpu", torch.int64)
        staged = torch.index_select(self.table.rows, 0, cpu_ids, out=self._stage(cpu_ids.numel()))
        if self.device.type != "cuda":
            return staged.clone()
        return staged.to(self.device, non_blocking=True)

    def describe(self) -> str:
        return f"{self.table.describe()}; CPU index_select into pinned staging, async H2D copy"

    def close(self) -> None:
        self.table.close()


class HostZeroCopyGather:
    def __init__(self, rank, spec: TableSpec, **_):
        self.spec = spec
        self.device = rank.torch_device()
        self.table = HostTable(rank, spec, register=True)
        self.ptrs = torch.tensor([self.table.registered_ptr], dtype=torch.int64, device=self.device)

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        from impls.core.row_gather import gather_into

        if check:
            check_ids(ids, self.spec.num_rows)
        ids = ids.to(self.device, torch.int64)
        out = torch.empty((ids.numel(), self.spec.row_elems), dtype=self.spec.torch_dtype, device=self.device)
        return gather_into(out, self.ptrs, self.spec.num_rows, ids, self.spec.row_bytes)

    def describe(self) -> str:
        return f"{self.table.describe()}; GPU gather kernel reading host memory over PCIe"

    def close(self) -> None:
        self.table.close()


@register_impl("gather", "host_copy", needs=Needs(devices=("cpu", "cuda")),
               summary="features in host shared memory; CPU gather into pinned buffer + async H2D (PyG/DGL)",
               label="host memory: gather + H2D", family="host memory", order=61, traits=("host",))
def make_host_copy(rank, spec: TableSpec, **options):
    return HostCopyGather(rank, spec, **options)


@register_impl("gather", "host_uva", needs=Needs(devices=("cuda",), packages=("cupy",)),
               summary="features in page-locked host memory read by the GPU kernel directly (zero copy)",
               label="host memory: zero copy", family="host memory", order=60, traits=("host",))
def make_host_uva(rank, spec: TableSpec, **options):
    return HostZeroCopyGather(rank, spec, **options)
