"""An independent reference: the GCN in float64 with dense matrices and torch autograd.

Builds Â straight from MG-GCN's Eq. 2 on a dense adjacency (no code shared with the
implementations except the seeded initial weights), so it checks the normalization, the
partitioned products, the hand-written backward and the loss at once.
"""

from __future__ import annotations

import numpy as np
import torch

from impls.fullbatch.model import ModelConfig, init_weights
from harness.datasets import Graph
from impls.fullbatch.problem import random_graph

# two configurations that exercise both GeMM/SpMM orders in every position:
#   3x20 on 12 features / 9 classes: [12, 20, 20, 9] -> SpMM first (layer 0, its backward SpMM is
#        skipped exactly), GeMM first (tie), GeMM first
#   hidden 4, 10: [12, 4, 10, 9] -> GeMM first (layer 0 needs its backward SpMM for dW), SpMM
#        first in a middle layer (keeps AH beside its output), GeMM first
#   3x6: [12, 6, 6, 9] -> GeMM first, GeMM first, SpMM first in the last layer (AH in HW)
MODELS = {
    "spmm_first_layer0": ModelConfig(3, 20),
    "spmm_first_middle": ModelConfig(3, 4, hidden_sizes=(4, 10)),
    "spmm_first_last": ModelConfig(3, 6),
}
NUM_NODES, AVG_DEGREE, FEATURES, CLASSES = 157, 5, 12, 9   # 157: parts of unequal size for P = 2, 3, 4


def make_test_graph(seed: int = 1) -> Graph:
    return random_graph(NUM_NODES, AVG_DEGREE, FEATURES, CLASSES, seed=seed, isolated=3)


def dense_normalized_adjacency(g: Graph, self_loops: bool = True) -> np.ndarray:
    """Â of Eq. 2: Â_uv = A_uv / sum_w A_wv (0 for a vertex without in-edges)."""
    n = g.num_nodes
    adjacency = np.zeros((n, n))
    src = np.repeat(np.arange(n), np.diff(g.indptr))
    adjacency[src, np.asarray(g.indices)] = 1.0
    if self_loops:
        adjacency[np.diag_indices(n)] = 1.0
    indeg = adjacency.sum(axis=0)
    return np.divide(adjacency, indeg[None, :], out=np.zeros_like(adjacency), where=indeg[None, :] > 0)


class DenseReference:
    def __init__(self, g: Graph, model: ModelConfig, seed: int = 0, self_loops: bool = True):
        self.forward_op = torch.tensor(dense_normalized_adjacency(g, self_loops).T)   # Â^T
        self.X = torch.tensor(np.asarray(g.features), dtype=torch.float64)
        self.train = torch.tensor(np.asarray(g.train_idx))
        self.labels = torch.tensor(np.asarray(g.labels)[np.asarray(g.train_idx)])
        dims = model.dims(g.feature_dim, g.num_classes)
        self.weights = [w.double().requires_grad_() for w in init_weights(dims, seed)]
        self.optimizer = torch.optim.Adam(self.weights, lr=model.lr)

    def forward(self):
        h = self.X
        for l, w in enumerate(self.weights):
            h = self.forward_op @ h @ w
            if l < len(self.weights) - 1:
                h = torch.relu(h)
        return h

    def gradients(self):
        """(loss, logits, dW) at the current weights."""
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.forward()
        loss = torch.nn.functional.cross_entropy(logits[self.train], self.labels)
        loss.backward()
        return float(loss.detach()), logits.detach(), [w.grad.detach().clone() for w in self.weights]

    def adam_losses(self, steps: int) -> tuple[list[float], list[torch.Tensor]]:
        """Loss before each of ``steps`` Adam steps, and the weights after them."""
        losses = []
        for _ in range(steps):
            loss, _, _ = self.gradients()
            losses.append(loss)
            self.optimizer.step()
        return losses, [w.detach().clone() for w in self.weights]


def assert_close_to_reference(loss, logits, grads, ref, *, label: str = "") -> None:
    """float32 results against the float64 reference: loss, logits, and every weight gradient."""
    ref_loss, ref_logits, ref_grads = ref
    assert abs(loss - ref_loss) <= 1e-5 * max(1.0, abs(ref_loss)), f"{label}: loss {loss} vs {ref_loss}"
    logits = torch.as_tensor(logits, dtype=torch.float64)
    err = (logits - ref_logits).abs().max().item()
    assert err <= 1e-5 * max(1.0, ref_logits.abs().max().item()), f"{label}: logits off by {err}"
    assert len(grads) == len(ref_grads)
    for l, (g, r) in enumerate(zip(grads, ref_grads)):
        g = torch.as_tensor(g, dtype=torch.float64)
        scale = r.abs().max().item()
        err = (g - r).abs().max().item()
        assert err <= 2e-5 * scale + 1e-9, f"{label}: dW{l} off by {err} (max |dW| {scale})"
