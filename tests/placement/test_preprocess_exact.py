"""ICS'22 preprocessing (L-hop estimate of p, line 1's sort, Algorithm 1) against plain references.

The fast kernels must give the same bits: the references below are the straightforward scipy /
numpy formulations (f = ((A + I)^T)^L t as sparse products, a stable argsort, Algorithm 1's
replacements made in one vectorized pass with a per-round stable sort of the GPUs).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from impls.placement import ics22
from impls.placement.hotness import lhop_hotness


def random_graph(rng, n: int, avg_degree: float, symmetric: bool, skew: bool):
    """CSR with a heavy-tailed degree (``skew``), self loops, duplicates and isolated nodes."""
    m = int(n * avg_degree)
    weights = rng.pareto(1.2, n) + 1 if skew else np.ones(n)
    weights[rng.random(n) < 0.05] = 0                         # isolated nodes
    src = rng.choice(n, m, p=weights / weights.sum())
    dst = rng.choice(n, m, p=weights / weights.sum())
    adj = sp.coo_matrix((np.ones(m, dtype=np.float32), (src, dst)), shape=(n, n)).tocsr()
    if symmetric:
        adj = (adj + adj.T).tocsr()
    adj.sort_indices()
    if skew:                                                   # rows in no particular order
        for row in range(n):
            rng.shuffle(adj.indices[adj.indptr[row]:adj.indptr[row + 1]])
    return adj.indptr.astype(np.int64), adj.indices.astype(np.int32)


def reference_lhop(indptr, indices, train, hops, mode="walks", fanouts=None, symmetric=False):
    """``symmetric``: sums along the CSR rows in stored order (A @ x), else the columns (A^T @ x)."""
    n = len(indptr) - 1
    adj = sp.csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr), shape=(n, n))
    degree = np.diff(indptr).astype(np.float64)
    f = np.zeros(n)
    f[train] = 1.0
    for hop in range(hops):
        weight = f if mode == "walks" else f * np.minimum(1.0, fanouts[hop] / np.maximum(degree, 1.0))
        f = (adj @ weight if symmetric else adj.T @ weight) + f
    return f / len(train)


def reference_algorithm1(p, num_gpus, buffer_size, alpha):
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(-p, kind="stable")
    bsize = min(int(buffer_size), len(p))
    base = order[:bsize]
    if num_gpus == 1 or bsize == len(p) or bsize == 0:
        return [base.copy() for _ in range(num_gpus)], 0
    total = min(len(p), num_gpus * bsize) - bsize
    t = np.arange(total)
    old_idx = bsize - 1 - t // (num_gpus - 1)
    new_idx = bsize + t
    beneficial = p[order[new_idx]] > alpha * p[order[old_idx]]
    done = int(np.argmin(beneficial)) if not beneficial.all() else total
    device = np.empty(done, dtype=np.int64)
    p_sum = np.zeros(num_gpus)
    for start in range(0, done, num_gpus - 1):
        takers = np.argsort(p_sum, kind="stable")[:num_gpus - 1]
        for k, d in enumerate(takers[:done - start]):
            device[start + k] = d
            p_sum[d] += p[order[new_idx[start + k]]]
    buffers = []
    for d in range(num_gpus):
        buf = base.copy()
        mine = device == d
        buf[old_idx[:done][mine]] = order[new_idx[:done][mine]]
        buffers.append(buf)
    return buffers, done


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_lhop_walks_and_sampled_match_sparse_products(seed, symmetric):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    indptr, indices = random_graph(rng, n, rng.uniform(0, 40), symmetric, skew=seed % 2 == 0)
    train = rng.choice(n, int(rng.integers(1, n + 1)), replace=False)
    for hops in (1, 2, 3):
        got = lhop_hotness(indptr, indices, train, hops, symmetric=symmetric)
        assert same_bits(got, reference_lhop(indptr, indices, train, hops, symmetric=symmetric))
        fanouts = tuple(int(x) for x in rng.integers(1, 30, hops))
        got = lhop_hotness(indptr, indices, train, hops, mode="sampled", fanouts=fanouts, symmetric=symmetric)
        assert same_bits(got, reference_lhop(indptr, indices, train, hops, "sampled", fanouts, symmetric))


@pytest.mark.parametrize("parallel_min_edges", [0, 1 << 62])
def test_lhop_on_every_thread_or_one(monkeypatch, parallel_min_edges):
    import numba

    from impls.placement import hotness

    monkeypatch.setattr(hotness, "PARALLEL_MIN_EDGES", parallel_min_edges)
    threads = numba.get_num_threads()
    rng = np.random.default_rng(11)
    indptr, indices = random_graph(rng, 20_000, 30, symmetric=True, skew=True)
    train = rng.choice(20_000, 2000, replace=False)
    assert same_bits(lhop_hotness(indptr, indices, train, 3, symmetric=True),
                     reference_lhop(indptr, indices, train, 3, symmetric=True))
    assert numba.get_num_threads() == threads


def random_probabilities(rng, n: int) -> np.ndarray:
    """Ties, zeros, signed zeros, a wide range and (sometimes) negatives and infinities."""
    kind = rng.integers(0, 4)
    if kind == 0:                                   # walk counts / N_t: many ties
        p = rng.integers(0, 20, n) / max(1, int(rng.integers(1, 50)))
    elif kind == 1:
        p = rng.random(n) * 10.0 ** rng.integers(-300, 300, n)
    elif kind == 2:
        p = rng.standard_normal(n)
        p[rng.random(n) < 0.1] = -0.0
        p[rng.random(n) < 0.1] = 0.0
    else:
        p = rng.choice([0.0, -0.0, 1.0, -np.inf, np.inf, 5e-324, -5e-324, 1.5], n)
    return p


@pytest.mark.parametrize("seed", range(40))
def test_sort_nodes_is_a_stable_descending_argsort(seed):
    rng = np.random.default_rng(seed)
    p = random_probabilities(rng, int(rng.integers(0, 5000)))
    got = ics22.sort_nodes(p)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.argsort(-p, kind="stable"))


@pytest.mark.parametrize("p", [[], [0.5], [0.5, np.nan, 1.0, 0.5, np.nan, 0.0], [3, 1, 3, 2]])
def test_sort_nodes_edge_cases_match_numpy(p):
    p = np.asarray(p)
    assert np.array_equal(ics22.sort_nodes(p), np.argsort(-p.astype(np.float64), kind="stable"))


def test_reference_catches_an_unstable_sort():
    """The checks above can fail: an order that breaks ties differently differs from the reference."""
    p = np.array([1.0, 2.0, 1.0, 2.0])
    assert not np.array_equal(np.argsort(-p, kind="stable")[::-1], ics22.sort_nodes(p))
    assert not same_bits(np.array([0.0]), np.array([-0.0]))


@pytest.mark.parametrize("seed", range(40))
def test_algorithm1_matches_reference(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 4000))
    p = np.abs(random_probabilities(rng, n))
    p[~np.isfinite(p)] = 1.0
    num_gpus = int(rng.integers(1, 9))
    buffer_size = int(rng.choice([0, 1, rng.integers(1, n + 1), math.ceil(n / num_gpus), n, n + 5]))
    alpha = float(rng.choice([0.0, 0.2, 0.5, 0.9]))
    buffers, info = ics22.algorithm1(p, num_gpus, buffer_size, alpha)
    expected, done = reference_algorithm1(p, num_gpus, buffer_size, alpha)
    assert info["replacements"] == done
    assert len(buffers) == num_gpus
    for got, want in zip(buffers, expected):
        assert got.dtype == np.int64 and np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(4))
def test_table2_pipeline_matches_reference(seed):
    """What placement.table2 times: the 3-hop estimate on a symmetric graph, then '4GPU' with N/4 each."""
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(500, 5000))
    indptr, indices = random_graph(rng, n, 25, symmetric=True, skew=True)
    train = rng.choice(n, n // 3, replace=False)
    p = lhop_hotness(indptr, indices, train, 3, symmetric=True)
    buffers, _ = ics22.algorithm1(p, 4, math.ceil(n / 4), alpha=0.0)
    reference_p = reference_lhop(indptr, indices, train, 3, symmetric=True)
    expected, _ = reference_algorithm1(reference_p, 4, math.ceil(n / 4), 0.0)
    assert all(np.array_equal(a, b) for a, b in zip(buffers, expected))
