"""The one-device baselines train the same model: single_gpu, pyg (GCNConv) and dgl (GraphConv)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from harness import registry
from harness.needs import detect
from impls.fullbatch.model import ModelConfig

from .reference import MODELS, DenseReference, assert_close_to_reference, make_test_graph


def _build(impl, model, **options):
    return registry.get_impl("fullbatch", impl).factory(make_test_graph(), model, device="cpu", **options)


@pytest.mark.parametrize("name", list(MODELS))
def test_single_gpu_matches_reference(name):
    ref = DenseReference(make_test_graph(), MODELS[name])
    trainer = _build("single_gpu", MODELS[name])
    assert_close_to_reference(*trainer.compute_gradients(), ref.gradients(), label=name)
    losses = []
    for _ in range(3):
        trainer.train_epoch()
        losses.append(trainer.loss_value())
    np.testing.assert_allclose(losses, ref.adam_losses(3)[0], rtol=2e-5)


@pytest.mark.skipif(importlib.util.find_spec("torch_geometric") is None,
                    reason="torch_geometric is not installed")
@pytest.mark.parametrize("adjacency", ["edge_index", "sparse"])
def test_pyg_gcnconv_matches_reference(adjacency):
    model = MODELS["spmm_first_middle"]
    trainer = _build("pyg", model, adjacency=adjacency)
    assert_close_to_reference(*trainer.compute_gradients(), DenseReference(make_test_graph(), model).gradients(),
                              label=f"pyg {adjacency}")


def test_dgl_is_a_clear_skip_without_dgl():
    spec = registry.get_impl("fullbatch", "dgl")
    reason = spec.needs.unmet(detect(), "cpu", 1)
    if importlib.util.find_spec("dgl") is None:
        assert reason and "dgl" in reason
    else:
        assert reason is None
        model = ModelConfig(2, 8)
        trainer = _build("dgl", model)
        assert_close_to_reference(*trainer.compute_gradients(),
                                  DenseReference(make_test_graph(), model).gradients(), label="dgl")


def test_registry_lists_the_fullbatch_implementations():
    names = {s.name for s in registry.impl_specs("fullbatch")}
    assert names == {"mggcn", "cagnet_1d", "single_gpu", "pyg", "dgl"}
    assert registry.get_impl("fullbatch", "cagnet_1d").reimplements == "CAGNET"
    assert registry.get_impl("fullbatch", "pyg").needs.packages == ("torch_geometric",)
