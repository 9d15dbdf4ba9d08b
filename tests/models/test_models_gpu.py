"""On a GPU: every native op implementation agrees with the CPU gather-and-reduce result
(forward and gradients), including torch's CUDA sparse CSR path and cuSPARSE SDDMM on
unsorted sampled rows with repeated neighbors."""

from __future__ import annotations

import pytest
import torch

from impls import models
from impls.core.blocks import set_edge_weight
from impls.models.ops import BlockGraph, gspmm

from .util import random_block

pytestmark = pytest.mark.gpu

COMBOS = [("sparse", "transpose"), ("sparse", "atomic"), ("segment", "atomic"),
          ("segment", "dup_split"), ("segment", "transpose")]


@pytest.mark.parametrize("sddmm", ["sampled", "gather"])
@pytest.mark.parametrize("impl,backward", COMBOS)
def test_gspmm_cuda_equals_cpu(impl, backward, sddmm):
    gen = torch.Generator().manual_seed(0)
    block = random_block(gen, 300, 900, 30)
    x = torch.randn(block.num_src, 4, 8, generator=gen)
    w = torch.rand(block.num_edges, 4, generator=gen)
    r = torch.randn(block.num_dst, 4, 8, generator=gen)
    res = []
    reference = dict(impl="segment", backward="atomic", sddmm="gather")
    for dev, kw in (("cpu", reference), ("cuda", dict(impl=impl, backward=backward, sddmm=sddmm))):
        # detach: on CPU .to() returns x itself, and a leaf that requires grad would make
        # the CUDA copy a non-leaf without .grad
        xx = x.detach().to(dev).requires_grad_()
        ww = w.detach().to(dev).requires_grad_()
        out = gspmm(BlockGraph(block.to(dev), **kw), xx, ww)
        (out * r.to(dev)).sum().backward()
        res.append([t.detach().cpu() for t in (out, xx.grad, ww.grad)])
    for a, b in zip(*res):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", models.KINDS)
@pytest.mark.parametrize("impl", ["sparse", "segment"])
def test_models_cuda_equal_cpu(kind, impl):
    gen = torch.Generator().manual_seed(1)
    blocks = [random_block(gen, 200, 700, 12), random_block(gen, 50, 200, 12),
              random_block(gen, 16, 50, 12)]
    for b in blocks:
        set_edge_weight(b, torch.randint(1, 5, (b.num_edges,), generator=gen).float())
    x = torch.randn(700, 20, generator=gen)
    torch.manual_seed(0)
    cpu = models.build(kind, 20, 32, 5, 3)
    gpu = models.build(kind, 20, 32, 5, 3, impl=impl).cuda()
    gpu.load_state_dict(cpu.state_dict())
    cuda_blocks = []
    for b in blocks:
        cb = b.to("cuda")
        set_edge_weight(cb, b.edge_weight.cuda())
        cuda_blocks.append(cb)
    torch.testing.assert_close(gpu(cuda_blocks, x.cuda()).cpu(), cpu(blocks, x), rtol=1e-4, atol=1e-4)


def test_sampled_sddmm_cuda_equals_gathered_cpu():
    gen = torch.Generator().manual_seed(2)
    block = random_block(gen, 500, 3000, 40)
    a = torch.randn(block.num_dst, 4, 64, generator=gen)
    b = torch.randn(block.num_src, 4, 64, generator=gen)
    ref = BlockGraph(block, impl="segment", sddmm="gather").sddmm_dot(a, b)
    out = BlockGraph(block.to("cuda"), impl="sparse", sddmm="sampled").sddmm_dot(a.cuda(), b.cuda())
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-4)
