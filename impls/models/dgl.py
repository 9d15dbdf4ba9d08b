"""The same models built from DGL's layers (``dgl.nn``: SAGEConv, GraphConv, GATConv), where they run.

Each layer gets a DGL block made from our Block (``dgl.create_block`` over its CSC: a dst
node's sampled in-edges); DGL is imported through :mod:`harness.dgl_compat`.

* ``SAGEConv(aggregator_type="mean")`` on the block as sampled (a sampled self loop is kept, as
  the native and PyG layers keep it); a Block that came from a DGL loader carries its DGL block
  (``dgl_block``), which is used directly.
* ``GraphConv`` and ``GATConv`` see the block with its sampled self loops replaced by one self
  loop per dst node (the native layers' N(i) + {i}). GCN ``norm="both"`` is
  ``GraphConv(norm="both")`` and ``"right"`` is ``GraphConv(norm="right")`` on that block;
  ``"sym"`` (the native default, which DGL has no norm for) is ``GraphConv(norm="none")`` with
  the native coefficients as ``edge_weight``. GATConv runs with ``allow_zero_in_degree`` (every
  dst has its self loop anyway); the last layer's heads are averaged, as the native one's.

Parameters differ in name and layout from the native layers'; :func:`load_native_state` copies a
native model's weights in, so the tests compare the two on the same weights. PinSAGE has no layer
in ``dgl.nn`` (DGL's PinSAGE example defines its own), so the DGL backend builds GCN, GraphSAGE
and GAT. A CPU build of DGL cannot run message passing on CUDA tensors:
:func:`harness.dgl_compat.layers_unavailable` says so for a device, and the pipelines then feed
DGL's blocks to other layers.
"""

from __future__ import annotations

import torch
from torch import nn

from harness.errors import HarnessError

from .layers import gcn_coefficients
from .nets import BlockGNN, default_activation, layer_dims
from .ops import BlockGraph

KINDS = ("gcn", "sage", "gat")


def _dgl():
    from harness.dgl_compat import import_dgl

    return import_dgl()


def to_dgl_block(block, self_loops: bool = False):
    """Our Block as a DGL block (dst nodes leading the sources); ``self_loops``: sampled self
    loops dropped and one added per dst node."""
    dgl = _dgl()
    indptr, indices = block.indptr, block.indices
    if self_loops:
        dst = block.edge_dst()
        keep = indices != dst
        counts = torch.bincount(dst[keep], minlength=block.num_dst) + 1
        loops = torch.arange(block.num_dst, device=indices.device)
        order = torch.sort(torch.cat([dst[keep], loops]), stable=True).indices
        indices = torch.cat([indices[keep], loops])[order]
        indptr = torch.zeros(block.num_dst + 1, dtype=torch.int64, device=indices.device)
        torch.cumsum(counts, 0, out=indptr[1:])
    eids = torch.arange(indices.numel(), device=indices.device)
    return dgl.create_block(("csc", (indptr, indices, eids)), num_src_nodes=block.num_src,
                            num_dst_nodes=block.num_dst)


class DglBlockGNN(BlockGNN):
    def __init__(self, kind, convs, *, norm: str = "sym", **kw):
        super().__init__(kind, convs, backend="dgl", **kw)
        self.norm = norm

    def layer(self, l: int, block, h: torch.Tensor) -> torch.Tensor:
        conv = self.convs[l]
        n_dst = block.num_dst
        if self.kind == "sage":
            b = getattr(block, "dgl_block", None)
            b = b if b is not None else to_dgl_block(block)
            return conv(b, (h, h[:n_dst]))
        b = to_dgl_block(block, self_loops=True)
        if self.kind == "gcn":
            if self.norm != "sym":
                return conv(b, (h, h[:n_dst]))
            src_scale, dst_scale = gcn_coefficients(BlockGraph(block), "sym", h.dtype)
            src, dst = b.edges(order="eid")
            w = (src_scale[src] * dst_scale[dst]).to(h.dtype)
            return conv(b, (h, h[:n_dst]), edge_weight=w)
        out = conv(b, (h, h[:n_dst]))                      # [num_dst, heads, C]
        return out.flatten(1) if conv.concat_heads else out.mean(dim=1)


def build_dgl(kind: str, in_dim: int, hidden: int, out_dim: int, num_layers: int, *,
              heads: int = 4, dropout: float = 0.0, norm: str = "sym", attn_dropout: float = 0.0,
              negative_slope: float = 0.2, head_dim: int | None = None,
              activation: str | None = "default", **_) -> DglBlockGNN:
    if kind not in KINDS:
        raise HarnessError(f"model backend 'dgl' builds {', '.join(KINDS)}; dgl.nn has no {kind} layer")
    dgl = _dgl()
    from dgl.nn.pytorch import GATConv, GraphConv, SAGEConv

    dims = layer_dims(kind, in_dim, hidden, out_dim, num_layers, heads, head_dim)
    convs: list[nn.Module] = []
    for l, (i, o) in enumerate(dims):
        last = l == len(dims) - 1
        if kind == "gcn":
            convs.append(GraphConv(i, o, norm="none" if norm == "sym" else norm, allow_zero_in_degree=True))
        elif kind == "sage":
            convs.append(SAGEConv(i, o, aggregator_type="mean"))
        else:
            conv = GATConv(i, o, num_heads=heads, negative_slope=negative_slope, attn_drop=attn_dropout,
                           allow_zero_in_degree=True)
            conv.concat_heads = not last
            convs.append(conv)
    act = default_activation(kind) if activation == "default" else activation
    model = DglBlockGNN(kind, convs, norm=norm, dropout=dropout, activation=act)
    model.dgl_version = dgl.__version__
    return model


@torch.no_grad()
def load_native_state(dgl_model: DglBlockGNN, native_model: BlockGNN) -> None:
    """Copy a native model's weights into the DGL model of the same kind and sizes."""
    for ours, theirs in zip(native_model.convs, dgl_model.convs):
        if dgl_model.kind == "sage":
            theirs.fc_neigh.weight.copy_(ours.lin_l.weight)
            theirs.fc_self.weight.copy_(ours.lin_r.weight)
            theirs.fc_self.bias.copy_(ours.lin_l.bias)           # DGL's one bias sits in fc_self
        elif dgl_model.kind == "gcn":
            theirs.weight.copy_(ours.lin.weight.t())
            theirs.bias.copy_(ours.bias)
        else:
            theirs.fc.weight.copy_(ours.lin.weight)
            theirs.attn_l.copy_(ours.att_src)
            theirs.attn_r.copy_(ours.att_dst)
            bias = ours.bias if ours.concat else ours.bias.repeat(ours.heads)   # averaged heads: b each
            theirs.bias.copy_(bias)
