"""The same GCN on one device in plain torch: autograd, torch.optim.Adam, F.cross_entropy.

The baseline MG-GCN's one-GPU numbers are compared against, the reference its gradients are
checked against, and (keeping every intermediate on autograd's tape) a naive memory footprint.
Only the sparse product is a custom autograd function, so that its backward multiplies by the
stored B = F^T instead of transposing F on every call.
"""

from __future__ import annotations

from harness.datasets.graph import Graph

from .autograd_trainer import AutogradTrainer
from .model import GEMM_FIRST, ModelConfig, init_weights, orders
from .problem import rank_share


def _aggregate_function():
    import torch

    class Aggregate(torch.autograd.Function):
        """y = F x with dx = B dy (B = F^T, precomputed)."""

        @staticmethod
        def forward(ctx, x, forward_op, backward_op):
            ctx.backward_op = backward_op
            return torch.sparse.mm(forward_op, x)

        @staticmethod
        def backward(ctx, grad):
            return torch.sparse.mm(ctx.backward_op, grad.contiguous()), None, None

    return Aggregate


class SingleDeviceGCN(AutogradTrainer):
    def __init__(self, graph: Graph, model: ModelConfig, *, device="cpu", seed: int = 0,
                 self_loops: bool = True, profile_ops: bool = False):
        import torch

        from .mggcn import csr_to_torch

        self.torch = torch
        self.device = torch.device(device)
        share = rank_share(graph, 0, 1, order="original", self_loops=self_loops)
        self.share = share
        self.forward_op = csr_to_torch(share.forward_tiles[0], self.device)
        self.backward_op = csr_to_torch(share.backward_tiles[0], self.device)
        self.X = torch.from_numpy(share.features).to(self.device)
        self.train_rows = torch.from_numpy(share.train_rows).to(self.device)
        self.train_labels = torch.from_numpy(share.labels[share.train_rows]).to(self.device)
        self.dims = model.dims(share.features.shape[1], share.num_classes)
        self.orders = orders(self.dims)
        self.weights = [w.requires_grad_() for w in init_weights(self.dims, seed, self.device)]
        self.optimizer = torch.optim.Adam(self.weights, lr=model.lr)
        self._aggregate = _aggregate_function()
        self._loss = None

    def forward(self):
        h = self.X
        last = len(self.weights) - 1
        for l, w in enumerate(self.weights):
            if self.orders[l] == GEMM_FIRST:
                h = self._aggregate.apply(h @ w, self.forward_op, self.backward_op)
            else:
                h = self._aggregate.apply(h, self.forward_op, self.backward_op) @ w
            if l < last:
                h = self.torch.relu(h)
        return h

    def weight_grads(self) -> list:
        return [w.grad for w in self.weights]

    def close(self) -> None:
        self.forward_op = self.backward_op = self.X = None
