"""impls.core.cuda without a GPU: the launch path calls the cached kernel on torch's stream and
enters no CuPy device or stream context on the current device; every kernel of the code goes
through it (the row gather and the probes included)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from impls.core import cuda


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        self.calls.append((grid, block, args, shared_mem, stream))


@pytest.fixture
def fake_gpu(monkeypatch):
    """GPU 0 current, torch's raw stream 0, and a CuPy whose Device context fails if entered."""
    entered = []

    class Device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            entered.append(self.index)

        def __exit__(self, *exc):
            return False

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=Device))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 1000 + index, raising=False)
    monkeypatch.setattr(cuda, "_functions", {})
    monkeypatch.setattr(cuda, "_streams", {(1000, 0): "stream0", (1001, 1): "stream1"})
    monkeypatch.setattr(cuda, "_sm_count", {0: 132, 1: 132})
    return entered


def test_a_launch_on_the_current_device_calls_the_cached_kernel_on_torchs_stream(fake_gpu):
    source = Path("/nowhere/sampling.cu")
    fn = Recorder()
    cuda._functions[(source, "row_counts", 0, ())] = fn
    args = (np.uint64(0), np.int64(5))
    cuda.launch(torch.device("cuda", 0), source, "row_counts", 0, 256, args)
    cuda.KernelDir(Path("/nowhere")).launch(0, "sampling.cu", "row_counts", 7, 128, args, shared_mem=64)
    assert fn.calls == [((1,), (256,), args, 0, "stream0"), ((7,), (128,), args, 64, "stream0")]
    assert fake_gpu == []                                   # no context entered


def test_a_launch_on_another_device_enters_that_device(fake_gpu):
    source = Path("/nowhere/sampling.cu")
    fn = Recorder()
    cuda._functions[(source, "row_counts", 1, ())] = fn
    cuda.launch(1, source, "row_counts", 2, 32, ())
    assert fake_gpu == [1] and fn.calls[0][4] == "stream1"


def test_the_row_gather_and_the_probes_launch_through_the_one_path(fake_gpu, monkeypatch):
    from impls.core import row_gather
    from impls.probes import gpu as probes

    launched = []
    monkeypatch.setattr(cuda, "launch", lambda *a, **k: launched.append((a, k)))
    ids = torch.arange(10)
    out = torch.empty(10, 4)
    row_gather.gather_into(out, torch.zeros(2, dtype=torch.int64), 8, ids, 16,
                           row_gather.parse_launch("4x128u2"))
    (_, source, name, _, threads, _), options = launched[0][0], launched[0][1]["options"]
    assert (source, name, threads, options) == (row_gather.SOURCE, "gather_v16", 128, ("-DUNROLL=2",))
    probes.launch(0, "pointer_chase", 1, 32, ())
    assert launched[1][0][:3] == (0, probes.KERNEL_SOURCE, "pointer_chase")


def test_sources_inline_local_headers_then_the_shared_ones(tmp_path):
    (tmp_path / "local.cuh").write_text("int local_header;\n")
    (tmp_path / "k.cu").write_text('#include "local.cuh"\n#include "common.cuh"\nint body;\n')
    text = cuda.source_text(tmp_path / "k.cu")
    assert "int local_header;" in text and "struct Graph" in text and "#include" not in text
