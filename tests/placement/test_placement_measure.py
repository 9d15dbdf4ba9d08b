"""The measured path on 2 CPU ranks: every policy's gathered rows and per-tier counts."""

from __future__ import annotations

import pytest

from tests.placement.measure_targets import check_measured_policies


@pytest.fixture(scope="module")
def measured():
    """Both gather settings in one launch of 2 CPU ranks."""
    return check_measured_policies("cpu", 2, [("fused", 3), ("split", 3)])


@pytest.mark.parametrize("gather", ["fused", "split"])
def test_measured_gather_every_policy(measured, gather):
    # CPU ranks have no pointer-table kernel: both settings run (and say they ran) the split path
    assert set(measured[(gather, 3)]) == {"split"}


def test_measured_gather_rejects_unknown_path():
    with pytest.raises(Exception, match="fused or split"):
        check_measured_policies("cpu", 2, [("zigzag", 3)], policies=["random"])
