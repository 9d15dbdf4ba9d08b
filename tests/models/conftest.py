"""Model tests work on tiny tensors: one intra-op thread is faster there and does not stall
when the machine is busy (OpenMP threads spinning on an oversubscribed CPU)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every model test (tests/conftest.py's one_torch_thread)."""
