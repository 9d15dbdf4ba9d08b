"""Multi-layer models over a list of blocks, native layers (see layers.py) or PyG's (pyg.py).

``model(blocks, x)``: ``x`` holds the features of ``blocks[0].src_ids`` (in that order),
``blocks[l]`` feeds layer l, the result is the logits of ``blocks[-1]``'s dst nodes (the
seeds).  Between layers: activation (ReLU; ELU for GAT as in the GAT paper; none for
PinSAGE, whose layers apply ReLU and L2-normalization themselves) then dropout.

Layer widths for ``num_layers = L``: in -> hidden -> ... -> hidden -> out.  GAT hidden
layers have ``heads`` heads of ``head_dim`` (default ``hidden // heads``) concatenated, so
their output width is ``heads * head_dim`` (= hidden when it divides); the last GAT layer has
``heads`` heads of ``out`` averaged.  PinSAGE's last layer has no activation and no
normalization (it produces logits).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .layers import GCNConv, GATConv, PinSAGEConv, SAGEConv
from .ops import BlockGraph

KINDS = ("gcn", "sage", "gat", "pinsage")


def layer_dims(kind: str, in_dim: int, hidden: int, out_dim: int, num_layers: int, heads: int = 4,
               head_dim: int | None = None) -> list[tuple[int, int]]:
    """(input width, per-head output width) of every layer."""
    if num_layers < 1:
        raise ValueError(f"num_layers must be >= 1, got {num_layers}")
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(KINDS)}")
    dims, width = [], in_dim
    for l in range(num_layers):
        last = l == num_layers - 1
        if kind == "gat" and not last:
            per_head = head_dim or max(1, hidden // heads)
            dims.append((width, per_head))
            width = per_head * heads
        else:
            out = out_dim if last else hidden
            dims.append((width, out))
            width = out
    return dims


def default_activation(kind: str) -> str | None:
    return {"gat": "elu", "pinsage": None}.get(kind, "relu")


_ACTS = {"relu": F.relu, "elu": F.elu, None: None, "none": None}


class BlockGNN(nn.Module):
    """Layers plus the between-layer activation and dropout; ``backend`` is informational."""

    def __init__(self, kind: str, convs: list[nn.Module], *, backend: str, dropout: float = 0.0,
                 activation: str | None = "relu", graph_options: dict | None = None):
        super().__init__()
        if activation not in _ACTS:
            raise ValueError(f"activation must be one of relu, elu, none; got {activation!r}")
        self.kind, self.backend = kind, backend
        self.convs = nn.ModuleList(convs)
        self.dropout = float(dropout)
        self.activation = activation
        self.graph_options = dict(graph_options or {})

    @property
    def num_layers(self) -> int:
        return len(self.convs)

    def _check(self, blocks, x) -> None:
        if len(blocks) != len(self.convs):
            raise ValueError(f"{self.kind} has {len(self.convs)} layers but got {len(blocks)} blocks")
        if x.shape[0] != blocks[0].num_src:
            raise ValueError(f"x has {x.shape[0]} rows, blocks[0] has {blocks[0].num_src} source nodes")

    def layer(self, l: int, block, h: torch.Tensor) -> torch.Tensor:
        return self.convs[l](BlockGraph(block, **self.graph_options), h)

    def forward(self, blocks, x: torch.Tensor) -> torch.Tensor:
        self._check(blocks, x)
        act = _ACTS[self.activation]
        h = x
        last = len(self.convs) - 1
        for l, block in enumerate(blocks):
            h = self.layer(l, block, h)
            if l < last:
                if act is not None:
                    h = act(h)
                if self.dropout:
                    h = F.dropout(h, self.dropout, self.training)
        return h


def build_native(kind: str, in_dim: int, hidden: int, out_dim: int, num_layers: int, *,
                 heads: int = 4, dropout: float = 0.0, norm: str = "sym",
                 attn_dropout: float = 0.0, negative_slope: float = 0.2,
                 head_dim: int | None = None, activation: str | None = "default",
                 impl: str = "auto", backward: str = "auto", sddmm: str = "auto",
                 chunk_elems: int | None = None) -> BlockGNN:
    dims = layer_dims(kind, in_dim, hidden, out_dim, num_layers, heads, head_dim)
    convs: list[nn.Module] = []
    for l, (i, o) in enumerate(dims):
        last = l == len(dims) - 1
        if kind == "gcn":
            convs.append(GCNConv(i, o, norm=norm))
        elif kind == "sage":
            convs.append(SAGEConv(i, o))
        elif kind == "gat":
            convs.append(GATConv(i, o, heads=heads, concat=not last, negative_slope=negative_slope,
                                 attn_dropout=attn_dropout))
        else:
            convs.append(PinSAGEConv(i, o, act=not last, normalize=not last))
    graph_options = {"impl": impl, "backward": backward, "sddmm": sddmm}
    if chunk_elems:
        graph_options["chunk_elems"] = int(chunk_elems)
    act = default_activation(kind) if activation == "default" else activation
    return BlockGNN(kind, convs, backend="native", dropout=dropout, activation=act,
                    graph_options=graph_options)
