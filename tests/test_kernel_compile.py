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
