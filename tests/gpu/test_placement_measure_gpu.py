"""The measured placement path on GPU ranks: the fused one-kernel loader and the split one."""

from __future__ import annotations

import pytest
import torch

from tests.placement.measure_targets import check_measured_policies

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("gather", ["fused", "split"])
@pytest.mark.parametrize("row_elems, per_region", [(3, 1), (128, 1), (128, 3)])
def test_measured_gather_on_gpu_ranks(gather, row_elems, per_region):
    world = 4 if GPUS >= 4 else 2
    paths = check_measured_policies("cuda", world, gather, row_elems=row_elems, nodes=3000,
                                    batches_per_region=per_region)
    assert set(paths) == {gather}
