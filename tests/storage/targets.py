"""Checks of a tiered store against the plain CSR and feature matrix (module level: spawned ranks
import them by name)."""

from __future__ import annotations

import numpy as np
import torch

from impls.sampling.random_walk import RandomWalkSampler
from impls.sampling.samplers import KHopBatchedSampler
from impls.storage.tiers import HOST, LOCAL_GPU, REMOTE_GPU

from ..helpers import assert_refuses_out_of_range
from .graphs import plain_neighbors, skewed_graph


def check_store(store, graph, seed: int = 0, n_ids: int = 300, kernel: bool = False) -> dict:
    """Every access function of ``store`` against ``graph``; returns per-tier access counts."""
    rng = np.random.default_rng(seed + 17 * store.worker)
    n = store.num_nodes
    old = rng.integers(0, n, n_ids)
    old[:20] = old[20:40]                                   # duplicates on purpose
    old[-2:] = [0, n - 1]
    old_t = torch.from_numpy(old)
    ids = store.reordering.to_new(old_t)
    assert sorted(store.reordering.order.tolist()) == list(range(n))
    assert torch.equal(store.reordering.to_old(ids), old_t)

    # where each request goes: XGNN Fig. 5's forwarding, as physical rows
    for layout, locate in ((store.graph_layout, store.locate_topology), (store.feat_layout, store.locate_features)):
        tier, owner, offset = (t.cpu() for t in locate(ids))
        phys = layout.physical(ids, store.worker)
        expect = torch.where(tier == HOST, layout.host_base + offset, owner * layout.rows_per_gpu + offset)
        assert torch.equal(phys, expect)
        assert torch.equal(torch.from_numpy(layout.physical_row_ids())[phys], ids), "bookkeeping"
        assert torch.equal(tier == LOCAL_GPU, owner == store.worker)
        assert torch.equal(tier == HOST, ids >= layout.gpu_rows)

    store.reset_counters()
    rows = store.features(ids)
    assert torch.equal(rows.cpu(), graph["features"][old_t]), f"{store.name}: wrong feature rows"
    snap = store.hit_rates()["features"]
    tiers = store.locate_features(ids)[0].cpu()
    counts = [int((tiers == t).sum()) for t in (LOCAL_GPU, REMOTE_GPU, HOST)]
    assert [snap[k]["accesses"] for k in ("local_gpu", "remote_gpu", "host")] == counts
    assert snap["bytes"] == n_ids * store.row_bytes and snap["accesses"] == n_ids
    assert abs(snap["hit_rate"] - (counts[0] + counts[1]) / n_ids) < 1e-12

    offsets, nbrs = store.neighbors(ids)
    deg = np.diff(graph["indptr"])[old]
    assert np.array_equal(np.diff(offsets.cpu().numpy()), deg)
    plain = plain_neighbors(graph, old)
    got = store.reordering.to_old(nbrs.cpu()).numpy()
    o = offsets.cpu().numpy()
    assert all(np.array_equal(got[o[i]:o[i + 1]], plain[i]) for i in range(n_ids)), f"{store.name}: neighbours"
    assert np.array_equal(store.num_neighbors(ids).cpu().numpy(), deg)
    topo = store.hit_rates()["topology"]
    id_bytes = store.graph.id_bytes
    assert topo["accesses"] == 2 * n_ids
    assert topo["bytes"] == 32 * n_ids + int(deg.sum()) * id_bytes
    assert sum(topo[t]["bytes"] for t in ("local_gpu", "remote_gpu", "host")) == topo["bytes"]

    for bad in (torch.tensor([n]), torch.tensor([-1])):
        assert_refuses_out_of_range(store.features, bad, "read")

    # sampling over the tiered topology = the plain sampler, relabelled (same positions drawn)
    targets = torch.unique(ids)
    for variant in ("batched", "original"):
        plain_sampler = KHopBatchedSampler("cpu", graph["indptr"], graph["indices"], variant=variant)
        sampler = store.sampler(variant)
        for fanout in (3, 12):
            store.reset_counters()
            o2, n2 = sampler.sample(targets, fanout, seed=5 + fanout)
            o1, n1 = plain_sampler.sample(store.reordering.to_old(targets.cpu()), fanout, seed=5 + fanout)
            assert torch.equal(o1, o2.cpu()) and torch.equal(store.reordering.to_new(n1), n2.cpu()), \
                f"{store.name} {variant}: samples differ from the plain CSR's"
            topo = store.hit_rates()["topology"]
            assert topo["bytes"] == 16 * targets.numel() + int(o2[-1]) * id_bytes
            if kernel:
                ksampler = store.sampler(variant, engine="kernel")
                o3, n3 = ksampler.sample(targets, fanout, seed=5 + fanout)
                assert torch.equal(o2, o3) and torch.equal(n2, n3), f"{store.name} {variant}: kernel != numba"

    # PinSAGE's walks over the tiered topology = the plain walks, relabelled (ties: first visit)
    plain_walker = RandomWalkSampler("cpu", graph["indptr"], graph["indices"])
    walker = store.walk_sampler()
    store.reset_counters()
    o2, n2, w2 = walker.sample_weighted(targets, 5, seed=9)
    o1, n1, w1 = plain_walker.sample_weighted(store.reordering.to_old(targets.cpu()), 5, seed=9)
    assert torch.equal(o1, o2.cpu()) and torch.equal(store.reordering.to_new(n1), n2.cpu()) and \
        torch.equal(w1, w2.cpu()), f"{store.name}: walks differ from the plain CSR's"
    steps = int((walker.inner.rows_read >= 0).sum())
    assert steps == int((plain_walker.rows_read >= 0).sum()) > targets.numel()
    topo = store.hit_rates()["topology"]
    assert topo["accesses"] == steps and topo["bytes"] == steps * (16 + id_bytes)
    if kernel:
        o3, n3, w3 = store.walk_sampler(engine="kernel").sample_weighted(targets, 5, seed=9)
        assert torch.equal(o2, o3) and torch.equal(n2, n3) and torch.equal(w2, w3), f"{store.name}: walk kernel"

    # memory: the model the budget uses is what the physical CSR holds
    mem = store.memory()
    layout = store.graph_layout
    if layout.rows_per_gpu and store.graph.indptr_t is not None:
        for g in range(layout.num_gpus):
            ip = store.graph.indptr_t
            edges = int(ip[(g + 1) * layout.rows_per_gpu] - ip[g * layout.rows_per_gpu])
            assert edges == store.graph.gpu_edges[g]
            if not layout.reads_peers():
                head = -(-(layout.rows_per_gpu + 1) // 32) * 32
                assert mem["per_gpu"][g]["topology_bytes"] == 8 * (head + -(-max(edges, 1) * id_bytes // 8))
    assert mem["per_gpu"][store.worker]["feature_bytes"] == store.feat_layout.rows_per_gpu * store.row_bytes
    if store.device.type == "cuda":      # what this GPU allocated is what the budget model says
        assert mem["this_gpu"]["allocated_bytes"] == mem["per_gpu"][store.worker]["total_bytes"]
    return {"feature_tiers": counts, "per_gpu": mem["per_gpu"], "gpu_total": mem["gpu_total_bytes"]}


def build(ctx, design: str, graph, **options):
    from impls.storage.dgl_cache import build_dgl_cache
    from impls.storage.ggms import build_ggms
    from impls.storage.quiver import build_quiver

    return {"ggms": build_ggms, "dgl_cache": build_dgl_cache, "quiver": build_quiver}[design](ctx, graph, **options)


def isolated_pair():
    """Two GPUs without NVLink: the solver must give each GPU both partitions."""
    from impls.core.topology import Topology

    return Topology("2 isolated GPUs", np.zeros((2, 2)))


def ranks_check_designs(ctx, kernel: bool) -> dict:
    """Every design on this process group (2 CPU ranks), each against the plain graph."""
    graph = skewed_graph(num_nodes=401, seed=3)
    cases = {
        "ggms": ("ggms", dict(graph_ratio=0.45, feat_ratio=0.3)),
        "ggms_all_gpu": ("ggms", dict(graph_ratio=1.0, feat_ratio=1.0)),
        "ggms_budget_feat_first": ("ggms", dict(budget=3000, priority="feat")),
        "ggms_msg_step": ("ggms", dict(graph_ratio=0.6, feat_ratio=0.2, feat_store="replicated",
                                       placement="clique")),
        "dgl_cache": ("dgl_cache", dict(cache_ratio=0.2)),
        "dgl_cache_uva": ("dgl_cache", dict(cache_ratio=0.2, graph_location="host")),
        "quiver": ("quiver", dict(feat_ratio=0.35)),
    }
    if ctx.world_size == 2:
        cases["ggms_solver_copies"] = ("ggms", dict(graph_ratio=0.5, feat_ratio=0.25, topology=isolated_pair()))
    out = {}
    for name, (design, options) in cases.items():
        store = build(ctx, design, graph, **options)
        try:
            out[name] = check_store(store, graph, seed=1, kernel=kernel)
            out[name]["layouts"] = (store.graph_layout.describe(), store.feat_layout.describe())
            out[name]["fit"] = store.fit.to_dict()
        finally:
            store.close()
    return out
