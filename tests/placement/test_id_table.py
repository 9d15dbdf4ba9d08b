"""The replay sampler's de-duplication table (impls/placement/sampling.IdTable) against numpy."""

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
