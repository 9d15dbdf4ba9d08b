"""CPU-sized benchmarks of the hot paths, for the CI regression check.

Plain `pytest` runs each once as a test (benchmarks disabled by pyproject's addopts).
`python -m harness bench check` (called by `.ci/run`) runs this suite against the merge base's
code and this tree's code in alternating rounds on the same machine and flags a benchmark that
got slower (harness/bench.py says the rule).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from impls.core.layout import TableSpec, closed_form_rows

GROUP = "hot-paths"


def test_probe_host_chase(benchmark):
    from impls.probes import chain
    from impls.probes.host import HostChaseProbe

    probe = HostChaseProbe()
    probe.allocate(64 << 20, salt=3)
    probe.run_chase(1000, 1)  # compile outside the timing
    benchmark.group = GROUP
    result = benchmark(probe.run_chase, 20_000, 7)
    assert result == chain.chase(1, probe.part_elems, 3, 7, 20_000)


@pytest.mark.parametrize("impl,mode", [("p2p_shared", "chunked"), ("p2p_shared", "continuous"),
                                       ("nccl_alltoallv", None), ("host_copy", None)])
def test_gather_cpu(benchmark, cpu_rank, impl, mode):
    from harness import registry

    spec = TableSpec(20_000, 128, "float32")  # 10 MB: cache-resident, so page placement does not swing timings
    options = {"mode": mode} if mode else {}
    gatherer = registry.get_impl("gather", impl).factory(cpu_rank, spec, **options)
    try:
        ids = torch.randint(0, spec.num_rows, (20_000,), generator=torch.Generator().manual_seed(1))
        benchmark.group = GROUP
        rows = benchmark(gatherer.gather, ids, False)
        assert torch.equal(rows, closed_form_rows(ids, spec.row_elems, spec.torch_dtype))
    finally:
        gatherer.close()


def test_standin_generation(benchmark, tmp_path):
    from harness import datasets

    benchmark.group = GROUP
    graph = benchmark.pedantic(datasets.generate, args=("ogbn-products",),
                               kwargs={"scale": 0.002, "seed": 1}, rounds=5, iterations=1,
                               warmup_rounds=1)
    indptr, indices = np.asarray(graph.indptr), np.asarray(graph.indices)
    assert graph.num_nodes == round(2_449_029 * 0.002) and len(indptr) == graph.num_nodes + 1   # products' nodes
    assert indptr[-1] == len(indices) == graph.num_edges and np.all(np.diff(indptr) >= 0)
    assert 0 <= indices.min() and indices.max() < graph.num_nodes


def test_timing_stats(benchmark):
    from harness.timing import Stats

    samples = list(np.random.default_rng(1).random(10_000))
    benchmark.group = GROUP
    stats = benchmark(Stats.from_samples, samples)
    assert stats.repeats == 10_000


@pytest.fixture(scope="module")
def small_graph():
    from harness import datasets

    g = datasets.generate("ogbn-products", scale=0.004, seed=2)
    return torch.from_numpy(np.asarray(g.indptr)), torch.from_numpy(np.asarray(g.indices)).long()


@pytest.mark.parametrize("impl", ["path_doubling", "reservoir", "khop_batched"])
def test_sampler_cpu(benchmark, small_graph, impl):
    from harness import registry

    indptr, indices = small_graph
    sampler = registry.get_impl("sampling", impl).factory("cpu", indptr, indices)
    seeds = torch.randint(0, indptr.numel() - 1, (2000,), generator=torch.Generator().manual_seed(3))
    sampler.sample(seeds, 10, seed=1)  # compile outside the timing
    benchmark.group = GROUP
    offsets, neighbors = benchmark(sampler.sample, seeds, 10, seed=1)
    assert offsets.numel() == seeds.numel() + 1 and neighbors.numel() == int(offsets[-1])


def test_append_unique_cpu(benchmark):
    from harness import registry

    gen = torch.Generator().manual_seed(4)
    targets = torch.randperm(200_000, generator=gen)[:512]
    neighbors = torch.randint(0, 200_000, (512 * 30,), generator=gen)
    unique = registry.get_impl("unique", "hash_append").factory("cpu")
    unique.append_unique(targets, neighbors)
    benchmark.group = GROUP
    ids, local, _ = benchmark(unique.append_unique, targets, neighbors, False)
    assert torch.equal(ids[:512], targets) and torch.equal(ids[local], neighbors)


def test_placement_algorithm1(benchmark, small_graph):
    from harness import registry
    from impls.placement.hotness import degree_hotness
    from impls.placement.policies import PlacementProblem
    from impls.core.topology import h200

    indptr, indices = (t.numpy() for t in small_graph)
    n = len(indptr) - 1
    problem = PlacementProblem(indptr, indices, np.arange(0, n, 10), degree_hotness(indptr, indices),
                               h200(4), buffer_size=n // 10)
    policy = registry.get_impl("placement", "clique_opt").factory(alpha=0.3)
    benchmark.group = GROUP
    placement = benchmark(policy.place, problem)
    assert all(len(b) <= problem.buffer_size for b in placement.buffers)


def test_xgnn_placement_search_8g(benchmark):
    """XGNN's GGMS search on its 8-GPU topology (the paper: under 15 ms, Sec. 6.6)."""
    from impls.core import topology
    from impls.placement.xgnn_solver import solve

    t = topology.xgnn_topology("8G")
    benchmark.group = GROUP
    plan = benchmark(solve, t)
    assert plan.extra_partitions == [1] * 8 and set(plan.source[4].tolist()) == {2, 4, 5, 6, 7}


def test_fullbatch_gcn_epoch(benchmark, full_batch_epoch):
    epoch = full_batch_epoch(20_000, 64, 8, "2x64")
    benchmark.group = GROUP
    loss = benchmark(epoch)
    assert epoch.learned(loss)
