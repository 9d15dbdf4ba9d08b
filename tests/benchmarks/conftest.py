"""Fixtures for the CPU hot-path benchmarks (run as plain tests unless --benchmark-only)."""

from __future__ import annotations

import pytest
import torch.distributed as dist

from harness.launcher import RankContext


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Benchmarks run single-threaded (tests/conftest.py)."""


@pytest.fixture(scope="module")
def cpu_rank(tmp_path_factory):
    """A one-rank gloo group in this process, so rank-based implementations run in-process."""
    created = not dist.is_initialized()
    if created:
        store = dist.FileStore(str(tmp_path_factory.mktemp("pg") / "store"), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    yield RankContext(rank=0, world_size=1, local_rank=0, device="cpu", backend="gloo")
    if created:
        dist.destroy_process_group()
