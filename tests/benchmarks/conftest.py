"""Fixtures for the CPU hot-path benchmarks (run as plain tests unless --benchmark-only)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from harness.launcher import RankContext


@pytest.fixture(autouse=True)
def one_thread():
    """Benchmarks run single-threaded so their times do not depend on how many cores are free (here,
    not tests/conftest.py: `bench check` runs this folder as a suite of its own)."""
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


@pytest.fixture
def full_batch_epoch():
    """The full-batch epoch workload the CPU and GPU hot paths share, sized by each (a fixture: `bench
    check` imports this folder's files as top-level modules)."""
    return FullBatchEpoch


class FullBatchEpoch:
    """One full-batch epoch (forward, backward, Adam) of ``single_gpu``'s GCN on a planted random
    graph; the first epoch runs at construction, outside the timing. Calling it trains an epoch and
    returns the loss; :meth:`learned` says whether the timed epochs learned."""

    def __init__(self, nodes: int, feats: int, classes: int, model: str, device: str = "cpu"):
        from harness import registry
        from impls.fullbatch.model import ModelConfig
        from impls.fullbatch.problem import random_graph

        graph = random_graph(nodes, 10, feats, classes, seed=5)
        self.trainer = registry.get_impl("fullbatch", "single_gpu").factory(
            graph, ModelConfig.parse(model, lr=0.01), device=device)
        self.trainer.train_epoch()
        self.first_loss = self.trainer.loss_value()
        self.before = [w.detach().clone() for w in self.trainer.weights]

    def __call__(self) -> float:
        self.trainer.train_epoch()
        return self.trainer.loss_value()

    def learned(self, loss: float) -> bool:
        """Adam on planted labels: every epoch lowers the loss and moves every weight."""
        return loss < self.first_loss and all(not torch.equal(b, w) for b, w in zip(self.before, self.trainer.weights))
