"""PaGraph's policy (impls/placement/pagraph.py) against simple references: the bit-row partition is
the per-node loop's partition, each GPU caches its partition's highest-out-degree nodes, and no GPU
reads another's buffer."""

from __future__ import annotations

import numpy as np
import pytest

from impls.core.topology import by_name
from impls.placement import make_policy
from impls.placement.pagraph import (PlacementTimeout, closure_bits, lhop_neighborhood, pagraph_partition,
                                     pagraph_partition_bitset)
from impls.placement.policies import PlacementProblem
from tests.placement.placement_graphs import csr_from_edges, random_graph


def directed_graph(num_nodes: int, edges_per_node: int, seed: int):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_nodes * edges_per_node)
    dst = (rng.pareto(1.2, len(src)) * 7).astype(np.int64) % num_nodes     # skewed in-degrees
    pairs = {(int(a), int(b)) for a, b in zip(src, dst) if a != b}
    return csr_from_edges(num_nodes, sorted(pairs), symmetric=False)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("hops", [1, 2, 3])
def test_closure_bits_are_the_bfs_closures(seed, hops):
    indptr, indices = random_graph(150, 3, seed=seed) if seed != 2 else directed_graph(150, 2, seed)
    train = np.random.default_rng(seed).choice(150, 70, replace=False)      # 70: rows past one word
    bits = closure_bits(indptr, indices, train, hops)
    for j, v in enumerate(train):
        got = np.flatnonzero(np.unpackbits(bits[j].view(np.uint8), bitorder="little")[:150])
        assert np.array_equal(got, np.sort(lhop_neighborhood(indptr, indices, int(v), hops)))


@pytest.mark.parametrize("seed, parts, hops", [(0, 2, 1), (1, 3, 2), (2, 4, 3), (3, 2, 2)])
def test_bitset_partition_is_the_loops_partition(seed, parts, hops):
    indptr, indices = random_graph(300, 4, seed=seed) if seed != 3 else directed_graph(300, 3, seed)
    train = np.random.default_rng(seed + 10).choice(300, 130, replace=False)   # in a random order
    want = pagraph_partition(indptr, indices, train, parts, hops)
    got = pagraph_partition_bitset(indptr, indices, train, parts, hops)
    for a, b in zip(want.train_parts, got.train_parts):
        assert np.array_equal(a, b)
    for a, b in zip(want.node_parts, got.node_parts):
        assert np.array_equal(a, b)
    assert sum(len(t) for t in got.train_parts) == len(train)


def test_bitset_partition_keeps_the_time_cap():
    indptr, indices = random_graph(200, 4, seed=5)
    train = np.arange(0, 200, 2)
    with pytest.raises(PlacementTimeout):
        pagraph_partition_bitset(indptr, indices, train, 2, 2, time_cap_s=0.0)


def out_degree_reference(indptr, indices, n):
    """How many neighbor lists hold each node, counted row by row."""
    count = np.zeros(n, dtype=np.int64)
    for v in range(n):
        for u in indices[indptr[v]:indptr[v + 1]]:
            count[u] += 1
    return count


@pytest.mark.parametrize("topology", ["2GPU", "4GPU", "(2+2)GPU"])
def test_each_gpu_caches_its_partitions_highest_out_degree_nodes(topology):
    indptr, indices = directed_graph(240, 4, seed=7)
    n = len(indptr) - 1
    train = np.random.default_rng(1).choice(n, 90, replace=False)
    problem = PlacementProblem(indptr, indices, train, np.zeros(n), by_name(topology), 30, num_layers=2)
    placement = make_policy("pagraph").place(problem)
    parts = pagraph_partition(indptr, indices, train, by_name(topology).num_gpus, 2)
    degree = out_degree_reference(indptr, indices, n)
    for g, (buf, nodes) in enumerate(zip(placement.buffers, parts.node_parts)):
        ranked = sorted(nodes.tolist(), key=lambda v: (-degree[v], v))
        assert buf.tolist() == ranked[:30]
        lookup = placement.lookup(g)
        assert set(np.flatnonzero(lookup.dev_num >= 0).tolist()) == set(buf.tolist())   # no peer reads
        assert np.all(lookup.dev_num[lookup.dev_num >= 0] == g)
    assert not placement.peer_reads and placement.meta["buffer_fill"] == "out_degree"
    for mine, want in zip(placement.train_parts, parts.train_parts):                     # local shuffling
        assert np.array_equal(mine, want)


def test_the_out_degree_cache_is_not_the_hotness_cache():
    """A node many rows hold but no training node reaches ranks first by out-degree, last by hotness."""
    indptr, indices = directed_graph(240, 4, seed=7)
    n = len(indptr) - 1
    train = np.random.default_rng(1).choice(n, 90, replace=False)
    hotness = np.arange(n, dtype=float)                       # hotness favours high ids
    problem = PlacementProblem(indptr, indices, train, hotness, by_name("2GPU"), 20, num_layers=2)
    by_degree = make_policy("pagraph").place(problem)
    by_hotness = make_policy("pagraph", buffer_fill="hottest").place(problem)
    assert not all(np.array_equal(a, b) for a, b in zip(by_degree.buffers, by_hotness.buffers))
    with pytest.raises(ValueError):
        make_policy("pagraph", buffer_fill="coldest")
