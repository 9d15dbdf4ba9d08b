"""Pure-Python references for the samplers and append-unique (same random numbers, no numba).

Shared by the CPU tests and tests/gpu/test_sampling_gpu.py (where numba may be missing).
"""

from __future__ import annotations

import numpy as np

from impls.sampling import rng

CHI2_999 = {4: 18.467, 6: 22.458, 9: 27.877, 14: 36.123, 19: 43.820, 29: 59.703, 49: 85.351}  # chi2.ppf(0.999, df)


def random_graph(num_nodes: int, seed: int, max_degree: int = 60, id_dtype=np.int32,
                 sorted_lists: bool = True):
    """A CSR with degrees 0..max_degree (some zero, some tiny, a few large), distinct neighbors."""
    g = np.random.default_rng(seed)
    deg = np.minimum(g.zipf(1.6, num_nodes) - 1, max_degree)
    deg[: min(3, num_nodes)] = [0, 1, max_degree][: min(3, num_nodes)]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    lists = [g.choice(num_nodes, size=min(d, num_nodes), replace=False) for d in deg]
    if sorted_lists:
        lists = [np.sort(x) for x in lists]
    indices = np.concatenate(lists).astype(id_dtype) if lists else np.zeros(0, id_dtype)
    return indptr, indices


def star_graph(degree: int, id_dtype=np.int32):
    """Node 0 with neighbors 1..degree (the others isolated): for frequency tests."""
    indptr = np.zeros(degree + 2, dtype=np.int64)
    indptr[1:] = degree
    return indptr, np.arange(1, degree + 1, dtype=id_dtype)


def _rows(indptr, indices, seeds, fanout, per_seed):
    offsets, out = [0], []
    for b, v in enumerate(np.asarray(seeds).tolist()):
        start, end = int(indptr[v]), int(indptr[v + 1])
        N = end - start
        pos = list(range(N)) if N <= fanout else per_seed(b, N)
        out += [int(indices[start + p]) for p in pos]
        offsets.append(len(out))
    return np.array(offsets, dtype=np.int64), np.array(out, dtype=np.int64)


def path_doubling(indptr, indices, seeds, fanout, seed):
    """Algorithm 1's output is the partial Fisher-Yates shuffle of its draws r[i] = random(N-1-i)."""
    key = rng.stream_key(seed)
    return _rows(indptr, indices, seeds, fanout,
                 lambda b, N: rng.fisher_yates_reference([rng.uniform(key, b, i, N - i) for i in range(fanout)], N))


def reservoir(indptr, indices, seeds, fanout, seed):
    key = rng.stream_key(seed)

    def one(b, N):
        res = list(range(fanout))
        for j in range(fanout, N):
            k = rng.uniform(key, b, j, j + 1)
            if k < fanout:
                res[k] = j
        return res
    return _rows(indptr, indices, seeds, fanout, one)


def khop_batched(indptr, indices, seeds, fanout, seed):
    """The first `fanout` distinct draws random() % N, in ascending position order."""
    key = rng.stream_key(seed)

    def one(b, N):
        kept, j = [], 0
        while len(kept) < fanout:
            x = rng.uniform(key, b, j, N)
            j += 1
            if x not in kept:
                kept.append(x)
        return sorted(kept)
    return _rows(indptr, indices, seeds, fanout, one)


REFERENCES = {"path_doubling": path_doubling, "reservoir": reservoir, "khop_batched": khop_batched,
              "khop_original": reservoir}


def random_walk_topk(indptr, indices, seeds, K, seed, walks=4, length=3, restart_prob=0.5):
    """PinSAGE's walks with restart, written plainly: per target, walk w's step s draws the
    neighbour with draw 2 (s walks + w) and restarts with draw 2 (s walks + w) + 1; the top K
    visited nodes (target excluded) by count, ties by first visit. Returns offsets, ids, counts."""
    key = rng.stream_key(seed)
    thr = min(int(round(restart_prob * 2 ** 32)), 2 ** 32)
    offsets, out, weights = [0], [], []
    for b, target in enumerate(int(x) for x in np.asarray(seeds)):
        cur = [target] * walks
        visits: dict[int, int] = {}                  # insertion order = first visit
        for s in range(length):
            for w in range(walks):
                v = cur[w]
                if v < 0:
                    continue
                start, deg = int(indptr[v]), int(indptr[v + 1] - indptr[v])
                if deg == 0:
                    cur[w] = -1
                    continue
                j = 2 * (s * walks + w)
                nxt = int(indices[start + rng.uniform(key, b, j, deg)])
                if nxt != target:
                    visits[nxt] = visits.get(nxt, 0) + 1
                r = rng.mix64(key ^ ((b * rng.GOLDEN + j + 1) & rng.MASK64)) >> 32
                cur[w] = target if r < thr else nxt
        order = sorted(enumerate(visits.items()), key=lambda t: (-t[1][1], t[0]))[:K]
        out += [node for _, (node, _) in order]
        weights += [float(c) for _, (_, c) in order]
        offsets.append(len(out))
    return (np.array(offsets, dtype=np.int64), np.array(out, dtype=np.int64),
            np.array(weights, dtype=np.float32))


def hash_unique_order(targets, neighbors, id_bound=None, max_load=0.5):
    """hash_append's output: targets, then the new nodes by (home slot, id) for its table size
    (a power of two >= min(inputs, id_bound) / max_load, at least 64)."""
    targets = [int(x) for x in np.asarray(targets)]
    neighbors = [int(x) for x in np.asarray(neighbors)]
    distinct = len(targets) + len(neighbors)
    if id_bound is not None:
        distinct = min(distinct, id_bound)
    H = 64
    while H * max_load < distinct:
        H *= 2
    tset = set(targets)
    new = sorted({x for x in neighbors if x not in tset}, key=lambda x: (rng.mix64(x) & (H - 1), x))
    unique = targets + new
    where = {x: i for i, x in enumerate(unique)}
    local = [where[x] for x in neighbors]
    dup = np.bincount(np.array(local, dtype=np.int64), minlength=len(unique)) if local else \
        np.zeros(len(unique), dtype=np.int64)
    return np.array(unique, dtype=np.int64), np.array(local, dtype=np.int64), dup


def check_sample(indptr, indices, seeds, fanout, offsets, neighbors):
    """Subset of each neighbor list, no repeats, min(degree, fanout) entries, all of a short list."""
    offsets, neighbors = np.asarray(offsets), np.asarray(neighbors)
    assert offsets.shape == (len(seeds) + 1,) and offsets[0] == 0 and offsets[-1] == neighbors.size
    for b, v in enumerate(np.asarray(seeds).tolist()):
        lst = indices[indptr[v]:indptr[v + 1]].astype(np.int64)
        got = neighbors[offsets[b]:offsets[b + 1]]
        assert got.size == min(lst.size, fanout), (b, v, got.size, lst.size)
        if lst.size <= fanout:
            assert np.array_equal(got, lst), "a short list comes back whole, in CSR order"
        else:
            assert np.unique(got).size == got.size, "repeats"
            assert np.isin(got, lst).all(), "not a neighbor"


def assert_dense_clean(dense):
    """What the next call needs: no bitmap word set, its parity's read-back words zero; every slot
    entry of an earlier generation (the current one's are this call's own)."""
    assert int(dense._bits.count_nonzero()) == 0
    nxt = (dense._gen + 1) & 1
    assert int(dense._ctl[nxt].count_nonzero()) == 0
    assert int(((dense._slot >> 32) > dense._gen).sum()) == 0
