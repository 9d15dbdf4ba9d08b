"""The probes' address sequences in plain Python: the reference every probe must match.

Memory is ``nparts`` parts of ``part_elems`` 64-bit words; word ``i`` of the global index
space holds ``mix64(i ^ salt)``. A part is cut into 128-byte lines of 16 words (a trailing
partial line is never read), ``lines = nparts * (part_elems // 16)`` in all.

Pointer chase (WholeGraph section III-A): step ``s`` reads one word of line ``line_at(s)``;
which word is ``h & 15``, where ``h = mix64((value ^ h) + s)`` after each step hashes the value
just read, the step id and the chain's history, so a step's address depends on the value just
read (no load can be issued before the previous one returns) and a wrong word read anywhere
changes the chain's final hash. ``line_at`` is a keyed permutation of the
lines, so a chain reads a fresh line at every step until it has read them all: a point's
verification, warm-up and timed launches take consecutive step ranges of one permutation,
and no launch reads a line that an earlier one read (the line could be served from a cache)
unless the region has fewer lines than the point's steps. Random reads (XGNN Fig. 6a) walk
the same permutation, one read per index, with the word chosen by a hash of the index.
"""

from __future__ import annotations

MASK = (1 << 64) - 1
MASK32 = (1 << 32) - 1
GOLDEN = 0x9E3779B97F4A7C15
M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB
LINE_WORDS = 16                       # 128-byte lines of 8-byte words
LINE_BYTES = LINE_WORDS * 8
# odd 32-bit multipliers: multiplying by an odd number is a bijection modulo 2**k
PERM_MULTIPLIERS = (0x9E3779B1, 0x85EBCA6B, 0xC2B2AE35)


def mix64(z: int) -> int:
    z = (z + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def word(index: int, salt: int) -> int:
    """Initial content of global word ``index``."""
    return mix64((index ^ salt) & MASK)


class LinePermutation:
    """A keyed bijection of ``[0, lines)``: three multiply-add-xorshift rounds on the smallest
    power-of-two domain that holds the lines, cycle-walked back into range (under two rounds on
    average). 32-bit arithmetic, so the kernels compute it in a few integer instructions."""

    def __init__(self, lines: int, key: int):
        if not 1 <= lines <= MASK32:
            raise ValueError(f"line count {lines} outside [1, 2**32)")
        self.lines = lines
        self.bits = max(1, (lines - 1).bit_length())
        self.mask = (1 << self.bits) - 1
        self.shift = (self.bits + 1) // 2
        k0 = mix64(key & MASK)
        k1 = mix64(k0)
        k2 = mix64(k1)
        self.round_keys = (k0 & MASK32, k1 & MASK32, k2 & MASK32)

    def _rounds(self, x: int) -> int:
        for mult, key in zip(PERM_MULTIPLIERS, self.round_keys):
            x = (x * mult + key) & self.mask
            x ^= x >> self.shift
        return x

    def __call__(self, index: int) -> int:
        """The line read at position ``index`` (taken modulo ``lines``)."""
        y = self._rounds(index % self.lines)
        while y >= self.lines:
            y = self._rounds(y)
        return y


def region_lines(nparts: int, part_elems: int) -> int:
    return nparts * (part_elems // LINE_WORDS)


def layout_refusal(size_bytes: int, nparts: int) -> str | None:
    """Why ``size_bytes`` cannot be laid out as ``nparts`` parts of whole lines, or None."""
    lines = region_lines(nparts, size_bytes // 8 // nparts)
    if lines < 1:
        return f"{size_bytes} B in {nparts} parts leaves a part without a whole {LINE_BYTES}-byte line"
    if lines > MASK32:
        return f"{size_bytes / (1 << 30):.0f} GB holds {lines} lines, more than the probe's 2**32"
    return None


def line_address(g: int, part_elems: int) -> tuple[int, int]:
    """(part, offset of the line's first word) of global line ``g``."""
    part_lines = part_elems // LINE_WORDS
    return g // part_lines, (g % part_lines) * LINE_WORDS


def chase(nparts: int, part_elems: int, salt: int, start: int, steps: int, first_step: int = 0,
          memory=None) -> tuple[int, int]:
    """Run steps ``first_step .. first_step + steps - 1``; returns (last value read, final hash), as
    the kernels write them. ``memory`` maps (part, offset) -> word; by default the closed form."""
    perm = LinePermutation(region_lines(nparts, part_elems), salt)
    h = mix64(start & MASK)
    value = 0
    for s in range(first_step, first_step + steps):
        part, base = line_address(perm(s), part_elems)
        offset = base + (h & (LINE_WORDS - 1))
        value = memory(part, offset) if memory else word(part * part_elems + offset, salt)
        h = mix64(((value ^ h) + s) & MASK)
    return value, h


def visited(nparts: int, part_elems: int, salt: int, start: int, steps: int,
            first_step: int = 0) -> list[tuple[int, int]]:
    """The (part, offset) sequence of a chain: what the tests check the spread and reuse of."""
    out = []

    def record(part, offset):
        out.append((part, offset))
        return word(part * part_elems + offset, salt)

    chase(nparts, part_elems, salt, start, steps, first_step, memory=record)
    return out


def random_read_address(index: int, perm: LinePermutation, salt: int, part_elems: int) -> tuple[int, int]:
    """(part, offset) of random read ``index``: a fresh line of the permutation, a hashed word."""
    part, base = line_address(perm(index), part_elems)
    return part, base + (mix64((index ^ salt) & MASK) & (LINE_WORDS - 1))


def permuted_lines(perm: LinePermutation, first: int, count: int):
    """``perm(first) .. perm(first + count - 1)`` as a numpy array: the lines a launch reads,
    for the reuse checks (vectorized; equal to calling ``perm`` on each index)."""
    import numpy as np

    mask, shift = np.uint64(perm.mask), np.uint64(perm.shift)

    def rounds(x):
        for mult, key in zip(PERM_MULTIPLIERS, perm.round_keys):
            x = (x * np.uint64(mult) + np.uint64(key)) & mask
            x ^= x >> shift
        return x

    y = rounds(np.arange(first, first + count, dtype=np.uint64) % np.uint64(perm.lines))
    out_of_range = y >= perm.lines
    while out_of_range.any():
        y[out_of_range] = rounds(y[out_of_range])
        out_of_range = y >= perm.lines
    return y
