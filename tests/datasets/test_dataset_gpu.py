"""The GPU generator: same graph as the CPU generator, in chunks and buckets (CUDA only)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.datasets.backends import TorchBackend
from harness.datasets.cache import CacheWriter
from harness.datasets.generators import plan_for, write_standin

pytestmark = pytest.mark.gpu


def _arrays(plan, backend, directory):
    writer = CacheWriter(directory)
    write_standin(plan, writer, backend)
    # bfloat16 is stored as its uint16 bit pattern
    return {f: np.fromfile(writer.path(f), dtype=np.uint16 if e["dtype"] == "bfloat16" else e["dtype"])
            for f, e in writer.entries.items()}


@pytest.mark.parametrize("name,scale,overrides,resident", [
    ("ogbn-products", 0.003, {}, True),
    ("ogbn-products", 0.003, {}, False),                # buckets in host memory
    ("twitter-2010", 0.0002, {}, True),                 # directed
    ("citeseer", 1.0, {"id_order": "shuffled", "feature_dtype": "bfloat16"}, True),
])
def test_cuda_generation_is_bit_identical_to_cpu(tmp_path, name, scale, overrides, resident):
    plan = plan_for(name, scale, seed=5, **overrides)
    cpu = _arrays(plan, TorchBackend("cpu"), tmp_path / "cpu")
    gpu_backend = TorchBackend("cuda")
    gpu_backend.fits_on_device = lambda nbytes: resident
    # Force the streaming path: many draw chunks and row buckets, small feature blocks.
    gpu_backend.chunk_draws, gpu_backend.bucket_keys = 4099, 20000
    gpu_backend.feature_chunk_values = 5000
    gpu = _arrays(plan, gpu_backend, tmp_path / "gpu")
    assert cpu.keys() == gpu.keys()
    for field in cpu:
        assert np.array_equal(cpu[field], gpu[field]), field
