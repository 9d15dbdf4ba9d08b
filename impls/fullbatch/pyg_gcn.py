"""The GCN as PyTorch Geometric writes it: GCNConv layers over the whole graph on one device.

GCNConv(normalize=False, add_self_loops=False, bias=False) with F's entries as edge weights is
exactly Eq. 1 with MG-GCN's normalization (Eq. 2), so PyG trains the same model as mggcn and
single_gpu.  ``adjacency="sparse"`` (default) hands GCNConv F as a torch sparse CSR ``adj_t``, the
input PyG recommends for full-batch training (one SpMM per layer); ``"edge_index"`` is PyG's
message-passing path (gather, scale, scatter-add), which materializes one message per edge and
is one to two orders of magnitude slower and larger on big graphs.  Neither needs torch-sparse.
GCNConv always multiplies by W before aggregating (no order rule).
"""

from __future__ import annotations

from harness.datasets.graph import Graph

from .autograd_trainer import AutogradTrainer
from .model import ModelConfig, init_weights
from .problem import aggregation_matrix

ADJACENCY = ("edge_index", "sparse")


class PygGCN(AutogradTrainer):
    def __init__(self, graph: Graph, model: ModelConfig, *, device="cpu", seed: int = 0,
                 self_loops: bool = True, adjacency: str = "sparse"):
        import numpy as np
        import torch
        from torch_geometric.nn import GCNConv

        if adjacency not in ADJACENCY:
            raise ValueError(f"adjacency must be one of {ADJACENCY}")
        self.torch = torch
        self.device = torch.device(device)
        forward_op = aggregation_matrix(graph, self_loops)     # row = target, column = source
        if adjacency == "sparse":
            from .mggcn import csr_to_torch

            self.edge_index, self.edge_weight = csr_to_torch(forward_op, self.device), None
        else:
            targets, sources = forward_op.row_ids(), forward_op.indices.astype(np.int64)
            self.edge_index = torch.from_numpy(np.stack([sources, targets])).to(self.device)
            self.edge_weight = torch.from_numpy(forward_op.data).to(self.device)
        self.load_inputs(graph, model)
        self.convs = torch.nn.ModuleList()
        for w in init_weights(self.dims, seed):
            conv = GCNConv(w.shape[0], w.shape[1], normalize=False, add_self_loops=False, bias=False)
            with torch.no_grad():
                conv.lin.weight.copy_(w.t())                  # Linear stores W^T
            self.convs.append(conv)
        self.convs.to(self.device)
        self.optimizer = torch.optim.Adam(self.convs.parameters(), lr=model.lr)
        self._loss = None

    @property
    def weights(self):
        return [conv.lin.weight.t() for conv in self.convs]

    def forward(self):
        h = self.X
        for l, conv in enumerate(self.convs):
            if self.edge_weight is None:
                h = conv(h, self.edge_index)
            else:
                h = conv(h, self.edge_index, self.edge_weight)
            if l < len(self.convs) - 1:
                h = self.torch.relu(h)
        return h

    def weight_grads(self) -> list:
        return [conv.lin.weight.grad.t() for conv in self.convs]

    def close(self) -> None:
        self.convs = self.edge_index = self.edge_weight = self.X = None
