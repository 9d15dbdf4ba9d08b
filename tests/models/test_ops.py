"""g-SpMM / g-SDDMM / edge softmax over the block CSR against dense computations."""

from __future__ import annotations


import pytest
import torch

from impls.core.blocks import edge_weight_of, set_edge_weight
from impls.models.ops import BlockGraph, edge_softmax, gspmm, gsddmm_dot

from .util import adjacency, random_block

COMBOS = [("sparse", "transpose"), ("sparse", "atomic"), ("sparse", "dup_split"),
          ("segment", "atomic"), ("segment", "dup_split"), ("segment", "transpose")]
TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


@pytest.mark.parametrize("impl,backward", COMBOS)
@pytest.mark.parametrize("with_dup", [True, False])
def test_gspmm_matches_dense(gen, impl, backward, with_dup):
    block = random_block(gen, 23, 61, 7, with_dup=with_dup)
    g = BlockGraph(block, impl=impl, backward=backward)
    x = torch.randn(block.num_src, 5, generator=gen, requires_grad=True)
    w = torch.rand(block.num_edges, generator=gen).requires_grad_()
    r = torch.randn(block.num_dst, 5, generator=gen)
    out = gspmm(g, x, w)
    (out * r).sum().backward()
    x2 = x.detach().clone().requires_grad_()
    w2 = w.detach().clone().requires_grad_()
    ref = adjacency(block, w2) @ x2
    (ref * r).sum().backward()
    torch.testing.assert_close(out, ref, **TOL)
    torch.testing.assert_close(x.grad, x2.grad, **TOL)
    torch.testing.assert_close(w.grad, w2.grad, **TOL)


@pytest.mark.parametrize("impl,backward", COMBOS)
def test_gspmm_per_head_weights(gen, impl, backward):
    block = random_block(gen, 17, 40, 6)
    g = BlockGraph(block, impl=impl, backward=backward)
    H, C = 3, 4
    x = torch.randn(block.num_src, H, C, generator=gen, requires_grad=True)
    w = torch.rand(block.num_edges, H, generator=gen).requires_grad_()
    r = torch.randn(block.num_dst, H, C, generator=gen)
    out = gspmm(g, x, w)
    (out * r).sum().backward()
    x2 = x.detach().clone().requires_grad_()
    w2 = w.detach().clone().requires_grad_()
    ref = torch.stack([adjacency(block, w2[:, h]) @ x2[:, h] for h in range(H)], dim=1)
    (ref * r).sum().backward()
    torch.testing.assert_close(out, ref, **TOL)
    torch.testing.assert_close(x.grad, x2.grad, **TOL)
    torch.testing.assert_close(w.grad, w2.grad, **TOL)


@pytest.mark.parametrize("impl,backward", COMBOS)
def test_gspmm_unweighted_3d_and_sorted_rows(gen, impl, backward):
    for sorted_rows in (False, True):
        block = random_block(gen, 12, 30, 5, sorted_rows=sorted_rows)
        g = BlockGraph(block, impl=impl, backward=backward)
        x = torch.randn(block.num_src, 2, 3, generator=gen, requires_grad=True)
        out = gspmm(g, x)
        out.square().sum().backward()
        x2 = x.detach().clone().requires_grad_()
        ref = torch.einsum("ij,jhc->ihc", adjacency(block), x2)
        ref.square().sum().backward()
        torch.testing.assert_close(out, ref, **TOL)
        torch.testing.assert_close(x.grad, x2.grad, **TOL)


@pytest.mark.parametrize("impl,backward", COMBOS)
@pytest.mark.parametrize("heads", [0, 2])
def test_chunked_paths_equal_unchunked(gen, impl, backward, heads):
    block = random_block(gen, 40, 90, 9)
    shape, wshape = ((6,), ()) if not heads else ((heads, 3), (heads,))
    x = torch.randn(block.num_src, *shape, generator=gen)
    w = torch.rand(block.num_edges, *wshape, generator=gen)
    r = torch.randn(block.num_dst, *shape, generator=gen)
    results = []
    for chunk in (1 << 27, 37):              # 37 elements: rows split over many chunks
        g = BlockGraph(block, impl=impl, backward=backward, chunk_elems=chunk)
        xx, ww = x.clone().requires_grad_(), w.clone().requires_grad_()
        out = gspmm(g, xx, ww)
        (out * r).sum().backward()
        results.append((out.detach(), xx.grad, ww.grad))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, **TOL)


