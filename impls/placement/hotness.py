"""Hotness estimators: how often each node's features are read during training.

- :func:`degree_hotness`: in-degree (PaGraph, XGNN's default reordering policy).
- :func:`presample_hotness`: GNNLab's pre-sampling: run the sampler for a few epochs and count
  how often each node lands in an input layer.
- :func:`lhop_hotness`: ICS'22 Sec. 3.2: "the access frequency of a node is the number of
  training nodes in its L-hop neighbors", p = f / N_t, "computed efficiently as sparse
  matrix-vector multiplication". Three modes:

  * ``walks`` (default; the paper's SpMV): f = ((A + I)^T)^L t, t the training-node indicator.
    It counts walks, an upper bound of the reach count that ranks nodes the same way on most
    graphs, at the cost of L sparse matrix-vector products.
  * ``sampled``: the same products with each row weighted by min(1, fanout / degree): the
    expected number of times a node is sampled under uniform node-wise sampling.
  * ``exact``: the reach count itself (boolean sparse matrix products); for small graphs and the
    paper's worked example, f = [4, 6, 6, 6, 5, 5].
"""

from __future__ import annotations

import contextlib

import numba
import numpy as np
from numba import njit, prange


def _adjacency(indptr, indices, num_nodes):
    import scipy.sparse as sp

    data = np.ones(len(indices), dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(num_nodes, num_nodes))


def degree_hotness(indptr, indices, num_nodes: int | None = None) -> np.ndarray:
    """How many rows list each node (its in-degree): how often a uniform sampler can reach it."""
    n = (len(indptr) - 1) if num_nodes is None else num_nodes
    return np.bincount(np.asarray(indices), minlength=n).astype(np.float64)


def lhop_hotness(indptr, indices, train_idx, hops: int, mode: str = "walks",
                 fanouts: tuple[int, ...] | None = None, symmetric: bool = False,
                 max_exact_entries: int = 50_000_000) -> np.ndarray:
    """ICS'22's estimate p of each node's sampling probability from the training nodes' L-hop reach.

    Walks start at training nodes and move along CSR rows (the lists a node samples from), with a
    self loop at every step (a node's own features are read at every layer, ICS'22 Fig. 2).
    ``fanouts`` (seeds outward) apply in ``sampled`` mode. ``symmetric``: the CSR is symmetric,
    so A^T f = A f and the faster row-wise product is used.
    """
    n = len(indptr) - 1
    train = np.asarray(train_idx, dtype=np.int64)
    if len(train) == 0:
        return np.zeros(n)
    if mode == "exact":
        return _reach_counts(_adjacency(indptr, indices, n), train, hops, max_exact_entries) / len(train)
    if mode not in ("walks", "sampled"):
        raise ValueError(f"unknown mode '{mode}' (walks, sampled, exact)")
    if mode == "sampled" and (fanouts is None or len(fanouts) < hops):
        raise ValueError("sampled mode needs one fanout per hop")
    degree = np.diff(np.asarray(indptr)).astype(np.float64) if mode == "sampled" else None
    # symmetric: A^T f = A f, row sums (scipy's per-row order, the same bits), no matrix built;
    # else the CSC view of A, no copy: f_{l+1}[j] = sum_i f_l[i] A[i, j]
    rows = (np.asarray(indptr, dtype=np.int64), np.asarray(indices))
    adj_t = None if symmetric else _adjacency(indptr, indices, n).T
    f = np.zeros(n)
    f[train] = 1.0
    first = 0
    if mode == "walks" and hops > 0:
        # the first hop, A^T t + t, counts the training nodes' row entries: integers below the
        # edge count, exact in any order (the same bits as the row sums), from those rows alone
        f = _count_entries(*rows, np.flatnonzero(f), f)
        first = 1
    with numba_threads(len(indices) >= PARALLEL_MIN_EDGES):
        for hop in range(first, hops):
            weight = f
            if mode == "sampled":
                weight = f * np.minimum(1.0, fanouts[hop] / np.maximum(degree, 1.0))
            f = _row_sums_plus(*rows, weight, f) if symmetric else adj_t @ weight + f
    return f / len(train)


# A hop reads every edge once (about 1 ns each on one core): below this many edges it takes a few
# ms, and a parallel loop's fork and join, paid at every hop, costs more than it saves as soon
# as another process holds one of the cores (a 0.15 ms hop took 12-25 ms on two busy cores).
PARALLEL_MIN_EDGES = 1 << 24


@contextlib.contextmanager
def numba_threads(parallel: bool):
    """Numba's parallel loops inside use every thread (``parallel``) or run on the calling one."""
    before = numba.get_num_threads()
    numba.set_num_threads(before if parallel else 1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


@njit(cache=True)
def _count_entries(indptr, indices, rows, add):
    """y = add + how often each node appears in the lists of ``rows``: A^T 1_rows + add."""
    y = add.copy()
    for i in rows:
        for e in range(indptr[i], indptr[i + 1]):
            y[indices[e]] += 1.0
    return y


@njit(parallel=True, cache=True)
def _row_sums_plus(indptr, indices, x, add):
    """y[i] = (sum of x over row i's entries, in CSR order) + add[i]: A @ x + add for a 0/1 matrix A."""
    n = len(indptr) - 1
    y = np.empty(n)
    for i in prange(n):
        acc = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            acc += x[indices[e]]
        y[i] = acc + add[i]
    return y


def _reach_counts(adj, train: np.ndarray, hops: int, max_entries: int) -> np.ndarray:
    """Number of training nodes within ``hops`` steps of each node (A + I, boolean products)."""
    import scipy.sparse as sp

    n = adj.shape[0]
    step = (adj + sp.identity(n, format="csr", dtype=adj.dtype)).astype(np.float64)
    step.data[:] = 1.0
    reach = sp.csr_matrix((np.ones(len(train)), (np.arange(len(train)), train)), shape=(len(train), n))
    for _ in range(hops):
        reach = reach @ step
        reach.data[:] = 1.0        # reached or not: path counts do not matter here
        if reach.nnz > max_entries:
            raise MemoryError(f"exact reach needs more than {max_entries:,} entries; use mode='walks'")
    return np.asarray(reach.sum(axis=0)).ravel().astype(np.float64)


def presample_hotness(indptr, indices, train_idx, sampler, batch_size: int, epochs: int = 1,
                      seed: int = 0) -> np.ndarray:
    """GNNLab-style pre-sampling: input-layer appearances over ``epochs`` epochs of mini-batches."""
    n = len(indptr) - 1
    rng = np.random.default_rng(seed)
    counts = np.zeros(n, dtype=np.float64)
    train = np.asarray(train_idx, dtype=np.int64)
    for _ in range(epochs):
        order = rng.permutation(train)
        for start in range(0, len(order), batch_size):
            sample = sampler.sample(indptr, indices, order[start:start + batch_size], rng, edges=False)
            counts[sample.input_nodes] += 1
    return counts
