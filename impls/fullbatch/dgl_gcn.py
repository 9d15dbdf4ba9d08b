"""The GCN as DGL writes it (MG-GCN's single-GPU baseline, Figs. 10-13): GraphConv, full graph.

GraphConv(norm="right") divides the summed messages by each vertex's in-degree, which is Eq. 2;
the graph gets the same self loops as the other implementations.  DGL 2.1 from PyPI (`pip
install '.[dgl]'`) is imported through harness/dgl_compat.py; its wheels are CPU builds, so on a
GPU this needs a CUDA build of DGL (elsewhere the row is skipped with the reason).
"""

from __future__ import annotations

from harness.datasets.graph import Graph

from .autograd_trainer import AutogradTrainer
from .model import ModelConfig, init_weights
from .problem import _edge_arrays


class DglGCN(AutogradTrainer):
    def __init__(self, graph: Graph, model: ModelConfig, *, device="cpu", seed: int = 0,
                 self_loops: bool = True):
        import numpy as np
        import torch

        from harness.dgl_compat import import_dgl

        dgl = import_dgl()
        from dgl.nn.pytorch import GraphConv

        self.torch = torch
        self.device = torch.device(device)
        src, dst = _edge_arrays(graph, self_loops)
        g = dgl.graph((torch.from_numpy(src.astype(np.int64)), torch.from_numpy(dst.astype(np.int64))),
                      num_nodes=graph.num_nodes)
        self.graph = g.to(self.device)
        self.load_inputs(graph, model)
        self.convs = torch.nn.ModuleList()
        for w in init_weights(self.dims, seed):
            conv = GraphConv(w.shape[0], w.shape[1], norm="right", weight=True, bias=False,
                             allow_zero_in_degree=True)
            with torch.no_grad():
                conv.weight.copy_(w)                          # GraphConv stores W as in x out
            self.convs.append(conv)
        self.convs.to(self.device)
        self.optimizer = torch.optim.Adam(self.convs.parameters(), lr=model.lr)
        self._loss = None

    def forward(self):
        h = self.X
        for l, conv in enumerate(self.convs):
            h = conv(self.graph, h)
            if l < len(self.convs) - 1:
                h = self.torch.relu(h)
        return h

    def weight_grads(self) -> list:
        return [conv.weight.grad for conv in self.convs]

    def close(self) -> None:
        self.convs = self.graph = self.X = None
