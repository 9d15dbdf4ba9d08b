"""GPU hot paths, for the GPU regression gate (`python -m harness bench check --device cuda`).

The one-kernel row gather, a sampler, append-unique and a training step, each sized so that its
kernels take most of a call (0.3-3 ms on an H100): a 1.15x slower kernel shows as a slower call.
Every call ends with a device synchronize, so a repeat's time is its work's, not its launch's.
`pytest -m gpu` runs each once as a test; without CUDA they skip.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu
GROUP = "gpu-hot-paths"
DEV = "cuda"


def _synced(fn, *args):
    def call():
        out = fn(*args)
        torch.cuda.synchronize()
        return out
    return call


def test_one_kernel_gather_gpu(benchmark):
    """impls/core/row_gather: 4M random rows of 256 B out of an 8M-row table (2 GiB) on one GPU."""
    from impls.core import row_gather
    from impls.core.layout import closed_form_rows

    num_rows, row_elems = 8 << 20, 64
    table = closed_form_rows(torch.arange(num_rows, device=DEV), row_elems, torch.float32)
    parts = torch.tensor([table.data_ptr()], dtype=torch.int64, device=DEV)
    ids = torch.randint(0, num_rows, (4 << 20,), device=DEV, generator=torch.Generator(DEV).manual_seed(1))
    out = torch.empty((ids.numel(), row_elems), dtype=torch.float32, device=DEV)
    gather = _synced(row_gather.gather_into, out, parts, num_rows, ids, row_elems * 4)
    gather()                                                         # compile outside the timing
    benchmark.group = GROUP
    rows = benchmark(gather)
    assert torch.equal(rows, closed_form_rows(ids, row_elems, torch.float32))


@pytest.fixture(scope="module")
def gpu_graph():
    """2M nodes, degrees 0-30 (15 on average), uniform neighbors: a CSR built on the host."""
    rng = np.random.default_rng(2)
    degrees = rng.integers(0, 31, 2 << 20)
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    indices = rng.integers(0, len(degrees), int(indptr[-1])).astype(np.int64)
    return indptr, indices


def test_sampler_gpu(benchmark, gpu_graph):
    """WholeGraph's path-doubling sampler: 128K seeds, fanout 15."""
    from harness import registry

    indptr, indices = gpu_graph
    sampler = registry.get_impl("sampling", "path_doubling").factory(DEV, indptr, indices)
    seeds = torch.randint(0, len(indptr) - 1, (128 << 10,), device=DEV, generator=torch.Generator(DEV).manual_seed(3))
    sample = _synced(lambda: sampler.sample(seeds, 15, seed=1))
    sample()
    benchmark.group = GROUP
    offsets, neighbors = benchmark(sample)
    degrees = torch.from_numpy(np.diff(indptr)).to(DEV)[seeds]
    assert torch.equal(offsets.diff(), torch.clamp(degrees, max=15).to(offsets.dtype))
    offsets, neighbors, seeds = offsets.cpu().numpy(), neighbors.cpu().numpy(), seeds.cpu().numpy()
    for i, s in enumerate(seeds[:300]):                              # a subset: each pick is a distinct edge
        picked = neighbors[offsets[i]:offsets[i + 1]]
        row = indices[indptr[s]:indptr[s + 1]]
        assert np.isin(picked, row).all() and len(picked) == min(len(row), 15)


def test_append_unique_gpu(benchmark):
    """WholeGraph's hash-table append-unique: 64K targets and 1M neighbors among 4M ids."""
    from harness import registry

    gen = torch.Generator(DEV).manual_seed(4)
    targets = torch.randperm(4 << 20, device=DEV, generator=gen)[:64 << 10]
    neighbors = torch.randint(0, 4 << 20, (1 << 20,), device=DEV, generator=gen)
    unique = registry.get_impl("unique", "hash_append").factory(DEV)
    append = _synced(unique.append_unique, targets, neighbors, False)
    append()
    benchmark.group = GROUP
    ids, local, _ = benchmark(append)
    assert torch.equal(ids[:targets.numel()], targets) and torch.equal(ids[local], neighbors)
    assert ids.unique().numel() == ids.numel()


def test_fullbatch_gcn_epoch_gpu(benchmark, full_batch_epoch):
    """A training step: one full-batch epoch (forward, backward, Adam) of a 2-layer GCN on 200K nodes."""
    epoch = full_batch_epoch(200_000, 128, 16, "2x128", device=DEV)
    benchmark.group = GROUP
    loss = benchmark(_synced(epoch))
    assert epoch.learned(loss)
