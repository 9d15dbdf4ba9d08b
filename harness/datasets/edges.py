"""Edge keys to CSR in bounded memory: route, de-duplicate, thin to an exact count, write.

An edge ``src -> dst`` is the int64 key ``src * num_nodes + dst``; sorting keys sorts by source
then destination, so a sorted, de-duplicated run of keys *is* a CSR block.  Keys arrive in chunks
(from the generator or from an edge-list reader) and are routed to ``buckets`` of consecutive
source rows; each bucket is sorted and de-duplicated on the backend's device on its own.  Buckets
live in device memory when all of them fit (papers100M on one H200: 26 GB of keys), else in host
memory, and then the device holds one chunk or one bucket at a time.  A graph that fits one
bucket (the CPU case) skips the routing sort.

Thinning keeps the ``target`` edges whose 63-bit rank hash is smallest (both directions of an
undirected edge share one rank, so symmetry survives), found with a 2**20-bin histogram and one
exact pass over the boundary bin.  Rows come out with sorted neighbour lists, no duplicates, no
self loops.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .backends import Backend

HIST_BITS = 20
_SHIFT = 63 - HIST_BITS


class EdgeBuckets:
    """Edge keys grouped by source-row range; see the module docstring."""

    def __init__(self, num_nodes: int, symmetric: bool, backend: Backend, expected_keys: int):
        self.n = int(num_nodes)
        self.symmetric = symmetric
        self.backend = backend
        buckets = max(1, -(-int(expected_keys * 1.05) // backend.bucket_keys))
        buckets = min(buckets, max(1, self.n))
        self.row_starts = np.linspace(0, self.n, buckets + 1).round().astype(np.int64)
        self.key_starts = self.row_starts * self.n
        share = np.diff(self.row_starts) / max(self.n, 1)
        capacity = [int(expected_keys * s * 1.1) + 1024 for s in share]
        # On a GPU with room for every key, buckets never leave the device.
        self.on_device = backend.fits_on_device(8 * sum(capacity))
        self.buffers = [backend.alloc_keys(c, self.on_device) for c in capacity]
        self.fill = [0] * buckets

    @property
    def num_buckets(self) -> int:
        return len(self.fill)

    def _append(self, b: int, keys) -> None:
        need = self.fill[b] + self.backend.length(keys)
        if need > len(self.buffers[b]):
            grown = self.backend.alloc_keys(int(need * 1.25) + 1024, self.on_device)
            grown[: self.fill[b]] = self.buffers[b][: self.fill[b]]
            self.buffers[b] = grown
        self.backend.copy_into(keys, self.buffers[b][self.fill[b]: need])
        self.fill[b] = need

    def add(self, keys) -> None:
        """Route a chunk of keys (backend array; SENTINELs allowed) to its buckets."""
        if self.num_buckets == 1:
            self._append(0, keys)
            return
        keys = self.backend.sort_keys(keys)
        bounds = [0, *self.backend.positions(keys, self.key_starts[1:-1]), self.backend.length(keys)]
        for b in range(self.num_buckets):
            lo, hi = bounds[b], bounds[b + 1]
            if hi > lo:
                self._append(b, keys[lo:hi])

    def dedup(self) -> None:
        for b in range(self.num_buckets):
            self.fill[b] = self.backend.dedup(self.buffers[b][: self.fill[b]])

    def keys(self, b: int):
        return self.buffers[b][: self.fill[b]]

    @property
    def stored(self) -> int:
        return int(sum(self.fill))

    @property
    def pairs(self) -> int:
        """Distinct edges: undirected pairs if symmetric, else directed edges."""
        return self.stored // 2 if self.symmetric else self.stored

    def thinning_threshold(self, target: int, rank_key: int) -> int | None:
        """Rank threshold that keeps exactly ``target`` pairs (None: keep all)."""
        if self.pairs <= target:
            return None
        hist = np.zeros(1 << HIST_BITS, dtype=np.int64)
        for b in range(self.num_buckets):
            hist += self.backend.trim_histogram(self.keys(b), self.n, self.symmetric, rank_key,
                                                _SHIFT, 1 << HIST_BITS)
        cumulative = np.cumsum(hist)
        boundary = int(np.searchsorted(cumulative, target, side="left"))
        before = int(cumulative[boundary - 1]) if boundary > 0 else 0
        need = target - before
        capacity = int(hist[boundary])
        ranks = np.concatenate([self.backend.trim_collect(self.keys(b), self.n, self.symmetric,
                                                          rank_key, _SHIFT, boundary, capacity)
                                for b in range(self.num_buckets)])
        ranks.sort()
        if need >= len(ranks):
            return (boundary + 1) << _SHIFT
        return int(ranks[need])

    def write_csr(self, threshold: int | None, rank_key: int, index_dtype: np.dtype,
                  progress: Callable[[float], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(indptr int64[n+1], indices) of the kept edges."""
        # Thinning keeps `target` pairs up to rank ties in the boundary bin: size for all.
        indices = np.empty(self.stored, dtype=index_dtype)
        counts = np.zeros(self.n, dtype=np.int64)
        written = 0
        for b in range(self.num_buckets):
            lo, hi = int(self.row_starts[b]), int(self.row_starts[b + 1])
            kept, bucket_counts = self.backend.to_csr(
                self.keys(b), self.n, lo, hi - lo, self.symmetric, rank_key, threshold,
                indices[written:])
            counts[lo:hi] = bucket_counts
            written += kept
            if progress:
                progress((b + 1) / self.num_buckets)
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr, indices[:written]

    def release(self) -> None:
        self.buffers = []
        self.fill = []
