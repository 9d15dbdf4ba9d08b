"""CAGNET's 1D algorithm (Tripathy, Yelick, Buluc, SC'20), re-implemented: MG-GCN's multi-GPU baseline.

What the CAGNET paper and its 1D code describe, and MG-GCN's Sec. 2 and 6.6 compare against:

- 1D rows, uniform and in the input order (no permutation): rank i holds rows p(i)..p(i+1) of the
  normalized adjacency, cut into one column tile per rank (problem.rank_share, order "original");
- every layer aggregates first, whatever the widths: Z = (F H) W, where F H is one distributed
  SpMM in which every rank j in turn broadcasts its whole block H^j and every rank multiplies the
  tile F^{ij} by it, into a zero-filled output: P broadcasts per SpMM, each one waited for before
  its multiply (no overlap), a fresh receive buffer per stage, the local block at its turn;
- the backward of a layer is one more distributed SpMM of the same kind with B = F^T (CAGNET's
  code multiplies by A again, its graphs being symmetric; here the stored transpose, so directed
  graphs train the same model): dH = (B G) W^T, dW = H^T (B G), the partial dW of each rank summed by
  an all-reduce per layer; the first layer does it too (its dW needs B G);
- PyTorch autograd around those two SpMMs (a custom Function per layer), softmax cross-entropy over
  each rank's training rows, torch.optim.Adam on the replicated weights; no buffer reuse.

It trains the same model as every fullbatch implementation (model.py: Eq. 1-2, the same seeded
weights), so its loss and gradients equal theirs.
"""

from __future__ import annotations

from .autograd_trainer import AutogradTrainer
from .model import ModelConfig, init_weights
from .problem import RankShare


def _layer_function():
    import torch
    import torch.distributed as dist

    class BroadcastGCNLayer(torch.autograd.Function):
        """Z = (F H) W forward; backward dH = (B G) W^T, dW = all-reduce(H^T (B G))."""

        @staticmethod
        def forward(ctx, h, weight, trainer):
            ctx.save_for_backward(h, weight)
            ctx.trainer = trainer
            return trainer.broadcast_spmm(trainer.forward_tiles, h).mm(weight)

        @staticmethod
        def backward(ctx, grad):
            h, weight = ctx.saved_tensors
            trainer = ctx.trainer
            aggregated = trainer.broadcast_spmm(trainer.backward_tiles, grad.contiguous())
            grad_weight = h.t().mm(aggregated)
            if trainer.world > 1:
                dist.all_reduce(grad_weight)
            grad_h = aggregated.mm(weight.t()) if ctx.needs_input_grad[0] else None
            return grad_h, grad_weight, None

    return BroadcastGCNLayer


class Cagnet1D(AutogradTrainer):
    """One rank's CAGNET 1D trainer. Build on every rank of an initialized process group."""

    def __init__(self, share: RankShare, model: ModelConfig, *, device="cpu", seed: int = 0):
        import torch

        from .mggcn import csr_to_torch

        if share.order != "original" or share.partition != "rows":
            raise ValueError("CAGNET's 1D partition cuts the input order into uniform rows "
                             f"(got order={share.order}, partition={share.partition})")
        self.torch = torch
        self.device = torch.device(device)
        self.rank, self.world = share.rank, share.world
        self._check_group()
        self.share = share
        self.part_rows = share.part_rows
        self.rows = share.rows
        self.dims = model.dims(share.features.shape[1], share.num_classes)
        self.forward_tiles = [csr_to_torch(t, self.device) for t in share.forward_tiles]
        self.backward_tiles = [csr_to_torch(t, self.device) for t in share.backward_tiles]
        self.X = torch.from_numpy(share.features).to(self.device)
        self.train_rows = torch.from_numpy(share.train_rows).to(self.device)
        self.train_labels = torch.from_numpy(share.labels[share.train_rows]).to(self.device)
        self.num_train_total = max(1, share.num_train_total)
        self.weights = [w.requires_grad_() for w in init_weights(self.dims, seed, self.device)]
        self.optimizer = torch.optim.Adam(self.weights, lr=model.lr)
        self._layer = _layer_function()
        self.broadcasts: list[tuple[int, int]] = []     # (root, width) of every broadcast this epoch

    def _check_group(self) -> None:
        import torch.distributed as dist

        if self.world > 1:
            if not (dist.is_available() and dist.is_initialized()):
                raise RuntimeError("CAGNET over several ranks needs an initialized process group")
            if dist.get_world_size() != self.world or dist.get_rank() != self.rank:
                raise RuntimeError(f"share is for rank {self.rank}/{self.world}, process group is "
                                   f"rank {dist.get_rank()}/{dist.get_world_size()}")

    def broadcast_spmm(self, tiles, local):
        """sum_j tiles[j] @ H^j: rank j broadcasts H^j at stage j, every rank waits for it, then multiplies."""
        import torch.distributed as dist

        torch = self.torch
        width = local.shape[1]
        out = torch.zeros(self.rows, width, dtype=local.dtype, device=self.device)
        for root in range(self.world):
            if root == self.rank:
                block = local.contiguous()
            else:
                block = torch.empty(self.part_rows[root], width, dtype=local.dtype, device=self.device)
            if self.world > 1:
                dist.broadcast(block, src=root)
                self.broadcasts.append((root, width))
            if tiles[root]._nnz():
                out.addmm_(tiles[root], block)
        return out

    def forward(self):
        h = self.X
        last = len(self.weights) - 1
        for l, w in enumerate(self.weights):
            h = self._layer.apply(h, w, self)
            if l < last:
                h = self.torch.relu(h)
        return h

    def loss(self, logits):
        """This rank's share of the mean loss over every rank's training vertices."""
        import torch.nn.functional as F

        return F.cross_entropy(logits.index_select(0, self.train_rows), self.train_labels,
                               reduction="sum") / self.num_train_total

    def weight_grads(self) -> list:
        return [w.grad for w in self.weights]

    def loss_value(self) -> float:
        """The mean training loss of the last forward pass, over all ranks."""
        import torch.distributed as dist

        total = self._loss.clone().double() * self.num_train_total
        if self.world > 1:
            dist.all_reduce(total)
        return float(total) / self.num_train_total

    def close(self) -> None:
        self.forward_tiles = self.backward_tiles = self.X = None
        self.weights = []
        self.optimizer = None
