"""The replay's fast paths against their plain versions: the de-duplication table (IdTable) against
numpy, the parallel row sums of the L-hop hotness against scipy."""

from __future__ import annotations

import numpy as np
import pytest

from impls.placement.sampling import IdTable


@pytest.mark.parametrize("n_ids", [0, 1, 7, 5000])
def test_unique_equals_numpy_and_leaves_the_table_clean(n_ids):
    rng = np.random.default_rng(n_ids)
    table = IdTable(1000)
    for ids in (rng.integers(0, 1000, n_ids), np.full(n_ids, 3), rng.permutation(1000)[: min(n_ids, 1000)]):
        uniq, inverse = table.unique(ids)
        want_u, want_i = np.unique(ids, return_inverse=True)
        assert np.array_equal(uniq, want_u) and np.array_equal(inverse, want_i.reshape(-1))
        assert (table.slot == -1).all()


def test_extend_keeps_the_front_and_appends_new_ids_sorted():
    table = IdTable(50)
    src, where = table.extend(np.array([9, 4]), np.array([4, 30, 2, 30, 9, 2]))
    assert src.tolist() == [9, 4, 2, 30] and where.tolist() == [1, 3, 2, 3, 0, 2]
    assert (table.slot == -1).all()


def test_parallel_row_sums_equal_scipy_bit_for_bit():
    """lhop_hotness's symmetric path (numba, every core) gives scipy's A @ f + f exactly."""
    from impls.placement.hotness import _adjacency, _row_sums_plus, lhop_hotness

    from tests.placement.placement_graphs import csr_from_edges

    rng = np.random.default_rng(4)
    edges = {tuple(sorted(e)) for e in rng.integers(0, 400, (3000, 2)).tolist() if e[0] != e[1]}
    indptr, indices = csr_from_edges(400, sorted(edges))
    x = rng.random(400) * 1e3
    want = _adjacency(indptr, indices, 400) @ x + x
    assert np.array_equal(_row_sums_plus(np.asarray(indptr, dtype=np.int64), np.asarray(indices), x, x), want)
    train = rng.choice(400, 60, replace=False)
    assert np.array_equal(lhop_hotness(indptr, indices, train, 3, symmetric=True),
                          lhop_hotness(indptr, indices, train, 3, symmetric=False))
