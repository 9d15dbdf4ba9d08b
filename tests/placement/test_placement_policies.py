"""Every policy: buffer sizes, dev_num / buf_pos consistency, partitions, PaGraph's time cap."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from impls.core.topology import by_name
from harness import registry
from impls.placement import PlacementPolicy, PreprocessingPolicy, SearchingPolicy, make_policy
from impls.placement.hotness import degree_hotness, lhop_hotness, presample_hotness
from impls.placement.pagraph import PlacementTimeout, lhop_neighborhood, pagraph_partition
from impls.placement.policies import PlacementProblem
from impls.placement.sampling import NodeWiseSampler

HAVE_PYMETIS = importlib.util.find_spec("pymetis") is not None
TOPOLOGIES = ("2GPU", "(2+2)GPU", "4GPU", "8GPU", "4Gc", "6G", "8G")


def policy_params():
    """Every registered placement policy, skipped where a package it needs is missing."""
    for spec in registry.impl_specs("placement"):
        missing = [p for p in spec.needs.packages if importlib.util.find_spec(p) is None]
        marks = [pytest.mark.skipif(True, reason=f"{', '.join(missing)} not installed")] if missing else []
        yield pytest.param(spec.name, marks=marks, id=spec.name)


def check_lookup(placement):
    n = placement.num_nodes
    for gpu in range(placement.num_gpus):
        lookup = placement.lookup(gpu)
        assert lookup.dev_num.shape == (n,) and lookup.buf_pos.shape == (n,)
        on_gpu = lookup.dev_num >= 0
        host = np.flatnonzero(~on_gpu)
        assert np.array_equal(lookup.buf_pos[host], host)         # CPU buffer holds node i at i
        # a node this GPU holds is always read locally
        local = placement.buffers[gpu]
        assert np.all(lookup.dev_num[local] == gpu)
        # every GPU read points at a slot that really holds the node, on a GPU it can reach
        nodes = np.flatnonzero(on_gpu)
        for dev in np.unique(lookup.dev_num[nodes]):
            mine = nodes[lookup.dev_num[nodes] == dev]
            assert np.array_equal(placement.buffers[dev][lookup.buf_pos[mine]], mine)
            assert placement.topology.connected(gpu, int(dev))
            if dev != gpu:
                assert placement.peer_reads
        # nothing stored on a reachable GPU is read from the host
        if placement.peer_reads:
            assert not np.any(placement.reachable_mask(gpu)[host])


@pytest.mark.parametrize("name", policy_params())
@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("fraction", [0.05, 0.3])
def test_policy_respects_buffer_and_lookup(name, topology, fraction, small_graph):
    indptr, indices, train = small_graph
    n = len(indptr) - 1
    problem = PlacementProblem(indptr, indices, train, lhop_hotness(indptr, indices, train, 2),
                               by_name(topology), int(fraction * n), num_layers=2)
    placement = make_policy(name).place(problem)
    assert len(placement.buffers) == problem.topology.num_gpus
    for buf in placement.buffers:
        assert len(buf) <= problem.buffer_size
        assert len(np.unique(buf)) == len(buf)
        assert buf.min() >= 0 and buf.max() < n
    check_lookup(placement)
    if placement.train_parts is not None:                        # local shuffling covers every training node once
        assert np.array_equal(np.sort(np.concatenate(placement.train_parts)), np.sort(train))


def test_partitioners_partition(small_graph):
    indptr, indices, train = small_graph
    n = len(indptr) - 1
    problem = PlacementProblem(indptr, indices, train, np.ones(n), by_name("4GPU"), n)
    for name in ("naive", "random", "hash_modulo") + (("metis",) if HAVE_PYMETIS else ()):
        placement = make_policy(name).place(problem)             # buffer = N: whole partitions
        stored = np.concatenate(placement.buffers)
        assert np.array_equal(np.sort(stored), np.arange(n)), name
    naive = make_policy("naive").place(problem)
    assert naive.buffers[0].tolist() == list(range(100))          # consecutive ids


@pytest.mark.skipif(not HAVE_PYMETIS, reason="pymetis is not installed")
def test_metis_index_arrays_are_taken_without_a_copy_and_partition_alike(small_graph):
    import pymetis

    from impls.placement.policies import metis_index_arrays, metis_membership

    indptr, indices, _ = small_graph
    ready = metis_index_arrays(indptr, indices.astype(np.int32))
    assert all(a.dtype == pymetis.zero_copy_dtype() for a in ready)
    assert np.array_equal(ready[0], indptr) and np.array_equal(ready[1], indices)
    assert np.array_equal(metis_membership(*ready, 4, symmetric=True),
                          metis_membership(indptr, indices.astype(np.int32), 4, symmetric=True))


def test_clique_opt_duplicates_with_alpha_and_clique_does_not(small_graph):
    indptr, indices, train = small_graph
    p = lhop_hotness(indptr, indices, train, 2)
    problem = PlacementProblem(indptr, indices, train, p, by_name("4GPU"), 60)
    clique = make_policy("clique").place(problem)
    assert clique.unique_stored() == 240                          # 4 x 60, no copies
    eager = make_policy("clique_opt", alpha=0.0).place(problem)
    careful = make_policy("clique_opt", alpha=0.9).place(problem)
    assert careful.unique_stored() < eager.unique_stored()        # larger alpha: more duplicates
    hottest = int(np.argmax(p))
    assert all(hottest in b for b in careful.buffers)


def test_xgnn_solver_placement_on_6g(small_graph):
    indptr, indices, train = small_graph
    p = degree_hotness(indptr, indices)
    problem = PlacementProblem(indptr, indices, train, p, by_name("6G"), 80)
    placement = make_policy("xgnn_solver").place(problem)
    clique = make_policy("clique").place(problem)
    # two partitions per GPU of 40 nodes: 6 x 40 cached vs 2 x 80 per clique of two (XGNN 6.6)
    assert placement.unique_stored() == 240 and clique.unique_stored() == 160
    check_lookup(placement)
    for gpu in range(6):                                          # every cached node reachable
        assert np.all(placement.lookup(gpu).dev_num[placement.stored_mask()] >= 0)


def test_pagraph_partition_and_time_cap(small_graph):
    indptr, indices, train = small_graph
    part = pagraph_partition(indptr, indices, train, num_parts=2, hops=1)
    sizes = [len(t) for t in part.train_parts]
    assert sum(sizes) == len(train) and abs(sizes[0] - sizes[1]) <= len(train) * 0.2   # balanced
    for tv, pv in zip(part.train_parts, part.node_parts):       # PV_i holds the L-hop closures
        for v in tv[:5]:
            assert set(lhop_neighborhood(indptr, indices, int(v), 1).tolist()) <= set(pv.tolist())
    with pytest.raises(PlacementTimeout) as info:
        pagraph_partition(indptr, indices, train, num_parts=2, hops=2, time_cap_s=0.0, check_every=4)
    assert info.value.done == 4 and info.value.projected_s > 0
    problem = PlacementProblem(indptr, indices, train, np.ones(len(indptr) - 1), by_name("2GPU"), 50)
    policy = make_policy("pagraph", time_cap_s=0.0)
    with pytest.raises(PlacementTimeout):
        policy.place(problem)
    with pytest.raises(PlacementTimeout):                         # remembered, not re-run
        policy.place(problem)


def test_pagraph_stops_early_when_projected_far_past_the_cap(small_graph):
    from harness.timing import injected_clock

    indptr, indices, train = small_graph
    many = np.tile(train, 40)                   # a long run: each check costs 2 s on a fake clock
    ticks = iter(range(0, 10**6, 2))
    with injected_clock(lambda: float(next(ticks))):
        with pytest.raises(PlacementTimeout) as info:
            pagraph_partition(indptr, indices, many, num_parts=2, hops=1, time_cap_s=100.0, check_every=16)
        # a tenth of the cap (10 s) passes at the 5th check (80 nodes); projected 10 s x N / 80 > 4 x 100 s
        assert info.value.done == 80 and info.value.elapsed_s == 10.0
        assert info.value.projected_s > 4 * 100 and "projection" in str(info.value)
        # a run projected within the factor keeps going to the cap itself
        ticks = iter(range(0, 10**6, 2))
        few = np.tile(train, 40)[:2000]
        with pytest.raises(PlacementTimeout) as info:
            pagraph_partition(indptr, indices, few, num_parts=2, hops=1, time_cap_s=100.0, check_every=16)
    assert info.value.elapsed_s > 100 and "at the time cap" in str(info.value)


def test_lhop_neighborhood_matches_bfs(small_graph):
    indptr, indices, _ = small_graph
    for node in (0, 17, 399):
        expected = {node}
        frontier = {node}
        for _ in range(2):
            frontier = {int(u) for v in frontier for u in indices[indptr[v]:indptr[v + 1]]} - expected
            expected |= frontier
        assert set(lhop_neighborhood(indptr, indices, node, 2).tolist()) == expected


def test_hotness_estimators_agree_on_hot_nodes(small_graph):
    indptr, indices, train = small_graph
    exact = lhop_hotness(indptr, indices, train, 2, mode="exact")
    walks = lhop_hotness(indptr, indices, train, 2, mode="walks", symmetric=True)
    assert np.allclose(walks, lhop_hotness(indptr, indices, train, 2, mode="walks"))
    sampled = lhop_hotness(indptr, indices, train, 2, mode="sampled", fanouts=(5, 5))
    pre = presample_hotness(indptr, indices, train, NodeWiseSampler((5, 5)), 32, epochs=4, seed=0)
    assert np.all(walks >= exact - 1e-12)
    top = set(np.argsort(-exact)[:40].tolist())
    for est in (walks, sampled, pre, degree_hotness(indptr, indices)):
        assert len(top & set(np.argsort(-est)[:40].tolist())) >= 20   # same hot set, roughly
    # a node with no training node within 2 hops is never read
    assert np.all(pre[exact == 0] == 0) and np.all(sampled[exact == 0] == 0)


@pytest.mark.parametrize("name, topology", [("clique_opt", "(2+2)GPU"), ("xgnn_solver", "8G"), ("pagraph", "4GPU")])
def test_split_for_gather_reassembles_the_rows(name, topology, small_graph):
    """A sharded store of BSIZE rows per GPU plus a host table give back every node's features."""
    indptr, indices, train = small_graph
    n = len(indptr) - 1
    problem = PlacementProblem(indptr, indices, train, lhop_hotness(indptr, indices, train, 2),
                               by_name(topology), 40, num_layers=2)
    placement = make_policy(name).place(problem)
    features = np.random.default_rng(0).normal(size=(n, 4))
    store = np.zeros((placement.num_gpus * placement.buffer_size, 4))
    for g, buf in enumerate(placement.buffers):                  # GPU g's shard: its buffer, by slot
        store[g * placement.buffer_size: g * placement.buffer_size + len(buf)] = features[buf]
    nodes = np.random.default_rng(1).choice(n, 150, replace=False)
    for gpu in range(placement.num_gpus):
        split = placement.split_for_gather(gpu, nodes)
        rows = np.empty((len(nodes), 4))
        rows[split.store_pos] = store[split.store_rows]
        rows[split.host_pos] = features[split.host_ids]
        assert np.array_equal(rows, features[nodes])
        assert np.all(split.store_rows // placement.buffer_size == split.store_device)


@pytest.mark.parametrize("name", policy_params())
def test_a_policy_is_its_contract_and_its_traits_say_what_it_takes(name, small_graph):
    """Each registered policy satisfies PlacementPolicy; a ``solver`` searches, a ``preprocessing``
    one hands Table 2 its step; the options experiments give it (by its traits) are ones it takes."""
    from experiments.placement.common import policy_options

    spec = registry.get_impl("placement", name)
    options = policy_options(name, alpha=0.2, time_cap_s=60.0, buffer_fill="hottest")
    assert ("alpha" in options) == spec.has("duplicating") and ("time_cap_s" in options) == spec.has("time_capped")
    assert ("buffer_fill" in options) == spec.has("partitioning")
    policy = make_policy(name, **options)
    assert isinstance(policy, PlacementPolicy) and registry.contract_of(spec) is PlacementPolicy
    assert isinstance(policy, SearchingPolicy) == spec.has("solver")
    assert isinstance(policy, PreprocessingPolicy) == spec.has("preprocessing")
    indptr, indices, train = small_graph
    if spec.has("solver"):
        plan = policy.search(by_name("8G"))
        assert plan.plans_found >= 1 and len(plan.store) == 8
    if spec.has("preprocessing"):
        step = policy.preprocessing(indptr, indices, train, 4, 2, seed=0)
        assert step() is not None
    assert spec.title and spec.plot_colour()


def test_the_options_follow_traits_not_names(registry_sandbox):
    from experiments.placement.common import policy_options

    registry_sandbox.impl("placement", "zz_dup", traits=("duplicating", "time_capped"))
    given = policy_options("zz_dup", alpha=0.5, time_cap_s=3.0, buffer_fill="hottest")
    assert given == {"alpha": 0.5, "time_cap_s": 3.0}
    assert policy_options("zz_dup") == {}              # an option not given is not passed
    assert not isinstance(object(), PlacementPolicy)   # the contract check fails on what is not a policy


def test_a_policy_without_its_traits_method_is_not_that_contract():
    class Placer:
        name = "zz"

        def place(self, problem):
            return None

    assert isinstance(Placer(), PlacementPolicy)
    assert not isinstance(Placer(), SearchingPolicy) and not isinstance(Placer(), PreprocessingPolicy)
