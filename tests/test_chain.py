"""The probe's chain logic on CPU: hash, address mapping, spread, host probe vs reference."""

from __future__ import annotations

import random

import numpy as np
import pytest

from impls.probes import chain
from impls.probes.bench import verify_chain
from impls.probes.host import HostChaseProbe

MASK = (1 << 64) - 1


def splitmix64_stream(seed: int, n: int) -> list[int]:
    """Vigna's splitmix64 generator, written out independently of chain.py."""
    out, state = [], seed
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) % (1 << 64)
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % (1 << 64)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % (1 << 64)
        out.append(z ^ (z >> 31))
    return out


def test_mix64_known_answers():
    # the published first outputs of splitmix64 seeded with 0
    assert chain.mix64(0) == 0xE220A8397B1DCDAF
    assert chain.mix64(0x9E3779B97F4A7C15) == 0x6E789E6AA1B965F4
    assert chain.mix64((2 * 0x9E3779B97F4A7C15) & MASK) == 0x06C45D188009454F


@pytest.mark.parametrize("seed", [0, 1, 12345, MASK, 0xDEADBEEFCAFEF00D])
def test_mix64_is_the_splitmix64_step(seed):
    stream = splitmix64_stream(seed, 4)
    golden = 0x9E3779B97F4A7C15
    for i, value in enumerate(stream):
        assert chain.mix64((seed + i * golden) & MASK) == value
        assert 0 <= value <= MASK


def test_word_is_mix_of_index_xor_salt():
    assert chain.word(0, 0) == 0xE220A8397B1DCDAF
    assert chain.word(5, 3) == chain.mix64(6)
    assert chain.word(1 << 40, MASK) == chain.mix64(MASK ^ (1 << 40))


def test_locate_known_values_and_bounds():
    assert chain.locate(0, 4, 1000) == (0, 0)
    assert chain.locate(MASK, 1, 1000) == (0, 999)               # top of the range, never past it
    assert chain.locate(1 << 63, 3, 1000) == (0, 500)            # half way
    assert chain.locate((1 << 62) | 7, 4, 1024) == (3, 256)      # part from the low 32 bits
    rng = random.Random(3)
    for _ in range(2000):
        h = rng.getrandbits(64)
        nparts, elems = rng.randint(1, 16), rng.randint(1, 10**7)
        part, off = chain.locate(h, nparts, elems)
        assert 0 <= part < nparts and 0 <= off < elems
        assert off == (h * elems) // 2**64                       # multiply-high


