"""harness.dgl_compat: DGL 2.x imports under our torch with graphbolt kept from loading, and only then."""

from __future__ import annotations

import importlib.machinery
import sys

import pytest
import torch

from harness import dgl_compat
from harness.needs import _import_problem

DGL_PROBLEM = _import_problem("dgl")


def _fake_dgl(tmp_path, monkeypatch, libs=(), graphbolt=True):
    pkg = tmp_path / "dgl"
    (pkg / "graphbolt").mkdir(parents=True)
    if not graphbolt:
        (pkg / "graphbolt").rmdir()
    else:
        (pkg / "graphbolt" / "__init__.py").write_text("")
        for version in libs:
            (pkg / "graphbolt" / f"libgraphbolt_pytorch_{version}.so").write_bytes(b"")
    spec = importlib.machinery.ModuleSpec("dgl", None, is_package=True)
    spec.submodule_search_locations = [str(pkg)]
    monkeypatch.setattr(dgl_compat.importlib.util, "find_spec", lambda name: spec if name == "dgl" else None)


def test_graphbolt_built_for_other_torch_versions_is_kept_from_loading(tmp_path, monkeypatch):
    _fake_dgl(tmp_path, monkeypatch, libs=("2.0.0", "2.2.1"))
    reason = dgl_compat._graphbolt_missing()
    here = torch.__version__.split("+")[0]
    assert reason == f"DGL's graphbolt is built for torch 2.0.0-2.2.1 only, not {here}; the harness uses none of it"


def test_graphbolt_built_for_this_torch_or_absent_loads_as_it_is(tmp_path, monkeypatch):
    _fake_dgl(tmp_path, monkeypatch, libs=("2.0.0", torch.__version__.split("+")[0]))
    assert dgl_compat._graphbolt_missing() is None
    _fake_dgl(tmp_path / "old", monkeypatch, graphbolt=False)            # DGL 1.x: no graphbolt
    assert dgl_compat._graphbolt_missing() is None


def test_placeholder_says_why_on_any_attribute():
    stub = dgl_compat._Graphbolt("built for torch 2.0-2.2 only")
    with pytest.raises(AttributeError, match=r"dgl.graphbolt.FusedCSCSamplingGraph is not available: built for"):
        stub.FusedCSCSamplingGraph
    assert not hasattr(stub, "anything")


@pytest.mark.skipif(DGL_PROBLEM is None, reason="DGL is installed here")
def test_without_dgl_the_reason_is_one_line():
    assert DGL_PROBLEM == "package 'dgl' is not installed"
    with pytest.raises(ImportError, match="not installed"):
        dgl_compat.import_dgl()
    assert dgl_compat.status() is None


@pytest.mark.skipif(DGL_PROBLEM is not None, reason=str(DGL_PROBLEM))
def test_dgl_imports_and_samples_through_the_shim(capsys):
    dgl = dgl_compat.import_dgl()
    assert dgl.__version__.startswith("2.")
    if dgl_compat.shim_active():
        assert isinstance(sys.modules["dgl.graphbolt"], dgl_compat._Graphbolt)
        assert "graphbolt not loaded" in dgl_compat.status()
    g = dgl.graph((torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 3, 0])))
    loader = dgl.dataloading.DataLoader(g, torch.arange(4), dgl.dataloading.NeighborSampler([1, 1]), batch_size=2)
    seen = torch.cat([out for _, out, _ in loader])
    assert sorted(seen.tolist()) == [0, 1, 2, 3]
    from harness.cli import main

    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert "dgl: DGL 2." in out and "pipelines.dgl_host" in out
