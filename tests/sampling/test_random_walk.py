"""PinSAGE's random-walk sampler (impls/sampling/random_walk.py): numba and the CUDA kernel (run by
the emulator) against the plain reference, and the properties a PinSAGE neighbourhood must have."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from impls.core.blocks import edge_weight_of
from impls.sampling.minibatch import sample_blocks
from impls.sampling.random_walk import RandomWalkSampler
from impls.sampling.unique import HashAppendUnique

from . import emu
from . import reference as ref


def _graph(id_dtype=np.int32):
    return ref.random_graph(200, seed=5, max_degree=40, id_dtype=id_dtype)


@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("walks,length,restart,K", [(4, 3, 0.5, 5), (2, 5, 0.0, 3), (16, 4, 1.0, 64), (1, 1, 0.5, 1)])
def test_numba_equals_reference(id_dtype, walks, length, restart, K):
    indptr, indices = _graph(id_dtype)
    seeds = np.concatenate([np.arange(200), [0, 2, 2]])
    s = RandomWalkSampler("cpu", indptr, indices, random_walks=walks, walk_length=length, restart_prob=restart)
    o, n, w = s.sample_weighted(torch.from_numpy(seeds), K, seed=31)
    ro, rn, rw = ref.random_walk_topk(indptr, indices, seeds, K, 31, walks, length, restart)
    assert np.array_equal(o.numpy(), ro) and np.array_equal(n.numpy(), rn) and np.array_equal(w.numpy(), rw)
    assert w.dtype == torch.float32 and n.dtype == torch.int64


def _within_hops(indptr, indices, v, hops):
    seen, frontier = {v: 0}, deque([v])
    while frontier:
        u = frontier.popleft()
        if seen[u] == hops:
            continue
        for x in indices[indptr[u]:indptr[u + 1]].tolist():
            if x not in seen:
                seen[x] = seen[u] + 1
                frontier.append(x)
    return seen


def test_neighbourhood_properties():
    """Top-k of distinct nodes within walk_length hops, never the target, counts as weights in
    descending order and at most random_walks x walk_length in all; a node without neighbours has none."""
    indptr, indices = _graph()
    R, L, K = 4, 3, 5
    s = RandomWalkSampler("cpu", indptr, indices, random_walks=R, walk_length=L, restart_prob=0.5)
    seeds = np.arange(200)
    o, n, w = (t.numpy() for t in s.sample_weighted(torch.from_numpy(seeds), K, seed=2))
    assert o[0] == 0 and o[-1] == n.size and n.size > 0
    for b, v in enumerate(seeds.tolist()):
        got, wt = n[o[b]:o[b + 1]], w[o[b]:o[b + 1]]
        assert got.size <= K and np.unique(got).size == got.size and v not in got.tolist()
        if indptr[v + 1] == indptr[v]:
            assert got.size == 0
        reach = _within_hops(indptr, indices, v, L)
        assert all(x in reach for x in got.tolist())
        assert (wt >= 1).all() and (np.diff(wt) <= 0).all() and wt.sum() <= R * L
        assert np.array_equal(wt, np.round(wt))


def test_fixed_seed_repeats_and_other_seed_differs():
    indptr, indices = _graph()
    s = RandomWalkSampler("cpu", indptr, indices)
    seeds = torch.arange(200)
    a = s.sample_weighted(seeds, 5, seed=7)
    b = s.sample_weighted(seeds, 5, seed=7)
    c = s.sample_weighted(seeds, 5, seed=8)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[1], c[1])


def test_restart_one_visits_direct_neighbours_uniformly():
    """restart_prob 1: every step starts at the target, so visits are uniform over its neighbours
    (chi-square over 300 targets x 64 visits, p = 0.001)."""
    indptr, indices = ref.star_graph(20)
    s = RandomWalkSampler("cpu", indptr, indices, random_walks=16, walk_length=4, restart_prob=1.0)
    o, n, w = s.sample_weighted(torch.zeros(300, dtype=torch.int64), 20, seed=3)
    assert torch.equal(o[1:] - o[:-1] <= 20, torch.ones(300, dtype=torch.bool))
    visits = np.bincount(n.numpy() - 1, weights=w.numpy(), minlength=20)
    assert visits.sum() == 300 * 64
    expected = visits.sum() / 20
    chi2 = float(((visits - expected) ** 2 / expected).sum())
    assert chi2 < ref.CHI2_999[19], chi2


def test_walks_go_past_the_first_hop_without_restart():
    """A path 0-1-2-3: without restart one walk of 3 steps from 0 visits 1, 2 and 3 exactly once or
    returns; with walk_length 1 only node 1 is reachable."""
    indptr = np.array([0, 1, 3, 5, 6], dtype=np.int64)
    indices = np.array([1, 0, 2, 1, 3, 2], dtype=np.int32)
    far = RandomWalkSampler("cpu", indptr, indices, random_walks=8, walk_length=3, restart_prob=0.0)
    _, n, _ = far.sample_weighted(torch.zeros(50, dtype=torch.int64), 5, seed=1)
    assert set(n.tolist()) == {1, 2, 3}
    near = RandomWalkSampler("cpu", indptr, indices, random_walks=8, walk_length=1, restart_prob=0.0)
    o, n, w = near.sample_weighted(torch.zeros(5, dtype=torch.int64), 5, seed=1)
    assert n.tolist() == [1] * 5 and w.tolist() == [8.0] * 5


def test_blocks_carry_weights_and_feed_pinsage():
    from impls.models import build

    indptr, indices = _graph()
    s = RandomWalkSampler("cpu", indptr, indices)
    seeds = torch.tensor([3, 9, 40, 77, 150])
    blocks = sample_blocks(s, HashAppendUnique("cpu"), seeds, (5, 5, 5), seed=11)
    assert len(blocks) == 3
    targets = seeds
    for hop, block in enumerate(reversed(blocks)):
        block.validate()
        w = edge_weight_of(block)
        assert w is not None and w.numel() == block.num_edges
        o, n, ww = s.sample_weighted(targets, 5, seed=11 * 1_000_003 + hop)
        src, dst = block.global_edges()
        assert torch.equal(src, n) and torch.equal(w, ww)
        assert torch.equal(dst, torch.repeat_interleave(targets, o[1:] - o[:-1]))
        targets = block.src_ids
    model = build("pinsage", 8, 16, 3, 3)
    x = torch.randn(blocks[0].num_src, 8)
    assert model(blocks, x).shape == (5, 3)


def test_clear_errors():
    indptr, indices = _graph()
    with pytest.raises(HarnessError, match="random_walks"):
        RandomWalkSampler("cpu", indptr, indices, random_walks=0)
    with pytest.raises(HarnessError, match="walk_length"):
        RandomWalkSampler("cpu", indptr, indices, random_walks=16, walk_length=5)
    with pytest.raises(HarnessError, match="restart_prob"):
        RandomWalkSampler("cpu", indptr, indices, restart_prob=1.5)
    s = RandomWalkSampler("cpu", indptr, indices)
    with pytest.raises(HarnessError, match="out of range"):
        s.sample_weighted(torch.tensor([200]), 5)
    with pytest.raises(HarnessError, match="top-k"):
        s.sample_weighted(torch.tensor([1]), 0)


@pytest.mark.skipif(emu.available() is not None, reason=str(emu.available()))
@pytest.mark.parametrize("id_dtype,store", [(np.int32, "local"), (np.int64, "split")])
def test_emulated_kernel_equals_numba(id_dtype, store):
    indptr, indices = _graph(id_dtype)
    seeds = torch.from_numpy(np.concatenate([np.arange(200), np.arange(200), [0, 1]]))   # several blocks
    cpu = RandomWalkSampler("cpu", indptr, indices)
    with emu.installed():
        kern = RandomWalkSampler("cpu", indptr, indices, engine="kernel", store=store, count_world=4)
        got = kern.sample_weighted(seeds, 5, seed=6)
        rows_kernel = kern.rows_read.clone()
    want = cpu.sample_weighted(seeds, 5, seed=6)
    assert all(torch.equal(x, y) for x, y in zip(got, want))
    assert torch.equal(rows_kernel, cpu.rows_read)
    assert "emulated" in kern.describe()