@pytest.mark.parametrize("impl", ["sparse", "segment"])
def test_empty_block(impl):
    from impls.core.blocks import Block

    block = Block(torch.zeros(4, dtype=torch.int64), torch.zeros(0, dtype=torch.int64),
                  torch.arange(5), 3, torch.zeros(5, dtype=torch.int64))
    g = BlockGraph(block, impl=impl)
    x = torch.randn(5, 2, requires_grad=True)
    out = gspmm(g, x)
    assert out.shape == (3, 2) and not out.any()
    out.sum().backward()
    assert not x.grad.any()


def test_dup_split_uses_the_blocks_duplicate_counts(gen):
    block = random_block(gen, 30, 50, 6)
    g = BlockGraph(block, backward="dup_split")
    once, many = g._dup_split
    assert once.numel() + many.numel() == block.num_edges
    dup = block.dup_count
    assert bool((dup[block.indices[once]] == 1).all()) and bool((dup[block.indices[many]] > 1).all())
    # the transposed CSR's row lengths are the duplicate counts
    assert torch.equal(g._t_indptr[1:] - g._t_indptr[:-1], dup)


@pytest.mark.parametrize("sddmm", ["auto", "sampled", "gather"])
@pytest.mark.parametrize("sorted_rows", [False, True])
def test_gsddmm_dot(gen, sddmm, sorted_rows):
    # unsorted rows with a repeated neighbor: the sampled product runs on the sorted CSR and
    # must put every value back in the block's edge order, duplicates included
    block = random_block(gen, 15, 33, 6, sorted_rows=sorted_rows)
    g = BlockGraph(block, sddmm=sddmm)
    a = torch.randn(block.num_dst, 4, generator=gen)
    b = torch.randn(block.num_src, 4, generator=gen)
    ref = (a @ b.T)[block.edge_dst(), block.indices]
    torch.testing.assert_close(gsddmm_dot(g, a, b), ref, **TOL)
    torch.testing.assert_close(g.sddmm_dot(a, b), ref, **TOL)


