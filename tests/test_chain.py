"""The probe's chain logic on CPU: hash, address mapping, spread, host probe vs reference."""

from __future__ import annotations

import random

import numpy as np
import pytest

from experiments.kit.probes import verify_chain
from impls.probes import chain
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


@pytest.mark.parametrize("lines", [1, 2, 3, 16, 1000, 4097, (1 << 16) + 3])
@pytest.mark.parametrize("key", [0, 0x5EED, MASK])
def test_line_permutation_is_a_bijection(lines, key):
    perm = chain.LinePermutation(lines, key)
    got = [perm(i) for i in range(lines)]
    assert sorted(got) == list(range(lines))
    assert [perm(i + lines) for i in range(min(lines, 50))] == got[:50]     # taken modulo lines
    assert np.array_equal(chain.permuted_lines(perm, 0, lines), np.array(got, dtype=np.uint64))


def test_line_permutation_depends_on_the_key_and_is_not_a_stride():
    a = chain.permuted_lines(chain.LinePermutation(1 << 20, 1), 0, 10_000).astype(np.int64)
    b = chain.permuted_lines(chain.LinePermutation(1 << 20, 2), 0, 10_000).astype(np.int64)
    assert (a != b).mean() > 0.99
    steps = np.diff(a)
    assert len(np.unique(steps)) > 9_000                   # no fixed stride between consecutive lines
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.05


def test_layout_refuses_parts_without_a_whole_line():
    assert chain.layout_refusal(8 * 1024, 1) is None
    assert "whole 128-byte line" in chain.layout_refusal(3 * 100, 3)


def _chi_square(counts) -> float:
    counts = np.asarray(counts, dtype=float).ravel()
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def test_a_chain_prefix_is_uniform_over_parts_and_offsets():
    """The first 40,000 lines of the permutation over 4 parts of 2**18 lines: chi-square over
    4 parts x 10 offset buckets < 72.05, the 0.999 quantile of chi2(39). A fair mapping fails one
    seed in a thousand; a stride or a biased mapping fails by far."""
    nparts, part_lines, buckets = 4, 1 << 18, 10
    g = chain.permuted_lines(chain.LinePermutation(nparts * part_lines, 20261121), 0, 40_000).astype(np.int64)
    counts = np.zeros((nparts, buckets))
    np.add.at(counts, (g // part_lines, (g % part_lines) * buckets // part_lines), 1)
    assert _chi_square(counts) < 72.05
    # non-power-of-two line and part counts: 3 parts of 777 lines, 21,000 indices (27 passes)
    g = chain.permuted_lines(chain.LinePermutation(3 * 777, 5), 0, 21_000).astype(np.int64)
    counts = np.zeros((3, 7))
    np.add.at(counts, (g // 777, (g % 777) * 7 // 777), 1)
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


def test_chain_reads_a_new_line_every_step_until_the_region_is_read():
    nparts, elems = 3, 16 * 700                                # 2,100 lines
    seq = chain.visited(nparts, elems, salt=7, start=1, steps=2_100)
    lines = [(p, o // chain.LINE_WORDS) for p, o in seq]
    assert len(set(lines)) == 2_100
    again = chain.visited(nparts, elems, salt=7, start=99, steps=10, first_step=2_100)
    assert [(p, o // chain.LINE_WORDS) for p, o in again] == lines[:10]   # then it wraps


def test_word_within_the_line_follows_the_value_read():
    """The line is the permutation's; which of its 16 words is read is h & 15, h hashing the value
    the previous step read, its step id and the history, so the load waits for the previous one."""
    nparts, elems, salt, start = 1, 1 << 14, 5, 3
    seq = chain.visited(nparts, elems, salt, start, 200)
    h = chain.mix64(start)
    for s, (part, offset) in enumerate(seq):
        assert offset % chain.LINE_WORDS == h & 15
        h = chain.mix64(((chain.word(part * elems + offset, salt) ^ h) + s) & MASK)


def test_chase_with_explicit_memory_equals_closed_form():
    nparts, elems, salt = 2, 4096, 0xABC
    mem = {}

    def memory(part, offset):
        mem[(part, offset)] = True
        return chain.word(part * elems + offset, salt)

    assert chain.chase(nparts, elems, salt, 9, 300, memory=memory) == chain.chase(nparts, elems, salt, 9, 300)
    assert len(mem) > 250


def test_chase_zero_steps():
    assert chain.chase(2, 100, 1, 4, 0) == (0, chain.mix64(4))


def test_a_later_step_range_continues_the_chain_lines():
    """Launches take consecutive step ranges: steps 300..599 read the lines steps 300..599 of one
    long chain read (the words within them differ only through the start value)."""
    whole = chain.visited(2, 1 << 12, 9, 1, 600)
    tail = chain.visited(2, 1 << 12, 9, 77, 300, first_step=300)
    assert [(p, o // 16) for p, o in tail] == [(p, o // 16) for p, o in whole[300:]]


def test_next_address_depends_on_the_step_id():
    """h = mix64((value ^ h) + s): the same value read at another step leads elsewhere."""
    a = chain.chase(1, 1 << 20, 0, 1, 50)
    b = chain.chase(1, 1 << 20, 0, 1, 51)
    assert a != b


CONFIGS = [
    # (nparts, part_elems, salt, start, steps, first_step)
    (1, 1024, 0, 0, 5000, 0),                     # the region read five times over
    (1, 1000, 0x5EED, 1, 5000, 3),                # not a power of two, nor a whole number of lines
    (3, 777, 12345, 99, 4000, 1 << 40),           # neither is nparts; a far first step
    (4, 1 << 12, (1 << 64) - 1, 7, 4000, 0),      # the largest salt
    (5, 16, 42, 3, 1000, 0),                      # one line per part
    (2, 12_345, 0xDEADBEEF, -4, 3000, 17),        # negative start: taken modulo 2**64
    (16, 100, 9, 0, 2000, 5),
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


@pytest.mark.parametrize("nparts, part_elems, salt, start, steps, first", CONFIGS)
def test_host_probe_equals_reference(host_probe_factory, nparts, part_elems, salt, start, steps, first):
    probe = host_probe_factory(nparts, part_elems, salt)
    assert probe.part_elems == part_elems and probe.nparts_used == nparts
    assert probe.words.dtype == np.uint64 and probe.words.size == nparts * part_elems
    # memory content is the closed form
    idx = [0, 1, nparts * part_elems - 1, (nparts * part_elems) // 2]
    assert [int(probe.words[i]) for i in idx] == [chain.word(i, salt) for i in idx]
    assert probe.run_chase(steps, start, first) == chain.chase(nparts, part_elems, salt, start, steps, first)
    verify_chain(probe, steps, start, first)


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
