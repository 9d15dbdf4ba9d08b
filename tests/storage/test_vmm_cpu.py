"""Continuous addressing through CUDA VMM (impls/storage/vmm.py), the parts that run without a GPU:
padding arithmetic, the gather kernel's addressing over a padded range (CUDA emulator), file
descriptors over Unix sockets, and the collective build/teardown against a fake driver with
threads as ranks (every failure raised on every rank, nothing left behind)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.errors import SkipPoint
from impls.core.layout import RowPartition
from impls.storage.vmm import (DRIVER_NAMES, VmmLayout, VmmRange, exchange_fds, granule_rows, load_driver,
                               recv_fd, send_fd, Refused)

from .fake_cuda import FD_ATTR, VMM_ATTR, CUresult, FakeDriver, open_fds, run_ranks

MiB = 1 << 20


# --- padding arithmetic -------------------------------------------------------------------

@pytest.mark.parametrize("row_bytes,gran,expect", [(512, 2 * MiB, 4096), (148, 2 * MiB, 524288),
                                                    (4, 2 * MiB, 524288), (2 * MiB, 2 * MiB, 1),
                                                    (3 * MiB, 2 * MiB, 2), (74, 64 << 10, 32768)])
def test_granule_rows(row_bytes, gran, expect):
    assert granule_rows(row_bytes, gran) == expect
    assert (expect * row_bytes) % gran == 0


@pytest.mark.parametrize("num_rows,world,row_bytes,gran", [
    (1000, 3, 12, 256), (8_000_000, 2, 512, 2 * MiB), (1_200_003, 2, 148, 2 * MiB), (5, 4, 2, 2 * MiB),
    (1 << 20, 4, 4096, 2 * MiB), (10, 1, 8, 4096)])
def test_layout_pads_rows_so_rank_r_starts_at_its_segment(num_rows, world, row_bytes, gran):
    lay = VmmLayout(num_rows, world, row_bytes, gran)
    part = lay.partition()
    assert lay.shard_bytes % gran == 0 and lay.shard_bytes == part.rows_per_rank * row_bytes
    assert part.rows_per_rank >= -(-num_rows // world)
    assert lay.total_bytes == world * lay.shard_bytes >= num_rows * row_bytes
    bounds = [part.bounds(r) for r in range(world)]
    assert bounds[0][0] == 0 and bounds[-1][1] == num_rows
    assert all(bounds[r][1] == bounds[r + 1][0] for r in range(world - 1))   # contiguous, no gaps
    for r, (start, end) in enumerate(bounds):
        if start < end:                      # rank r's first row lies exactly at its mapping
            assert lay.row_offset(start) == lay.offset(r)
            assert lay.row_offset(end - 1) + row_bytes <= lay.offset(r) + lay.shard_bytes
    rng = np.random.default_rng(0)
    for row in [0, num_rows - 1, *rng.integers(0, num_rows, 200).tolist(),
                *[b for se in bounds for b in se if b < num_rows]]:
        assert lay.chunk_offset(row) == lay.row_offset(row)   # continuous == chunked address
    assert lay.padding_bytes() == lay.total_bytes - num_rows * row_bytes


def test_row_partition_default_is_unchanged():
    assert RowPartition(1001, 3).rows_per_rank == 334 and RowPartition(1001, 3).bounds(2) == (668, 1001)
    aligned = RowPartition(1001, 3, align_rows=64)
    assert aligned.rows_per_rank == 384 and aligned.bounds(2) == (768, 1001)
    assert RowPartition(5, 4, align_rows=1 << 20).bounds(1) == (5, 5)   # an empty rank


# --- the gather kernel over a padded range, on the CUDA emulator ---------------------------

def _emu_gather():
    from tests.sampling import emu

    why = emu.available()
    if why:
        pytest.skip(why)
    from impls.core.row_gather import SOURCE

    return lambda name: emu.kernel(SOURCE, name)


def _range_buffer(num_rows, world, row_elems, rows_per_rank, seg_bytes):
    """A host buffer standing for the VA range: rank r's rows at r * seg_bytes, padding poisoned."""
    buf = np.full(world * seg_bytes // 4, 0xFFFFFFFF, dtype=np.uint32)
    for r in range(world):
        start, end = min(r * rows_per_rank, num_rows), min((r + 1) * rows_per_rank, num_rows)
        rows = np.arange(start, end, dtype=np.uint32)[:, None] * 1000 + np.arange(row_elems, dtype=np.uint32)
        lo = r * seg_bytes // 4
        assert rows.size * 4 <= seg_bytes
        buf[lo: lo + rows.size] = rows.ravel()
    return buf


def _launch(kernel, table, rows_per_part, ids, row_elems):
    width = 16 if (row_elems * 4) % 16 == 0 else 4
    vecs = row_elems * 4 // width
    out = np.zeros((ids.size, row_elems), dtype=np.uint32)
    parts = np.asarray(table, dtype=np.uint64)
    kernel(f"gather_v{width}")((3,), (64,), (
        np.uint64(parts.ctypes.data), np.int32(parts.size), np.uint32(rows_per_part), np.uint64(ids.ctypes.data),
        np.uint32(ids.size * vecs), np.uint32(vecs), np.uint32(row_elems * 4), np.uint64(out.ctypes.data)))
    return out


@pytest.mark.parametrize("row_elems", [3, 8])
def test_gather_kernel_reads_one_part_of_a_padded_range(row_elems):
    kernel = _emu_gather()
    num_rows, world, gran = 1000, 3, 256
    lay = VmmLayout(num_rows, world, row_elems * 4, gran)
    rpp = lay.rows_per_rank
    buf = _range_buffer(num_rows, world, row_elems, rpp, lay.shard_bytes)
    base = buf.ctypes.data
    ids = np.concatenate([np.random.default_rng(1).integers(0, num_rows, 300),
                          [0, rpp - 1, rpp, 2 * rpp - 1, 2 * rpp, num_rows - 1]]).astype(np.int64)
    expect = ids.astype(np.uint32)[:, None] * 1000 + np.arange(row_elems, dtype=np.uint32)
    continuous = _launch(kernel, [base], rpp, ids, row_elems)                       # one pointer
    chunked = _launch(kernel, [base + lay.offset(r) for r in range(world)], rpp, ids, row_elems)
    np.testing.assert_array_equal(continuous, expect)
    np.testing.assert_array_equal(chunked, expect)
    # negative control: segments padded to the granularity without rounding the rows per rank
    # up leave gaps, and one pointer no longer finds rank 1's rows
    plain = -(-num_rows // world)
    seg = -(-plain * row_elems * 4 // gran) * gran
    gappy = _range_buffer(num_rows, world, row_elems, plain, seg)
    wrong = _launch(kernel, [gappy.ctypes.data], plain, ids, row_elems)
    assert not np.array_equal(wrong, expect)
    right = _launch(kernel, [gappy.ctypes.data + r * seg for r in range(world)], plain, ids, row_elems)
    np.testing.assert_array_equal(right, expect)   # ...while a pointer per rank does


# --- file descriptors over Unix sockets ----------------------------------------------------

def _memfd(text: str) -> int:
    fd = os.memfd_create("vmm-test")
    os.write(fd, text.encode())
    return fd


def test_fd_passes_over_a_socketpair():
    before = open_fds()
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        fd = _memfd("shard of rank 3")
        send_fd(a, fd, b"0123456789abcdef-payload")
        os.close(fd)                                   # the message holds its own reference
        data, got = recv_fd(b, 24)
        assert data == b"0123456789abcdef-payload"
        assert os.pread(got, 64, 0) == b"shard of rank 3"
        assert os.get_inheritable(got) is False         # close-on-exec
        os.close(got)
        a.sendall(b"x" * 24)                           # a message without a descriptor is refused
        with pytest.raises(OSError, match="one file descriptor"):
            recv_fd(b, 24)
    assert open_fds() == before


@pytest.mark.parametrize("world", [1, 2, 4])
def test_exchange_fds_between_thread_ranks(world):
    before, folders = open_fds(), set(Path("/tmp").glob("harness-vmm-*"))

    def rank_fn(ctx, gather):
        fd = _memfd(f"rank {ctx.rank}")
        try:
            got = exchange_fds(fd, ctx.rank, ctx.world_size, gather, timeout_s=10)
        finally:
            os.close(fd)
        try:
            return {peer: os.pread(f, 32, 0).decode() for peer, f in got.items()}
        finally:
            for f in got.values():
                os.close(f)

    results, errors = run_ranks(world, rank_fn)
    assert errors == [None] * world
    for r, seen in enumerate(results):
        assert seen == {p: f"rank {p}" for p in range(world) if p != r}
    assert open_fds() == before
    assert set(Path("/tmp").glob("harness-vmm-*")) == folders     # sockets and folders removed


def test_exchange_refuses_a_message_without_the_token():
    before = open_fds()

    def rank_fn(ctx, gather):
        def forged(obj):                       # rank 1 sends rank 0 a wrong token
            entries = gather(obj)
            if ctx.rank == 1:
                path, _, why = entries[0]
                entries[0] = (path, b"\0" * 16, why)
            return entries

        fd = _memfd("x")
        try:
            got = exchange_fds(fd, ctx.rank, ctx.world_size, forged, timeout_s=10)
        finally:
            os.close(fd)
        for f in got.values():
            os.close(f)
        return sorted(got)

    results, errors = run_ranks(2, rank_fn)
    assert isinstance(errors[0], OSError) and "unexpected sender" in str(errors[0])
    assert errors[1] is None and results[1] == [0]
    assert open_fds() == before


# --- the collective build against a fake driver -------------------------------------------

def _build(world, driver, num_rows=10_000, row_bytes=512, keep=None):
    def rank_fn(ctx, gather):
        rng = VmmRange(ctx, num_rows, row_bytes, driver=driver, all_gather=gather, timeout_s=10)
        info = {"base": rng.base, "layout": rng.layout,
                "owners": [driver.owner_gpu(rng.segment(r)) for r in range(world)],
                "access": [driver.access[rng.segment(r)] for r in range(world)],
                "granularities": rng.granularities}
        if keep is not None:
            keep[ctx.rank] = rng
        else:
            assert rng.release() == []
        return info
    return run_ranks(world, rank_fn)


@pytest.mark.parametrize("world", [1, 2, 4])
def test_every_rank_maps_every_shard_in_rank_order(world):
    before = open_fds()
    driver = FakeDriver(granularity={1: 4 * MiB})       # GPU 1 asks for more: everybody uses it
    results, errors = _build(world, driver)
    assert errors == [None] * world
    for r, info in enumerate(results):
        lay = info["layout"]
        assert lay.granularity == (4 * MiB if world > 1 else 2 * MiB) and lay.shard_bytes % lay.granularity == 0
        assert info["owners"] == list(range(world))      # segment r holds rank r's allocation
        assert info["access"] == [{r}] * world           # each rank granted its own GPU only
    assert len({info["base"] for info in results}) == world   # one range per rank ("process")
    assert driver.clean() and open_fds() == before


def test_release_is_idempotent_and_frees_in_order():
    driver, keep = FakeDriver(), {}
    results, errors = _build(2, driver, keep=keep)
    assert errors == [None, None] and not driver.clean()
    assert len(driver.phys) == 2 and all(p["refs"] == 4 for p in driver.phys.values())  # 2 handles, 2 maps
    assert keep[0].release() == [] and keep[0].release() == []
    assert len(driver.phys) == 2      # rank 1 still maps rank 0's memory: the driver keeps it
    assert keep[1].release() == []
    assert driver.clean()


@pytest.mark.parametrize("fail,kind,words", [
    ({("cuMemSetAccess", 1): CUresult.CUDA_ERROR_NOT_SUPPORTED}, SkipPoint,
     ["mapping the shards on rank 1", "cuMemSetAccess", "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"]),
    ({("cuMemCreate", 0): CUresult.CUDA_ERROR_OUT_OF_MEMORY}, RuntimeError,
     ["allocating the shard on rank 0", "CUDA_ERROR_OUT_OF_MEMORY"]),
    ({("cuMemImportFromShareableHandle", 2): CUresult.CUDA_ERROR_INVALID_VALUE}, RuntimeError,
     ["mapping the shards on rank 2", "rank 0's shard", "CUDA_ERROR_INVALID_VALUE"]),
    ({("cuMemExportToShareableHandle", 1): CUresult.CUDA_ERROR_NOT_SUPPORTED}, SkipPoint,
     ["allocating the shard on rank 1", "CUDA_ERROR_NOT_SUPPORTED"]),
])
def test_a_refusal_on_one_rank_is_raised_on_every_rank_and_undone(fail, kind, words):
    before = open_fds()
    driver = FakeDriver(fail=fail)
    _, errors = _build(3, driver)
    assert all(type(e) is kind for e in errors), errors
    assert len({str(e) for e in errors}) == 1
    for word in words:
        assert word in str(errors[0])
    assert driver.clean(), (driver.phys, driver.mappings, driver.reserved, driver.retained)
    assert open_fds() == before


@pytest.mark.parametrize("attr,words", [(VMM_ATTR, "virtual memory management"), (FD_ATTR, "POSIX file descriptors")])
def test_a_gpu_without_the_feature_is_a_skip(attr, words):
    driver = FakeDriver(attrs={(attr, 1): 0})
    _, errors = _build(2, driver)
    assert all(isinstance(e, SkipPoint) and words in str(e) and "rank 1" in str(e) for e in errors)
    assert driver.clean()


def test_missing_cuda_bindings_is_a_skip(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    with pytest.raises(Refused, match="cuda-bindings"):
        load_driver()

    def rank_fn(ctx, gather):
        return VmmRange(ctx, 100, 8, all_gather=gather)

    _, errors = run_ranks(2, rank_fn)
    assert all(isinstance(e, SkipPoint) and "cuda-bindings" in str(e) for e in errors)


def test_driver_names_exist_in_cuda_bindings():
    driver = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed here")
    missing = [n for n in DRIVER_NAMES if not hasattr(driver, n)]
    assert not missing
    fake = FakeDriver()
    for enum_name in ("CUdevice_attribute", "CUmemAllocationType", "CUmemLocationType", "CUmemAllocationHandleType",
                      "CUmemAllocationGranularity_flags", "CUmemAccess_flags"):
        for member in vars(getattr(fake, enum_name)):
            assert hasattr(getattr(driver, enum_name), member), f"{enum_name}.{member}"
    for name in ("CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_INVALID_DEVICE",
                 "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "CUDA_ERROR_NO_DEVICE"):
        assert hasattr(driver.CUresult, name)
    prop = driver.CUmemAllocationProp()
    prop.location.id = 1
    assert prop.location.id == 1
