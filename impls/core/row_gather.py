"""The one-kernel row gather (kernels/gather.cu): ``out[i] = row ids[i]`` of a table whose parts
are device, peer or mapped host memory. The host side picks the vector width and launch geometry
and launches through :mod:`impls.core.cuda` on torch's stream. The gather implementations,
the tiered stores and the placement loader share it.

How the reads are issued (``load``): ``plain`` 16-byte loads, ``l2_256`` the same loads with the
L2::256B prefetch-size hint, ``bulk`` whole rows through Hopper's bulk copy unit (rows a multiple of
16 bytes on compute capability 9.0 or later; elsewhere the plain loads run, and
:func:`effective_load` says which ran)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from . import cuda

SOURCE = Path(__file__).with_name("kernels") / "gather.cu"


class Launch(NamedTuple):
    blocks_per_sm: int
    threads: int
    unroll: int


DEFAULT_LAUNCH = Launch(8, 256, 4)
MAX_PARTS = 16
LOADS = ("plain", "l2_256", "bulk")
BULK_STAGES = (4, 2)                 # rows in flight per warp, the deepest that fits the shared memory
BULK_SHARED_BYTES = 48 << 10         # a block's dynamic shared memory without a raised limit
_OPTIONS = {(u, load): (f"-DUNROLL={u}",) + (("-DLOAD_L2_256",) if load == "l2_256" else ())
            for u in range(1, 17) for load in LOADS}


def source_text(name: str = "gather.cu") -> str:
    """The kernel source as NVRTC compiles it (tests compile-check it with nvcc)."""
    return cuda.source_text(SOURCE.parent / name)


def parse_launch(text: str | None) -> Launch:
    """``"BxT"`` or ``"BxTuU"``: B blocks per SM, T threads per block, U loads in flight per
    thread (e.g. ``"16x256u8"``); None or ``"default"`` = :data:`DEFAULT_LAUNCH`."""
    if text in (None, "", "default"):
        return DEFAULT_LAUNCH
    m = re.fullmatch(r"(\d+)x(\d+)(?:u(\d+))?", str(text).strip())
    if not m:
        raise ValueError(f"launch must look like 8x256 or 8x256u4 (blocks per SM x threads, u = unroll), not {text!r}")
    blocks, threads, unroll = int(m.group(1)), int(m.group(2)), int(m.group(3) or DEFAULT_LAUNCH.unroll)
    if not (1 <= blocks <= 64 and threads in (32, 64, 128, 256, 512, 1024) and 1 <= unroll <= 16):
        raise ValueError(f"launch {text!r} out of range: 1-64 blocks per SM, threads a power of two "
                         "from 32 to 1024, unroll 1-16")
    return Launch(blocks, threads, unroll)


def launch_name(launch: Launch) -> str:
    """The ``"BxTuU"`` spelling :func:`parse_launch` reads."""
    return f"{launch.blocks_per_sm}x{launch.threads}u{launch.unroll}"


def vector_bytes(row_bytes: int) -> int:
    """Widest load that divides the row (rows start at multiples of row_bytes)."""
    for width in (16, 8, 4, 2):
        if row_bytes % width == 0:
            return width
    raise ValueError(f"rows of {row_bytes} bytes are not 2-byte aligned")


def check_load(load: str | None) -> str:
    load = load or "plain"
    if load not in LOADS:
        raise ValueError(f"load must be one of {', '.join(LOADS)}, not {load!r}")
    return load


def bulk_stages(row_bytes: int, threads: int) -> int:
    """Rows in flight per warp for ``gather_bulk`` (0: the rows do not suit the bulk copy)."""
    if row_bytes % 16:
        return 0
    warps = threads // 32
    for stages in BULK_STAGES:
        if -(-warps * stages * 8 // 16) * 16 + warps * stages * row_bytes <= BULK_SHARED_BYTES:
            return stages
    return 0


def effective_load(load: str, row_bytes: int, device, launch: Launch = DEFAULT_LAUNCH) -> str:
    """The load the kernel runs for ``load``: ``bulk`` needs rows of 16-byte multiples that fit two
    stages of shared memory, and compute capability 9.0 (the emulator runs its plain copies)."""
    if load != "bulk":
        return load
    if not bulk_stages(row_bytes, launch.threads):
        return "plain"
    if cuda.emulated() or not isinstance(device, torch.device) or device.type != "cuda":
        return "bulk"
    return "bulk" if cuda.compute_capability(device)[0] >= 9 else "plain"


def gather_into(out: torch.Tensor, table_ptrs: torch.Tensor, rows_per_part: int, ids: torch.Tensor,
                row_bytes: int, launch: Launch = DEFAULT_LAUNCH, load: str = "plain") -> torch.Tensor:
    """``out[i] = row ids[i]`` of the table whose part p starts at ``table_ptrs[p]``.

    ``table_ptrs``: int64 device tensor of base addresses (local, peer or mapped host); one
    entry = continuous addressing (row id at ``table_ptrs[0] + id * row_bytes``);
    ``ids``: int64 device tensor; ``out``: contiguous device tensor of len(ids) rows;
    ``load``: how the reads are issued (:data:`LOADS`).
    """
    n = ids.numel()
    if n == 0:
        return out
    nparts = table_ptrs.numel()
    if nparts > MAX_PARTS:
        raise ValueError(f"at most {MAX_PARTS} parts")
    if rows_per_part >= 1 << 32:
        raise ValueError("parts of 2**32 rows or more are not supported by the 32-bit kernel")
    width = vector_bytes(row_bytes)
    vecs_per_row = row_bytes // width
    if n * vecs_per_row >= 1 << 32:  # split very large gathers into 32-bit launches
        step = ((1 << 32) - 1) // vecs_per_row
        for lo in range(0, n, step):
            gather_into(out[lo:lo + step], table_ptrs, rows_per_part, ids[lo:lo + step], row_bytes, launch, load)
        return out
    device = ids.device
    threads = launch.threads
    if effective_load(check_load(load), row_bytes, device, launch) == "bulk":
        stages = bulk_stages(row_bytes, threads)
        warps = threads // 32
        shared = -(-warps * stages * 8 // 16) * 16 + warps * stages * row_bytes
        blocks = max(1, min(cuda.sm_count(device) * launch.blocks_per_sm, -(-n // warps)))
        cuda.launch(device, SOURCE, "gather_bulk", blocks, threads, (
            np.uint64(table_ptrs.data_ptr()), np.int32(nparts), np.uint32(rows_per_part),
            np.uint64(ids.data_ptr()), np.uint32(n), np.uint32(row_bytes), np.uint32(stages),
            np.uint64(out.data_ptr())), shared_mem=shared, options=_OPTIONS[(launch.unroll, "plain")])
        return out
    items = n * vecs_per_row
    blocks = max(1, min(cuda.sm_count(device) * launch.blocks_per_sm, -(-items // threads)))
    cuda.launch(device, SOURCE, f"gather_v{width}", blocks, threads, (
        np.uint64(table_ptrs.data_ptr()), np.int32(nparts), np.uint32(rows_per_part),
        np.uint64(ids.data_ptr()), np.uint32(items), np.uint32(vecs_per_row),
        np.uint32(row_bytes), np.uint64(out.data_ptr())), options=_OPTIONS[(launch.unroll, load or "plain")])
    return out
