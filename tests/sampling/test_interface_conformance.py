"""The sampler interface (impls/sampling/samplers.py), checked on every sampler that runs on the
CPU through its registry factory: ours, the reservoir KHop XGNN starts from, DGL's (its CPU build
is installed here) and PyG's (with the stand-in torch-sparse op of conftest.py, where
torch_geometric imports).

Not here: ``pinsage_walk`` (its contract is the top visited nodes of random walks, tested in
test_random_walk.py) and ``wholegraph_lib`` (CUDA only: tests/gpu/test_sampling_gpu.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness import registry

from . import reference as ref

SAMPLERS = ("path_doubling", "reservoir", "khop_batched", "khop_original", "dgl", "pyg")


@pytest.fixture
def make(request):
    """make(indptr, indices) -> the sampler named by the test's ``name`` parameter, on the CPU."""
    name = request.node.callspec.params["name"]
    if name == "dgl":
        from harness.dgl_compat import import_dgl

        try:
            import_dgl()
        except ImportError as exc:
            pytest.skip(str(exc))
    if name == "pyg":
        pytest.importorskip("torch_geometric")
        request.getfixturevalue("fake_torch_sparse")
    registry.discover()
    impl, options = ("khop_batched", {"variant": "original"}) if name == "khop_original" else (name, {})
    factory = registry.get_impl("sampling", impl).factory
    return lambda indptr, indices: factory("cpu", indptr, indices, **options)


@pytest.fixture(scope="module")
def graph():
    return ref.random_graph(600, seed=11, max_degree=40)


def expected_all(indptr, indices, seeds) -> tuple[list[int], list[int]]:
    offsets, out = [0], []
    for v in seeds:
        out += indices[indptr[v]:indptr[v + 1]].astype(np.int64).tolist()
        offsets.append(len(out))
    return offsets, out


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("fanout", [1, 4, 25])
def test_min_degree_fanout_distinct_neighbours_per_seed_copy(make, graph, name, fanout):
    """Isolated, degree-1, hub and repeated seeds: each position gets min(degree, fanout) distinct
    neighbours of its own list, a short list whole and in CSR order."""
    indptr, indices = graph
    seeds = np.concatenate([np.arange(0, 600, 5), [0, 1, 2, 2, 2, 7, 7]])
    offsets, neighbors = make(indptr, indices).sample(torch.from_numpy(seeds), fanout, seed=3)
    assert offsets.dtype == torch.int64 and neighbors.dtype == torch.int64
    ref.check_sample(indptr, indices, seeds, fanout, offsets.numpy(), neighbors.numpy())


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("fanout", [0, -1])
def test_fanout_zero_or_less_takes_every_neighbour_in_csr_order(make, graph, name, fanout):
    indptr, indices = graph
    seeds = [5, 0, 2, 9, 2, 1]
    offsets, neighbors = make(indptr, indices).sample(torch.tensor(seeds), fanout, seed=1)
    want_offsets, want = expected_all(indptr, indices, seeds)
    assert offsets.tolist() == want_offsets and neighbors.tolist() == want


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", SAMPLERS)
def test_a_repeated_seed_is_sampled_at_each_of_its_positions(make, name):
    """Node 0 has 3 neighbours, node 1 has 2: seeds [0, 0, 1] with fanout 2 give two neighbours to
    each position (offsets [0, 2, 4, 6]), not four to the first copy and none to the second."""
    indptr, indices = np.array([0, 3, 5, 6]), np.array([1, 2, 0, 0, 2, 1], dtype=np.int64)
    offsets, neighbors = make(indptr, indices).sample(torch.tensor([0, 0, 1]), 2, seed=5)
    assert offsets.tolist() == [0, 2, 4, 6]
    for b, v in enumerate([0, 0, 1]):
        got = neighbors[offsets[b]:offsets[b + 1]].tolist()
        assert len(set(got)) == 2 and set(got) <= set(indices[indptr[v]:indptr[v + 1]].tolist())


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", SAMPLERS)
def test_no_seeds_and_int32_seeds(make, graph, name):
    indptr, indices = graph
    s = make(indptr, indices)
    offsets, neighbors = s.sample(torch.empty(0, dtype=torch.int64), 5, seed=1)
    assert offsets.tolist() == [0] and neighbors.numel() == 0
    seeds = np.array([3, 4, 4], dtype=np.int32)
    offsets, neighbors = s.sample(torch.from_numpy(seeds), 3, seed=1)
    ref.check_sample(indptr, indices, seeds, 3, offsets.numpy(), neighbors.numpy())


def test_edges_by_seed_rejects_what_breaks_the_interface():
    """The DGL adapter's regrouping refuses edges that do not add up to min(degree, fanout) per
    copy, or that give one copy the same edge twice (a library that changed its semantics)."""
    from harness.errors import HarnessError
    from impls.sampling.baselines import edges_by_seed

    seeds = torch.tensor([0, 0])
    counts = torch.tensor([2, 2])
    src = torch.tensor([1, 2, 1, 0])
    dst = torch.zeros(4, dtype=torch.int64)
    offsets, out = edges_by_seed(seeds, counts, src, dst, torch.tensor([0, 1, 0, 2]))
    assert offsets.tolist() == [0, 2, 4] and out.tolist() == [1, 2, 1, 0]
    with pytest.raises(HarnessError, match="expected"):
        edges_by_seed(seeds, counts, src[:3], dst[:3], torch.tensor([0, 1, 0]))
    with pytest.raises(HarnessError, match="twice"):
        edges_by_seed(seeds, counts, src, dst, torch.tensor([0, 0, 1, 2]))
