"""Compile-check the sampling CUDA sources with nvcc (no GPU needed), as CuPy will see them."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from impls.sampling.gpu import KERNELS

ENTRIES = {
    "sampling.cu": {"row_counts"} | {f"{k}_{t}" for k in ("path_doubling", "reservoir", "khop_batched")
                                     for t in ("i32", "i64")},
    "unique.cu": {"au_insert", "au_assign", "au_lookup"},
    "unique_dense.cu": {"dm_mark_targets", "dm_mark_neighbors", "dm_count", "dm_assign", "dm_lookup"},
}


@pytest.fixture(scope="module")
def nvcc():
    path = shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not on PATH (the CUDA toolkit is needed to compile-check kernels)")
    return path


@pytest.mark.parametrize("source", sorted(ENTRIES))
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_kernels_compile_to_ptx(nvcc, tmp_path, source, arch):
    cu = tmp_path / source
    cu.write_text(KERNELS.source_text(source))          # includes inlined, as handed to NVRTC
    ptx = tmp_path / "out.ptx"
    proc = subprocess.run([nvcc, f"-arch={arch}", "--ptx", "-std=c++17", "-o", str(ptx), str(cu)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    entries = set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx.read_text()))
    assert ENTRIES[source] <= entries, entries


def test_source_inlines_includes():
    text = KERNELS.source_text("sampling.cu")
    assert '#include "common.cuh"' not in text and "struct Graph" in text
