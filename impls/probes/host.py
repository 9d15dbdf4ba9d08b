"""The probe chain on host memory, compiled with numba: the CPU path of `local`."""

from __future__ import annotations

import numpy as np

from .chain import GOLDEN, M1, M2, MASK

_numba_cache: dict = {}


def _kernels():
    """Compile once per process; numba is imported lazily so discovery stays cheap."""
    if _numba_cache:
        return _numba_cache
    import numba

    golden, m1, m2 = np.uint64(GOLDEN), np.uint64(M1), np.uint64(M2)
    s27, s30, s31, s32 = np.uint64(27), np.uint64(30), np.uint64(31), np.uint64(32)
    lo32 = np.uint64(0xFFFFFFFF)

    @numba.njit(inline="always")
    def mix64(z):
        z = z + golden
        z = (z ^ (z >> s30)) * m1
        z = (z ^ (z >> s27)) * m2
        return z ^ (z >> s31)

    @numba.njit(inline="always")
    def mulhi(a, b):
        a_lo, a_hi = a & lo32, a >> s32
        b_lo, b_hi = b & lo32, b >> s32
        p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
        carry = ((p0 >> s32) + (p1 & lo32) + (p2 & lo32)) >> s32
        return p3 + (p1 >> s32) + (p2 >> s32) + carry

    @numba.njit(parallel=True, cache=True)
    def fill(words, first_index, salt):
        for i in numba.prange(words.shape[0]):
            words[i] = mix64((np.uint64(first_index) + np.uint64(i)) ^ salt)

    @numba.njit(cache=True)
    def chase(words, nparts, part_elems, start, steps):
        h = mix64(np.uint64(start))
        value = np.uint64(0)
        n = np.uint64(nparts)
        pe = np.uint64(part_elems)
        for s in range(steps):
            part = (h & lo32) % n
            offset = mulhi(h, pe)
            value = words[part * pe + offset]
            h = mix64(value + np.uint64(s))
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

    def allocate(self, size_bytes: int, salt: int, nparts: int = 1) -> None:
        import psutil

        from harness.errors import SkipPoint

        from .memory import host_refusal

        reason = host_refusal(size_bytes, psutil.virtual_memory().available)
        if reason:
            raise SkipPoint(reason)
        elems = size_bytes // 8
        self.part_elems = elems // nparts
        self.nparts_used = nparts
        self.salt = salt
        self.words = np.empty(self.part_elems * nparts, dtype=np.uint64)
        _kernels()["fill"](self.words, np.uint64(0), np.uint64(salt & MASK))

    def reset(self) -> None:
        """Host memory does not migrate: nothing to restore between repeats."""

    def run_chase(self, steps: int, start: int) -> tuple[int, int]:
        start = np.uint64(start & MASK)  # any Python int, taken modulo 2**64 like the reference
        value, h = _kernels()["chase"](self.words, self.nparts_used, self.part_elems, start, steps)
        return int(value), int(h)

    def close(self) -> None:
        self.words = None
