"""Samplers and append-unique on CUDA: the same properties as the CPU suite, plus bit-equality
with the pure-Python references (and numba, where installed), the multi-part and sharded
stores, and the baselines that import on the GPU machines (pylibwholegraph, PyG).

Skips cleanly without CUDA or CuPy.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.gpu import require_gpus

torch = require_gpus()

from harness.errors import HarnessError  # noqa: E402
from harness import registry  # noqa: E402
from harness.launcher import launch  # noqa: E402
from impls.sampling.minibatch import sample_blocks  # noqa: E402
from impls.sampling.samplers import KHopBatchedSampler, PathDoublingSampler  # noqa: E402
from impls.sampling.unique import DenseAppendUnique, HashAppendUnique, SortUnique  # noqa: E402
from tests.sampling import reference as ref  # noqa: E402

pytestmark = pytest.mark.gpu
DEV = "cuda:0"
GPUS = torch.cuda.device_count()
# ours (every registered sampler composed into Blocks), and the reservoir KHop XGNN starts from
SAMPLERS = {**{s.impl: s.spec.factory for s in registry.series("sampling", traits=("blocks",))},
            "khop_original": lambda *a, **k: KHopBatchedSampler(*a, variant="original", **k)}


def _numba():
    try:
        from impls.sampling import cpu  # noqa: F401
        return True
    except Exception:
        return False


HAVE_NUMBA = _numba()


@pytest.fixture(scope="module")
def graphs():
    return {np.int32: ref.random_graph(2000, seed=31, max_degree=300, id_dtype=np.int32),
            np.int64: ref.random_graph(2000, seed=32, max_degree=300, id_dtype=np.int64)}


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("store", ["local", "split"])
def test_gpu_samples_equal_reference(graphs, name, id_dtype, store):
    indptr, indices = graphs[id_dtype]
    seeds = np.concatenate([np.arange(0, 2000, 3), [0, 1, 2, 2]])
    s = SAMPLERS[name](DEV, indptr, indices, store=store, count_remote=True, count_world=4, count_rank=3)
    for fanout in (1, 5, 10, 30, 40, 100):
        offsets, neighbors = s.sample(torch.from_numpy(seeds), fanout, seed=fanout)
        assert offsets.device.type == "cuda" and neighbors.dtype == torch.int64
        o, n = offsets.cpu().numpy(), neighbors.cpu().numpy()
        ref.check_sample(indptr, indices, seeds, fanout, o, n)
        ro, rn = ref.REFERENCES[name](indptr, indices, seeds, fanout, fanout)
        assert np.array_equal(o, ro) and np.array_equal(n, rn), (name, fanout)
        if HAVE_NUMBA:          # the request counts of the GPU kernels equal the CPU model's
            c = SAMPLERS[name]("cpu", indptr, indices, count_remote=True, count_world=4, count_rank=3)
            s.reset_counters()
            s.sample(torch.from_numpy(seeds), fanout, seed=fanout)
            c.sample(seeds, fanout, seed=fanout)
            assert s.remote_stats() == c.remote_stats(), (name, fanout)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_gpu_big_rows_and_big_batch(name):
    """Rows of up to 100k neighbors (long reservoir loops, sparse draws) and 6000 seeds."""
    g = np.random.default_rng(3)
    deg = np.concatenate([[100_000, 50_000, 3], g.integers(0, 200, 9997)])
    indptr = np.zeros(deg.size + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = np.concatenate([g.choice(200_000, d, replace=False) for d in deg]).astype(np.int32)
    seeds = np.concatenate([[0, 1, 2], g.choice(10_000, 5997, replace=False)])
    s = SAMPLERS[name](DEV, indptr, indices)
    for fanout in (10, 30):
        offsets, neighbors = s.sample(torch.from_numpy(seeds), fanout, seed=5)
        ref.check_sample(indptr, indices, seeds, fanout, offsets.cpu().numpy(), neighbors.cpu().numpy())
        again = s.sample(torch.from_numpy(seeds), fanout, seed=5)
        assert torch.equal(again[1], neighbors)
        assert not torch.equal(s.sample(torch.from_numpy(seeds), fanout, seed=6)[1], neighbors)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_gpu_uniform_inclusion_and_subsets(name):
    for degree, fanout in ((20, 5), (50, 30)):
        indptr, indices = ref.star_graph(degree)
        _, nb = SAMPLERS[name](DEV, indptr, indices).sample(torch.zeros(4000, dtype=torch.int64), fanout, seed=2024)
        counts = np.bincount(nb.cpu().numpy() - 1, minlength=degree)
        p = fanout / degree
        stat = (((counts - 4000 * p) ** 2) / (4000 * p * (1 - p) * degree / (degree - 1))).sum()
        assert stat < ref.CHI2_999[degree - 1], (degree, fanout, stat)
    indptr, indices = ref.star_graph(5)
    _, nb = SAMPLERS[name](DEV, indptr, indices).sample(torch.zeros(6000, dtype=torch.int64), 2, seed=77)
    pairs = np.sort(nb.cpu().numpy().reshape(6000, 2), axis=1)
    index = {p: i for i, p in enumerate(itertools.combinations(range(1, 6), 2))}
    counts = np.bincount([index[tuple(p)] for p in pairs.tolist()], minlength=10)
    assert (((counts - 600) ** 2) / 600).sum() < ref.CHI2_999[9]


def _unique_cases():
    g = np.random.default_rng(3)
    return [
        (g.choice(10_000, 300, replace=False), g.integers(0, 10_000, 5_000)),
        (g.choice(2_000_000, 512, replace=False), g.integers(0, 2_000_000, 15_360)),
        (g.choice(50_000_000, 15_000, replace=False), g.integers(0, 50_000_000, 450_000)),
        (np.arange(50), np.tile(np.arange(50), 7)),
        (np.array([4, 9, 1]), np.full(100_000, 77)),
        (np.array([8, 3, 5]), np.zeros(0, dtype=np.int64)),
        (np.zeros(0, dtype=np.int64), g.integers(0, 30, 100)),
        (np.array([2**40 + 1, 5]), np.array([2**40 + 1, 2**40 + 7, 5, 2**62, 2**62])),
    ]


@pytest.mark.parametrize("case", range(8))
def test_gpu_hash_append_unique(case):
    targets, neighbors = _unique_cases()[case]
    t = torch.as_tensor(targets, dtype=torch.int64, device=DEV)
    n = torch.as_tensor(neighbors, dtype=torch.int64, device=DEV)
    uniq, local, dup = HashAppendUnique(DEV).append_unique(t, n)
    ru, rl, rd = ref.hash_unique_order(targets, neighbors)          # deterministic order, exactly
    assert np.array_equal(uniq.cpu().numpy(), ru) and np.array_equal(local.cpu().numpy(), rl)
    assert np.array_equal(dup.cpu().numpy(), rd)
    su, sl, sd = SortUnique(DEV).append_unique(t, n)
    assert torch.equal(su[: t.numel()], t) and torch.equal(su[sl], n)
    assert torch.equal(torch.sort(su).values, torch.sort(uniq).values)
    again = HashAppendUnique(DEV).append_unique(t, n)
    assert all(torch.equal(a, b) for a, b in zip(again, (uniq, local, dup)))


def test_gpu_dense_append_unique_equals_sort():
    """One object over every case (its workspace is reused: a slot left set would show), equal to the
    sort reference exactly; ids near 2^62 have no table; a broken bound raises and leaves it clean."""
    dense = DenseAppendUnique(DEV)
    for targets, neighbors in _unique_cases():
        t = torch.as_tensor(targets, dtype=torch.int64, device=DEV)
        n = torch.as_tensor(neighbors, dtype=torch.int64, device=DEV)
        if max(targets.max(initial=0), neighbors.max(initial=0)) >= 2**31:
            with pytest.raises(HarnessError, match="dense_append needs ids below"):
                dense.append_unique(t, n)
            continue
        for bound in (None, 50_000_000):
            out = dense.append_unique(t, n, id_bound=bound)
            for x, y in zip(out, SortUnique(DEV).append_unique(t, n)):
                assert torch.equal(x, y)
    with pytest.raises(HarnessError, match="table full"):
        dense.append_unique(torch.arange(3, device=DEV), torch.arange(1000, 1300, device=DEV), id_bound=1100,
                            check=False)
    ref.assert_dense_clean(dense)


@pytest.mark.parametrize("unique_cls", [HashAppendUnique, DenseAppendUnique])
def test_gpu_blocks_reconstruct(unique_cls):
    indptr, indices = ref.random_graph(5000, seed=13, max_degree=100)
    sampler = PathDoublingSampler(DEV, indptr, indices)
    seeds = torch.from_numpy(np.random.default_rng(1).choice(5000, 512, replace=False)).to(DEV)
    fanouts = [30, 30, 30]
    blocks = sample_blocks(sampler, unique_cls(DEV), seeds, fanouts, seed=9)
    targets = seeds
    for h, fanout in enumerate(fanouts):
        block = blocks[-1 - h]
        block.validate()
        offsets, neighbors = sampler.sample(targets, fanout, seed=9 * 1_000_003 + h)
        src, dst = block.global_edges()
        assert torch.equal(src, neighbors)
        assert torch.equal(dst, torch.repeat_interleave(targets, offsets[1:] - offsets[:-1]))
        assert torch.equal(block.dup_count.to(torch.int64), torch.bincount(block.indices, minlength=block.num_src))
        targets = block.src_ids


def _sharded_rank(ctx, seed: int) -> dict:
    """Every rank: the sharded store (peers read over NVLink) against the split store on one GPU."""
    indptr, indices = ref.random_graph(6000, seed=seed, max_degree=200)
    seeds = torch.arange(ctx.rank, 6000, 2, device=ctx.torch_device())
    out = {}
    for name, cls in SAMPLERS.items():
        sh = cls(ctx, indptr, indices, store="sharded", count_remote=True)
        sp = cls(ctx.torch_device(), indptr, indices, store="split", count_remote=True,
                 count_world=ctx.world_size, count_rank=ctx.rank)
        a, b = sh.sample(seeds, 15, seed=3), sp.sample(seeds, 15, seed=3)
        out[name] = {"equal": bool(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])),
                     "counts_equal": sh.remote_stats() == sp.remote_stats(),
                     "remote": sh.remote_stats()["remote_bytes"], "describe": sh.describe()}
        sh.close()
    return out


@pytest.mark.skipif(GPUS < 2, reason="needs two GPUs")
def test_sharded_store_over_gpus():
    results = launch(_sharded_rank, (41,), world_size=min(GPUS, 4), device="cuda", timeout_s=600)
    for per_rank in results:
        for name, r in per_rank.items():
            assert r["equal"] and r["counts_equal"] and r["remote"] > 0, (name, r)
            assert "symmetric memory" in r["describe"]


def test_wholegraph_lib_append_unique():
    try:
        import pylibwholegraph.binding.wholememory_binding  # noqa: F401
    except Exception as exc:
        pytest.skip(f"pylibwholegraph does not import: {str(exc).splitlines()[0][:120]}")
    results = launch(_wholegraph_unique_rank, (), world_size=1, device="cuda", timeout_s=300)
    assert results == [True]


def _wholegraph_unique_rank(ctx) -> bool:
    from experiments.wholegraph.unique import check_unique
    from impls.sampling.unique import WholeGraphAppendUnique

    u = WholeGraphAppendUnique(ctx)
    for targets, neighbors in _unique_cases()[:4]:
        t = torch.as_tensor(targets, dtype=torch.int64, device=ctx.torch_device())
        n = torch.as_tensor(neighbors, dtype=torch.int64, device=ctx.torch_device())
        check_unique(u.append_unique(t, n), t, n)
    return True


def test_pyg_baseline_where_it_imports():
    from harness.errors import SkipPoint
    from impls.sampling.baselines import PygSampler

    indptr, indices = ref.random_graph(2000, seed=2, max_degree=50)
    try:
        s = PygSampler(DEV, indptr, indices)
    except SkipPoint as exc:
        pytest.skip(str(exc))
    seeds = np.arange(0, 2000, 5)
    offsets, neighbors = s.sample(torch.from_numpy(seeds), 10, seed=1)
    ref.check_sample(indptr, indices, seeds, 10, offsets.numpy(), neighbors.numpy())


@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("store", ["local", "split"])
def test_gpu_random_walks_equal_reference(graphs, id_dtype, store):
    """PinSAGE's walks (kernels/random_walk.cu) on the GPU: bit-equal to the plain reference."""
    from impls.sampling.random_walk import RandomWalkSampler

    indptr, indices = graphs[id_dtype]
    seeds = np.concatenate([np.arange(0, 2000, 3), [0, 1, 2, 2]])
    s = RandomWalkSampler(DEV, indptr, indices, store=store, count_world=4)
    o, n, w = (t.cpu().numpy() for t in s.sample_weighted(torch.from_numpy(seeds), 5, seed=13))
    ro, rn, rw = ref.random_walk_topk(indptr, indices, seeds, 5, 13)
    assert np.array_equal(o, ro) and np.array_equal(n, rn) and np.array_equal(w, rw)
    assert "CUDA kernel" in s.describe() and "emulated" not in s.describe()