@pytest.mark.parametrize("sddmm", ["sampled", "gather"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_sddmm_per_head(gen, sddmm, dtype):
    block = random_block(gen, 21, 47, 7)
    g = BlockGraph(block, sddmm=sddmm)
    H, C = 3, 5
    a = torch.randn(block.num_dst, H, C, generator=gen).to(dtype)
    b = torch.randn(block.num_src, H, C, generator=gen).to(dtype)
    ref = torch.einsum("ehc,ehc->eh", a[block.edge_dst()].double(), b[block.indices].double())
    out = g.sddmm_dot(a, b)
    assert out.shape == (block.num_edges, H) and out.dtype == dtype
    tol = dict(rtol=2e-2, atol=5e-2) if dtype == torch.bfloat16 else TOL
    torch.testing.assert_close(out.double(), ref, **tol)


def test_sddmm_option_is_checked(gen):
    with pytest.raises(ValueError, match="sddmm"):
        BlockGraph(random_block(gen, 4, 9, 3), sddmm="dense")


def test_edge_softmax_with_self_scores(gen):
    block = random_block(gen, 19, 40, 6)
    g = BlockGraph(block)
    H = 2
    s = torch.randn(block.num_edges, H, generator=gen, requires_grad=True)
    s_self = torch.randn(block.num_dst, H, generator=gen, requires_grad=True)
    alpha, alpha_self = edge_softmax(g, s, s_self)
    r = torch.randn_like(alpha)
    ((alpha * r).sum() + alpha_self.square().sum()).backward()
    # reference: a dense softmax over (edges of i) + one self entry, in float64
    dst = block.edge_dst()
    s2 = s.detach().double().requires_grad_()
    ss2 = s_self.detach().double().requires_grad_()
    ref_alpha = torch.empty_like(s2)
    ref_self = []
    for i in range(block.num_dst):             # reference only: a loop over dst nodes is fine here
        rows = torch.nonzero(dst == i).view(-1)
        z = torch.softmax(torch.cat([s2[rows], ss2[i:i + 1]]), dim=0)
        ref_alpha = ref_alpha.index_put((rows,), z[:-1])
        ref_self.append(z[-1])
    ref_self = torch.stack(ref_self)
    ((ref_alpha * r.double()).sum() + ref_self.square().sum()).backward()
    torch.testing.assert_close(alpha.double(), ref_alpha, **TOL)
    torch.testing.assert_close(alpha_self.double(), ref_self, **TOL)
    torch.testing.assert_close(s.grad.double(), s2.grad, **TOL)
    torch.testing.assert_close(s_self.grad.double(), ss2.grad, **TOL)


def test_edge_softmax_without_self_and_empty_rows(gen):
    block = random_block(gen, 10, 20, 4)
    g = BlockGraph(block)
    s = torch.randn(block.num_edges, generator=gen)
    alpha, none = edge_softmax(g, s)
    assert none is None
    sums = torch.zeros(block.num_dst).index_add_(0, block.edge_dst(), alpha)
    has = (block.indptr[1:] - block.indptr[:-1]) > 0
    torch.testing.assert_close(sums[has], torch.ones(int(has.sum())))
    assert not sums[~has].any()


def test_edge_weight_attribute(gen):
    block = random_block(gen, 6, 12, 3)
    assert edge_weight_of(block) is None
    w = torch.rand(block.num_edges)
    assert set_edge_weight(block, w) is block and edge_weight_of(block) is w
    with pytest.raises(ValueError, match="edge_weight must have shape"):
        set_edge_weight(block, torch.rand(block.num_edges + 1))


def test_bad_inputs(gen):
    block = random_block(gen, 6, 12, 3)
    with pytest.raises(ValueError, match="impl must be"):
        BlockGraph(block, impl="cusparse")
    with pytest.raises(ValueError, match="backward must be"):
        BlockGraph(block, backward="magic")
    g = BlockGraph(block)
    with pytest.raises(ValueError, match="source"):
        gspmm(g, torch.randn(block.num_src + 1, 2))
    with pytest.raises(ValueError, match="edge weights"):
        gspmm(g, torch.randn(block.num_src, 2), torch.rand(block.num_edges + 2))


def test_auto_choices_on_cpu(gen):
    g = BlockGraph(random_block(gen, 6, 12, 3))
    assert (g.impl, g.backward) == ("sparse", "transpose")
    g = BlockGraph(random_block(gen, 6, 12, 3), impl="segment")
    assert (g.impl, g.backward) == ("segment", "atomic")


@pytest.mark.parametrize("impl,backward", COMBOS)
def test_gradcheck_float64(impl, backward):
    gen = torch.Generator().manual_seed(7)
    block = random_block(gen, 7, 15, 4)
    g = BlockGraph(block, impl=impl, backward=backward)
    x = torch.randn(block.num_src, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    w = torch.rand(block.num_edges, 2, dtype=torch.float64, generator=gen, requires_grad=True)
    x3 = torch.randn(block.num_src, 2, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: gspmm(g, a), (x,))
    assert torch.autograd.gradcheck(lambda a, b: gspmm(g, a, b), (x3, w))


@pytest.mark.parametrize("budget", [1, 7, 50, 10_000])
def test_row_chunks_tile_the_rows_within_budget_plus_one_row(gen, budget):
    from impls.models.ops import _row_chunks

    lengths = torch.randint(0, 12, (300,), generator=gen)
    lengths[17] = 80                          # a row longer than most budgets
    lengths[40:60] = 0                        # empty rows inside a chunk and at cuts
    indptr = torch.zeros(301, dtype=torch.int64)
    torch.cumsum(lengths, 0, out=indptr[1:])
    nnz = int(indptr[-1])
    chunks = _row_chunks(indptr, nnz, 1, budget)
    assert chunks[0][0] == 0 and chunks[-1][1] == 300
    for (r0, r1, e0, e1), nxt in zip(chunks, chunks[1:] + [None]):
        assert r1 > r0 and (e0, e1) == (int(indptr[r0]), int(indptr[r1]))
        assert e1 - e0 <= budget + int(lengths[r0:r1].max())
        if nxt is not None:
            assert nxt[0] == r1
    if budget >= nnz:
        assert len(chunks) == 1
    else:
        assert len(chunks) >= nnz // (budget + 80)
