"""Samplers (uniformity, LAS unbiasedness) and the replay simulator (against a brute-force count)."""

from __future__ import annotations

import numpy as np
import pytest

from impls.core.topology import by_name
from impls.placement import make_policy
from impls.placement.cost import CostModel, LinkModel
from impls.placement.hotness import lhop_hotness
from impls.placement.policies import PlacementProblem
from impls.placement.sampling import (LayerWiseSampler, LocalityBoost, NodeWiseSampler,
                                      aggregate_mean_estimate, build_locality_sets)
from impls.placement.simulate import gpu_batches, replay
from tests.placement.placement_graphs import random_graph


def neighbors(indptr, indices, v):
    return indices[indptr[v]:indptr[v + 1]]


def test_node_wise_sampler_is_uniform_without_replacement(small_graph):
    indptr, indices, _ = small_graph
    degree = np.diff(indptr)
    hub = int(np.argmax(degree))
    low = int(np.flatnonzero((degree > 0) & (degree <= 3))[0])
    sampler = NodeWiseSampler((3,))
    rng = np.random.default_rng(0)
    draws = 4000
    hits = np.zeros(len(indptr) - 1)
    for _ in range(draws):
        block = sampler.sample(indptr, indices, np.array([hub, low]), rng).blocks[0]
        assert np.array_equal(block.src[:2], [hub, low])
        picked_hub = block.src[block.edge_src[block.edge_dst == 0]]
        picked_low = block.src[block.edge_src[block.edge_dst == 1]]
        assert len(picked_hub) == 3 and len(set(picked_hub.tolist())) == 3     # no repeats
        assert set(picked_hub.tolist()) <= set(neighbors(indptr, indices, hub).tolist())
        assert sorted(picked_low.tolist()) == sorted(neighbors(indptr, indices, low).tolist())
        hits[picked_hub] += 1
    freq = hits[neighbors(indptr, indices, hub)] / draws
    expected = 3 / degree[hub]
    # binomial standard error per neighbor; 5 sigma over ~30 neighbors, fixed seed
    assert np.all(np.abs(freq - expected) < 5 * np.sqrt(expected * (1 - expected) / draws))


@pytest.mark.parametrize("scale", [1.0, 8.0])
def test_layer_wise_estimator_is_unbiased_with_and_without_las(scale):
    """E[sum_j w_ij x_j] = mean of i's neighbors for every target, LAS (s = 8) included.

    4000 draws with a fixed seed; every coordinate within 5 standard errors of the exact mean.
    """
    indptr, indices = random_graph(200, 10, seed=5)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    targets = np.flatnonzero(np.diff(indptr) > 0)[:25]
    stored = np.zeros(200, dtype=bool)
    stored[rng.choice(200, 60, replace=False)] = True
    boost = LocalityBoost(build_locality_sets(indptr, indices, stored, 1, None), scale)
    sampler = LayerWiseSampler(30, 1, boost)
    exact = np.stack([x[neighbors(indptr, indices, v)].mean(axis=0) for v in targets])
    draws = 4000
    estimates = np.empty((draws,) + exact.shape)
    boosted_share = []
    for k in range(draws):
        block = sampler.sample(indptr, indices, targets, rng).blocks[0]
        estimates[k] = aggregate_mean_estimate(block, x)
        fresh = block.src[len(targets):]
        boosted_share.append(stored[fresh].mean() if len(fresh) else 0.0)
    mean = estimates.mean(axis=0)
    stderr = estimates.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(mean - exact) <= 5 * stderr + 1e-12)
    if scale > 1:   # LAS really moves reads to stored nodes (60 of 200 stored)
        assert np.mean(boosted_share) > 0.5


def test_las_keeps_expected_sample_count():
    indptr, indices = random_graph(300, 12, seed=2)
    stored = np.zeros(300, dtype=bool)
    stored[:50] = True
    sets = build_locality_sets(indptr, indices, stored, 2, 40)
    rng = np.random.default_rng(0)
    seeds = np.arange(100, 120)
    counts = {}
    for s in (1.0, 4.0):
        sampler = LayerWiseSampler(60, 2, LocalityBoost(sets, s))
        counts[s] = np.mean([len(sampler.sample(indptr, indices, seeds, rng).blocks[0].src) for _ in range(300)])
    assert counts[4.0] == pytest.approx(counts[1.0], rel=0.05)


