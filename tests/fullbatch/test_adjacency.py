"""MG-GCN's normalized adjacency (Eq. 2), partition vectors, vertex orders and per-rank tiles."""

from __future__ import annotations

import numpy as np
import pytest

from impls.fullbatch.problem import (aggregation_matrix, check_partition, nnz_imbalance, nnz_partition,
                                     random_graph, random_permutation, rank_share, uniform_partition,
                                     vertex_order)

from .reference import dense_normalized_adjacency, make_test_graph


@pytest.mark.parametrize("self_loops", [True, False])
def test_forward_operator_is_transpose_of_eq2(self_loops):
    g = make_test_graph()       # directed, with 3 isolated vertices (in-degree 0 without loops)
    expected = dense_normalized_adjacency(g, self_loops).T
    np.testing.assert_allclose(aggregation_matrix(g, self_loops).toarray(), expected, rtol=1e-6, atol=0)
    if self_loops:
        # each vertex averages its in-neighbours: rows of Â^T sum to one
        np.testing.assert_allclose(expected.sum(axis=1), 1.0)
    else:
        assert (expected.sum(axis=1) == 0).sum() >= 3


def _with_edges(g, src, dst):
    """``g`` with its edges replaced by (src, dst) (no duplicates), as out-neighbour CSR."""
    pairs = np.unique(np.asarray(src, dtype=np.int64) * g.num_nodes + np.asarray(dst))
    g.indptr = np.concatenate([[0], np.cumsum(np.bincount(pairs // g.num_nodes, minlength=g.num_nodes))])
    g.indices = (pairs % g.num_nodes).astype(np.int32)
    g.num_edges = int(g.indptr[-1])
    return g


def test_existing_self_loops_are_not_doubled():
    g = random_graph(40, 3, 4, 3, seed=2)
    src = np.repeat(np.arange(40), np.diff(g.indptr))
    g = _with_edges(g, np.append(src, 5), np.append(g.indices, 5))    # vertex 5 already has a loop
    mat = aggregation_matrix(g, self_loops=True)
    assert mat.nnz == g.num_edges + 39
    np.testing.assert_allclose(mat.toarray(), dense_normalized_adjacency(g).T, rtol=1e-6)


def test_csr_columns_ascend_within_rows():
    mat = aggregation_matrix(make_test_graph())
    for r in range(mat.shape[0]):
        row = mat.indices[mat.indptr[r]:mat.indptr[r + 1]]
        assert np.all(np.diff(row) > 0)


def test_uniform_partition_vector():
    bounds = uniform_partition(157, 4)
    assert bounds[0] == 0 and bounds[-1] == 157
    assert set(np.diff(bounds)) <= {39, 40}
    assert np.array_equal(check_partition(bounds, 157, 4), bounds)
    for bad in ([0, 50, 50, 157], [0, 80, 157], [1, 50, 100, 157]):
        with pytest.raises(ValueError):
            check_partition(np.array(bad), 157, 3)
    with pytest.raises(ValueError):
        uniform_partition(3, 4)


def test_permutation_is_a_seeded_bijection():
    a, b, c = random_permutation(1000, 5), random_permutation(1000, 5), random_permutation(1000, 6)
    assert np.array_equal(np.sort(a), np.arange(1000))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize("world,order,partition", [
    (1, "original", "rows"), (3, "original", "rows"), (3, "random", "rows"), (4, "random", "rows"),
    (4, "random_parts", "rows"), (3, "original", "nnz"), (4, "random_parts", "nnz")])
def test_rank_tiles_reassemble_the_relabelled_operators(world, order, partition):
    g = make_test_graph()
    n = g.num_nodes
    forward = aggregation_matrix(g).toarray()
    cost = (forward != 0).sum(axis=1) + (forward != 0).sum(axis=0)      # a vertex's rows of F and B
    new_id, bounds = vertex_order(order, n, world, 11, cost, partition)
    assert np.array_equal(np.sort(new_id), np.arange(n))
    permuted = np.zeros_like(forward)
    permuted[np.ix_(new_id, new_id)] = forward          # F' = Pi F Pi^T
    assembled_f, assembled_b = np.zeros_like(forward), np.zeros_like(forward)
    seen_train = 0
    for rank in range(world):
        share = rank_share(g, rank, world, order=order, partition=partition, seed=11)
        assert np.array_equal(share.bounds, bounds) and share.permuted == (order != "original")
        b = share.bounds
        assert share.rows == b[rank + 1] - b[rank] and len(share.forward_tiles) == world
        for j, (tf, tb) in enumerate(zip(share.forward_tiles, share.backward_tiles)):
            assert tf.shape == (share.rows, b[j + 1] - b[j]) and tb.shape == tf.shape
            assembled_f[b[rank]:b[rank + 1], b[j]:b[j + 1]] = tf.toarray()
            assembled_b[b[rank]:b[rank + 1], b[j]:b[j + 1]] = tb.toarray()
        # local row r is old vertex old_ids[r]: its features, labels and training flag travel with it
        assert np.array_equal(new_id[share.old_ids], np.arange(b[rank], b[rank + 1]))
        np.testing.assert_array_equal(share.features, g.features[share.old_ids])
        np.testing.assert_array_equal(share.labels, g.labels[share.old_ids])
        assert set(share.old_ids[share.train_rows]) == set(g.train_idx) & set(share.old_ids)
        assert share.num_train_total == len(g.train_idx)
        seen_train += len(share.train_rows)
    assert seen_train == len(g.train_idx)
    np.testing.assert_allclose(assembled_f, permuted, rtol=1e-6)
    np.testing.assert_allclose(assembled_b, permuted.T, rtol=1e-6)   # B = Â = F^T


def test_nnz_imbalance_measures_the_heaviest_tile_per_stage():
    balanced = nnz_imbalance([[10, 10], [10, 10]])
    assert balanced == {"rank_nnz_max_over_mean": 1.0, "stage_nnz_max_sum_over_ideal": 1.0}
    diagonal = nnz_imbalance([[30, 0], [0, 30]])        # each stage waits for one full diagonal tile
    assert diagonal["rank_nnz_max_over_mean"] == 1.0
    assert diagonal["stage_nnz_max_sum_over_ideal"] == 2.0


def test_permutation_balances_a_blocked_graph():
    # communities on contiguous id ranges (the stand-ins' and many real graphs' order)
    rng = np.random.default_rng(0)
    n, blocks = 400, 4
    src = rng.integers(0, n, 4000)
    dst = np.where(rng.random(4000) < 0.9, (src // 100) * 100 + rng.integers(0, 100, 4000),
                   rng.integers(0, n, 4000))
    g = _with_edges(random_graph(n, 1, 4, 2, seed=0), src, dst)

    def imbalance(order):
        tiles = [rank_share(g, r, blocks, order=order, seed=3).tile_nnz() for r in range(blocks)]
        return nnz_imbalance(tiles)["stage_nnz_max_sum_over_ideal"]

    assert imbalance("original") > 2.5 and imbalance("random") < 1.5
    assert imbalance("random_parts") == imbalance("random")


@pytest.mark.parametrize("world", [2, 3, 4])
def test_random_parts_balance_as_the_permutation_and_keep_the_input_order(world):
    """Each vertex lands in the part the paper's random permutation puts it in, so every tile holds
    the nonzeros it holds permuted; inside a part the vertices keep their input order."""
    g = make_test_graph()
    n = g.num_nodes
    paper, bounds = vertex_order("random", n, world, 5)
    mine, same_bounds = vertex_order("random_parts", n, world, 5)
    assert np.array_equal(bounds, same_bounds)
    part = lambda ids: np.searchsorted(bounds, ids, side="right") - 1  # noqa: E731
    assert np.array_equal(part(paper), part(mine))
    for p in range(world):
        members = np.flatnonzero(part(mine) == p)            # old ids, ascending
        assert np.array_equal(mine[members], np.arange(bounds[p], bounds[p + 1]))
    for rank in range(world):
        a = rank_share(g, rank, world, order="random", seed=5)
        b = rank_share(g, rank, world, order="random_parts", seed=5)
        assert a.tile_nnz() == b.tile_nnz()
        assert np.array_equal(np.sort(a.old_ids), b.old_ids)    # the same vertices, in input order
    # one rank: nothing to cut, the input order stays
    assert np.array_equal(vertex_order("random_parts", n, 1, 5)[0], np.arange(n))


def test_nnz_partition_balances_nonzeros_not_rows():
    cost = np.array([10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10, 1], dtype=np.float64)
    bounds = nnz_partition(cost, 2)
    assert bounds.tolist() == [0, 5, 12] or bounds.tolist() == [0, 6, 12]
    parts = [cost[a:b].sum() for a, b in zip(bounds, bounds[1:])]
    assert max(parts) - min(parts) <= 2
    # every part keeps at least one row however skewed the costs
    assert np.all(np.diff(nnz_partition(np.array([100.0, 0, 0, 0]), 4)) == 1)
    rng = np.random.default_rng(0)
    skewed = rng.pareto(1.5, 5000) + 1
    bounds = nnz_partition(skewed, 4)
    sums = [skewed[a:b].sum() for a, b in zip(bounds, bounds[1:])]
    assert max(sums) / (skewed.sum() / 4) < 1 + skewed.max() / (skewed.sum() / 4) + 1e-9
    uniform = [skewed[a:b].sum() for a, b in zip(uniform_partition(5000, 4), uniform_partition(5000, 4)[1:])]
    assert max(sums) - min(sums) < max(uniform) - min(uniform)
    with pytest.raises(ValueError):
        nnz_partition(np.ones(3), 4)
    with pytest.raises(ValueError):
        vertex_order("random", 10, 2, 0, partition="nnz")        # no row costs given
    with pytest.raises(ValueError):
        vertex_order("shuffled", 10, 2, 0)


def test_nnz_partition_evens_the_ranks_of_a_skewed_graph():
    # heavy vertices at the front of the input order: uniform rows give rank 0 most nonzeros
    rng = np.random.default_rng(1)
    n = 400
    src = rng.integers(0, n, 6000)
    dst = np.where(rng.random(6000) < 0.7, rng.integers(0, 40, 6000), rng.integers(0, n, 6000))
    g = _with_edges(random_graph(n, 1, 4, 2, seed=0), np.concatenate([src, dst]), np.concatenate([dst, src]))

    def rank_imbalance(partition):
        tiles = [rank_share(g, r, 4, order="original", partition=partition).tile_nnz() for r in range(4)]
        return nnz_imbalance(tiles)["rank_nnz_max_over_mean"]

    assert rank_imbalance("rows") > 1.5 and rank_imbalance("nnz") < 1.1
