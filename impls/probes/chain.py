"""The pointer-chase chain in plain Python: the reference every probe must match.

Memory is ``nparts`` parts of ``part_elems`` 64-bit words; word ``i`` of the global
index space holds ``mix64(i ^ salt)``. Step ``s`` reads the word chosen by the hash
``h`` and sets ``h = mix64(value + s)``: the next address depends on the value just
read and the step id (WholeGraph section III-A), so latency cannot be hidden.
"""

from __future__ import annotations

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB


def mix64(z: int) -> int:
    z = (z + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def word(index: int, salt: int) -> int:
    """Initial content of global word ``index``."""
    return mix64((index ^ salt) & MASK)


def locate(h: int, nparts: int, part_elems: int) -> tuple[int, int]:
    """(part, offset) addressed by hash ``h``: part from the low 32 bits, offset by
    multiply-high, which maps ``h`` uniformly onto ``[0, part_elems)`` without a division."""
    part = (h & 0xFFFFFFFF) % nparts
    offset = (h * part_elems) >> 64
    return part, offset


def chase(nparts: int, part_elems: int, salt: int, start: int, steps: int,
          memory=None) -> tuple[int, int]:
    """Run the chain; returns (last value read, final hash), as the kernels write them.

    ``memory`` maps (part, offset) -> word; by default the closed-form initial content.
    """
    h = mix64(start & MASK)
    value = 0
    for s in range(steps):
        part, offset = locate(h, nparts, part_elems)
        value = memory(part, offset) if memory else word(part * part_elems + offset, salt)
        h = mix64((value + s) & MASK)
    return value, h


def visited(nparts: int, part_elems: int, salt: int, start: int, steps: int) -> list[tuple[int, int]]:
    """The (part, offset) sequence of a chain: used to check spread over all parts."""
    h = mix64(start & MASK)
    out = []
    for s in range(steps):
        part, offset = locate(h, nparts, part_elems)
        out.append((part, offset))
        h = mix64((word(part * part_elems + offset, salt) + s) & MASK)
    return out
