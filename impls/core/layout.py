"""Row partition and closed-form row content shared by every store and gather."""

from __future__ import annotations

from dataclasses import dataclass

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int64": torch.int64, "int32": torch.int32}


@dataclass(frozen=True)
class TableSpec:
    """A global table of ``num_rows`` rows of ``row_elems`` elements of ``dtype``."""

    num_rows: int
    row_elems: int
    dtype: str = "float32"

    def __post_init__(self):
        if self.num_rows < 1 or self.row_elems < 1:
            raise ValueError("a table needs at least one row and one column")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {self.dtype}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def elem_bytes(self) -> int:
        return torch.empty(0, dtype=self.torch_dtype).element_size()

    @property
    def row_bytes(self) -> int:
        return self.row_elems * self.elem_bytes

    @property
    def nbytes(self) -> int:
        return self.num_rows * self.row_bytes


@dataclass(frozen=True)
class RowPartition:
    """Contiguous split of rows over ranks, the layout WholeMemory uses.

    ``align_rows``: rows per rank are rounded up to a multiple of it (1: ``ceil(N / W)``). The
    CUDA VMM store pads every shard to the allocation granularity this way, so that rank r's
    rows start exactly at ``r * rows_per_rank`` and a global row offset stays a plain pointer
    offset (the last ranks may then hold fewer rows, or none).
    """

    num_rows: int
    world_size: int
    align_rows: int = 1

    @property
    def rows_per_rank(self) -> int:
        even = -(-self.num_rows // self.world_size)
        return -(-even // self.align_rows) * self.align_rows

    def bounds(self, rank: int) -> tuple[int, int]:
        start = min(rank * self.rows_per_rank, self.num_rows)
        return start, min(start + self.rows_per_rank, self.num_rows)

    def owner(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.div(ids, self.rows_per_rank, rounding_mode="floor")


def closed_form_rows(ids: torch.Tensor, row_elems: int, dtype: torch.dtype) -> torch.Tensor:
    """Row ``i``, column ``j`` holds a value computed from (i, j) alone, exactly representable in
    ``dtype``, so a gather is checkable on any rank without communication."""
    cols = torch.arange(row_elems, device=ids.device, dtype=torch.int64)
    flat = ids.to(torch.int64).unsqueeze(1) * row_elems + cols
    if dtype in (torch.int64,):
        return flat
    if dtype == torch.int32:
        return (flat % 2_147_483_629).to(torch.int32)
    if dtype == torch.float32:
        return (flat % 16_777_213).to(torch.float32)            # < 2**24: exact
    if dtype == torch.float16:
        return ((ids.to(torch.int64).unsqueeze(1) * 31 + cols) % 2039).to(torch.float16)   # < 2048
    if dtype == torch.bfloat16:
        return ((ids.to(torch.int64).unsqueeze(1) * 31 + cols) % 251).to(torch.bfloat16)   # < 256
    raise ValueError(f"no closed form for {dtype}")


def check_ids(ids: torch.Tensor, num_rows: int) -> None:
    """Out-of-range or non-integer ids are a clear error, never a wild read."""
    from harness.errors import HarnessError

    if ids.dtype not in (torch.int64, torch.int32):
        raise HarnessError(f"gather ids must be int32 or int64, not {ids.dtype}")
    if ids.numel() == 0:
        return
    lo, hi = torch.aminmax(ids)
    lo, hi = int(lo), int(hi)
    if lo < 0 or hi >= num_rows:
        raise HarnessError(f"gather id out of range: ids span [{lo}, {hi}], table has {num_rows} rows")
