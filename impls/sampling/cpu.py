"""CPU (numba) versions of the sampling and append-unique kernels, bit-identical to the GPU.

Same random numbers as impls/core/kernels/common.cuh (``draw``), same algorithms, same output order,
and the same request model for counting remote bytes, so the GPU tests can compare GPU
output with these functions exactly and CI exercises the algorithms without a GPU.
Functions take NumPy arrays; samplers fill ``out`` (and ``pos``: the CSR position each
entry was read from) at the given offsets.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_U32 = np.uint64(0xFFFFFFFF)


@njit(cache=True)
def _mix64(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def draw(key, b, j, n):
    """Uniform integer in [0, n) (n < 2^32) for batch position b, draw j: common.cuh's uniform_below."""
    x = key ^ (np.uint64(b) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(j))
    r = _mix64(x) >> np.uint64(32)
    return np.int64((r * np.uint64(n)) >> np.uint64(32))


# ------------------------------------------------------------------------------ samplers

@njit(cache=True)
def row_counts(indptr, seeds, fanout, counts):
    """counts[0] = 0, counts[b + 1] = min(degree, fanout)."""
    counts[0] = 0
    for b in range(seeds.shape[0]):
        v = seeds[b]
        d = indptr[v + 1] - indptr[v]
        counts[b + 1] = d if d < fanout else fanout


@njit(cache=True)
def _path_doubling_one(key, b, N, M, rounds, keys, skeys, chain, tmp, q, res):
    """WholeGraph Algorithm 1 for one target (N > M): res[i] in [0, N), distinct.
    keys/skeys: packed (r << 32 | i) keys unsorted/sorted (s = high word, p = low word)."""
    for i in range(M):                                    # lines 1-4
        r = draw(key, b, i, N - i)
        keys[i] = (np.uint64(r) << np.uint64(32)) | np.uint64(i)
        chain[i] = i
    for i in range(M):                                    # line 5: one sort of the packed keys,
        rank = 0                                          # a rank sort as in the kernel
        for j in range(M):
            if keys[j] < keys[i]:
                rank += 1
        q[i] = rank                                       # line 7: q[p[k]] = k
        skeys[rank] = keys[i]
    for k in range(M):                                    # lines 6-11
        s = np.int64(skeys[k] >> np.uint64(32))
        last = k == M - 1 or np.int64(skeys[k + 1] >> np.uint64(32)) != s
        if last and s >= N - M:
            chain[N - s - 1] = np.int64(skeys[k] & _U32)
    for _ in range(rounds):                               # line 12: synchronous doubling rounds
        for i in range(M):
            tmp[i] = chain[chain[i]]
        for i in range(M):
            chain[i] = tmp[i]
    for i in range(M):                                    # lines 13-22
        qi = q[i]
        r = np.int64(keys[i] >> np.uint64(32))
        if qi == 0 or np.int64(skeys[qi - 1] >> np.uint64(32)) != r:
            res[i] = r
        else:
            res[i] = N - chain[np.int64(skeys[qi - 1] & _U32)] - 1


@njit(cache=True)
def _take_all(indices, start, N, o, pos, out):
    """Degree <= fanout: every neighbor, in CSR order (positions and ids)."""
    for i in range(N):
        pos[o + i] = start + i
        out[o + i] = indices[start + i]


