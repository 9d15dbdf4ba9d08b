"""The sampler interface (impls/sampling: the ``Sampler`` Protocol), checked on every registered
sampler that runs on the CPU, through its registry factory: ours, the reservoir KHop XGNN starts
from, DGL's (its CPU build is installed here) and PyG's (with the stand-in torch-sparse op of
conftest.py, where torch_geometric imports), and any sampler added later.

Not here: the random walks (``pinsage_walk``: its contract is the top visited nodes of random
walks, tested in test_random_walk.py) and the CUDA-only ones (``wholegraph_lib``:
tests/gpu/test_sampling_gpu.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness import registry
from harness.needs import detect

from . import reference as ref

# every registered neighbour sampler that has a CPU path, and the reservoir KHop (khop_batched's
# variant="original")
SAMPLERS = tuple(s.impl for s in registry.series("sampling", without=("walks",))
                 if "cpu" in s.spec.needs.devices) + ("khop_original",)


def test_every_kind_of_sampler_is_checked():
    assert {"path_doubling", "reservoir", "khop_batched", "dgl", "pyg"} <= set(SAMPLERS)     # others may come


@pytest.fixture
def make(request):
    """make(indptr, indices) -> the sampler named by the test's ``name`` parameter, on the CPU,
    checked against the interface's contract."""
    name = request.node.callspec.params["name"]
    impl, options = ("khop_batched", {"variant": "original"}) if name == "khop_original" else (name, {})
    spec = registry.get_impl("sampling", impl)
    if "torch_geometric" in spec.needs.packages:            # PyG with the stand-in torch-sparse op
        pytest.importorskip("torch_geometric")
        request.getfixturevalue("fake_torch_sparse")
    else:
        reason = spec.needs.unmet(detect(), "cpu")
        if reason:
            pytest.skip(reason)

    def build(indptr, indices):
        sampler = spec.factory("cpu", indptr, indices, **options)
        assert isinstance(sampler, registry.contract_of(spec))
        return sampler
    return build


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
