"""Fixtures for the CPU hot-path benchmarks (run as plain tests unless --benchmark-only)."""

from __future__ import annotations

import pytest
import torch.distributed as dist

from harness.launcher import RankContext


@pytest.fixture(autouse=True)
def one_thread():
    """Benchmarks run single-threaded so their times do not depend on how many cores are free."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


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
