"""ICS'22: the worked examples of Sec. 3.2 and Sec. 4, Algorithm 1, Algorithm 2, Eq. 3-6."""

from __future__ import annotations

import numpy as np
import pytest

from impls.core.topology import ics22_topology
from impls.placement import ics22, make_policy
from impls.placement.cost import CostModel, eq6_terms, expected_costs
from impls.placement.hotness import lhop_hotness
from impls.placement.policies import PlacementProblem
from impls.placement.sampling import ScaleController, build_locality_sets, las_probabilities, locality_vectors


def paper_numbering(dev_num: np.ndarray) -> list[int]:
    """ICS'22 numbers GPUs from 1 and the CPU -1; we number GPUs from 0."""
    return [int(d) + 1 if d >= 0 else -1 for d in dev_num]


def test_access_frequencies_of_the_example(ics22_graph):
    indptr, indices = ics22_graph
    train = np.arange(6)
    f = lhop_hotness(indptr, indices, train, hops=2, mode="exact") * len(train)
    assert f.tolist() == [4, 6, 6, 6, 5, 5]                      # Sec. 3.2
    # the SpMV estimate counts walks: an upper bound that keeps node-0 coldest
    walks = lhop_hotness(indptr, indices, train, hops=2, mode="walks") * len(train)
    assert np.all(walks >= f) and np.argmin(walks) == 0


def test_algorithm1_worked_example(ics22_graph):
    """Sec. 3.2: p = f / 6, two NVLink GPUs of 2 slots, alpha 0.3 -> B1 = [1, 3], B2 = [4, 2]."""
    p = np.array([4, 6, 6, 6, 5, 5]) / 6
    assert ics22.sort_nodes(p).tolist() == [1, 2, 3, 4, 5, 0]
    buffers, info = ics22.algorithm1(p, num_gpus=2, buffer_size=2, alpha=0.3)
    assert [b.tolist() for b in buffers] == [[1, 3], [4, 2]]
    assert info["replacements"] == 2

    indptr, indices = ics22_graph
    problem = PlacementProblem(indptr, indices, np.arange(6), p, ics22_topology("2GPU"), 2, num_layers=2)
    placement = make_policy("clique_opt", alpha=0.3).place(problem)
    for gpu in (0, 1):
        lookup = placement.lookup(gpu)
        # the paper prints 7 entries for 6 nodes; the 6 that name nodes 0-5:
        assert paper_numbering(lookup.dev_num) == [-1, 1, 2, 1, 2, -1]
        assert lookup.buf_pos.tolist() == [0, 0, 1, 1, 0, 5]


def test_algorithm1_alpha_stops_and_keeps_one_copy():
    p = np.array([1.0, 0.9, 0.8, 0.5, 0.1, 0.05, 0.01, 0.0])
    # alpha 0.5: V[2]=0.8 > 0.5 * 0.9 replaces; V[3]=0.5 > 0.5 * 1.0 fails -> one replacement
    buffers, info = ics22.algorithm1(p, num_gpus=2, buffer_size=2, alpha=0.5)
    assert info == {"replacements": 1, "stopped_by_alpha": True}
    assert [b.tolist() for b in buffers] == [[0, 2], [0, 1]]
    # alpha 0: every slot but the kept copies gets a new node, each node stays on some GPU
    buffers, _ = ics22.algorithm1(p, num_gpus=4, buffer_size=2, alpha=0.0)
    stored = np.concatenate(buffers)
    assert set(stored.tolist()) == set(range(8)) - {7}           # p = 0 is never worth a slot
    for b in buffers:
        assert len(b) == 2 and len(set(b.tolist())) == 2


def test_algorithm1_balances_new_probability_mass():
    rng = np.random.default_rng(0)
    p = np.sort(rng.pareto(2.0, 5000))[::-1]
    buffers, info = ics22.algorithm1(p, num_gpus=4, buffer_size=600, alpha=0.0)
    top = set(range(600))
    mass = [p[[v for v in b if v not in top]].sum() for b in buffers]
    assert info["replacements"] == 3 * 600
    assert max(mass) - min(mass) <= p[600]                       # within one node's probability


