"""Model tests work on tiny tensors: one intra-op thread is faster there and does not stall
when the machine is busy (OpenMP threads spinning on an oversubscribed CPU)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
