"""ICS'22 Algorithm 1: distribute node features over a group of NVLink-connected GPUs.

Every GPU starts with the BSIZE hottest nodes. Replacement t swaps the duplicate
old_node = V[BSIZE - 1 - r] (r = t // (n - 1), the round) on one GPU for the next unplaced
new_node = V[BSIZE + t], while p(new_node) > alpha * p(old_node) (Eq. 7 with alpha standing for
C_gpu / C_cpu). In each round the GPUs are sorted by p_sum (the probability mass of the new nodes
they received) and the first n - 1 of them take one replacement each, so the last GPU keeps a
copy of old_node and p_sum stays balanced.

Two notes on the printed pseudo-code. (1) It indexes the new node as V[i + BSIZE] with i counting
the skipped iterations of line 8 too, which would never place V[BSIZE + n - 1], V[BSIZE + 2n - 1],
...; the worked example of Sec. 3.2 (the third iteration places node-4 = V[3], not V[4]) takes the
next unplaced node, as we do. (2) Its loop bound min(N, n * BSIZE) - BSIZE counts replacements
(the example's third iteration is the second replacement), as here.

Vectorized: p(new) falls and p(old) rises with t, so the stopping test is monotone and the number
of replacements T is found with one array comparison; only the per-round device order (a sort of
n sums) is sequential, in a small numba kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _devices_by_round(p_new: np.ndarray, num_gpus: int) -> np.ndarray:
    """Device receiving each replacement: per round, the n-1 GPUs with the smallest p_sum."""
    total = p_new.shape[0]
    device = np.empty(total, dtype=np.int64)
    p_sum = np.zeros(num_gpus)
    t = 0
    while t < total:
        order = np.argsort(p_sum, kind="mergesort")       # stable: ties keep the lower GPU id
        for k in range(num_gpus - 1):
            if t >= total:
                break
            d = order[k]
            device[t] = d
            p_sum[d] += p_new[t]
            t += 1
    return device


def sort_nodes(p: np.ndarray) -> np.ndarray:
    """Line 1: nodes by probability, descending; ties keep the lower node id."""
    return np.argsort(-np.asarray(p, dtype=np.float64), kind="stable")


def algorithm1(p: np.ndarray, num_gpus: int, buffer_size: int, alpha: float,
               order: np.ndarray | None = None) -> tuple[list[np.ndarray], dict]:
    """Buffers B_1..B_n (node ids by slot) for one group of fully connected GPUs.

    Returns the buffers and what happened: replacements made, whether the alpha test stopped it.
    ``order`` may pass a precomputed :func:`sort_nodes` result.
    """
    if not 0 <= alpha < 1:
        raise ValueError("alpha must be in [0, 1)")
    p = np.asarray(p, dtype=np.float64)
    n_nodes = len(p)
    order = sort_nodes(p) if order is None else order
    bsize = min(int(buffer_size), n_nodes)
    base = order[:bsize]
    if num_gpus == 1 or bsize == n_nodes or bsize == 0:
        return [base.copy() for _ in range(num_gpus)], {"replacements": 0, "stopped_by_alpha": False}
    max_replacements = min(n_nodes, num_gpus * bsize) - bsize
    t = np.arange(max_replacements, dtype=np.int64)
    old_idx = bsize - 1 - t // (num_gpus - 1)
    new_idx = bsize + t
    beneficial = p[order[new_idx]] > alpha * p[order[old_idx]]        # line 13
    done = int(np.argmin(beneficial)) if not beneficial.all() else max_replacements
    device = _devices_by_round(p[order[new_idx[:done]]], num_gpus)
    buffers = []
    for d in range(num_gpus):
        buf = base.copy()
        mine = device == d
        buf[old_idx[:done][mine]] = order[new_idx[:done][mine]]      # line 14
        buffers.append(buf)
    return buffers, {"replacements": done, "stopped_by_alpha": done < max_replacements}
