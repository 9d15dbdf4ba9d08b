"""The `pyg` baseline's plumbing, with a stand-in for torch-sparse's neighbor_sample op.

pyg-lib and torch-sparse have no builds for this CPU image's torch, so PyG's sampler cannot
run here. This registers a small Python ``torch_sparse::neighbor_sample`` with torch-sparse's
semantics (seeds first, new nodes appended in order, (row, col) local ids) and checks that our
adapter and the loader point turn PyG's outputs into the sampler interface. The real op runs on
the GPU machines (tests/gpu/test_sampling_gpu.py, the experiments).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

from . import reference as ref  # noqa: E402

_LIB = None


def _fake_neighbor_sample(colptr, row, input_node, num_neighbors, replace, directed):
    gen = random.Random(int(torch.randint(0, 2**31, (1,))))
    nodes = input_node.tolist()
    local = {v: i for i, v in enumerate(nodes)}
    rows, cols, edges = [], [], []
    begin, end = 0, len(nodes)
    for k in num_neighbors:
        for i in range(begin, end):
            lo, hi = int(colptr[nodes[i]]), int(colptr[nodes[i] + 1])
            picks = range(lo, hi) if (k < 0 or hi - lo <= k) else gen.sample(range(lo, hi), k)
            for e in picks:
                u = int(row[e])
                if u not in local:
                    local[u] = len(nodes)
                    nodes.append(u)
                rows.append(local[u])
                cols.append(i)
                edges.append(e)
        begin, end = end, len(nodes)
    t = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
    return t(nodes), t(rows), t(cols), t(edges)


@pytest.fixture
def fake_torch_sparse(monkeypatch):
    global _LIB
    import torch_geometric.typing as tgt

    if not tgt.WITH_TORCH_SPARSE and not tgt.WITH_PYG_LIB and _LIB is None:
        _LIB = torch.library.Library("torch_sparse", "DEF")
        _LIB.define("neighbor_sample(Tensor colptr, Tensor row, Tensor input_node, int[] num_neighbors, "
                    "bool replace, bool directed) -> (Tensor, Tensor, Tensor, Tensor)")
        _LIB.impl("neighbor_sample", _fake_neighbor_sample, "CPU")
    if not tgt.WITH_PYG_LIB:
        monkeypatch.setattr(tgt, "WITH_TORCH_SPARSE", True)
    yield


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

    indptr, indices = ref.random_graph(400, seed=6, max_degree=20)
    graph = SimpleNamespace(indptr=indptr, indices=indices, train_idx=np.arange(0, 400, 2))
    out = loader_point(None, graph, {"fanouts": [4, 3], "batch": 32, "workers": 0}, 1, 4, seed=0)
    assert [m.metric for m in out] == ["time", "edges_per_s"]
    assert out[0].stats.repeats == 4 and out[1].stats.median > 0
