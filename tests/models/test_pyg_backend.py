"""Native and PyG backends compute the same models: same outputs and gradients once the
weights are copied across (skipped where torch_geometric is not installed)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torch_geometric")

from impls import models  # noqa: E402
from impls.core.blocks import set_edge_weight  # noqa: E402

from .util import planted_graph, random_block, sample_blocks  # noqa: E402

TOL = dict(rtol=1e-4, atol=1e-5)


def _random_blocks(seed: int, sizes=((70, 160), (25, 70), (9, 25)), max_deg=7):
    gen = torch.Generator().manual_seed(seed)
    blocks = [random_block(gen, nd, ns, max_deg) for nd, ns in sizes]
    for b in blocks:
        set_edge_weight(b, torch.randint(1, 5, (b.num_edges,), generator=gen).float())
    return blocks


def _pair(kind, in_dim, hidden, out_dim, layers, **kw):
    torch.manual_seed(11)
    native = models.build(kind, in_dim, hidden, out_dim, layers, backend="native", **kw)
    pyg = models.build(kind, in_dim, hidden, out_dim, layers, backend="pyg", **kw)
    assert native.state_dict().keys() == pyg.state_dict().keys()
    pyg.load_state_dict(native.state_dict())
    return native, pyg


def _run(model, blocks, x, r):
    model.zero_grad(set_to_none=True)
    xx = x.clone().requires_grad_()
    out = model(blocks, xx)
    (out * r).sum().backward()
    return out.detach(), xx.grad, {n: p.grad.clone() for n, p in model.named_parameters()}


def _assert_same(native, pyg, blocks, x):
    r = torch.randn(blocks[-1].num_dst, native(blocks, x).shape[1],
                    generator=torch.Generator().manual_seed(3))
    a, b = _run(native, blocks, x, r), _run(pyg, blocks, x, r)
    torch.testing.assert_close(a[0], b[0], **TOL)
    torch.testing.assert_close(a[1], b[1], **TOL)
    for name in a[2]:
        torch.testing.assert_close(a[2][name], b[2][name], **TOL, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("kind,kw", [
    ("gcn", {}), ("gcn", {"norm": "both"}), ("gcn", {"norm": "right"}),
    ("sage", {}), ("gat", {"heads": 4}), ("gat", {"heads": 2, "head_dim": 3}), ("pinsage", {}),
])
def test_native_equals_pyg_on_random_blocks(kind, kw):
    blocks = _random_blocks(21)
    x = torch.randn(blocks[0].num_src, 12, generator=torch.Generator().manual_seed(2))
    native, pyg = _pair(kind, 12, 16, 5, 3, **kw)
    native.eval(), pyg.eval()
    _assert_same(native, pyg, blocks, x)


@pytest.mark.parametrize("kind", models.KINDS)
def test_native_equals_pyg_on_sampled_blocks(kind):
    indptr, indices, feats, _ = planted_graph(num_nodes=300, seed=4)
    gen = torch.Generator().manual_seed(5)
    blocks = sample_blocks(indptr, indices, torch.arange(0, 300, 7), (5, 4), gen)
    x = feats[blocks[0].src_ids]
    native, pyg = _pair(kind, feats.shape[1], 8, 4, 2)
    _assert_same(native, pyg, blocks, x)


@pytest.mark.parametrize("impl,backward", [("sparse", "transpose"), ("segment", "atomic"),
                                           ("segment", "dup_split")])
def test_every_native_impl_equals_pyg_gat(impl, backward):
    blocks = _random_blocks(8)
    x = torch.randn(blocks[0].num_src, 6, generator=torch.Generator().manual_seed(2))
    native, pyg = _pair("gat", 6, 8, 3, 3, impl=impl, backward=backward)
    _assert_same(native, pyg, blocks, x)


def test_pyg_registry_entries_build_pyg_models():
    from harness.registry import get_impl

    spec = get_impl("models", "sage_pyg")
    assert spec.needs.packages == ("torch_geometric",)
    assert spec.needs.unmet(__import__("harness.needs", fromlist=["detect"]).detect()) is None
    m = spec.factory(8, 16, 3, 2)
    assert m.backend == "pyg" and m.kind == "sage"
    assert get_impl("models", "sage").factory(8, 16, 3, 2, backend="pyg").backend == "pyg"
