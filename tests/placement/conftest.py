"""Fixtures of the placement tests (graphs in placement_graphs.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.placement.placement_graphs import ICS22_EDGES, csr_from_edges, random_graph


@pytest.fixture
def ics22_graph():
    return csr_from_edges(6, ICS22_EDGES)


@pytest.fixture
def small_graph():
    indptr, indices = random_graph(400, 8, seed=3)
    train = np.random.default_rng(4).choice(400, 120, replace=False)
    return indptr, indices, np.sort(train)
