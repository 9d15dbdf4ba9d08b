"""A counter-based random number generator that gives the same bits on every backend.

Every random quantity of a stand-in is ``mix64(stream_key + counter * GOLDEN)`` for a stream
(``"src_piece"``, ``"features"``, ...) and a counter (the edge draw, the feature element, ...).
``mix64`` is the splitmix64 finalizer.  Because the value for counter ``i`` does not depend on how
the counters are chunked, a graph generated in 4 GiB chunks on a GPU, in 16 MiB chunks on a CPU, or
in 1 KiB chunks in a test is the same graph, and the CPU path exercises the GPU path's chunking.

Draws use only integer operations and single IEEE float64 multiplies and adds (correctly rounded
everywhere), so graph structure, labels, splits and features are bit-identical across numba,
torch-CPU and torch-CUDA.  (Class centroids, computed once on the host, use Gaussian draws.)

The numpy functions here are the reference the kernels are tested against.
"""

from __future__ import annotations

import zlib

import numpy as np

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
TWO_POW_M53 = 2.0 ** -53
TWO_POW_M32 = 2.0 ** -32

STREAMS = ("mix", "src_piece", "src_pos", "dst_piece", "dst_pos", "trim", "features",
           "centroids", "split", "id_scramble")


def mix64_int(x: int) -> int:
    """splitmix64 finalizer on a Python int (exact, for host-side keys)."""
    z = x & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def stream_key(seed: int, stream: str) -> int:
    """The 64-bit key of a named stream under a seed."""
    return mix64_int(mix64_int(seed * GOLDEN + 1) ^ zlib.crc32(stream.encode()) * MIX1)


def stream_keys(seed: int) -> dict[str, int]:
    return {name: stream_key(seed, name) for name in STREAMS}


def signed(x: int) -> int:
    """The int64 with the same bits as the uint64 ``x`` (torch has no full uint64 arithmetic)."""
    x &= MASK64
    return x - (1 << 64) if x >= 1 << 63 else x


def hash_np(key: int, counters: np.ndarray) -> np.ndarray:
    """uint64 hashes of ``counters`` under ``key`` (numpy reference)."""
    with np.errstate(over="ignore"):
        z = counters.astype(np.uint64) * np.uint64(GOLDEN) + np.uint64(key)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
        return z ^ (z >> np.uint64(31))


def unit_np(h: np.ndarray) -> np.ndarray:
    """float64 in [0, 1) from the top 53 bits of a hash."""
    return (h >> np.uint64(11)).astype(np.float64) * TWO_POW_M53


def normal_np(key: int, elements: np.ndarray) -> np.ndarray:
    """Standard normals for element indices (Box-Muller on element pairs), float64."""
    h = hash_np(key, elements >> 1)
    u1 = ((h >> np.uint64(32)).astype(np.float64) + 0.5) * TWO_POW_M32
    u2 = ((h & np.uint64(0xFFFFFFFF)).astype(np.float64) + 0.5) * TWO_POW_M32
    radius = np.sqrt(-2.0 * np.log(u1))
    angle = 2.0 * np.pi * u2
    return np.where((elements & 1) == 0, radius * np.cos(angle), radius * np.sin(angle))


NOISE_SCALE = 12.0 ** 0.5   # uniform on [-sqrt(3), sqrt(3)): unit variance


def noise_np(key: int, elements: np.ndarray) -> np.ndarray:
    """Unit-variance uniform noise for feature elements: one hash feeds an element pair (its two
    32-bit halves).  Exact arithmetic, so every backend produces the same float32 features."""
    h = hash_np(key, elements >> 1)
    half = np.where((elements & 1) == 0, h >> np.uint64(32), h & np.uint64(0xFFFFFFFF))
    return ((half.astype(np.float64) + 0.5) * TWO_POW_M32 - 0.5) * NOISE_SCALE


def trim_hash_np(key: int, canonical: np.ndarray) -> np.ndarray:
    """Non-negative 63-bit hashes that rank edges for exact-count thinning."""
    return (hash_np(key, canonical) >> np.uint64(1)).astype(np.int64)