def _chi_square(counts) -> float:
    counts = np.asarray(counts, dtype=float).ravel()
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def test_locate_is_uniform_over_parts_and_offsets():
    """Chi-square over 4 parts x 10 offset buckets (39 degrees of freedom).

    Threshold 72.05 is the 0.999 quantile of chi2(39): a fair mapping fails one seed in
    a thousand; a biased one (e.g. offset = h % elems on a small range) fails by far.
    """
    rng = random.Random(20261121)
    nparts, elems, buckets, n = 4, 1000, 10, 40_000
    counts = np.zeros((nparts, buckets))
    for _ in range(n):
        part, off = chain.locate(rng.getrandbits(64), nparts, elems)
        counts[part, off * buckets // elems] += 1
    assert _chi_square(counts) < 72.05
    # non-power-of-two part size and part count
    counts = np.zeros((3, 7))
    for _ in range(21_000):
        part, off = chain.locate(rng.getrandbits(64), 3, 777)
        counts[part, off * 7 // 777] += 1
    assert _chi_square(counts) < 45.31  # 0.999 quantile of chi2(20)


def test_chi_square_would_catch_a_biased_mapping():
    """The statistic used above does reject a skewed distribution."""
    rng = random.Random(1)
    counts = np.zeros(40)
    for _ in range(40_000):
        counts[min(39, int(40 * rng.random() ** 1.1))] += 1
    assert _chi_square(counts) > 72.05


def test_chain_visits_all_parts_equally():
    """nparts = 4, 20,000 steps: chi-square over parts < 16.27 (0.999 quantile of chi2(3))."""
    steps = 20_000
    seq = chain.visited(4, 1 << 16, salt=0x5EED, start=1, steps=steps)
    assert len(seq) == steps
    counts = np.bincount([p for p, _ in seq], minlength=4)
    assert counts.sum() == steps and (counts > 0).all()
    assert _chi_square(counts) < 16.27
    assert np.abs(counts / steps - 0.25).max() < 0.02
    # and does not get stuck in a short cycle
    assert len(set(seq)) > 0.8 * steps


def test_visited_matches_chase():
    nparts, elems, salt, start, steps = 3, 1000, 77, 5, 500
    seq = chain.visited(nparts, elems, salt, start, steps)
    # replay the chain from the visited addresses
    h = None
    for s, (p, o) in enumerate(seq):
        value = chain.word(p * elems + o, salt)
        h = chain.mix64((value + s) & MASK)
    assert chain.chase(nparts, elems, salt, start, steps) == (value, h)


def test_chase_with_explicit_memory_equals_closed_form():
    nparts, elems, salt = 2, 4096, 0xABC
    mem = {}

    def memory(part, offset):
        mem[(part, offset)] = True
        return chain.word(part * elems + offset, salt)

    assert chain.chase(nparts, elems, salt, 9, 300, memory) == chain.chase(nparts, elems, salt, 9, 300)
    assert len(mem) > 250


def test_chase_zero_steps():
    assert chain.chase(2, 100, 1, 4, 0) == (0, chain.mix64(4))


def test_next_address_depends_on_the_step_id():
    """h = mix64(value + s): the same value read at another step leads elsewhere."""
    a = chain.chase(1, 1 << 20, 0, 1, 50)
    b = chain.chase(1, 1 << 20, 0, 1, 51)
    assert a != b


CONFIGS = [
    # (nparts, part_elems, salt, start, steps)
    (1, 1024, 0, 0, 5000),
    (1, 1000, 0x5EED, 1, 5000),                 # not a power of two
    (3, 777, 12345, 99, 4000),                   # neither is nparts
    (4, 1 << 12, (1 << 64) - 1, 7, 4000),        # the largest salt
    (5, 3, 42, 3, 1000),                         # tiny parts: every word visited
    (2, 12_345, 0xDEADBEEF, -4, 3000),         # negative start: taken modulo 2**64
    (16, 100, 9, 0, 2000),
]


@pytest.fixture(scope="module")
def host_probe_factory():
    probes = []

    def make(nparts, part_elems, salt):
        probe = HostChaseProbe()
        probe.allocate(nparts * part_elems * 8, salt=salt, nparts=nparts)
        probes.append(probe)
        return probe

    yield make
    for p in probes:
        p.close()


@pytest.mark.parametrize("nparts, part_elems, salt, start, steps", CONFIGS)
def test_host_probe_equals_reference(host_probe_factory, nparts, part_elems, salt, start, steps):
    probe = host_probe_factory(nparts, part_elems, salt)
    assert probe.part_elems == part_elems and probe.nparts_used == nparts
    assert probe.words.dtype == np.uint64 and probe.words.size == nparts * part_elems
    # memory content is the closed form
    idx = [0, 1, nparts * part_elems - 1, (nparts * part_elems) // 2]
    assert [int(probe.words[i]) for i in idx] == [chain.word(i, salt) for i in idx]
    assert probe.run_chase(steps, start) == chain.chase(nparts, part_elems, salt, start, steps)
    verify_chain(probe, steps, start)


def test_host_probe_takes_any_64_bit_start(host_probe_factory):
    probe = host_probe_factory(2, 1000, 5)
    start = (1 << 63) + 5
    assert probe.run_chase(100, start) == chain.chase(2, 1000, 5, start, 100)


def test_host_probe_fill_matches_reference_everywhere(host_probe_factory):
    probe = host_probe_factory(3, 1001, 0x1234)
    want = np.array([chain.word(i, 0x1234) for i in range(3 * 1001)], dtype=np.uint64)
    assert np.array_equal(probe.words, want)


def test_host_probe_rounds_size_down_to_whole_words():
    probe = HostChaseProbe()
    probe.allocate(3 * 1000 * 8 + 13, salt=1, nparts=3)   # 13 stray bytes
    assert probe.part_elems == 1000 and probe.words.size == 3000
    assert probe.run_chase(100, 2) == chain.chase(3, 1000, 1, 2, 100)
    probe.reset()  # host memory does not migrate: reset is a no-op that keeps the content
    assert probe.run_chase(100, 2) == chain.chase(3, 1000, 1, 2, 100)
    probe.close()
    assert probe.words is None


def test_a_corrupted_word_on_the_path_is_caught():
    nparts, elems, salt, start, steps = 4, 1000, 0x5EED, 11, 2000
    probe = HostChaseProbe()
    probe.allocate(nparts * elems * 8, salt=salt, nparts=nparts)
    verify_chain(probe, steps, start)
    part, off = chain.visited(nparts, elems, salt, start, steps)[steps // 2]
    probe.words[part * elems + off] ^= np.uint64(1)      # one flipped bit on the chain's path
    assert probe.run_chase(steps, start) != chain.chase(nparts, elems, salt, start, steps)
    with pytest.raises(RuntimeError, match="wrong memory"):
        verify_chain(probe, steps, start)


def test_a_corrupted_word_off_the_path_is_harmless():
    nparts, elems, salt, start, steps = 2, 5000, 3, 1, 200
    probe = HostChaseProbe()
    probe.allocate(nparts * elems * 8, salt=salt, nparts=nparts)
    seen = {p * elems + o for p, o in chain.visited(nparts, elems, salt, start, steps)}
    untouched = next(i for i in range(nparts * elems) if i not in seen)
    probe.words[untouched] ^= np.uint64(1 << 40)
    verify_chain(probe, steps, start)


def test_a_probe_reading_the_wrong_part_is_caught():
    """A probe whose part layout differs (parts swapped) fails verification."""
    nparts, elems, salt = 2, 1024, 99
    probe = HostChaseProbe()
    probe.allocate(nparts * elems * 8, salt=salt, nparts=nparts)
    probe.words[:] = np.concatenate([probe.words[elems:], probe.words[:elems]])
    with pytest.raises(RuntimeError, match="wrong memory"):
        verify_chain(probe, 500, 1)