@njit(cache=True)
def path_doubling(indptr, indices, seeds, fanout, key, offsets, out, pos):
    n = seeds.shape[0]
    M = fanout
    rounds = 0
    while (1 << rounds) < M:
        rounds += 1
    chunk = 256
    for c in range((n + chunk - 1) // chunk):
        keys = np.empty(M, np.uint64)
        skeys = np.empty(M, np.uint64)
        chain = np.empty(M, np.int64)
        tmp = np.empty(M, np.int64)
        q = np.empty(M, np.int64)
        res = np.empty(M, np.int64)
        for b in range(c * chunk, min(n, (c + 1) * chunk)):
            v = seeds[b]
            start = indptr[v]
            N = indptr[v + 1] - start
            o = offsets[b]
            if N <= M:
                _take_all(indices, start, N, o, pos, out)
                continue
            _path_doubling_one(key, b, N, M, rounds, keys, skeys, chain, tmp, q, res)
            for i in range(M):
                pos[o + i] = start + res[i]
                out[o + i] = indices[start + res[i]]


@njit(cache=True)
def reservoir(indptr, indices, seeds, fanout, key, offsets, out, reads):
    """One target at a time, as the reservoir kernel's thread does; reads[b] = ids read."""
    M = fanout
    for b in range(seeds.shape[0]):
        v = seeds[b]
        start = indptr[v]
        N = indptr[v + 1] - start
        o = offsets[b]
        if N <= M:
            for j in range(N):
                out[o + j] = indices[start + j]
            reads[b] = N
            continue
        for j in range(M):
            out[o + j] = indices[start + j]
        cnt = M
        for j in range(M, N):
            k = draw(key, b, j, j + 1)
            if k < M:
                out[o + k] = indices[start + j]
                cnt += 1
        reads[b] = cnt


@njit(cache=True)
def khop_batched(indptr, indices, seeds, fanout, G, H, key, offsets, out, pos):
    """XGNN batched KHop: the first min(N, M) distinct positions of the draws
    random() % N (draw j = round * G + lane, i.e. j = 0, 1, 2, ...), sorted, then read."""
    n = seeds.shape[0]
    M = fanout
    hbits = 0
    while (1 << hbits) < H:
        hbits += 1
    chunk = 256
    for c in range((n + chunk - 1) // chunk):
        table = np.empty(H, np.int64)
        kept = np.empty(M, np.int64)
        for b in range(c * chunk, min(n, (c + 1) * chunk)):
            v = seeds[b]
            start = indptr[v]
            N = indptr[v + 1] - start
            o = offsets[b]
            if N <= M:
                _take_all(indices, start, N, o, pos, out)
                continue
            table[:] = -1
            count = 0
            j = 0
            while count < M:
                x = draw(key, b, j, N)
                j += 1
                s = np.int64(((np.uint64(x) * np.uint64(0x9E3779B1)) & _U32) >> np.uint64(32 - hbits))
                fresh = True
                while table[s] != -1:
                    if table[s] == x:
                        fresh = False
                        break
                    s = (s + 1) & (H - 1)
                if fresh:
                    table[s] = x
                    kept[count] = x
                    count += 1
            for k in range(M):                    # rank sort of the kept positions
                rank = 0
                for j in range(M):
                    if kept[j] < kept[k]:
                        rank += 1
                pos[o + rank] = start + kept[k]
            for k in range(M):
                out[o + k] = indices[pos[o + k]]


@njit(cache=True)
def rand32(key, b, j):
    """common.cuh's rand32: the top 32 bits of draw j of batch position b."""
    x = key ^ (np.uint64(b) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(j))
    return _mix64(x) >> np.uint64(32)


@njit(cache=True)
def random_walk_topk(indptr, indices, seeds, R, L, restart_thr, K, key, base, P, gpu_rows, host_base,
                     out, weight, counts, rows):
    """kernels/random_walk.cu's random_walk_topk: R walks of L steps with restart from each target,
    the top K visited nodes (visit counts; ties: earlier first visit) to out/weight [n, K] (-1 / 0
    padded), their number to counts[b]; rows [n, R L]: the physical row of every step (-1 none)."""
    n = seeds.shape[0]
    cur = np.empty(R, np.int64)
    seen = np.empty(R * L, np.int64)
    hits = np.empty(R * L, np.int64)
    for b in range(n):
        target = seeds[b]
        distinct = 0
        for w in range(R):
            cur[w] = target
        for s in range(L):
            for w in range(R):
                slot = s * R + w
                v = cur[w]
                if v < 0:
                    rows[b, slot] = -1
                    continue
                p = base[v % P] + v // P if v < gpu_rows else v - gpu_rows + host_base
                rows[b, slot] = p
                start = indptr[p]
                deg = indptr[p + 1] - start
                if deg == 0:
                    cur[w] = -1
                    continue
                j = 2 * slot
                nxt = np.int64(indices[start + draw(key, b, j, deg)])
                if nxt != target:
                    k = 0
                    while k < distinct and seen[k] != nxt:
                        k += 1
                    if k == distinct:
                        seen[distinct] = nxt
                        hits[distinct] = 0
                        distinct += 1
                    hits[k] += 1
                cur[w] = target if rand32(key, b, j + 1) < restart_thr else nxt
        take = min(distinct, K)
        for k in range(K):
            if k < take:
                best = -1
                for q in range(distinct):
                    if hits[q] > 0 and (best < 0 or hits[q] > hits[best]):
                        best = q
                out[b, k] = seen[best]
                weight[b, k] = hits[best]
                hits[best] = -hits[best]
            else:
                out[b, k] = -1
                weight[b, k] = 0.0
        counts[b] = take


# ------------------------------------------------------------------------------ request model

@njit(cache=True)
def _index_sector(v, e, crpp, vstart, id_bytes, shift):
    q = v // crpp
    return (q << 56) | (1 << 55) | (((e - vstart[q]) * id_bytes) >> shift)


@njit(cache=True)
def _indptr_sector(v, plus, crpp, shift):
    q = v // crpp
    return (q << 56) | ((((v - q * crpp) + plus) * 8) >> shift)


@njit(cache=True)
def _add_request(keys, remote, distinct, m, bytes_, acc):
    """One warp-wide request over m lanes: distinct sectors among them, useful bytes of the
    lanes flagged distinct (common.cuh count_request)."""
    for i in range(m):
        first = True                     # lowest lane with this sector (__match_any_sync)
        for j in range(i):
            if keys[j] == keys[i]:
                first = False
                break
        if first:
            acc[2] += 1
            if remote[i]:
                acc[0] += 1
        if distinct[i]:
            acc[3] += bytes_
            if remote[i]:
                acc[1] += bytes_


@njit(cache=True)
def count_group_requests(indptr, seeds, offsets, pos, fanout, G, mode, crpp, my_rank, vstart,
                         id_bytes, shift, result):
    """The path_doubling (mode 0) / khop_batched (mode 1) kernels' requests, warp by warp.

    Thread slot t = b * G + lane sits in warp t // 32. Each warp issues two row-lookup requests
    (indptr[v], indptr[v + 1]; every lane of a group loads them, the group's first lane in the
    warp counts the element) and then its read requests: path doubling one (lane i reads entry
    i), batched KHop ceil(M / G) (lane k of round r reads entry r * G + k).
    result[0..3] = remote sectors, remote useful bytes, all sectors, all useful bytes.
    """
    n = seeds.shape[0]
    total = n * G
    nwarps = (total + 31) // 32
    nchunks = (nwarps + 63) // 64
    partial = np.zeros((nchunks, 4), np.int64)
    rounds = 1 if mode == 0 else (fanout + G - 1) // G
    for c in range(nchunks):
        keys = np.empty(32, np.int64)
        remote = np.empty(32, np.bool_)
        distinct = np.empty(32, np.bool_)
        acc = partial[c]
        for w in range(c * 64, min(nwarps, (c + 1) * 64)):
            for plus in range(2):
                m = 0
                for t in range(w * 32, min(total, w * 32 + 32)):
                    b = t // G
                    v = seeds[b]
                    keys[m] = _indptr_sector(v, plus, crpp, shift)
                    remote[m] = v // crpp != my_rank
                    distinct[m] = (t - b * G) % 32 == 0
                    m += 1
                _add_request(keys, remote, distinct, m, 8, acc)
            for r in range(rounds):
                m = 0
                for t in range(w * 32, min(total, w * 32 + 32)):
                    b = t // G
                    lane = t - b * G
                    k = lane if mode == 0 else r * G + lane
                    cnt = offsets[b + 1] - offsets[b]
                    if k < cnt:
                        v = seeds[b]
                        keys[m] = _index_sector(v, pos[offsets[b] + k], crpp, vstart, id_bytes, shift)
                        remote[m] = v // crpp != my_rank
                        distinct[m] = True
                        m += 1
                _add_request(keys, remote, distinct, m, id_bytes, acc)
    for c in range(nchunks):
        for i in range(4):
            result[i] += partial[c, i]


@njit(cache=True)
def count_thread_requests(seeds, reads, crpp, my_rank, id_bytes, result):
    """The reservoir kernel: every read is its own request (2 row lookups + reads[b] ids)."""
    for b in range(seeds.shape[0]):
        rem = seeds[b] // crpp != my_rank
        result[2] += 2 + reads[b]
        result[3] += 16 + reads[b] * id_bytes
        if rem:
            result[0] += 2 + reads[b]
            result[1] += 16 + reads[b] * id_bytes


# ------------------------------------------------------------------------------ append-unique

EMPTY = np.int64(-1)
NOT_TARGET = np.int64(-1)


@njit(cache=True)
def _home(key, mask):
    return np.int64(_mix64(np.uint64(key)) & np.uint64(mask))


@njit(cache=True)
def hash_append_unique(targets, neighbors, H, unique_out, local, dup):
    """kernels/unique.cu on one core; returns the number of new (non-target) nodes, or -1 when the
    table is full (more distinct ids than the table was sized for: a broken id_bound).

    unique_out (capacity nt + nn) gets targets then new nodes numbered per home bucket in
    (home slot, id) order; local[j] = local id of neighbors[j]; dup[id] += 1 per neighbor.
    """
    nt = targets.shape[0]
    nn = neighbors.shape[0]
    mask = H - 1
    keys = np.full(H, EMPTY, np.int64)
    vals = np.full(H, NOT_TARGET, np.int64)
    counts = np.zeros(H // 32, np.int64)
    for i in range(nt + nn):                                  # au_insert
        key = targets[i] if i < nt else neighbors[i - nt]
        h = _home(key, mask)
        s = h
        placed = False
        for _ in range(H):
            cur = keys[s]
            if cur == key:
                placed = True
                break
            if cur == EMPTY:
                keys[s] = key
                counts[h >> 5] += 1
                placed = True
                break
            s = (s + 1) & mask
        if not placed:
            return -1
        if i < nt:
            unique_out[i] = key
            if vals[s] == NOT_TARGET:
                vals[s] = i
                counts[h >> 5] -= 1
        else:
            local[i - nt] = s
    inclusive = np.cumsum(counts)                             # the exclusive prefix sum's input
    ids = np.empty(H, np.int64)
    for s in range(H):                                        # au_assign
        key = keys[s]
        if key == EMPTY:
            continue
        if vals[s] != NOT_TARGET:
            ids[s] = vals[s]
            continue
        h = _home(key, mask)
        b = h >> 5
        rank = 0
        for step in range(H):
            t = ((b << 5) + step) & mask
            k2 = keys[t]
            if k2 == EMPTY:
                if step >= 32:
                    break
                continue
            if vals[t] != NOT_TARGET:
                continue
            h2 = _home(k2, mask)
            if (h2 >> 5) == b and (h2 < h or (h2 == h and k2 < key)):
                rank += 1
        ident = nt + (inclusive[b] - counts[b]) + rank
        ids[s] = ident
        unique_out[ident] = key
    for j in range(nn):                                       # au_lookup
        ident = ids[local[j]]
        local[j] = ident
        dup[ident] += 1
    return inclusive[-1]
