"""Every native layer equals a dense reference built from the block's adjacency matrix,
forward and gradients (input features and every parameter), for every op implementation."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from impls.core.blocks import set_edge_weight
from impls.models.layers import GATConv, GCNConv, PinSAGEConv, SAGEConv
from impls.models.ops import BlockGraph

from .util import adjacency, random_block, with_one_self_loop

COMBOS = [("sparse", "transpose"), ("sparse", "dup_split"), ("segment", "atomic"),
          ("segment", "dup_split"), ("segment", "transpose")]
TOL = dict(rtol=1e-4, atol=1e-5)


# --- dense references (independent of ops.py) ------------------------------------------------

def ref_sage(layer, block, x):
    a = adjacency(block)
    mean = (a @ x) / a.sum(1, keepdim=True).clamp(min=1)
    return mean @ layer.lin_l.weight.T + layer.lin_l.bias + x[:block.num_dst] @ layer.lin_r.weight.T


def ref_gcn(layer, block, x):
    a = with_one_self_loop(adjacency(block))               # [num_dst, num_src]
    d_dst = a.sum(1)
    if layer.norm == "sym":
        d_src = torch.ones(block.num_src)
        d_src[:block.num_dst] = d_dst
        a_hat = a / d_dst.sqrt()[:, None] / d_src.sqrt()[None, :]
    elif layer.norm == "both":
        d_src = a.sum(0).clamp(min=1)                       # out-degree of every source
        a_hat = a / d_dst.sqrt()[:, None] / d_src.sqrt()[None, :]
    else:
        a_hat = a / d_dst[:, None]
    return a_hat @ x @ layer.lin.weight.T + layer.bias


def ref_gat(layer, block, x):
    H, C = layer.heads, layer.out_dim
    h = (x @ layer.lin.weight.T).view(-1, H, C)
    el = (h * layer.att_src).sum(-1)                        # [num_src, H]
    er = (h[:block.num_dst] * layer.att_dst).sum(-1)        # [num_dst, H]
    e = F.leaky_relu(er[:, None, :] + el[None, :, :], layer.negative_slope)   # [dst, src, H]
    mult = with_one_self_loop(adjacency(block))             # edge multiplicities
    alpha = torch.softmax(e + mult.log()[:, :, None], dim=1)
    out = torch.einsum("ijh,jhc->ihc", alpha, h)
    out = out.reshape(block.num_dst, H * C) if layer.concat else out.mean(1)
    return out + layer.bias


def ref_pinsage(layer, block, x, w):
    a = adjacency(block, w)
    msg = torch.relu(x @ layer.Q.weight.T + layer.Q.bias)
    total = a.sum(1, keepdim=True)
    n = (a @ msg) / torch.where(total != 0, total, torch.ones_like(total))
    z = torch.cat([x[:block.num_dst], n], 1) @ layer.W.weight.T + layer.W.bias
    if layer.act:
        z = torch.relu(z)
    if layer.normalize:
        z = z / z.norm(dim=1, keepdim=True).clamp(min=1e-30)
    return z


def _compare(layer, block, x, ref_fn, graph_kw, **fwd_kw):
    torch.manual_seed(0)
    r = None
    results = []
    for use_ref in (False, True):
        layer.zero_grad(set_to_none=True)
        xx = x.clone().requires_grad_()
        out = ref_fn(layer, block, xx) if use_ref else layer(BlockGraph(block, **graph_kw), xx, **fwd_kw)
        if r is None:
            r = torch.randn_like(out)
        (out * r).sum().backward()
        grads = {n: p.grad.clone() for n, p in layer.named_parameters()}
        results.append((out.detach(), xx.grad.clone(), grads))
    (o1, gx1, gp1), (o2, gx2, gp2) = results
    torch.testing.assert_close(o1, o2, **TOL)
    torch.testing.assert_close(gx1, gx2, **TOL)
    assert gp1.keys() == gp2.keys() and gp1
    for name in gp1:
        torch.testing.assert_close(gp1[name], gp2[name], **TOL, msg=lambda m: f"{name}: {m}")


@pytest.fixture
def block():
    gen = torch.Generator().manual_seed(99)
    return random_block(gen, 21, 57, 8)


def _x(block, dim, seed=5):
    return torch.randn(block.num_src, dim, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("impl,backward", COMBOS)
@pytest.mark.parametrize("dims", [(6, 9), (9, 4)])         # aggregate-first and project-first
def test_sage(block, impl, backward, dims):
    torch.manual_seed(1)
    layer = SAGEConv(*dims)
    assert layer.project_first == (dims[0] > dims[1])
    _compare(layer, block, _x(block, dims[0]), ref_sage, dict(impl=impl, backward=backward))


@pytest.mark.parametrize("impl,backward", COMBOS)
@pytest.mark.parametrize("norm", ["sym", "both", "right"])
@pytest.mark.parametrize("dims", [(6, 9), (9, 4)])
def test_gcn(block, impl, backward, norm, dims):
    torch.manual_seed(2)
    layer = GCNConv(*dims, norm=norm)
    with torch.no_grad():
        layer.bias.normal_()
    _compare(layer, block, _x(block, dims[0]), ref_gcn, dict(impl=impl, backward=backward))


@pytest.mark.parametrize("impl,backward", COMBOS)
@pytest.mark.parametrize("concat", [True, False])
def test_gat(block, impl, backward, concat):
    torch.manual_seed(3)
    layer = GATConv(7, 5, heads=4, concat=concat)
    with torch.no_grad():
        layer.bias.normal_()
    _compare(layer, block, _x(block, 7), ref_gat, dict(impl=impl, backward=backward))


@pytest.mark.parametrize("impl,backward", COMBOS)
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("last", [True, False])
def test_pinsage(block, impl, backward, weighted, last):
    torch.manual_seed(4)
    layer = PinSAGEConv(6, 8, act=not last, normalize=not last)
    w = None
    if weighted:                    # random-walk visit counts, attached to the block
        w = torch.randint(1, 6, (block.num_edges,), generator=torch.Generator().manual_seed(8)).float()
        set_edge_weight(block, w)
    ref = lambda lay, b, x: ref_pinsage(lay, b, x, w)  # noqa: E731
    _compare(layer, block, _x(block, 6), ref, dict(impl=impl, backward=backward))


def test_gat_gradients_reach_attention_parameters(block):
    layer = GATConv(7, 5, heads=4)
    out = layer(block, _x(block, 7))
    out.square().sum().backward()
    assert layer.att_src.grad.abs().sum() > 0 and layer.att_dst.grad.abs().sum() > 0


def test_layer_rejects_wrong_row_count(block):
    with pytest.raises(ValueError, match="source nodes"):
        SAGEConv(3, 4)(block, torch.randn(block.num_src - 1, 3))


def test_gcn_both_uses_dup_count_as_source_degree(block):
    """norm='both' reads the block's duplicate counts: changing them changes the output."""
    layer = GCNConv(4, 3, norm="both")
    x = _x(block, 4)
    base = layer(block, x)
    from impls.core.blocks import Block

    fake = Block(block.indptr, block.indices, block.src_ids, block.num_dst, block.dup_count * 3)
    assert not torch.allclose(layer(fake, x), base)
    none = Block(block.indptr, block.indices, block.src_ids, block.num_dst, None)
    torch.testing.assert_close(layer(none, x), base)     # recomputed by bincount when absent
