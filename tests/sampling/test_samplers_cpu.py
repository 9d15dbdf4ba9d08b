"""Samplers on the CPU (numba): Algorithm 1, correctness, uniformity, reproducibility, counting."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from impls.sampling import rng
from impls.sampling.samplers import KHopBatchedSampler, PathDoublingSampler, ReservoirSampler

from . import reference as ref

SAMPLERS = {
    "path_doubling": lambda *a, **k: PathDoublingSampler(*a, **k),
    "reservoir": lambda *a, **k: ReservoirSampler(*a, **k),
    "khop_batched": lambda *a, **k: KHopBatchedSampler(*a, **k),
    "khop_original": lambda *a, **k: KHopBatchedSampler(*a, variant="original", **k),
}


@pytest.fixture(scope="module")
def graph():
    return ref.random_graph(3000, seed=5, max_degree=80)


def test_algorithm1_is_the_fisher_yates_shuffle_of_its_draws():
    """WholeGraph Algorithm 1 (chain update + path doubling) gives exactly the sequential partial
    Fisher-Yates output for the same draws r[i] = random(N - 1 - i), including repeated draws."""
    from impls.sampling import cpu

    key = np.uint64(rng.stream_key(11))
    cases = [(N, M) for M in (1, 2, 3, 5, 8, 10, 17, 30, 64) for N in (M + 1, M + 2, 2 * M, 5 * M + 3, 1000)]
    for b, (N, M) in enumerate(cases):
        rounds = max(0, (M - 1).bit_length())
        scratch = [np.empty(M, np.uint64), np.empty(M, np.uint64)] + [np.empty(M, np.int64) for _ in range(4)]
        cpu._path_doubling_one(key, b, N, M, rounds, *scratch)
        res = scratch[-1]
        draws = [rng.uniform(int(key), b, i, N - i) for i in range(M)]
        assert res.tolist() == rng.fisher_yates_reference(draws, N), (N, M)
        assert len(set(res.tolist())) == M and 0 <= res.min() and res.max() < N


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("fanout", [1, 5, 30, 100])
def test_samples_are_subsets_without_repeats(graph, name, fanout):
    indptr, indices = graph
    s = SAMPLERS[name]("cpu", indptr, indices)
    seeds = np.concatenate([np.arange(0, 3000, 7), [0, 1, 2, 2, 2]])    # isolated, degree 1, repeated
    offsets, neighbors = s.sample(torch.from_numpy(seeds), fanout, seed=42)
    assert offsets.dtype == torch.int64 and neighbors.dtype == torch.int64
    ref.check_sample(indptr, indices, seeds, fanout, offsets.numpy(), neighbors.numpy())


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
def test_equals_the_pure_python_reference(name, id_dtype):
    indptr, indices = ref.random_graph(400, seed=9, max_degree=50, id_dtype=id_dtype)
    seeds = np.arange(400)
    for fanout in (3, 10, 33):
        offsets, neighbors = SAMPLERS[name]("cpu", indptr, indices).sample(seeds, fanout, seed=7)
        ro, rn = ref.REFERENCES[name](indptr, indices, seeds, fanout, 7)
        assert np.array_equal(offsets.numpy(), ro) and np.array_equal(neighbors.numpy(), rn), (name, fanout)


def _chi2(counts, expected, scale=1.0):
    counts = np.asarray(counts, dtype=np.float64)
    return float(((counts - expected) ** 2 / (expected * scale)).sum())


def inclusion_chi2(counts, trials, degree, fanout) -> float:
    """Chi-square of per-neighbor inclusion counts under uniform sampling of fanout of degree:
    one trial's indicators have covariance p(1-p) d/(d-1) (I - J/d), p = fanout/degree, so
    sum (c_i - T p)^2 / (T p (1-p) d/(d-1)) is chi-square with d - 1 degrees of freedom."""
    p = fanout / degree
    return _chi2(counts, trials * p, (1 - p) * degree / (degree - 1))


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("degree,fanout", [(20, 5), (7, 6), (50, 30)])
def test_inclusion_frequency_is_uniform(name, degree, fanout):
    """4000 independent samples (one batch, 4000 copies of the same seed, fixed seed): each
    neighbor's inclusion count against 4000 * fanout / degree; reject at chi-square p < 0.001
    (threshold chi2.ppf(0.999, degree - 1))."""
    indptr, indices = ref.star_graph(degree)
    trials = 4000
    _, neighbors = SAMPLERS[name]("cpu", indptr, indices).sample(np.zeros(trials, np.int64), fanout, seed=2024)
    counts = np.bincount(neighbors.numpy() - 1, minlength=degree)
    assert counts.sum() == trials * fanout
    stat = inclusion_chi2(counts, trials, degree, fanout)
    assert stat < ref.CHI2_999[degree - 1], f"chi2 {stat:.1f} with {degree - 1} degrees of freedom"


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_every_subset_is_equally_likely(name):
    """Sampling without replacement is uniform over subsets: 5 choose 2 = 10 subsets, 6000 draws."""
    indptr, indices = ref.star_graph(5)
    trials = 6000
    offsets, neighbors = SAMPLERS[name]("cpu", indptr, indices).sample(np.zeros(trials, np.int64), 2, seed=77)
    pairs = np.sort(neighbors.numpy().reshape(trials, 2), axis=1)
    index = {p: i for i, p in enumerate(itertools.combinations(range(1, 6), 2))}
    counts = np.bincount([index[tuple(p)] for p in pairs.tolist()], minlength=10)
    stat = _chi2(counts, trials / 10)
    assert stat < ref.CHI2_999[9], f"chi2 {stat:.1f} over 10 subsets"


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_fixed_seed_gives_identical_output(graph, name):
    indptr, indices = graph
    seeds = torch.arange(0, 3000, 3)
    a = SAMPLERS[name]("cpu", indptr, indices).sample(seeds, 10, seed=123)
    b = SAMPLERS[name]("cpu", indptr, indices).sample(seeds, 10, seed=123)
    c = SAMPLERS[name]("cpu", indptr, indices).sample(seeds, 10, seed=124)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    s = SAMPLERS[name]("cpu", indptr, indices)
    assert torch.equal(s.sample(seeds, 10, generator=g1)[1], s.sample(seeds, 10, generator=g2)[1])
    s1, s2 = SAMPLERS[name]("cpu", indptr, indices, seed=3), SAMPLERS[name]("cpu", indptr, indices, seed=3)
    assert torch.equal(s1.sample(seeds, 10)[1], s2.sample(seeds, 10)[1])     # the factory seed fixes a run


def test_all_neighbors_and_bad_input(graph):
    indptr, indices = graph
    s = PathDoublingSampler("cpu", indptr, indices)
    seeds = np.array([5, 0, 2, 9])
    offsets, neighbors = s.sample(seeds, -1)
    expect = np.concatenate([indices[indptr[v]:indptr[v + 1]] for v in seeds])
    assert np.array_equal(neighbors.numpy(), expect) and offsets[-1] == expect.size
    with pytest.raises(HarnessError, match="out of range"):
        s.sample(torch.tensor([0, 3000]), 5)
    with pytest.raises(HarnessError, match="out of range"):
        s.sample(torch.tensor([-1]), 5)
    with pytest.raises(HarnessError, match="fanout"):
        s.sample(torch.tensor([0]), 5000)
    with pytest.raises(HarnessError, match="int32 or int64"):
        s.sample(torch.tensor([0.0]), 5)
    empty = s.sample(torch.empty(0, dtype=torch.int64), 5)
    assert empty[0].tolist() == [0] and empty[1].numel() == 0
    with pytest.raises(HarnessError, match="engine"):
        PathDoublingSampler("cpu", indptr, indices, engine="kernel")
    with pytest.raises(HarnessError):
        PathDoublingSampler("cpu", indptr, indices[:-1])


def test_remote_counting_model(graph):
    indptr, indices = graph
    seeds = np.arange(3000)
    stats = {}
    for name in ("khop_original", "khop_batched", "path_doubling"):
        s = SAMPLERS[name]("cpu", indptr, indices, count_remote=True, count_world=4, count_rank=1)
        s.sample(seeds, 15, seed=1)
        stats[name] = s.remote_stats()
        s.reset_counters()
        assert s.remote_stats()["all_sectors"] == 0
    o, b = stats["khop_original"], stats["khop_batched"]
    assert 0 < b["remote_bytes"] < o["remote_bytes"], (b, o)
    assert b["remote_useful_bytes"] < o["remote_useful_bytes"]          # no replacement reads
    # a quarter of the rows belong to rank 1: roughly three quarters of the traffic is remote
    assert 0.6 < o["remote_sectors"] / o["all_sectors"] < 0.9
    # useful bytes: every sampled id once (batched, path doubling) plus two indptr entries per seed
    counts = np.minimum(np.diff(indptr), 15)
    assert b["all_useful_bytes"] == counts.sum() * 4 + 16 * seeds.size
    assert stats["path_doubling"]["all_useful_bytes"] == b["all_useful_bytes"]
    one = KHopBatchedSampler("cpu", indptr, indices, count_remote=True)     # one rank: nothing remote
    one.sample(seeds, 15, seed=1)
    assert one.remote_stats()["remote_bytes"] == 0 and one.remote_stats()["all_bytes"] > 0
