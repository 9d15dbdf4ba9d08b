"""The same models built from PyTorch Geometric layers (imported only when this module is).

Each layer is fed ``Block.edge_index()`` (local source row, local dst row) and the bipartite
sizes ``(num_src, num_dst)``:

* ``SAGEConv`` and ``GATConv`` take ``(x_src, x_dst = x_src[:num_dst])`` with
  ``size=(num_src, num_dst)``; GATConv drops sampled self loops and adds one per dst node
  (``min(size)`` nodes, which are the dst nodes because they lead the sources);
* ``GCNConv`` is not bipartite: it runs on the block as a graph of ``num_src`` nodes and the
  first ``num_dst`` rows are kept.  ``norm="sym"`` uses GCNConv's own normalization
  (``add_self_loops=True, normalize=True``, sampled self loops removed first); ``"both"`` and
  ``"right"`` pass the native layer's coefficients as ``edge_weight`` with explicit self loops
  (``normalize=False``), so both backends compute the same function for every norm;
* PinSAGE has no PyG layer: ``PygPinSAGEConv`` is a small ``MessagePassing`` (weighted sum
  aggregation of ``relu(Q x_j + q)``, divided by the weight sum).

Parameter names equal the native layers', so ``load_state_dict`` copies weights across.
Needs no torch-sparse / pyg-lib.  ``torch_geometric`` is imported when a model is built, not
when this module is (the registry imports every module under ``impls/``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from impls.core.blocks import edge_weight_of

from .layers import gcn_coefficients, pinsage_update
from .nets import BlockGNN, default_activation, layer_dims
from .ops import BlockGraph

_PINSAGE_CLASS = None


def pinsage_conv_class():
    """``PygPinSAGEConv``, a ``MessagePassing`` layer (defined on first use)."""
    global _PINSAGE_CLASS
    if _PINSAGE_CLASS is not None:
        return _PINSAGE_CLASS
    from torch_geometric.nn import MessagePassing
    from torch_geometric.utils import scatter

    class PygPinSAGEConv(MessagePassing):
        def __init__(self, in_dim: int, out_dim: int, hidden: int | None = None, act: bool = True,
                     normalize: bool = True):
            super().__init__(aggr="sum")
            hidden = out_dim if hidden is None else hidden
            self.act, self.normalize = act, normalize
            self.Q = nn.Linear(in_dim, hidden)
            self.W = nn.Linear(in_dim + hidden, out_dim)

        def forward(self, x, edge_index, edge_weight=None, size=None):
            x_src, x_dst = x
            msg = F.relu(self.Q(x_src))
            num_dst = x_dst.shape[0]
            if edge_weight is None:
                edge_weight = torch.ones(edge_index.shape[1], dtype=x_src.dtype, device=x_src.device)
            edge_weight = edge_weight.to(x_src.dtype)
            agg = self.propagate(edge_index, x=(msg, None), edge_weight=edge_weight,
                                 size=(x_src.shape[0], num_dst))
            total = scatter(edge_weight, edge_index[1], dim=0, dim_size=num_dst, reduce="sum")
            return pinsage_update(self, x_dst, agg, total)

        def message(self, x_j, edge_weight):
            return edge_weight.unsqueeze(-1) * x_j

    _PINSAGE_CLASS = PygPinSAGEConv
    return PygPinSAGEConv


def _gcn_edges(block, norm: str, dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Edge list (sampled self loops removed) plus, for norm != sym, one self loop per dst
    node and the native layer's coefficients as edge weights."""
    ei = block.edge_index()
    keep = ei[0] != ei[1]
    if norm == "sym":
        return ei[:, keep], None
    g = BlockGraph(block)
    src_scale, dst_scale = gcn_coefficients(g, norm, dtype)
    ei = ei[:, keep]
    loops = torch.arange(block.num_dst, device=ei.device)
    ei = torch.cat([ei, torch.stack([loops, loops])], dim=1)
    w = dst_scale[ei[1]]
    if src_scale is not None:
        w = w * src_scale[ei[0]]
    return ei, w


class PygBlockGNN(BlockGNN):
    def __init__(self, kind, convs, *, norm: str = "sym", **kw):
        super().__init__(kind, convs, backend="pyg", **kw)
        self.norm = norm

    def layer(self, l: int, block, h: torch.Tensor) -> torch.Tensor:
        conv = self.convs[l]
        n_src, n_dst = block.num_src, block.num_dst
        if self.kind == "gcn":
            ei, w = _gcn_edges(block, self.norm, h.dtype)
            out = conv(h, ei) if w is None else conv(h, ei, w)
            return out[:n_dst]
        ei = block.edge_index()
        if self.kind == "pinsage":
            return conv((h, h[:n_dst]), ei, edge_weight_of(block), size=(n_src, n_dst))
        return conv((h, h[:n_dst]), ei, size=(n_src, n_dst))


def gcn_normalization(model: PygBlockGNN, l: int, block, h: torch.Tensor):
    """What PyG's GCNConv of layer ``l`` computes of the block before its product, run alone: the
    block's edges without sampled self loops, and ``gcn_norm`` on the block as a graph of num_src
    nodes (a self loop added to every source node, degrees, one weight per edge). None where the
    layer is not a normalizing GCNConv."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    conv = model.convs[l]
    if model.kind != "gcn" or not getattr(conv, "normalize", False):
        return None
    ei, w = _gcn_edges(block, model.norm, h.dtype)
    return gcn_norm(ei, w, h.size(0), conv.improved, conv.add_self_loops, conv.flow, h.dtype)


def build_pyg(kind: str, in_dim: int, hidden: int, out_dim: int, num_layers: int, *,
              heads: int = 4, dropout: float = 0.0, norm: str = "sym", attn_dropout: float = 0.0,
              negative_slope: float = 0.2, head_dim: int | None = None,
              activation: str | None = "default", **_) -> PygBlockGNN:
    from torch_geometric.nn import GATConv, GCNConv, SAGEConv

    dims = layer_dims(kind, in_dim, hidden, out_dim, num_layers, heads, head_dim)
    convs: list[nn.Module] = []
    for l, (i, o) in enumerate(dims):
        last = l == len(dims) - 1
        if kind == "gcn":
            if norm == "sym":
                convs.append(GCNConv(i, o, add_self_loops=True, normalize=True))
            else:
                convs.append(GCNConv(i, o, add_self_loops=False, normalize=False))
        elif kind == "sage":
            convs.append(SAGEConv(i, o, aggr="mean"))
        elif kind == "gat":
            convs.append(GATConv(i, o, heads=heads, concat=not last, negative_slope=negative_slope,
                                 dropout=attn_dropout, add_self_loops=True))
        else:
            convs.append(pinsage_conv_class()(i, o, act=not last, normalize=not last))
    act = default_activation(kind) if activation == "default" else activation
    return PygBlockGNN(kind, convs, norm=norm, dropout=dropout, activation=act)
