"""Multi-hop mini-batches: blocks chain hop to hop and reconstruct exactly the sampled edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from impls.sampling.minibatch import sample_blocks, sampled_edges
from impls.sampling.samplers import KHopBatchedSampler, PathDoublingSampler
from impls.sampling.unique import DenseAppendUnique, HashAppendUnique, SortUnique

from . import reference as ref


@pytest.mark.parametrize("sampler_cls", [PathDoublingSampler, KHopBatchedSampler])
@pytest.mark.parametrize("unique_cls", [HashAppendUnique, DenseAppendUnique, SortUnique])
def test_blocks_reconstruct_sampled_edges(sampler_cls, unique_cls):
    indptr, indices = ref.random_graph(2000, seed=13, max_degree=40)
    sampler = sampler_cls("cpu", indptr, indices)
    seeds = torch.from_numpy(np.random.default_rng(1).choice(2000, 64, replace=False))
    fanouts = [10, 5, 3]
    blocks = sample_blocks(sampler, unique_cls("cpu"), seeds, fanouts, seed=99)
    assert len(blocks) == 3
    for b in blocks:
        b.validate()
        assert torch.equal(b.dup_count.to(torch.int64), torch.bincount(b.indices, minlength=b.num_src))
    assert blocks[-1].num_dst == 64 and torch.equal(blocks[-1].src_ids[:64], seeds)
    for outer, inner in zip(blocks[:-1], blocks[1:]):          # dst of the outer hop = src of the inner
        assert torch.equal(outer.src_ids[:outer.num_dst], inner.src_ids)
    # hop h (blocks[-1 - h]) holds exactly the sampler's output for its targets and hop seed
    targets = seeds
    for h, fanout in enumerate(fanouts):
        block = blocks[-1 - h]
        offsets, neighbors = sampler.sample(targets, fanout, seed=99 * 1_000_003 + h)
        src, dst = block.global_edges()
        assert torch.equal(src, neighbors)
        assert torch.equal(dst, torch.repeat_interleave(targets, offsets[1:] - offsets[:-1]))
        assert torch.equal(block.indptr, offsets)
        targets = block.src_ids
    assert sampled_edges(blocks) == sum(b.num_edges for b in blocks)
    again = sample_blocks(sampler, unique_cls("cpu"), seeds, fanouts, seed=99)
    assert all(torch.equal(a.src_ids, b.src_ids) and torch.equal(a.indices, b.indices)
               for a, b in zip(blocks, again))


def test_dense_append_blocks_equal_the_sort_references():
    """The direct-mapped table numbers new nodes as torch.unique does, so with the sampler's id bound a
    whole mini-batch through it is the sort reference's, block for block."""
    indptr, indices = ref.random_graph(3000, seed=4, max_degree=30)
    sampler = PathDoublingSampler("cpu", indptr, indices)
    seeds = torch.from_numpy(np.random.default_rng(2).choice(3000, 100, replace=False))
    a = sample_blocks(sampler, DenseAppendUnique("cpu"), seeds, [8, 4], seed=7)
    b = sample_blocks(sampler, SortUnique("cpu"), seeds, [8, 4], seed=7)
    for x, y in zip(a, b):
        assert torch.equal(x.src_ids, y.src_ids) and torch.equal(x.indices, y.indices)
        assert torch.equal(x.indptr, y.indptr) and torch.equal(x.dup_count, y.dup_count)


def test_blocks_feed_pyg_style_edge_index():
    indptr, indices = ref.random_graph(500, seed=2, max_degree=20)
    blocks = sample_blocks(PathDoublingSampler("cpu", indptr, indices), HashAppendUnique("cpu"),
                           torch.arange(0, 500, 50), [4, 4], seed=1)
    ei = blocks[0].edge_index()
    assert ei.shape == (2, blocks[0].num_edges) and int(ei[1].max()) < blocks[0].num_dst
    # a mean aggregation over the block equals the per-node mean of the sampled neighbors' values
    x = torch.randn(blocks[0].num_src, 3)
    out = torch.zeros(blocks[0].num_dst, 3).index_add_(0, ei[1], x[ei[0]])
    deg = (blocks[0].indptr[1:] - blocks[0].indptr[:-1]).clamp(min=1).unsqueeze(1)
    i = 1
    lo, hi = int(blocks[0].indptr[i]), int(blocks[0].indptr[i + 1])
    assert torch.allclose((out / deg)[i], x[blocks[0].indices[lo:hi]].mean(0) if hi > lo else torch.zeros(3))
