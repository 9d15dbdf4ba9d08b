"""The `pyg` baseline's plumbing, with a stand-in for torch-sparse's neighbor_sample op.

pyg-lib and torch-sparse have no builds for this CPU image's torch, so PyG's sampler cannot
run here. The ``fake_torch_sparse`` fixture (conftest.py) registers a small Python
``torch_sparse::neighbor_sample`` with torch-sparse's semantics (seeds first, new nodes appended
in order, (row, col) local ids) and this module checks that our
adapter and the loader point turn PyG's outputs into the sampler interface. The real op runs on
the GPU machines (tests/gpu/test_sampling_gpu.py, the experiments).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

from . import reference as ref  # noqa: E402


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_pyg_sampler_in_our_interface(fake_torch_sparse):
    from impls.sampling.baselines import PygSampler

    indptr, indices = ref.random_graph(500, seed=4, max_degree=30)
    s = PygSampler("cpu", indptr, indices)
    seeds = np.arange(0, 500, 3)
    offsets, neighbors = s.sample(torch.from_numpy(seeds), 7, seed=1)
    ref.check_sample(indptr, indices, seeds, 7, offsets.numpy(), neighbors.numpy())
    stats = s.sample_minibatch(torch.from_numpy(seeds), [5, 3], seed=1)
    assert stats["nodes"] >= seeds.size and stats["edges"] > 0
    assert "NeighborSampler" in s.describe()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_neighbor_loader_point(fake_torch_sparse):
    from experiments.wholegraph.sampling import loader_point
    from harness import registry

    indptr, indices = ref.random_graph(400, seed=6, max_degree=20)
    graph = SimpleNamespace(indptr=indptr, indices=indices, train_idx=np.arange(0, 400, 2))
    out = loader_point(registry.get_impl("sampling", "pyg"), graph, {"fanouts": [4, 3], "batch": 32, "workers": 0},
                       1, 4, seed=0)
    assert [m.metric for m in out] == ["time", "edges_per_s"]
    assert out[0].stats.repeats == 4 and out[1].stats.median > 0
