"""Native and DGL backends compute the same models: same outputs and gradients once the native
weights are copied into DGL's layers (skipped where DGL does not import)."""

from __future__ import annotations

import pytest
import torch

from harness.needs import _import_problem
from impls import models

from .util import random_block

pytestmark = pytest.mark.skipif(_import_problem("dgl") is not None, reason=str(_import_problem("dgl")))

TOL = dict(rtol=1e-4, atol=1e-5)


def _blocks(seed: int, sizes=((70, 160), (25, 70), (9, 25)), max_deg=7):
    gen = torch.Generator().manual_seed(seed)
    return [random_block(gen, nd, ns, max_deg) for nd, ns in sizes]


def _run(model, blocks, x, r):
    model.zero_grad(set_to_none=True)
    xx = x.clone().requires_grad_()
    out = model(blocks, xx)
    (out * r).sum().backward()
    return out.detach(), xx.grad


@pytest.mark.parametrize("kind,kw", [
    ("gcn", {}), ("gcn", {"norm": "both"}), ("gcn", {"norm": "right"}),
    ("sage", {}), ("gat", {"heads": 4}), ("gat", {"heads": 2, "head_dim": 3}),
])
def test_native_equals_dgl_on_random_blocks(kind, kw):
    from impls.models.dgl import load_native_state

    blocks = _blocks(21)
    x = torch.randn(blocks[0].num_src, 12, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(11)
    native = models.build(kind, 12, 8, 5, 3, backend="native", **kw)
    dgl_model = models.build(kind, 12, 8, 5, 3, backend="dgl", **kw)
    load_native_state(dgl_model, native)
    r = torch.randn(blocks[-1].num_dst, 5, generator=torch.Generator().manual_seed(3))
    a, b = _run(native, blocks, x, r), _run(dgl_model, blocks, x, r)
    torch.testing.assert_close(a[0], b[0], **TOL)
    torch.testing.assert_close(a[1], b[1], **TOL)


def test_dgl_weights_not_copied_differ():
    """The comparison above can fail: fresh DGL weights give other logits."""
    blocks = _blocks(5)
    x = torch.randn(blocks[0].num_src, 12, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(11)
    native = models.build("sage", 12, 8, 5, 3, backend="native")
    dgl_model = models.build("sage", 12, 8, 5, 3, backend="dgl")
    assert not torch.allclose(native(blocks, x), dgl_model(blocks, x), **TOL)


def test_dgl_backend_has_no_pinsage():
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="dgl.nn has no pinsage"):
        models.build("pinsage", 12, 8, 5, 3, backend="dgl")


def test_dgl_layers_run_on_cpu():
    from harness.dgl_compat import layers_unavailable

    assert layers_unavailable("cpu") is None
