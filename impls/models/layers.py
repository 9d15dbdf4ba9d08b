"""Native GNN layers over one sampled block: ``layer(block_or_graph, x_src) -> x_dst``.

``x_src`` holds the features of the block's ``num_src`` source nodes; the output has one row
per dst node (the first ``num_dst`` sources).  Parameter names and shapes equal those of the
PyG layer each one mirrors, so ``pyg_layer.load_state_dict(native_layer.state_dict())``
copies weights across backends (the tests rely on it).

Notation: the block has edges j -> i (i a dst node, j a source), N(i) the sampled in-edges
of i (a list: a neighbor sampled twice counts twice), deg(i) = |N(i)|.  A sampled self-loop
edge i -> i is kept by SAGE and PinSAGE (as PyG does) and replaced by exactly one self loop
per dst node in GCN and GAT (PyG's ``remove_self_loops`` + ``add_self_loops``, also what
``GCNConv``'s ``add_remaining_self_loops`` gives on graphs without self loops).

SAGEConv (GraphSAGE, mean; PyG ``SAGEConv`` default: sum of the two projections)
    out_i = W_l * mean_{j in N(i)} x_j + b_l + W_r * x_i        (mean over no edges = 0)

GCNConv, ``norm``:
    ``"sym"`` (default; equals PyG ``GCNConv`` run on the block as a graph of num_src nodes
    with self loops added):  out_i = sum_{j in N(i) + {i}} x_j W / sqrt(d_i d_j) + b, with
    d_k = |N(k)| + 1 for a dst node k and d_k = 1 for a source that is not a dst node (the
    block knows no edges into it).  ``"both"`` (DGL ``GraphConv(norm='both')`` on the block
    with a self loop per dst node): d_i = |N(i)| + 1 for dst i, and for sources the
    out-degree in the block, which is the append-unique op's duplicate count:
    d_j = dup_count_j + [j is a dst node].  ``"right"``: mean over N(i) + {i}
    (d_i = |N(i)| + 1 on the dst side, nothing on the source side).

GATConv (4 heads in the papers; PyG ``GATConv`` with one ``lin`` for sources and dsts)
    h = x W (split into H heads of C), s_ij = LeakyReLU(a_src . h_j + a_dst . h_i) over
    N(i) + {i}: a g-SDDMM of the edge scores (an add of two gathered per-node terms), an edge
    softmax per dst node, dropout on the attention, and a g-SpMM with one weight per edge and
    head; heads concatenated (hidden layers) or averaged (last layer), plus bias.

PinSAGEConv (Ying et al. 2018; DGL's ``WeightedSAGEConv``)
    n_i = sum_{j in N(i)} w_ij relu(Q x_j + q) / sum_{j in N(i)} w_ij
    z_i = act(W [x_i || n_i] + b); z_i / ||z_i||_2 when ``normalize``
    with w_ij the edge weights on the block (random-walk visit counts, see
    ``ops.set_edge_weight``), all ones when the block has none.

Aggregation is linear, so SAGE and GCN aggregate in the smaller of the input and output
widths: on the outer block (raw features, in < hidden) they aggregate the features first,
which also means no backward g-SpMM there (the features need no gradient).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from impls.core.blocks import edge_weight_of

from .ops import BlockGraph, as_graph, edge_softmax, gspmm

GCN_NORMS = ("sym", "both", "right")


def _glorot_(t: torch.Tensor) -> None:
    fan = t.size(-2) + t.size(-1)
    bound = math.sqrt(6.0 / fan)
    with torch.no_grad():
        t.uniform_(-bound, bound)


def _check_rows(graph: BlockGraph, x: torch.Tensor) -> None:
    if x.shape[0] != graph.num_src:
        raise ValueError(f"layer input has {x.shape[0]} rows, but the block has {graph.num_src} "
                         "source nodes (blocks[0].src_ids / the previous block's dst nodes)")


class SAGEConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, bias: bool = True, root_weight: bool = True,
                 project_first: bool | None = None):
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.lin_l = nn.Linear(in_dim, out_dim, bias=bias)
        self.lin_r = nn.Linear(in_dim, out_dim, bias=False) if root_weight else None
        self.project_first = (in_dim > out_dim) if project_first is None else project_first

    def forward(self, block, x: torch.Tensor, **graph_options) -> torch.Tensor:
        g = as_graph(block, **graph_options)
        _check_rows(g, x)
        inv_deg = 1.0 / g.in_degree.clamp(min=1).to(x.dtype).unsqueeze(-1)
        if self.project_first:
            out = gspmm(g, F.linear(x, self.lin_l.weight)) * inv_deg
            if self.lin_l.bias is not None:
                out = out + self.lin_l.bias
        else:
            out = self.lin_l(gspmm(g, x) * inv_deg)
        if self.lin_r is not None:
            out = out + self.lin_r(x[:g.num_dst])
        return out


def gcn_coefficients(g: BlockGraph, norm: str, dtype: torch.dtype):
    """(source scale [num_src], dst scale [num_dst]) so that
    out_i = dst_i * (sum_{j in N(i) + {i}} src_j * x_j), self loops replaced by one."""
    if norm not in GCN_NORMS:
        raise ValueError(f"GCN norm must be one of {GCN_NORMS}, got {norm!r}")
    d_dst = (g.in_degree - g.self_loop_count + 1).to(dtype)          # |N(i)| + 1, no sampled loops
    if norm == "right":
        return None, 1.0 / d_dst
    if norm == "sym":
        d_src = torch.ones(g.num_src, dtype=dtype, device=d_dst.device)
        d_src[:g.num_dst] = d_dst
    else:                                                              # "both": out-degree = dup_count
        d_src = g.dup_count.to(dtype).clone()
        d_src[:g.num_dst] += 1 - g.self_loop_count.to(dtype)
        d_src = d_src.clamp(min=1)
    return d_src.rsqrt(), d_dst.rsqrt()


class GCNConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, bias: bool = True, norm: str = "sym",
                 project_first: bool | None = None):
        super().__init__()
        if norm not in GCN_NORMS:
            raise ValueError(f"GCN norm must be one of {GCN_NORMS}, got {norm!r}")
        self.in_dim, self.out_dim, self.norm = in_dim, out_dim, norm
        self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim)) if bias else None
        self.project_first = (in_dim > out_dim) if project_first is None else project_first
        _glorot_(self.lin.weight)

    def propagate(self, g: BlockGraph, h: torch.Tensor) -> torch.Tensor:
        """Normalized aggregation over N(i) + {i} (sampled self loops replaced by one)."""
        src_scale, dst_scale = gcn_coefficients(g, self.norm, h.dtype)
        y = h if src_scale is None else h * src_scale.unsqueeze(-1)
        agg = gspmm(g, y)
        own = y[:g.num_dst]
        loops = (1 - g.self_loop_count).to(h.dtype).unsqueeze(-1)       # 1 - sampled loops
        return (agg + loops * own) * dst_scale.unsqueeze(-1)

    def forward(self, block, x: torch.Tensor, **graph_options) -> torch.Tensor:
        g = as_graph(block, **graph_options)
        _check_rows(g, x)
        if self.project_first:
            out = self.propagate(g, self.lin(x))
        else:
            out = self.lin(self.propagate(g, x))
        return out if self.bias is None else out + self.bias


class GATConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, heads: int = 4, concat: bool = True,
                 negative_slope: float = 0.2, attn_dropout: float = 0.0, bias: bool = True):
        super().__init__()
        self.in_dim, self.out_dim, self.heads, self.concat = in_dim, out_dim, heads, concat
        self.negative_slope, self.attn_dropout = negative_slope, attn_dropout
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, out_dim))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_dim))
        width = heads * out_dim if concat else out_dim
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None
        _glorot_(self.lin.weight)
        _glorot_(self.att_src)
        _glorot_(self.att_dst)

    def forward(self, block, x: torch.Tensor, **graph_options) -> torch.Tensor:
        g = as_graph(block, **graph_options)
        _check_rows(g, x)
        H, C = self.heads, self.out_dim
        h = self.lin(x).view(-1, H, C)                                   # [num_src, H, C]
        el = (h * self.att_src).sum(-1)                                  # [num_src, H]
        er = (h[:g.num_dst] * self.att_dst).sum(-1)                      # [num_dst, H]
        # g-SDDMM (u_add_v) for the edge scores, then LeakyReLU
        scores = F.leaky_relu(el.index_select(0, g.indices) + er.index_select(0, g.edge_dst),
                              self.negative_slope)
        scores = scores.masked_fill(g.self_loop.unsqueeze(-1), float("-inf"))
        self_scores = F.leaky_relu(el[:g.num_dst] + er, self.negative_slope)
        alpha, alpha_self = edge_softmax(g, scores, self_scores)
        if self.attn_dropout and self.training:
            alpha = F.dropout(alpha, self.attn_dropout, True)
            alpha_self = F.dropout(alpha_self, self.attn_dropout, True)
        out = gspmm(g, h, alpha) + alpha_self.unsqueeze(-1) * h[:g.num_dst]
        out = out.reshape(g.num_dst, H * C) if self.concat else out.mean(dim=1)
        return out if self.bias is None else out + self.bias


class PinSAGEConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, hidden: int | None = None, act: bool = True,
                 normalize: bool = True):
        super().__init__()
        hidden = out_dim if hidden is None else hidden
        self.in_dim, self.out_dim, self.hidden = in_dim, out_dim, hidden
        self.act, self.normalize = act, normalize
        self.Q = nn.Linear(in_dim, hidden)
        self.W = nn.Linear(in_dim + hidden, out_dim)
        for lin in (self.Q, self.W):
            nn.init.xavier_uniform_(lin.weight, gain=nn.init.calculate_gain("relu"))
            nn.init.zeros_(lin.bias)

    def forward(self, block, x: torch.Tensor, edge_weight: torch.Tensor | None = None,
                **graph_options) -> torch.Tensor:
        g = as_graph(block, **graph_options)
        _check_rows(g, x)
        if edge_weight is None:
            edge_weight = edge_weight_of(g.block)
        msg = F.relu(self.Q(x))                                          # [num_src, hidden]
        if edge_weight is None:
            total = g.in_degree.to(x.dtype)
            agg = gspmm(g, msg)
        else:
            edge_weight = edge_weight.to(x.dtype)
            total = g.segment_sum(edge_weight)
            agg = gspmm(g, msg, edge_weight)
        total = torch.where(total != 0, total, torch.ones_like(total))
        n = agg / total.unsqueeze(-1)
        z = self.W(torch.cat([x[:g.num_dst], n], dim=-1))
        if self.act:
            z = F.relu(z)
        if self.normalize:
            norm = z.norm(dim=-1, keepdim=True)
            z = z / torch.where(norm > 0, norm, torch.ones_like(norm))
        return z
