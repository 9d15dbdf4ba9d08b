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
    ("impls/sampling/kernels", "sampling.cu", ("row_counts", "path_doubling_i32", "reservoir_i64", "khop_batched_i32")),
    ("impls/sampling/kernels", "unique.cu", ("au_insert", "au_assign", "au_lookup")),
    ("impls/sampling/kernels", "random_walk.cu", ("random_walk_topk_i32", "random_walk_topk_i64")),
    ("impls/storage/kernels", "tiers.cu", ("tier_physical", "tier_count")),
    ("impls/core/kernels", "gather.cu", ("gather_v16", "gather_v8", "gather_v4", "gather_v2")),
]


@pytest.mark.parametrize("folder,source,entries", RUNTIME_KERNELS, ids=[k[1] for k in RUNTIME_KERNELS])
def test_runtime_kernels_compile(nvcc, tmp_path, folder, source, entries):
    from impls.core.cuda import KernelDir

    text = KernelDir(REPO_ROOT / folder).source_text(source)
    src = tmp_path / source
    src.write_text(text)
    ptx = tmp_path / (source + ".ptx")
    proc = subprocess.run([nvcc, "-arch=sm_90", "--ptx", "-std=c++17", "-o", str(ptx), str(src)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx.read_text()))
    assert set(entries) <= found, sorted(found)
