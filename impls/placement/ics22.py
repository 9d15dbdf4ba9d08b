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

Both steps run in numba, in O(N): line 1's sort is a stable LSD radix sort of p's bits (p
sorts like its IEEE-754 bit pattern once the sign is folded in); the replacements run in order,
each round ranking the n GPUs by p_sum with an insertion sort, and stop at the first one line
13 rejects.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def sort_nodes(p: np.ndarray) -> np.ndarray:
    """Line 1: nodes by probability, descending; ties keep the lower node id.

    The same order as ``np.argsort(-p, kind="stable")`` (+0.0 and -0.0 tie; NaN, which no
    estimate of p yields, is left to numpy).
    """
    p = np.ascontiguousarray(p, dtype=np.float64)
    keys = _descending_keys(p)
    if keys is None:
        return np.argsort(-p, kind="stable")
    return _radix_argsort(keys)


def algorithm1(p: np.ndarray, num_gpus: int, buffer_size: int, alpha: float,
               order: np.ndarray | None = None) -> tuple[list[np.ndarray], dict]:
    """Buffers B_1..B_n (node ids by slot) for one group of fully connected GPUs.

    Returns the buffers and what happened: replacements made, whether the alpha test stopped it.
    ``order`` may pass a precomputed :func:`sort_nodes` result.
    """
    if not 0 <= alpha < 1:
        raise ValueError("alpha must be in [0, 1)")
    p = np.ascontiguousarray(p, dtype=np.float64)
    n_nodes = len(p)
    order = sort_nodes(p) if order is None else np.ascontiguousarray(order, dtype=np.int64)
    bsize = min(int(buffer_size), n_nodes)
    base = order[:bsize]
    if num_gpus == 1 or bsize == n_nodes or bsize == 0:
        return [base.copy() for _ in range(num_gpus)], {"replacements": 0, "stopped_by_alpha": False}
    max_replacements = min(n_nodes, num_gpus * bsize) - bsize
    buffers, done = _replace(p, order, num_gpus, bsize, max_replacements, float(alpha))
    return list(buffers), {"replacements": done, "stopped_by_alpha": done < max_replacements}


_SIGN = np.uint64(1 << 63)


def _descending_keys(p: np.ndarray) -> np.ndarray | None:
    """Unsigned keys whose ascending order is p's descending order; None if p holds a NaN."""
    keys, ok = _descending_keys_kernel(p)
    return keys if ok else None


@njit(cache=True)
def _descending_keys_kernel(p):
    # non-negative floats order like their bits; negative ones in reverse, so flip them all
    # (sign included); then complement everything for a descending order. -0.0 + 0.0 = +0.0.
    n = p.shape[0]
    bits = (p + 0.0).view(np.uint64)
    keys = np.empty(n, np.uint64)
    for i in range(n):
        if p[i] != p[i]:
            return keys, False
        b = bits[i]
        keys[i] = b if b & _SIGN else ~(b | _SIGN)
    return keys, True


_DIGIT_BITS = 11                       # 6 passes over 64-bit keys; 2048 counters stay in L1
_DIGITS = -(-64 // _DIGIT_BITS)


@njit(cache=True)
def _radix_argsort(keys):
    """Stable ascending argsort of uint64 keys (LSD radix); a digit all keys share costs no pass."""
    n = keys.shape[0]
    radix = 1 << _DIGIT_BITS
    mask = np.uint64(radix - 1)
    counts = np.zeros((_DIGITS, radix), np.int64)
    for i in range(n):
        k = keys[i]
        for d in range(_DIGITS):
            counts[d, (k >> np.uint64(d * _DIGIT_BITS)) & mask] += 1
    src_key, src_id = keys.copy(), np.arange(n)
    dst_key, dst_id = np.empty(n, np.uint64), np.empty(n, np.int64)
    for d in range(_DIGITS):
        shift = np.uint64(d * _DIGIT_BITS)
        count = counts[d]
        if n == 0 or count[(src_key[0] >> shift) & mask] == n:
            continue
        start = 0
        for b in range(radix):
            c = count[b]
            count[b] = start
            start += c
        for i in range(n):
            k = src_key[i]
            b = (k >> shift) & mask
            at = count[b]
            count[b] = at + 1
            dst_key[at] = k
            dst_id[at] = src_id[i]
        src_key, dst_key = dst_key, src_key
        src_id, dst_id = dst_id, src_id
    return src_id


@njit(cache=True)
def _replace(p, order, num_gpus, bsize, max_replacements, alpha):
    """Lines 2-16: every GPU starts with the BSIZE hottest nodes; replacement t puts the next
    unplaced node over the round's duplicate on one of the n - 1 GPUs with the smallest p_sum
    (ties: lower GPU id), until line 13's test fails. Returns the buffers and the replacements."""
    buffers = np.empty((num_gpus, bsize), np.int64)
    for d in range(num_gpus):
        buffers[d, :] = order[:bsize]
    takers = num_gpus - 1
    p_sum = np.zeros(num_gpus)
    by_sum = np.empty(num_gpus, np.int64)
    t = 0
    while t < max_replacements:
        for d in range(num_gpus):                    # stable insertion sort of the GPUs by p_sum
            j = d
            while j > 0 and p_sum[by_sum[j - 1]] > p_sum[d]:
                by_sum[j] = by_sum[j - 1]
                j -= 1
            by_sum[j] = d
        for k in range(takers):
            if t == max_replacements:
                break
            slot = bsize - 1 - t // takers
            new_node = order[bsize + t]
            if not p[new_node] > alpha * p[order[slot]]:          # line 13
                return buffers, t
            gpu = by_sum[k]
            buffers[gpu, slot] = new_node                        # line 14
            p_sum[gpu] += p[new_node]
            t += 1
    return buffers, t
