"""The samplers' random numbers on the host, in pure Python (no numba, no GPU).

Draw j of batch position b under user seed S is ``uniform(stream_key(S), b, j, n)``:
splitmix64's finalizer over ``key ^ (b * GOLDEN + j)``, top 32 bits, multiply-shift into
[0, n). impls/core/kernels/common.cuh and cpu.py compute the same numbers; this module is the
reference the tests hold them to, and where samplers turn a seed or a torch.Generator into a key.
"""

from __future__ import annotations

import math
import random

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_key(seed: int) -> int:
    """The kernels' ``key`` for a user seed (any int, reduced mod 2^64)."""
    return mix64(int(seed) & MASK64)


def uniform(key: int, b: int, j: int, n: int) -> int:
    """Uniform integer in [0, n) (n < 2^32): draw j of batch position b."""
    r = mix64(key ^ ((b * GOLDEN + j) & MASK64)) >> 32
    return (r * n) >> 32


def next_pow2(x: int) -> int:
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


def table_slots(n_items: int, id_bound: int | None = None, max_load: float = 0.5) -> int:
    """Append-unique hash table size: a power of two >= (the most distinct keys there can be) /
    ``max_load``, at least 64 (two buckets). The most distinct keys is the input count, or
    ``id_bound`` when every id is below it (a sampled hop of a graph of N nodes has at most N
    distinct ids, however many edges it sampled), so the load factor stays <= max_load while the
    table shrinks to what the graph can fill."""
    distinct = int(n_items) if id_bound is None else min(int(n_items), int(id_bound))
    return max(64, next_pow2(math.ceil(max(1, distinct) / max_load)))


def resolve_seed(seed: int | None, generator, fallback: random.Random) -> int:
    """A call's seed: given, or drawn from a torch.Generator, or from the sampler's own stream."""
    if seed is not None:
        return int(seed)
    if generator is not None:
        import torch

        return int(torch.randint(0, 2**62, (1,), generator=generator).item())
    return fallback.getrandbits(62)


def fisher_yates_reference(r: list[int], N: int) -> list[int]:
    """The sequential partial Fisher-Yates shuffle Algorithm 1 parallelizes: step i outputs the
    entry at position r[i] of the first N - i entries and moves entry N - 1 - i into its place."""
    a: dict[int, int] = {}
    res = []
    for i, x in enumerate(r):
        res.append(a.get(x, x))
        a[x] = a.get(N - 1 - i, N - 1 - i)
    return res