def brute_force_split(indptr, indices, placement, batches_per_gpu, hops):
    """Local / peer / host counts with Python sets: full-neighborhood sampling is deterministic."""
    split = np.zeros((placement.num_gpus, 3), dtype=np.int64)
    held = [set(b.tolist()) for b in placement.buffers]
    for gpu, batches in enumerate(batches_per_gpu):
        peers = placement.topology.neighbors(gpu) if placement.peer_reads else []
        for batch in batches:
            nodes = set(batch.tolist())
            frontier = set(nodes)
            for _ in range(hops):
                frontier = {int(u) for v in frontier for u in neighbors(indptr, indices, v)}
                nodes |= frontier
            for v in nodes:
                if v in held[gpu]:
                    split[gpu, 0] += 1
                elif any(v in held[p] for p in peers):
                    split[gpu, 1] += 1
                else:
                    split[gpu, 2] += 1
    return split


@pytest.mark.parametrize("policy, topology", [("clique_opt", "(2+2)GPU"), ("random", "4GPU"),
                                              ("pagraph", "2GPU"), ("xgnn_solver", "6G")])
def test_replay_matches_brute_force(policy, topology):
    indptr, indices = random_graph(120, 3, seed=7)
    train = np.arange(0, 120, 3)
    p = lhop_hotness(indptr, indices, train, 2)
    problem = PlacementProblem(indptr, indices, train, p, by_name(topology), 15, num_layers=2)
    placement = make_policy(policy).place(problem)
    sampler = NodeWiseSampler((-1, -1))                           # every neighbor: deterministic
    result = replay(indptr, indices, train, placement, lambda g: sampler, batch_size=4, epochs=2, seed=3)
    rng = np.random.default_rng(3)                                # the same shuffles, epoch by epoch
    expected = sum(brute_force_split(indptr, indices, placement, gpu_batches(train, placement, 4, rng), 2)
                   for _ in range(2))
    assert np.array_equal(result.split(), expected)
    fr = result.fractions()
    assert fr["local"] + fr["peer"] + fr["host"] == pytest.approx(1.0)
    assert np.allclose(fr["per_gpu"].sum(axis=1), 1.0)
    reads = result.reads()
    for g in range(placement.num_gpus):                           # never reads a GPU without a link
        for src in np.flatnonzero(reads[g, :-1]):
            assert placement.topology.connected(g, int(src))


def test_replay_cost_and_link_models():
    indptr, indices = random_graph(200, 4, seed=8)
    train = np.arange(0, 200, 2)
    problem = PlacementProblem(indptr, indices, train, lhop_hotness(indptr, indices, train, 2),
                               by_name("2GPU"), 30, num_layers=2)
    placement = make_policy("clique_opt").place(problem)
    result = replay(indptr, indices, train, placement, lambda g: NodeWiseSampler((4, 4)), 10, seed=0)
    cost = CostModel(c_gpu=2.0, c_cpu=10.0)
    split = result.split()
    assert np.allclose(result.modeled_time(cost), 10.0 * split[:, 2] + 2.0 * split[:, 1])
    topology = by_name("2GPU")
    serial = result.link_time(LinkModel(topology, 1000, "sum"))
    overlapped = result.link_time(LinkModel(topology, 1000, "max"))
    assert np.all(overlapped <= serial) and np.all(overlapped > 0)
    per_row_host = 1000 / (topology.pcie_gbps * 1e9)
    assert serial[0] >= split[0, 2] * per_row_host


def test_sample_converts_to_the_shared_block_format(small_graph):
    pytest.importorskip("impls.core.blocks")
    indptr, indices, train = small_graph
    sampler = LayerWiseSampler(40, 2)
    sample = sampler.sample(indptr, indices, train[:10], np.random.default_rng(0))
    blocks, weights = sample.to_blocks()
    assert blocks[-1].num_dst == 10 and blocks[0].src_ids.tolist() == sample.input_nodes.tolist()
    for block, w, mine in zip(blocks, weights, reversed(sample.blocks)):
        block.validate()
        src, dst = block.global_edges()
        assert sorted(zip(src.tolist(), dst.tolist())) == sorted(
            zip(mine.src[mine.edge_src].tolist(), mine.dst[mine.edge_dst].tolist()))
        assert len(w) == block.num_edges
        for s, d in zip(src.tolist(), dst.tolist()):               # every sampled edge is a graph edge
            assert s in neighbors(indptr, indices, d)
