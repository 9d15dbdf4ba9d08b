"""Compile-check the CUDA probe kernels with nvcc (no GPU needed)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from .conftest import REPO_ROOT

KERNEL = REPO_ROOT / "impls" / "probes" / "kernels" / "memprobe.cu"
ENTRY_POINTS = ("fill_words", "pointer_chase", "random_reads")


@pytest.fixture(scope="module")
def nvcc():
    path = shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not on PATH (the CUDA toolkit is needed to compile-check kernels)")
    return path


def test_kernel_source_exists():
    assert KERNEL.is_file()
    text = KERNEL.read_text()
    for name in ENTRY_POINTS:
        assert re.search(rf'extern "C" __global__ void {name}\(', text), name


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_memprobe_compiles_to_ptx(nvcc, tmp_path, arch):
    ptx = tmp_path / "memprobe.ptx"
    proc = subprocess.run([nvcc, f"-arch={arch}", "--ptx", "-std=c++17", "-o", str(ptx), str(KERNEL)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = ptx.read_text()
    entries = set(re.findall(r"\.entry\s+(\w+)\s*\(", text))
    assert set(ENTRY_POINTS) <= entries, entries   # extern "C": unmangled names
    assert f".target {arch}" in text


def test_compile_error_is_detected(nvcc, tmp_path):
    """The check above would notice a broken kernel."""
    bad = tmp_path / "bad.cu"
    bad.write_text(KERNEL.read_text().replace("u64 h = mix64(start);", "u64 h = mix64(start"))
    proc = subprocess.run([nvcc, "-arch=sm_90", "--ptx", "-o", str(tmp_path / "bad.ptx"), str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0


# The CuPy kernels are compiled by NVRTC at run time; nvcc catches their syntax and type
# errors here, before a GPU run does (the sources are inlined the way the host code does).
RUNTIME_KERNELS = [
    ("impls/sampling/kernels", "sampling.cu",
     ("row_counts", *(f"{k}_{t}" for k in ("path_doubling", "reservoir", "khop_batched") for t in ("i32", "i64")))),
    ("impls/sampling/kernels", "unique.cu", ("au_insert", "au_assign", "au_lookup")),
    ("impls/sampling/kernels", "unique_dense.cu",
     ("dm_mark_targets", "dm_mark_neighbors", "dm_count", "dm_assign", "dm_lookup")),
    ("impls/sampling/kernels", "random_walk.cu", ("random_walk_topk_i32", "random_walk_topk_i64")),
    ("impls/storage/kernels", "tiers.cu", ("tier_physical", "tier_count")),
    ("impls/core/kernels", "gather.cu", ("gather_v16", "gather_v8", "gather_v4", "gather_v2", "gather_bulk")),
    ("impls/gather/kernels", "push.cu",
     ("push_requests", "push_rows_v16", "push_rows_v8", "push_rows_v4", "push_rows_v2", "push_rows_bulk")),
]


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("folder,source,entries", RUNTIME_KERNELS, ids=[k[1] for k in RUNTIME_KERNELS])
def test_runtime_kernels_compile(nvcc, tmp_path, folder, source, entries, arch):
    from impls.core.cuda import KernelDir

    text = KernelDir(REPO_ROOT / folder).source_text(source)
    src = tmp_path / source
    src.write_text(text)
    ptx = tmp_path / (source + ".ptx")
    proc = subprocess.run([nvcc, f"-arch={arch}", "--ptx", "-std=c++17", "-o", str(ptx), str(src)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx.read_text()))
    assert set(entries) <= found, sorted(found)


def test_sources_are_compiled_with_their_includes_inlined():
    from impls.core.cuda import KernelDir

    text = KernelDir(REPO_ROOT / "impls/sampling/kernels").source_text("sampling.cu")
    assert '#include "common.cuh"' not in text and "struct Graph" in text


# Inline PTX (the bulk copies, mbarriers, the L2::256B loads) passes --ptx unread: ptxas assembling
# it for Hopper is what checks it, and the instructions must be there rather than the emulator's
# plain copies.
BULK_KERNELS = [("impls/core/kernels", "gather.cu", ("-DLOAD_L2_256",),
                 ("cp.async.bulk.shared::cluster.global", "mbarrier.try_wait.parity", "ld.global.L2::256B")),
                ("impls/gather/kernels", "push.cu", (), ("cp.async.bulk.global.shared::cta", "cp.async.bulk.wait_group"))]


@pytest.mark.parametrize("folder,source,defines,instructions", BULK_KERNELS, ids=[k[1] for k in BULK_KERNELS])
def test_inline_ptx_assembles_for_hopper(nvcc, tmp_path, folder, source, defines, instructions):
    from impls.core.cuda import KernelDir

    src = tmp_path / source
    src.write_text(KernelDir(REPO_ROOT / folder).source_text(source))
    ptx, cubin = tmp_path / (source + ".ptx"), tmp_path / (source + ".cubin")
    for kind, out in (("--ptx", ptx), ("--cubin", cubin)):
        proc = subprocess.run([nvcc, "-arch=sm_90", kind, "-std=c++17", *defines, "-o", str(out), str(src)],
                              capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]
    text = ptx.read_text()
    assert all(i in text for i in instructions), [i for i in instructions if i not in text]


def test_a_malformed_bulk_copy_is_refused_by_the_assembler(nvcc, tmp_path):
    from impls.core.cuda import KernelDir

    text = KernelDir(REPO_ROOT / "impls/gather/kernels").source_text("push.cu")
    src = tmp_path / "push.cu"
    src.write_text(text.replace("cp.async.bulk.global.shared::cta.bulk_group", "cp.async.bulk.global.shared::cta.bulk_grp"))
    proc = subprocess.run([nvcc, "-arch=sm_90", "--cubin", "-std=c++17", "-o", str(tmp_path / "p.cubin"), str(src)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0
