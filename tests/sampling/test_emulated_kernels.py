"""The CUDA kernels themselves, run on the CPU by tests/sampling/cuda_emu.h (g++), against numba.

Same host code as on a GPU (impls/core/cuda.py launches through the emulator), CPU tensors
as device memory. Outputs and the remote-request counts must equal the numba versions exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.errors import HarnessError

from impls.sampling.samplers import KHopBatchedSampler, PathDoublingSampler, ReservoirSampler
from impls.sampling.unique import DenseAppendUnique, HashAppendUnique

from . import emu
from . import reference as ref

if emu.available():
    pytest.skip(emu.available(), allow_module_level=True)

SAMPLERS = {
    "path_doubling": PathDoublingSampler,
    "reservoir": ReservoirSampler,
    "khop_batched": KHopBatchedSampler,
    "khop_original": lambda *a, **k: KHopBatchedSampler(*a, variant="original", **k),
}


@pytest.fixture(autouse=True)
def emulator():
    with emu.installed():
        yield


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("id_dtype,fanout,store", [(np.int32, 5, "local"), (np.int64, 40, "split"),
                                                   (np.int32, 12, "split")])
def test_kernel_equals_numba(name, id_dtype, fanout, store):
    """fanout 5: groups of 8 lanes, 4 per warp; 12: 16 lanes; 40: path doubling groups span two
    warps, batched KHop reads in two rounds. 'split' takes the multi-part (sharded) read path."""
    indptr, indices = ref.random_graph(300, seed=21, max_degree=70, id_dtype=id_dtype)
    seeds = torch.from_numpy(np.concatenate([np.arange(300), [2, 2, 0]]))   # > one grid's worth of groups
    opts = dict(count_remote=True, count_world=4, count_rank=2)
    cpu = SAMPLERS[name]("cpu", indptr, indices, **opts)
    kern = SAMPLERS[name]("cpu", indptr, indices, engine="kernel", store=store, **opts)
    o1, n1 = cpu.sample(seeds, fanout, seed=8)
    o2, n2 = kern.sample(seeds, fanout, seed=8)
    assert torch.equal(o1, o2) and torch.equal(n1, n2)
    assert cpu.remote_stats() == kern.remote_stats()
    assert kern.remote_stats()["remote_sectors"] > 0
    assert "emulated" in kern.describe()


def test_kernel_chi_square_and_empty_batch():
    indptr, indices = ref.star_graph(20)
    s = PathDoublingSampler("cpu", indptr, indices, engine="kernel")
    offsets, neighbors = s.sample(torch.zeros(300, dtype=torch.int64), 5, seed=4)
    counts = np.bincount(neighbors.numpy() - 1, minlength=20)
    p = 5 / 20
    stat = (((counts - 300 * p) ** 2) / (300 * p * (1 - p) * 20 / 19)).sum()
    assert stat < ref.CHI2_999[19]
    empty = s.sample(torch.empty(0, dtype=torch.int64), 5)
    assert empty[0].tolist() == [0] and empty[1].numel() == 0


@pytest.mark.parametrize("case", [0, 1, 2, 3, 4], ids=["random", "all-duplicates", "empty frontier",
                                                       "neighbors are targets", "no targets"])
def test_unique_kernels_equal_numba(case):
    g = np.random.default_rng(case)
    targets, neighbors = [
        (g.choice(5000, 100, replace=False), g.integers(0, 5000, 1500)),
        (np.array([3, 1]), np.full(300, 42)),
        (np.array([3, 1, 8]), np.zeros(0, dtype=np.int64)),
        (np.arange(40), np.tile(np.arange(40), 5)),
        (np.zeros(0, dtype=np.int64), g.integers(0, 50, 200)),
    ][case]
    t, n = torch.as_tensor(targets, dtype=torch.int64), torch.as_tensor(neighbors, dtype=torch.int64)
    a = HashAppendUnique("cpu").append_unique(t, n)
    b = HashAppendUnique("cpu", engine="kernel").append_unique(t, n)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_unique_kernels_with_id_bound_equal_numba_and_detect_overflow():
    g = np.random.default_rng(7)
    t = torch.as_tensor(g.choice(3000, 200, replace=False), dtype=torch.int64)
    n = torch.as_tensor(g.integers(0, 3000, 20_000), dtype=torch.int64)
    a = HashAppendUnique("cpu").append_unique(t, n, id_bound=3000)
    b = HashAppendUnique("cpu", engine="kernel").append_unique(t, n, id_bound=3000)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    with pytest.raises(HarnessError, match="table full"):      # 303 distinct ids in 64 slots: no hang
        HashAppendUnique("cpu", engine="kernel").append_unique(torch.arange(3), torch.arange(1000, 1300),
                                                               id_bound=5, check=False)


@pytest.mark.parametrize("distinct", [40, 60, 63])
def test_unique_assign_on_a_nearly_full_table(distinct):
    """A 64-slot table (id_bound 32, checks off) holding up to 63 keys: runs of keys cross bucket
    ends and wrap around the table, so the warp-per-bucket ranking reads several chunks; the
    kernels still number new nodes exactly as numba and the reference do."""
    g = np.random.default_rng(distinct)
    ids = g.choice(10**9, distinct, replace=False)
    targets = ids[:5]
    neighbors = g.choice(ids, 400)
    t, n = torch.as_tensor(targets, dtype=torch.int64), torch.as_tensor(neighbors, dtype=torch.int64)
    a = HashAppendUnique("cpu").append_unique(t, n, id_bound=32, check=False)
    b = HashAppendUnique("cpu", engine="kernel").append_unique(t, n, id_bound=32, check=False)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    ru, rl, rd = ref.hash_unique_order(targets, neighbors, 32)
    assert np.array_equal(b[0].numpy(), ru) and np.array_equal(b[1].numpy(), rl)
    assert np.array_equal(b[2].numpy(), rd)


@pytest.mark.parametrize("max_load", [0.125, 0.75])
def test_unique_table_load_option(max_load):
    """max_load sizes the table (and so the new nodes' order); kernels, numba and the reference agree."""
    g = np.random.default_rng(11)
    targets, neighbors = g.choice(4000, 100, replace=False), g.integers(0, 4000, 2400)   # 2500 ids
    t, n = torch.as_tensor(targets, dtype=torch.int64), torch.as_tensor(neighbors, dtype=torch.int64)
    a = HashAppendUnique("cpu", max_load=max_load).append_unique(t, n, id_bound=4000)
    b = HashAppendUnique("cpu", engine="kernel", max_load=max_load).append_unique(t, n, id_bound=4000)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    ru, rl, rd = ref.hash_unique_order(targets, neighbors, 4000, max_load)
    assert np.array_equal(b[0].numpy(), ru) and np.array_equal(b[1].numpy(), rl)
    assert not np.array_equal(ru, ref.hash_unique_order(targets, neighbors, 4000)[0])   # another table size
    with pytest.raises(HarnessError, match="max_load"):
        HashAppendUnique("cpu", max_load=1.0)


def test_dense_append_kernels_equal_torch_and_leave_the_workspace_clean():
    """One object, several calls with different bounds and inputs (the workspace is reused, so a
    call that read an earlier call's slot as its own, or left a bitmap word or a counter set,
    would change the next call's output), a chunk boundary crossed (bound > 32 x 1024 ids), and an
    out-of-bound id caught without writing."""
    g = np.random.default_rng(13)
    kernels, reference = DenseAppendUnique("cpu", engine="kernel"), DenseAppendUnique("cpu")
    cases = [
        (g.choice(5000, 100, replace=False), g.integers(0, 5000, 1500), 5000),
        (np.array([3, 1]), np.full(300, 42), 50),
        (np.array([3, 1, 8]), np.zeros(0, dtype=np.int64), 9),
        (np.arange(40), np.tile(np.arange(40), 5), 40),
        (np.zeros(0, dtype=np.int64), g.integers(0, 50, 200), 50),
        (g.choice(70_000, 30, replace=False), g.integers(0, 70_000, 4000), 70_000),
        (g.choice(5000, 100, replace=False), g.integers(0, 5000, 1500), 5000),
        (g.choice(70_000, 30, replace=False), g.integers(0, 70_000, 4000), 70_000),   # more chunks again
    ]
    for targets, neighbors, bound in cases:
        t, n = torch.as_tensor(targets, dtype=torch.int64), torch.as_tensor(neighbors, dtype=torch.int64)
        a = reference.append_unique(t, n, id_bound=bound)
        b = kernels.append_unique(t, n, id_bound=bound)
        for x, y in zip(a, b):
            assert torch.equal(x, y)
        ref.assert_dense_clean(kernels)
    with pytest.raises(HarnessError, match="table full"):
        kernels.append_unique(torch.arange(3), torch.arange(1000, 1300), id_bound=1100, check=False)
    ref.assert_dense_clean(kernels)
    a = reference.append_unique(*(torch.as_tensor(x, dtype=torch.int64) for x in cases[0][:2]), id_bound=5000)
    b = kernels.append_unique(*(torch.as_tensor(x, dtype=torch.int64) for x in cases[0][:2]), id_bound=5000)
    assert all(torch.equal(x, y) for x, y in zip(a, b))        # after the overflow, as before it
    t, n = torch.tensor([7, 3]), torch.tensor([9, 3, 1, 9, 7])
    assert kernels.append_unique(t, n)[0].tolist() == [7, 3, 1, 9]    # bound from the largest id
