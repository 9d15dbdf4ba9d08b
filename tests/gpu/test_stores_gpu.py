"""GGMS, DGL+C and Quiver stores on CUDA ranks: peer buffers in torch symmetric memory, host rows
page-locked and read by the kernels (zero copy), the sampling kernels over the tiered descriptor.
The same checks as tests/storage on CPU ranks, plus: what each GPU allocated equals the budget
model. Skips cleanly without CUDA or CuPy."""

from __future__ import annotations

import pytest

from tests.gpu import require_gpus

torch = require_gpus()

from harness.launcher import launch  # noqa: E402
from tests.storage.targets import ranks_check_designs  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("world", sorted({1, min(2, torch.cuda.device_count())}))
def test_every_design_on_gpu_ranks(world):
    results = launch(ranks_check_designs, (False,), world_size=world, device="cuda", timeout_s=600)
    for name in results[0]:
        assert all(r[name]["per_gpu"] == results[0][name]["per_gpu"] for r in results)
    if world > 1:
        assert results[0]["ggms"]["feature_tiers"][1] > 0
