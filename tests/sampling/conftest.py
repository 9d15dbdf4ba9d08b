"""Fixtures of the sampling tests."""

from __future__ import annotations

import random

import pytest
import torch

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
