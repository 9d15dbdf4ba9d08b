"""Small graphs for the placement tests: ICS'22's Fig. 2a example and seeded random graphs."""

from __future__ import annotations

import numpy as np

# ICS'22 Fig. 2a, recovered from the paper's numbers: with self loops, the 2-hop reach counts
# of all six (training) nodes are f = [4, 6, 6, 6, 5, 5] (Sec. 3.2), node-1 aggregates nodes
# 0-3 (Fig. 2c), node-0 needs nodes 0-3, node-2 needs all six, and v_1 A = [1, 3, 4, 3, 2, 1]
# for B = {1, 2, 3, 4} (Sec. 4). These six undirected edges are the graph that gives all of it.
ICS22_EDGES = [(0, 1), (1, 2), (1, 3), (2, 3), (2, 4), (2, 5)]


def csr_from_edges(num_nodes: int, edges, symmetric: bool = True):
    src = [a for a, _ in edges] + ([b for _, b in edges] if symmetric else [])
    dst = [b for _, b in edges] + ([a for a, _ in edges] if symmetric else [])
    order = np.lexsort((dst, src))
    src, dst = np.asarray(src)[order], np.asarray(dst)[order]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.add.at(indptr, src + 1, 1)
    return np.cumsum(indptr), dst.astype(np.int64)


def random_graph(num_nodes: int, avg_degree: float, seed: int, skew: float = 1.0):
    """A symmetric random graph with a skewed degree distribution (Chung-Lu style), no self loops."""
    rng = np.random.default_rng(seed)
    weights = (np.arange(1, num_nodes + 1) ** (-skew / 2))
    weights = rng.permutation(weights / weights.sum())
    m = int(num_nodes * avg_degree / 2)
    a = rng.choice(num_nodes, m, p=weights)
    b = rng.choice(num_nodes, m, p=weights)
    keep = a != b
    pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)[keep], axis=0)
    return csr_from_edges(num_nodes, [tuple(x) for x in pairs])
