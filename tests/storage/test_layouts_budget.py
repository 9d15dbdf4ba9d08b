"""Tier layouts (XGNN Fig. 5 forwarding), hotness reordering and the GPU memory budget."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.errors import SkipPoint
from impls.core.topology import Topology, xgnn_topology
from impls.placement.xgnn_solver import solve
from impls.storage import budget as B
from impls.storage.reorder import from_hotness, in_degree, reorder
from impls.storage.tiers import (HOST, LOCAL_GPU, REMOTE_GPU, clique_layout, ggms_layout, host_layout,
                                 replicated_layout, rows_for_ratio)

from .graphs import skewed_graph


def _layouts():
    n = 1001
    yield ggms_layout(n, 500, 3)
    yield ggms_layout(n, n, 4)
    yield ggms_layout(n, 0, 2)
    yield replicated_layout(n, 123, 3)
    yield clique_layout(n, 301, [[0, 2], [1, 3]])
    yield host_layout(n, 2)
    for name in ("4Gc", "6G", "8G"):
        topo = xgnn_topology(name)
        yield ggms_layout(n, 777, topo.num_gpus, solve(topo))


@pytest.mark.parametrize("layout", list(_layouts()), ids=lambda l: f"{l.kind}-{l.num_gpus}-{l.gpu_rows}")
def test_forwarding_finds_the_row_for_every_worker(layout):
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, layout.num_rows, 2000))
    rows = torch.from_numpy(layout.physical_row_ids())
    assert rows.numel() == layout.physical_rows
    stored = rows[rows >= 0]
    assert torch.equal(torch.bincount(stored, minlength=layout.num_rows)[:layout.gpu_rows],
                       torch.full((layout.gpu_rows,), layout.copies(), dtype=torch.int64))
    for w in range(layout.num_gpus):
        phys = layout.physical(ids, w)
        assert torch.equal(rows[phys], ids)
        tier, owner, offset = layout.locate(ids, w)
        assert torch.equal(layout.tier_of_physical(phys, w), tier)
        assert torch.equal(tier == HOST, ids >= layout.gpu_rows)
        assert torch.equal(tier == LOCAL_GPU, owner == w)
        assert bool((offset[tier != HOST] < layout.rows_per_gpu).all())
        if layout.meta.get("placement") == "solver":
            topo = xgnn_topology(layout.meta["topology"])
            assert all(topo.connected(w, int(g)) for g in owner[tier != HOST].unique())


def test_ggms_is_modulo_partitioning():
    """XGNN 4.3: hot node i on GPU i mod n at i // n; the rest on the host at i - H."""
    layout = ggms_layout(100, 50, 4)
    ids = torch.arange(100)
    tier, owner, offset = layout.locate(ids, worker=1)
    hot = ids < 50
    assert torch.equal(owner[hot], ids[hot] % 4) and torch.equal(offset[hot], ids[hot] // 4)
    assert torch.equal(offset[~hot], ids[~hot] - 50) and bool((owner[~hot] == -1).all())
    assert set(tier[hot].tolist()) == {LOCAL_GPU, REMOTE_GPU}
    assert layout.part_rows == 13 and layout.rows_per_gpu == 13 and layout.copies() == 1
    assert "50/100 rows" in layout.describe()


def test_solver_copies_partitions_where_links_are_missing():
    isolated = ggms_layout(40, 40, 2, solve(Topology("isolated", np.zeros((2, 2)))))
    assert isolated.copies() == 2 and not isolated.reads_peers()
    assert isolated.rows_per_gpu == 40
    four_c = ggms_layout(80, 80, 4, solve(xgnn_topology("4Gc")))   # a ring: each GPU misses one
    assert four_c.copies() == 2 and four_c.max_slots == 2 and four_c.reads_peers()
    full = ggms_layout(80, 80, 4, solve(xgnn_topology("4Gf")))
    assert full.store == ((0,), (1,), (2,), (3,)) and full.copies() == 1


def test_reordering_is_a_permutation_by_degree():
    g = skewed_graph(num_nodes=500, seed=4)
    r = reorder(g["indptr"], g["indices"], "degree")
    assert np.array_equal(np.sort(r.order), np.arange(500))
    assert np.array_equal(r.rank[r.order], np.arange(500)) and np.array_equal(r.order[r.rank], np.arange(500))
    deg = in_degree(g["indptr"], g["indices"])[r.order]
    assert np.all(np.diff(deg) <= 0)
    ids = torch.tensor([5, 0, 499, 5])
    assert torch.equal(r.to_old(r.to_new(ids)), ids)
    ties = from_hotness(np.array([1.0, 3.0, 1.0, 3.0]))
    assert ties.order.tolist() == [1, 3, 0, 2]
    assert reorder(g["indptr"], g["indices"], "none").is_identity()
    pre = reorder(g["indptr"], g["indices"], "presample", train_idx=np.arange(0, 500, 3), fanouts=(5, 5),
                  batch_size=64)
    assert np.array_equal(np.sort(pre.order), np.arange(500))
    with pytest.raises(ValueError):
        reorder(g["indptr"], g["indices"], "sideways")


def _sizes(n=997, seed=2):
    g = skewed_graph(num_nodes=n, seed=seed)
    r = reorder(g["indptr"], g["indices"])
    return B.StoreSizes.of(g["indptr"], r.order, row_bytes=24)


def _cost(sizes, layout):
    idx = B.DegreeIndex(sizes.degrees_hot)
    topo = max(B.topology_gpu_bytes(layout.rows_per_gpu, idx.gpu_edges(layout), sizes.id_bytes, layout.reads_peers()))
    return topo, max(B.feature_gpu_bytes(layout, sizes.row_bytes))


def test_largest_fitting_search():
    assert B.largest_fitting(lambda r: 10 * r, 95, 100) == 9
    assert B.largest_fitting(lambda r: 10 * r, 10_000, 100) == 100
    assert B.largest_fitting(lambda r: 5 + r, 4, 100) == -1


@pytest.mark.parametrize("priority", ["graph", "feat"])
def test_ggms_fit_is_the_largest_that_fits(priority):
    sizes = _sizes()
    n, world, budget, reserve = sizes.num_nodes, 2, 9000, 1000
    fit = B.fit_ggms(sizes, world, budget, reserve_bytes=reserve, priority=priority)
    topo, _ = _cost(sizes, ggms_layout(n, fit.graph_rows, world))
    _, feat = _cost(sizes, ggms_layout(n, fit.feat_rows, world))
    assert (fit.topology_bytes, fit.feature_bytes) == (topo, feat)
    assert fit.total_bytes <= budget
    first = "graph_rows" if priority == "graph" else "feat_rows"
    if priority == "graph":
        assert fit.graph_rows < n and _cost(sizes, ggms_layout(n, fit.graph_rows + 1, world))[0] + reserve > budget
        assert _cost(sizes, ggms_layout(n, fit.feat_rows + 1, world))[1] + topo + reserve > budget
    else:
        assert fit.feat_rows < n and _cost(sizes, ggms_layout(n, fit.feat_rows + 1, world))[1] + reserve > budget
        assert _cost(sizes, ggms_layout(n, fit.graph_rows + 1, world))[0] + feat + reserve > budget
    assert getattr(fit, first) > 0 and 0.0 <= fit.graph_ratio <= 1.0


def test_fixed_ratios_and_oom():
    sizes = _sizes()
    n = sizes.num_nodes
    roomy = B.fit_ggms(sizes, 2, "1GiB", graph_ratio=1.0, feat_ratio=0.5)
    assert (roomy.graph_rows, roomy.feat_rows) == (n, rows_for_ratio(0.5, n))
    with pytest.raises(B.OutOfMemoryBudget) as err:
        B.fit_ggms(sizes, 2, 2000, graph_ratio=1.0)
    assert isinstance(err.value, SkipPoint) and B.is_oom_reason(str(err.value))
    assert "topology" in str(err.value) and err.value.need_bytes > err.value.budget_bytes == 2000
    with pytest.raises(B.OutOfMemoryBudget, match="workspace"):
        B.fit_ggms(sizes, 2, 100, reserve_bytes=200)
    # DGL+C: the replicated topology must fit whole; then the largest cache
    topo_all, _ = _cost(sizes, replicated_layout(n, n, 2))
    with pytest.raises(B.OutOfMemoryBudget, match="DGL"):
        B.fit_dgl_cache(sizes, 2, topo_all - 1)
    fit = B.fit_dgl_cache(sizes, 2, topo_all + 24 * 100 + 23)
    assert fit.feat_rows == 100 and fit.graph_rows == n
    # DGL+C in DGL's UVA mode: the topology stays on the host, the whole budget caches features
    uva = B.fit_dgl_cache(sizes, 2, topo_all - 1, graph_on_host=True)
    assert uva.graph_rows == 0 and uva.topology_bytes == 0
    assert uva.feat_rows == min(n, (topo_all - 1) // 24) and uva.feature_bytes <= topo_all - 1
    # Quiver: no topology on GPUs; a clique of two holds 2x the rows one GPU would
    q = B.fit_quiver(sizes, [[0, 1]], 24 * 100)
    assert q.graph_rows == 0 and q.topology_bytes == 0 and q.feat_rows == 200
    # GGMS partitions: more GPUs, more rows under the same per-GPU budget
    assert B.fit_ggms(sizes, 4, 5000).graph_rows > B.fit_ggms(sizes, 2, 5000).graph_rows
    # solver copies cost memory: isolated GPUs hold everything twice
    iso = solve(Topology("isolated", np.zeros((2, 2))))
    assert B.fit_ggms(sizes, 2, 6000, plan=iso).graph_rows < B.fit_ggms(sizes, 2, 6000).graph_rows
    assert B.fit_ggms(sizes, 2, None).graph_ratio == 1.0


def test_parse_bytes_and_workspace():
    assert B.parse_bytes("16GiB") == 16 * B.GiB and B.parse_bytes("512 MiB") == 512 << 20
    assert B.parse_bytes(1.5) == 3 * B.GiB // 2 and B.parse_bytes("1000") == 1000
    with pytest.raises(ValueError):
        B.parse_bytes("lots")
    small = B.estimate_workspace(10_000, 600, (15, 10, 5), 128, 256, 10)
    big = B.estimate_workspace(10_000_000, 6000, (15, 10, 5), 128, 256, 10)
    assert 256 << 20 < small < big


def test_runner_records_oom_as_skipped_row():
    from harness.experiment import Experiment, Point, RunContext
    from harness.runner import RunConfig, run_one_point

    class Exp(Experiment):
        id, paper, artifact, interface, metric, unit = "x.oom", "x", "oom", "storage", "s", "s"

        def run_point(self, point, ctx):
            B.fit_dgl_cache(_sizes(), 2, 10)

    rows = run_one_point(Exp(), Point("ggms", {}, 2), RunContext(RunConfig()))
    assert rows[0]["status"] == "skipped" and B.is_oom_reason(rows[0]["reason"])