def test_section4_locality_sets(ics22_graph):
    """Sec. 4: B = {1, 2, 3, 4}: v_2 = v_1 A = [1, 3, 4, 3, 2, 1]; Q'_2 (size 3) = {2, 1, 3}."""
    indptr, indices = ics22_graph
    stored = np.zeros(6, dtype=bool)
    stored[[1, 2, 3, 4]] = True
    v = locality_vectors(indptr, indices, stored, num_layers=2)
    assert v[1].tolist() == [1, 3, 4, 3, 2, 1]
    q1, q2 = build_locality_sets(indptr, indices, stored, num_layers=2, max_size=3)
    assert np.flatnonzero(q1).tolist() == [1, 2, 3, 4]
    assert np.flatnonzero(q2).tolist() == [1, 2, 3]


def test_eq8_keeps_expected_count_and_ratios():
    q = np.full(10, 0.3)
    boosted = np.zeros(10, dtype=bool)
    boosted[:3] = True
    new = las_probabilities(q, boosted, scale=2.0)
    assert new.sum() == pytest.approx(q.sum())
    assert new[0] / new[5] == pytest.approx(2.0)
    assert new[0] / new[1] == pytest.approx(1.0)                  # relative order inside Q kept
    capped = las_probabilities(q, boosted, scale=8.0)             # 8 * 0.3 * M > 1: water filling
    assert capped.max() <= 1.0 and capped.sum() == pytest.approx(q.sum())


def test_algorithm2_scale_controller():
    ctl = ScaleController(lt=0.15, ut=0.2, max_scale=8)
    assert [ctl.update(r) for r in (0.5, 0.4, 0.3)] == [2, 4, 8]  # doubles while r > ut
    assert ctl.update(0.3) == 8 and ctl.fixed                      # s >= MAXS: fixed
    ctl = ScaleController()
    ctl.update(0.3)                                                # s = 2, pre = 1
    assert ctl.update(0.1) == 1.5                                  # r < lt: back to (s + pre) / 2
    assert ctl.update(0.17) == 1.5 and ctl.fixed                   # lt <= r <= ut: fixed
    ctl = ScaleController()
    assert ctl.update(0.1) == 1 and ctl.fixed                      # s = 1 and r < lt: fixed


def test_cost_model_hand_computation(ics22_graph):
    """Eq. 3 on the example placement, by hand: GPU-1 holds {1, 3}, GPU-2 {4, 2}."""
    p = np.array([4, 6, 6, 6, 5, 5]) / 6
    indptr, indices = ics22_graph
    problem = PlacementProblem(indptr, indices, np.arange(6), p, ics22_topology("2GPU"), 2, num_layers=2)
    placement = make_policy("clique_opt", alpha=0.3).place(problem)
    cost = CostModel(c_gpu=1.0, c_cpu=5.0)
    # GPU-1: local 1, 3; peer 2 (p=1), 4 (5/6); host 0 (4/6), 5 (5/6)
    gpu1 = 5.0 * (4 / 6 + 5 / 6) + 1.0 * (1 + 5 / 6)
    # GPU-2: local 4, 2; peer 1, 3 (1 + 1); host 0, 5
    gpu2 = 5.0 * (4 / 6 + 5 / 6) + 1.0 * 2
    assert expected_costs(placement, p, cost) == pytest.approx([gpu1, gpu2])
    # Eq. 6 is the same objective rewritten
    assert eq6_terms(placement, p, cost)["objective"] == pytest.approx(max(gpu1, gpu2))
    # C_gpu >= C_cpu: everything remote comes from the host (second case of Eq. 3)
    slow_links = CostModel(c_gpu=6.0, c_cpu=5.0)
    assert expected_costs(placement, p, slow_links)[0] == pytest.approx(5.0 * (4 / 6 + 5 / 6 + 1 + 5 / 6))
    assert cost.read_cost(2, 3, 4) == pytest.approx(5.0 * 4 + 1.0 * 3)


def test_cost_model_from_bandwidths():
    cost = CostModel.from_bandwidths(row_bytes=1000, gpu_gbps=100, cpu_gbps=10)
    assert cost.c_gpu == pytest.approx(1e-8) and cost.c_cpu == pytest.approx(1e-7)
    assert cost.alpha == pytest.approx(0.1)
