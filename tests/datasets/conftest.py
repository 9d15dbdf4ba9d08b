"""Fixtures shared by the dataset tests: a few small stand-ins, generated once per session."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def products_small():
    """ogbn-products at scale 0.02: 49K nodes, 2.5M stored edges, ~1K nodes per class."""
    from harness.datasets import generate

    return generate("ogbn-products", 0.02, seed=0, device="cpu")


@pytest.fixture(scope="session")
def products_tiny():
    from harness.datasets import generate

    return generate("ogbn-products", 0.002, seed=0, device="cpu")


@pytest.fixture(autouse=True)
def _isolated_data_root(monkeypatch, tmp_path):
    # No test may touch ./data, a user's HARNESS_DATA_ROOT or the harness's cache.
    monkeypatch.setenv("HARNESS_DATA_ROOT", str(tmp_path / "default-root"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))


def csr_edges(graph) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of every stored edge."""
    src = np.repeat(np.arange(graph.num_nodes, dtype=np.int64), np.diff(graph.indptr))
    return src, np.asarray(graph.indices, dtype=np.int64)


def mean_neighbour_features(graph) -> np.ndarray:
    """One hop of mean aggregation (what a GraphSAGE-mean/GCN layer sees), in numpy."""
    import warnings

    import torch

    features = torch.from_numpy(np.asarray(graph.features, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        adjacency = torch.sparse_csr_tensor(
            torch.from_numpy(np.asarray(graph.indptr)),
            torch.from_numpy(np.asarray(graph.indices, dtype=np.int64)),
            torch.ones(graph.num_edges), size=(graph.num_nodes, graph.num_nodes),
            check_invariants=False)
    degree = torch.from_numpy(np.maximum(np.diff(graph.indptr), 1).astype(np.float32))
    return (adjacency @ features / degree[:, None]).numpy()


def nearest_centroid_accuracy(x: np.ndarray, labels: np.ndarray, train: np.ndarray,
                              test: np.ndarray) -> float:
    classes = int(labels.max()) + 1
    centroids = np.stack([x[train][labels[train] == c].mean(axis=0) for c in range(classes)])
    distances = ((x[test][:, None, :] - centroids[None]) ** 2).sum(axis=-1)
    return float((distances.argmin(axis=1) == labels[test]).mean())
