"""harness.graphs.load: every view of every dataset keeps the bits the replaced loaders gave
(digests in graph_digests.json), one cache entry per graph, one graph at a time."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness import graphs
from harness.config import RunConfig
from harness.errors import HarnessError, SkipPoint
from harness.experiment import RunContext
from tests.datasets.graph_digests import DIGESTS, LOADED_AS, UNIFORM, field_digests, view_fields

STORED = json.loads(DIGESTS.read_text())
VIEWS_CHECKED = ("host", "structure", "fullbatch", "placement")


def context(seed: int = 0) -> RunContext:
    return RunContext(RunConfig(device="cpu", seed=seed))


def test_digests_were_taken_with_this_generator():
    from harness.datasets.plan import GENERATOR_VERSION

    assert STORED["generator_version"] == GENERATOR_VERSION, \
        "the stand-in generator changed: rewrite the digests (python -m tests.datasets.graph_digests)"


@pytest.mark.parametrize("name", sorted(n for n in STORED["scales"] if not graphs.is_uniform(n)))
def test_every_view_of_every_dataset_keeps_its_bits(name):
    scale = STORED["scales"][name]
    ctx = context()
    for view in VIEWS_CHECKED:
        graph = graphs.load(ctx, name, scale, LOADED_AS[view])
        assert field_digests(view_fields(graph, view)) == STORED["views"][view][name], (view, name)
    standin = graphs.load(ctx, name, scale, standin=True)         # the dataset tables' call
    assert field_digests(view_fields(standin, "host")) == STORED["views"]["host"][name]


def test_a_uniform_graph_keeps_its_bits_and_is_seeded():
    name, scale = UNIFORM
    graph = graphs.load(context(), name, scale, "structure")
    assert field_digests(view_fields(graph, "structure")) == STORED["views"]["structure"][name]
    assert graph.num_nodes == 2000 and graph.num_edges == int(graph.indptr[-1])
    assert np.array_equal(graph.train_idx, np.arange(2000))
    assert graphs.uniform_graph(name, 0.5, 0).num_nodes == 10_000
    other_seed = graphs.load(context(seed=1), name, scale, "structure")
    assert not np.array_equal(other_seed.indices[:100], graph.indices[:100])


def test_a_changed_array_changes_its_digest():
    graph = graphs.uniform_graph(*UNIFORM, seed=0)
    before = field_digests(view_fields(graph, "structure"))
    graph.indices[7] = (graph.indices[7] + 1) % graph.num_nodes
    after = field_digests(view_fields(graph, "structure"))
    assert {k for k in before if before[k] != after[k]} == {"indices"}
    assert field_digests({"a": np.zeros(3, np.int32)}) != field_digests({"a": np.zeros(3, np.int64)})


def test_one_graph_is_kept_and_what_was_built_on_it_closes_with_it():
    ctx = context()
    first = graphs.load(ctx, "uniform:400:4", 1.0, "structure")
    assert graphs.load(ctx, "uniform:400:4", 1.0, "structure") is first          # keyed once
    closed = []

    class Sampler:
        def close(self):
            closed.append("sampler")

    sampler = graphs.built_on(ctx, first, ("sampler", "x"), Sampler)
    assert graphs.built_on(ctx, first, ("sampler", "x"), Sampler) is sampler
    graphs.built_on(ctx, first, ("share", 0), Sampler, alone=True)              # one share at a time
    assert closed == ["sampler"]
    graphs.load(ctx, "uniform:400:5", 1.0, "structure")
    assert closed == ["sampler", "sampler"]
    assert [k[0] for k in ctx.cache] == [graphs.GRAPH]
    assert graphs.load(ctx, "uniform:400:4", 1.0, "structure") is not first      # reloaded after the other


def test_views_refuse_what_they_cannot_give():
    ctx = context()
    with pytest.raises(HarnessError, match="unknown graph view"):
        graphs.load(ctx, "cora", 1.0, "csr")
    with pytest.raises(HarnessError, match="only the 'structure' view"):
        graphs.load(ctx, "uniform:400:4", 1.0, "host")
    for bad in ("uniform:1:5", "uniform:100", "uniform:x:5", "uniform:100:0"):
        with pytest.raises(HarnessError, match="uniform graph is"):
            graphs.parse_uniform(bad)
    with pytest.raises(SkipPoint, match="uniform graph is"):       # a graph that cannot exist skips its point
        graphs.load(ctx, "uniform:1:5", 1.0, "structure")
    with pytest.raises(SkipPoint, match="too few for its 6 classes"):
        graphs.load(ctx, "citeseer", 0.001)
    featureless = graphs.uniform_graph("uniform:400:4", 1.0, 0)
    with pytest.raises(ValueError, match="no node features"):
        graphs.full_batch(featureless)


def test_fullbatch_converts_half_precision_features_and_checks_labels():
    from tests.pipelines.targets import planted_graph

    graph = planted_graph()
    half = graph.__class__(**{**graph.__dict__, "features": graph.features.astype(np.float16),
                              "meta": {**graph.meta, "feature_dtype": "float16"}})
    full = graphs.full_batch(half)
    assert full.features.dtype == np.float32 and full.feature_dtype == "float32"
    assert np.array_equal(full.features, graph.features.astype(np.float16).astype(np.float32))
    assert full.train_idx.dtype == np.int64 and full.num_classes == graph.num_classes
    multi = graph.__class__(**{**graph.__dict__, "labels": np.zeros((graph.num_nodes, 3), np.int64)})
    with pytest.raises(ValueError, match="single-label"):
        graphs.full_batch(multi)


def test_a_stand_in_override_is_a_graph_of_its_own():
    ctx = context()
    plain = graphs.load(ctx, "cora", 0.5)
    strong = graphs.load(ctx, "cora", 0.5, feature_signal=16.0)
    assert strong is not plain and strong.path != plain.path                  # keyed and cached apart
    assert not np.array_equal(strong.features, plain.features)
    for field in ("indptr", "indices", "labels", "train_idx"):                 # the same graph otherwise
        assert np.array_equal(getattr(strong, field), getattr(plain, field)), field
    assert graphs.load(ctx, "cora", 0.5, feature_signal=16.0) is strong
    with pytest.raises(HarnessError, match="takes no stand-in overrides"):
        graphs.load(ctx, "uniform:400:4", 1.0, "structure", feature_signal=16.0)
