"""Topologies (built-ins, cliques, nvidia-smi) and XGNN's placement solver (Fig. 7, Fig. 8)."""

from __future__ import annotations

import numpy as np
import pytest

from impls.core import topology as topo
from impls.placement.xgnn_solver import solve


def test_dgx1_matches_xgnn_fig7_adjacency():
    t = topo.dgx1_v100()
    assert sorted(t.neighbors(0)) == [1, 2, 3, 6]                 # "GPU0 can not access GPU4, GPU5, GPU7"
    assert sorted(t.neighbors(4)) == [2, 5, 6, 7]                 # W4 reads G2, G4, G5, G6, G7
    for g in range(8):                                            # 6 NVLink 2.0 bricks per V100
        assert t.link_gbps[g].sum() == pytest.approx(6 * topo.V100_LINK_GBPS)


@pytest.mark.parametrize("name, cliques", [
    ("4Gf", [[0, 1, 2, 3]]),
    ("4Gc", [[0, 1], [2, 3]]),                                    # G0-G1, G6-G7 (subset indices)
    ("6G", [[0, 1], [2, 3], [4, 5]]),                             # XGNN: cliques of two
    ("8G", [[0, 1, 2, 3], [4, 5, 6, 7]]),                         # XGNN: two cliques of four
])
def test_xgnn_subsets_and_their_cliques(name, cliques):
    t = topo.xgnn_topology(name)
    assert t.cliques() == cliques
    if name == "4Gc":
        assert t.labels == ("G0", "G1", "G6", "G7")
        assert [len(t.neighbors(g)) for g in range(4)] == [2, 2, 2, 2]   # a ring


def test_ics22_configurations():
    assert topo.ics22_topology("4GPU").is_fully_connected()
    pairs = topo.ics22_topology("(2+2)GPU")
    assert pairs.cliques() == [[0, 1], [2, 3]]
    assert pairs.neighbors(0) == [1] and pairs.neighbors(3) == [2]
    assert topo.ics22_topology("(2*4)GPU").cliques() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert topo.h200(4).is_fully_connected() and topo.h200(4).link_gbps[0, 1] == pytest.approx(18 * 26.56)


def test_from_nvidia_smi_text():
    text = """\x1b[4mGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\x1b[0m
GPU0\t X \tNV18\tSYS\t0-63\t0
GPU1\tNV18\t X \tNV2\t0-63\t0
GPU2\tSYS\tNV2\t X \t0-63\t0

Legend:
  X    = Self
"""
    t = topo.from_nvidia_smi(text, per_link_gbps=25.0)
    assert t.num_gpus == 3 and t.labels == ("GPU0", "GPU1", "GPU2")
    assert t.link_gbps[0, 1] == 450 and t.link_gbps[1, 2] == 50 and t.link_gbps[0, 2] == 0
    assert topo.from_nvidia_smi("no gpus here") is None


def reaches_everything(t, store):
    for w in range(t.num_gpus):
        reach = set()
        for g in t.closed_neighborhood(w):
            reach.update(store[g])
        if reach != set(range(t.num_gpus)):
            return False
    return True


@pytest.mark.parametrize("name", topo.XGNN_TOPOLOGIES)
def test_solver_plan_properties(name):
    t = topo.xgnn_topology(name)
    plan = solve(t)
    assert reaches_everything(t, plan.store)
    assert plan.reaches_everything()
    counts = [len(s) for s in plan.store]
    assert max(counts) - min(counts) <= 1                         # storage balanced
    for w in range(t.num_gpus):                                   # every read has a path
        for p in range(t.num_gpus):
            src = plan.source[w, p]
            assert p in plan.store[src] and t.connected(w, src)
    if name == "4Gf":
        assert counts == [1, 1, 1, 1]                             # fully connected: no copies (= Clique)


def test_solver_ranks_complete_plans_by_balance_before_bandwidth():
    """An irregular 7-GPU machine where ChooseNbrs' local balance rule leaves complete plans of
    very different balance: the final ranking must pick the fewest partitions on the fullest GPU,
    then the fewest copies (3 and 17), not the plan with the best MinBandwidth (4 and 20)."""
    links = np.zeros((7, 7))
    for a, b in [(0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (1, 3), (1, 4), (1, 5), (2, 3), (2, 6)]:
        links[a, b] = links[b, a] = topo.V100_LINK_GBPS
    t = topo.Topology("irregular7", links)
    plan = solve(t)
    assert plan.plans_found > 1
    assert reaches_everything(t, plan.store)
    assert plan.max_partitions_per_gpu == 3
    assert sum(len(s) for s in plan.store) == 17
    for w in range(7):
        for p in range(7):
            assert p in plan.store[plan.source[w, p]] and t.connected(w, plan.source[w, p])


def test_solver_8g_stores_one_extra_partition_per_gpu():
    """XGNN Sec. 4.2: 'GGMS stores one extra partition in each GPU and makes all NVLinks be used
    evenly'. The search's speed (Sec. 6.6: under 15 ms) is benchmarked in tests/benchmarks."""
    t = topo.xgnn_topology("8G")
    plan = solve(t)
    assert plan.extra_partitions == [1] * 8
    # W4 reads its data from GPU2, GPU4, GPU5, GPU6, GPU7 (Fig. 7)
    assert set(plan.source[4].tolist()) == {2, 4, 5, 6, 7}
    # even in bandwidth: partitions read per link scale with the link's width
    for w in range(8):
        for g in t.neighbors(w):
            assert plan.access_count[w, g] == t.link_gbps[w, g] / topo.V100_LINK_GBPS


def test_solver_on_a_ring_and_a_line():
    ring = topo.pairs(1)  # 2 GPUs connected: trivial
    assert solve(ring).store == ((0,), (1,))
    links = np.zeros((3, 3))
    links[0, 1] = links[1, 0] = links[1, 2] = links[2, 1] = 25.0
    line = topo.Topology("line", links)
    plan = solve(line)
    assert reaches_everything(line, plan.store)
