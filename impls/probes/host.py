"""The probe chain on host memory, compiled with numba: the CPU path of `local`."""

from __future__ import annotations

import numpy as np

from harness.timing import CacheFlush, cpu_cache_bytes

from .chain import GOLDEN, LINE_WORDS, M1, M2, MASK, PERM_MULTIPLIERS, LinePermutation, region_lines

_numba_cache: dict = {}


def _kernels():
    """Compile once per process; numba is imported lazily so discovery stays cheap."""
    if _numba_cache:
        return _numba_cache
    import numba

    golden, m1, m2 = np.uint64(GOLDEN), np.uint64(M1), np.uint64(M2)
    s27, s30, s31 = np.uint64(27), np.uint64(30), np.uint64(31)

    @numba.njit(inline="always")
    def mix64(z):
        z = z + golden
        z = (z ^ (z >> s30)) * m1
        z = (z ^ (z >> s27)) * m2
        return z ^ (z >> s31)

    @numba.njit(parallel=True, cache=True)
    def fill(words, first_index, salt):
        for i in numba.prange(words.shape[0]):
            words[i] = mix64((np.uint64(first_index) + np.uint64(i)) ^ salt)

    m0, m1p, m2p = (np.uint64(m) for m in PERM_MULTIPLIERS)

    @numba.njit(inline="always")
    def rounds(x, mask, shift, k0, k1, k2):
        x = (x * m0 + k0) & mask
        x ^= x >> shift
        x = (x * m1p + k1) & mask
        x ^= x >> shift
        x = (x * m2p + k2) & mask
        return x ^ (x >> shift)

    @numba.njit(cache=True)
    def chase(words, part_elems, start, first_step, steps, lines, mask, shift, k0, k1, k2):
        part_lines = np.uint64(part_elems // LINE_WORDS)
        pe = np.uint64(part_elems)
        h = mix64(np.uint64(start))
        value = np.uint64(0)
        for j in range(steps):
            s = np.uint64(first_step + j)
            g = rounds(s % lines, mask, shift, k0, k1, k2)
            while g >= lines:
                g = rounds(g, mask, shift, k0, k1, k2)
            part = g // part_lines
            offset = (g % part_lines) * np.uint64(LINE_WORDS) + (h & np.uint64(LINE_WORDS - 1))
            value = words[part * pe + offset]
            h = mix64((value ^ h) + s)
        return value, h

    _numba_cache.update(fill=fill, chase=chase)
    return _numba_cache


class HostChaseProbe:
    """All memory in one host array; parts are contiguous slices of it."""

    placement = "host memory (numpy array), read by the CPU"

    def __init__(self):
        self.words = None
        self.nparts_used = 1
        self.part_elems = 0
        self.salt = 0
        self._flush = None

    def allocate(self, size_bytes: int, salt: int, nparts: int = 1) -> None:
        import psutil

        from harness.errors import SkipPoint

        from .chain import layout_refusal
        from .memory import host_refusal

        reason = layout_refusal(size_bytes, nparts) or host_refusal(size_bytes, psutil.virtual_memory().available)
        if reason:
            raise SkipPoint(reason)
        elems = size_bytes // 8
        self.attach(np.empty(elems // nparts * nparts, dtype=np.uint64), salt, nparts)

    def attach(self, words: np.ndarray, salt: int, nparts: int = 1) -> None:
        """Chase over ``words`` (a uint64 array this probe does not own, e.g. a view of a store's
        shared memory), filled here with the chain's content."""
        if words.dtype != np.uint64 or words.ndim != 1 or words.size % nparts:
            raise ValueError("the probe reads a flat uint64 array of nparts equal parts")
        self.part_elems = words.size // nparts
        self.nparts_used = nparts
        self.salt = salt
        self.words = words
        _kernels()["fill"](self.words, np.uint64(0), np.uint64(salt & MASK))

    def reset(self) -> None:
        """Host memory does not migrate: nothing to restore between repeats."""

    @property
    def l2_bytes(self) -> int:
        return cpu_cache_bytes()

    def flush_caches(self) -> int:
        """Overwrite the CPU's last-level cache so that what the last launch or the fill left
        there is gone."""
        if self._flush is None:
            self._flush = CacheFlush()
        return self._flush()

    def run_chase(self, steps: int, start: int, first_step: int = 0) -> tuple[int, int]:
        perm = LinePermutation(region_lines(self.nparts_used, self.part_elems), self.salt)
        k0, k1, k2 = (np.uint64(k) for k in perm.round_keys)
        start = np.uint64(start & MASK)  # any Python int, taken modulo 2**64 like the reference
        value, h = _kernels()["chase"](self.words, self.part_elems, start, first_step, steps,
                                       np.uint64(perm.lines), np.uint64(perm.mask),
                                       np.uint64(perm.shift), k0, k1, k2)
        return int(value), int(h)

    def close(self) -> None:
        self.words = None
        self._flush = None
