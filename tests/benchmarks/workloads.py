"""Workloads the CPU and GPU hot-path benchmarks share, sized by each."""

from __future__ import annotations

import torch


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
