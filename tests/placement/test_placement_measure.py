"""The measured path on 2 CPU ranks: every policy's gathered rows and per-tier counts."""

from __future__ import annotations

import pytest

from tests.placement.measure_targets import check_measured_policies


@pytest.fixture(scope="module")
def measured():
    """Both gather settings, and timed launches of 2 batches, in one launch of 2 CPU ranks."""
    return check_measured_policies("cpu", 2, [("fused", 3), ("split", 3), ("split", 3, 2)], repeats=3)


@pytest.mark.parametrize("gather", ["fused", "split"])
def test_measured_gather_every_policy(measured, gather):
    # CPU ranks have no pointer-table kernel: both settings run (and say they ran) the split path
    assert set(measured[(gather, 3)]) == {"split"}


def test_measured_regions_of_several_batches_gather_every_row(measured):
    # 5 batches per rank in regions of 2: the last region holds one batch; every row still checked
    assert set(measured[("split", 3, 2)]) == {"split"}


def test_measured_gather_rejects_unknown_path():
    with pytest.raises(Exception, match="fused or split"):
        check_measured_policies("cpu", 2, [("zigzag", 3)], policies=["random"])
