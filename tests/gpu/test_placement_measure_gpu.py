"""The measured placement path on GPU ranks: the fused one-kernel loader and the split one."""

from __future__ import annotations

import pytest
import torch

from tests.placement.measure_targets import check_measured_policies

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0


GATHERS, ROW_ELEMS = ["fused", "split"], [3, 128]


@pytest.fixture(scope="module")
def measured():
    """Every gather setting and row size in one launch, and launches of 3 batches of 128-float rows."""
    world = 4 if GPUS >= 4 else 2
    variants = [(g, e) for g in GATHERS for e in ROW_ELEMS] + [(g, 128, 3) for g in GATHERS]
    return check_measured_policies("cuda", world, variants, nodes=3000)


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("gather", GATHERS)
@pytest.mark.parametrize("row_elems", ROW_ELEMS)
def test_measured_gather_on_gpu_ranks(measured, gather, row_elems):
    assert set(measured[(gather, row_elems)]) == {gather}


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("gather", GATHERS)
def test_measured_launches_of_several_batches_on_gpu_ranks(measured, gather):
    assert set(measured[(gather, 128, 3)]) == {gather}
