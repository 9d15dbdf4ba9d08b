"""CPU kernels for the stand-in generator and the edge pipeline, compiled with numba.

Each kernel computes exactly what its torch twin in backends.py computes (tests compare them);
these exist because one fused, parallel pass over 124M edges on 2 cores beats a dozen unfused
torch passes by ~20x in time and several GiB in memory.  Loops here are over edges and features
because numba compiles them; there is no Python-level loop over edges anywhere.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .plan import GUIDE_BITS, TOTAL
from .rng import GOLDEN, MIX1, MIX2, NOISE_SCALE

SENTINEL = np.iinfo(np.int64).max

_GOLDEN = np.uint64(GOLDEN)
_MIX1 = np.uint64(MIX1)
_MIX2 = np.uint64(MIX2)
_S11 = np.uint64(11)
_S27 = np.uint64(27)
_S30 = np.uint64(30)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_ONE = np.uint64(1)
_LOW32 = np.uint64(0xFFFFFFFF)
_P53 = 2.0 ** -53
_P32 = 2.0 ** -32
_TOTAL_F = float(TOTAL)
_GUIDE_SHIFT = np.int64(52 - GUIDE_BITS)
_NOISE = NOISE_SCALE


@numba.njit(inline="always")
def _mix(key, counter):
    z = counter * _GOLDEN + key
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@numba.njit(inline="always")
def _unit(h):
    return np.float64(h >> _S11) * _P53


@numba.njit(inline="always")
def _node(c, r, n, comm_offset, comm_mult, comm_add, shuffled, glob_mult, glob_add):
    size = comm_offset[c + 1] - comm_offset[c]
    x = comm_offset[c] + (comm_mult[c] * r + comm_add[c]) % size
    if shuffled:
        x = (glob_mult * x + glob_add) % n
    return x


@numba.njit(inline="always")
def _find(thresholds, guide, x):
    # Cut-point search: start at the first piece x's top bits allow, step forward.
    p = guide[x >> _GUIDE_SHIFT]
    while thresholds[p + 1] <= x:
        p += 1
    return p


@numba.njit(inline="always")
def _pick(thresholds, guide, lo, span, h, piece_lo, piece_size, h_pos):
    x = lo + np.int64(math.floor(_unit(h) * np.float64(span)))
    if x >= lo + span:
        x = lo + span - 1
    p = _find(thresholds, guide, x)
    size = piece_size[p]
    r = np.int64(math.floor(_unit(h_pos) * np.float64(size)))
    if r >= size:
        r = size - 1
    return p, piece_lo[p] + r


@numba.njit(parallel=True, cache=True)
def sample_edge_keys(start, count, n, symmetric, keys, intra_threshold32, t_in, t_out, guide_in,
                     guide_out, pieces, piece_lo, piece_size, comm_offset, comm_mult, comm_add,
                     shuffled, glob_mult, glob_add, out):
    """Draws ``start .. start+count`` as keys ``src * n + dst`` (both directions if symmetric);
    self loops become SENTINEL.  ``keys``: uint64 [mix, src_piece, src_pos, dst_piece, dst_pos]."""
    for t in numba.prange(count):
        k = np.uint64(start + t)
        intra = (_mix(keys[0], k) & _LOW32) < np.uint64(intra_threshold32)
        thresholds = t_in if intra else t_out
        guide = guide_in if intra else guide_out
        p, r = _pick(thresholds, guide, np.int64(0), np.int64(TOTAL), _mix(keys[1], k), piece_lo,
                     piece_size, _mix(keys[2], k))
        c = p // pieces
        u = _node(c, r, n, comm_offset, comm_mult, comm_add, shuffled, glob_mult, glob_add)
        if intra:
            lo = thresholds[c * pieces]
            span = thresholds[(c + 1) * pieces] - lo
        else:
            lo = np.int64(0)
            span = np.int64(TOTAL)
        p2, r2 = _pick(thresholds, guide, lo, span, _mix(keys[3], k), piece_lo, piece_size,
                       _mix(keys[4], k))
        v = _node(p2 // pieces, r2, n, comm_offset, comm_mult, comm_add, shuffled, glob_mult,
                  glob_add)
        if symmetric:
            if u == v:
                out[2 * t] = SENTINEL
                out[2 * t + 1] = SENTINEL
            else:
                out[2 * t] = u * n + v
                out[2 * t + 1] = v * n + u
        else:
            out[t] = SENTINEL if u == v else u * n + v


@numba.njit(cache=True)
def compact_sorted_unique(a):
    """In-place: drop repeats and SENTINELs from sorted non-negative keys; returns the new length."""
    m = 0
    last = np.int64(-1)
    for i in range(a.shape[0]):
        x = a[i]
        if x == SENTINEL:
            break
        if x != last:
            a[m] = x
            m += 1
            last = x
    return m


@numba.njit(inline="always")
def _trim_hash(key, canonical):
    return np.int64(_mix(key, np.uint64(canonical)) >> _ONE)


# The passes below walk sorted keys row by row (row_end += n) instead of dividing each key by n:
# two 64-bit divisions per edge cost more than the hash.

@numba.njit(inline="always")
def _segment(total, threads, t):
    per = (total + threads - 1) // threads
    return t * per, min(total, (t + 1) * per)


@numba.njit(parallel=True, cache=True)
def trim_histogram(keys, n, symmetric, key, shift, nbins, threads):
    """Histogram of edge ranks (63-bit hash >> shift); an undirected edge counts once."""
    hist = np.zeros((threads, nbins), dtype=np.int64)
    for t in numba.prange(threads):
        lo, hi = _segment(keys.shape[0], threads, t)
        if lo >= hi:
            continue
        row = keys[lo] // n
        row_start = row * n
        for i in range(lo, hi):
            k = keys[i]
            while k >= row_start + n:
                row += 1
                row_start += n
            if symmetric and row > k - row_start:
                continue
            hist[t, _trim_hash(key, k) >> shift] += 1
    return hist.sum(axis=0)


@numba.njit(parallel=True, cache=True)
def trim_collect(keys, n, symmetric, key, shift, wanted_bin, capacity, threads):
    """The ranks of the edges in one histogram bin (``capacity`` = that bin's count)."""
    found = np.empty((threads, max(capacity, 1)), dtype=np.int64)
    counts = np.zeros(threads, dtype=np.int64)
    for t in numba.prange(threads):
        lo, hi = _segment(keys.shape[0], threads, t)
        if lo >= hi:
            continue
        row = keys[lo] // n
        row_start = row * n
        m = 0
        for i in range(lo, hi):
            k = keys[i]
            while k >= row_start + n:
                row += 1
                row_start += n
            if symmetric and row > k - row_start:
                continue
            h = _trim_hash(key, k)
            if (h >> shift) == wanted_bin and m < capacity:
                found[t, m] = h
                m += 1
        counts[t] = m
    total = counts.sum()
    out = np.empty(total, dtype=np.int64)
    pos = 0
    for t in range(threads):
        out[pos:pos + counts[t]] = found[t, :counts[t]]
        pos += counts[t]
    return out


@numba.njit(parallel=True, cache=True)
def keep_mask(keys, n, symmetric, key, threshold, threads, out):
    """out[i] = whether edge i survives thinning (rank of its undirected pair < threshold)."""
    for t in numba.prange(threads):
        lo, hi = _segment(keys.shape[0], threads, t)
        if lo >= hi:
            continue
        row = keys[lo] // n
        row_start = row * n
        for i in range(lo, hi):
            k = keys[i]
            while k >= row_start + n:
                row += 1
                row_start += n
            d = k - row_start
            canonical = (d * n + row if row > d else k) if symmetric else k
            out[i] = _trim_hash(key, canonical) < threshold


@numba.njit(cache=True)
def compact_to_csr(keys, mask, use_mask, n, row_lo, indices, counts):
    """Writes destination ids of kept keys (sorted by src, dst) to ``indices`` and per-row counts;
    returns how many were written."""
    m = 0
    row = row_lo
    row_start = row_lo * n
    for i in range(keys.shape[0]):
        k = keys[i]
        while k >= row_start + n:
            row += 1
            row_start += n
        if use_mask and not mask[i]:
            continue
        indices[m] = k - row_start
        counts[row - row_lo] += 1
        m += 1
    return m


@numba.njit(parallel=True, cache=True)
def features_block(row0, rows, dim, labels, centroids, key, out):
    """Rows ``row0 .. row0+rows`` of features: unit-variance uniform noise (each hash of the
    flattened matrix's element pairs gives two 32-bit halves) plus the row's class centroid."""
    for i in numba.prange(rows):
        base = (row0 + i) * dim
        c = labels[i]
        first = base >> 1
        last = (base + dim - 1) >> 1
        for p in range(first, last + 1):
            h = _mix(key, np.uint64(p))
            e0 = 2 * p - base
            if e0 >= 0:
                z = ((np.float64(h >> _S32) + 0.5) * _P32 - 0.5) * _NOISE
                out[i, e0] = np.float32(z) + centroids[c, e0]
            if e0 + 1 < dim:
                z = ((np.float64(h & _LOW32) + 0.5) * _P32 - 0.5) * _NOISE
                out[i, e0 + 1] = np.float32(z) + centroids[c, e0 + 1]
