"""Stand-ins: deterministic, the right size and shape, symmetric, clean, learnable."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import csr_edges, mean_neighbour_features, nearest_centroid_accuracy
from harness.datasets import generate, get
from harness.datasets.backends import NumbaBackend, TorchBackend
from harness.datasets.cache import CacheWriter
from harness.datasets.generators import plan_for, write_standin
from harness.datasets.stats import degree_stats
from harness.errors import HarnessError

ARRAYS = ("indptr", "indices", "labels", "train_idx", "val_idx", "test_idx", "features")


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ARRAYS)


def test_same_seed_same_graph_and_other_seed_another(products_tiny):
    again = generate("ogbn-products", 0.002, seed=0, device="cpu")
    other = generate("ogbn-products", 0.002, seed=1, device="cpu")
    assert _same(products_tiny, again)
    assert not np.array_equal(products_tiny.indices, other.indices)
    assert not np.array_equal(products_tiny.features, other.features)
    assert not np.array_equal(products_tiny.train_idx, other.train_idx)


def _write(plan, backend, tmp_path, tag):
    writer = CacheWriter(tmp_path / tag)
    write_standin(plan, writer, backend)
    return {f: np.fromfile(writer.path(f), dtype=np.dtype(e["dtype"]))
            for f, e in writer.entries.items()}


def test_chunking_buckets_and_backend_do_not_change_the_graph(tmp_path):
    # The GPU path's code at a size a CPU test can afford: tiny draw chunks, many row buckets,
    # torch instead of numba.  Everything must come out bit-identical.
    plan = plan_for("ogbn-products", 0.001, seed=3)
    reference = _write(plan, NumbaBackend(), tmp_path, "numba")
    chunked = NumbaBackend()
    chunked.chunk_draws, chunked.bucket_keys, chunked.feature_chunk_values = 977, 9000, 1234
    torch_chunked = TorchBackend("cpu")
    torch_chunked.chunk_draws, torch_chunked.bucket_keys, torch_chunked.feature_chunk_values = 1511, 7000, 999
    resident = TorchBackend("cpu")                  # buckets kept as device tensors, as on a GPU
    resident.chunk_draws, resident.bucket_keys = 2003, 5000
    resident.fits_on_device = lambda nbytes: True
    for tag, backend in (("chunked", chunked), ("torch", torch_chunked), ("resident", resident)):
        other = _write(plan, backend, tmp_path, tag)
        assert other.keys() == reference.keys()
        for field in reference:
            assert np.array_equal(other[field], reference[field]), (tag, field)


def test_node_and_edge_counts_are_exact(products_small):
    spec = get("ogbn-products")
    assert products_small.num_nodes == round(spec.nodes * 0.02)
    stored = round(spec.standin.stored_edges * 0.02)
    assert products_small.num_edges == stored - stored % 2
    assert products_small.indptr[-1] == len(products_small.indices) == products_small.num_edges


def test_symmetric_without_loops_or_duplicates(products_small):
    g = products_small
    src, dst = csr_edges(g)
    assert not np.any(src == dst)
    keys = src * g.num_nodes + dst
    assert np.all(np.diff(keys) > 0)                        # sorted rows, no duplicates
    back = np.sort(dst * g.num_nodes + src)
    assert np.array_equal(keys, back)                       # every edge has its reverse


def test_directed_variant_is_not_symmetrized():
    g = generate("ogbn-arxiv", 0.05, seed=0, device="cpu")
    assert g.meta["symmetric"] is False
    spec = get("ogbn-arxiv")
    assert g.num_edges == round(spec.edges * 0.05)
    src, dst = csr_edges(g)
    keys = src * g.num_nodes + dst
    reverse = dst * g.num_nodes + src
    assert np.isin(reverse, keys).mean() < 0.5              # most reverse edges are absent
    assert not np.any(src == dst) and np.all(np.diff(keys) > 0)


def test_degrees_are_skewed_like_a_power_law(products_small):
    stats = degree_stats(products_small)
    assert stats["mean"] == pytest.approx(50.5, rel=0.01)
    assert stats["max"] > 10 * stats["mean"]
    assert stats["median"] < stats["mean"]
    plan = plan_for("ogbn-products", 0.02)
    assert stats["max"] == pytest.approx(plan.max_degree, rel=0.15)
    assert 2.1 < stats["tail_exponent"] < 3.2


def test_feature_shape_dtype_classes_and_splits(products_small):
    g = products_small
    assert g.features.shape == (g.num_nodes, 100) and g.features.dtype == np.float32
    assert g.num_classes == 47 and set(np.unique(g.labels)) == set(range(47))
    train, valid, test = get("ogbn-products").split.counts(g.num_nodes, get("ogbn-products").nodes)
    assert (len(g.train_idx), len(g.val_idx), len(g.test_idx)) == (train, valid, test)
    together = np.concatenate([g.train_idx, g.val_idx, g.test_idx])
    assert len(np.unique(together)) == len(together)        # disjoint
    assert np.all(np.diff(g.train_idx) > 0)


def test_labels_are_learnable_and_the_graph_carries_signal(products_small):
    g = products_small
    train, test = g.train_idx, g.test_idx[:4000]
    chance = 1 / 47
    raw = nearest_centroid_accuracy(np.asarray(g.features), g.labels, train, test)
    hop = nearest_centroid_accuracy(mean_neighbour_features(g), g.labels, train, test)
    assert raw > 5 * chance
    assert hop > 0.8 and hop > raw + 0.2
    src, dst = csr_edges(g)
    homophily = float((g.labels[src] == g.labels[dst]).mean())
    plan = plan_for("ogbn-products", 0.02)
    # Intra-community draws, plus inter draws that land in the same community by chance.
    expected = plan.intra_fraction + (1 - plan.intra_fraction) / plan.num_classes
    assert homophily == pytest.approx(expected, abs=0.02)
    # At full size no community is too small for the configured homophily.
    assert plan_for("ogbn-products", 1.0).intra_fraction == pytest.approx(
        get("ogbn-products").standin.homophily, abs=0.01)


def test_random_feature_datasets_are_learnable_through_the_graph():
    # XGNN's CF has random features; the stand-in's barely beat chance alone, the graph carries it.
    g = generate("com-friendster", 0.001, seed=0, device="cpu")
    assert g.features.shape[1] == 140
    train, test = g.train_idx, g.test_idx
    raw = nearest_centroid_accuracy(np.asarray(g.features), g.labels, train, test)
    hop = nearest_centroid_accuracy(mean_neighbour_features(g), g.labels, train, test)
    assert raw < 0.1
    assert hop > 0.5                                        # chance is 0.01


def test_low_precision_features_are_the_float32_values_rounded():
    full = generate("cora", 1.0, seed=0, device="cpu")
    half = generate("cora", 1.0, seed=0, device="cpu", feature_dtype="float16")
    assert half.features.dtype == np.float16
    assert np.array_equal(half.features, full.features.astype(np.float16))
    bf16 = generate("cora", 1.0, seed=0, device="cpu", feature_dtype="bfloat16")
    restored = bf16.feature_tensor().float().numpy()
    assert np.allclose(restored, full.features, rtol=1 / 128, atol=1e-3)
    assert np.array_equal(bf16.indices, full.indices)


def test_shuffled_ids_keep_the_structure_and_relabel():
    blocked = generate("citeseer", 1.0, seed=0, device="cpu")
    shuffled = generate("citeseer", 1.0, seed=0, device="cpu", id_order="shuffled")
    assert shuffled.num_edges == blocked.num_edges
    assert np.array_equal(np.sort(np.bincount(blocked.labels)), np.sort(np.bincount(shuffled.labels)))
    assert not np.array_equal(blocked.labels, shuffled.labels)


def test_density_sweep_scales_edges_at_fixed_nodes():
    sparse = generate("bter-arxiv-x1", 0.05, seed=0, device="cpu")
    dense = generate("bter-arxiv-x8", 0.05, seed=0, device="cpu")
    assert sparse.num_nodes == dense.num_nodes
    assert dense.num_edges == pytest.approx(8 * sparse.num_edges, rel=0.001)
    assert dense.features.shape[1] == 512 and dense.num_classes == 40


def test_bad_scales_are_clear_errors():
    with pytest.raises(HarnessError, match="too few for its 7 classes"):
        plan_for("cora", 0.001)
    with pytest.raises(HarnessError, match="positive number"):
        plan_for("cora", -1.0)
    with pytest.raises(HarnessError, match="feature dtype"):
        plan_for("cora", 1.0, feature_dtype="int8")
