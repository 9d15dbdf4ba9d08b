"""Checks of the tiered-store pipelines' results (tests/xgnn/targets.train_steps) against a
single-process reference; shared by the CPU tests and the GPU tests (tests/gpu)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from impls import models
from impls.core.blocks import edge_weight_of
from impls.storage.budget import is_oom_reason

from .targets import block_of, config, small_graph

CASES = [
    ("xgnn", {"graph_ratio": 0.5, "feat_ratio": 0.3}, {}),
    ("xgnn", {"graph_ratio": 0.5, "feat_ratio": 0.3, "prefetch": 0}, {}),
    ("dgl_cache", {"cache_ratio": 0.2}, {}),
    ("quiver", {"feat_ratio": 0.4}, {"model": "sage", "num_layers": 2, "fanouts": (10, 25)}),
    ("xgnn", {"reserve_bytes": 0, "priority": "feat"}, {"memory_budget_bytes": 9000}),
    ("dgl_cache", {"reserve_bytes": 0}, {"memory_budget_bytes": 2000}),
    # the same budget in DGL's UVA mode: the topology stays on the host, so the cache fits
    ("dgl_cache", {"reserve_bytes": 0, "graph_location": "host"}, {"memory_budget_bytes": 2000}),
    # PinSAGE: random walks over the stores, visit counts as edge weights
    ("xgnn", {"graph_ratio": 0.5, "feat_ratio": 0.3}, {"model": "pinsage", "fanouts": (5, 5, 5)}),
    ("dgl_cache", {"cache_ratio": 0.2, "restart_prob": 0.0}, {"model": "pinsage", "fanouts": (5, 5, 5)}),
]


def _expects_oom(name, options, overrides):
    return name == "dgl_cache" and "memory_budget_bytes" in overrides and options.get("graph_location") != "host"


def _reference_losses(graph, cfg, per_rank_steps):
    """Losses of a single-process model fed the ranks' blocks, stepping with the mean gradient."""
    torch.manual_seed(cfg.seed)
    model = models.build(cfg.model, graph.feature_dim, cfg.hidden, graph.num_classes, cfg.num_layers)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    losses = []
    for step in range(len(per_rank_steps[0])):
        opt.zero_grad()
        per_rank = [F.cross_entropy(model(s[step]["blocks"], s[step]["x_ref"]), s[step]["y_ref"])
                    for s in per_rank_steps]
        (sum(per_rank) / len(per_rank)).backward()
        opt.step()
        losses.append([float(v.detach()) for v in per_rank])
    return losses


def _check_walk_block(graph, block, src, dst, name, walks: int = 4, length: int = 3):
    """PinSAGE blocks: every neighbour within ``length`` hops of its target, never the target, weighted
    by its visit count (a whole number, at most walks x length per target), at most the fanout."""
    w = edge_weight_of(block)
    assert w is not None and w.numel() == block.num_edges, f"{name}: PinSAGE block without visit counts"
    assert bool((w >= 1).all()) and torch.equal(w, w.round())
    per_dst = torch.zeros(block.num_dst).index_add_(0, block.edge_dst(), w)
    assert per_dst.numel() == 0 or float(per_dst.max()) <= walks * length
    assert bool((block.indptr[1:] - block.indptr[:-1] <= 5).all()) and not bool((src == dst).any())
    for u, v in zip(src[:100].tolist(), dst[:100].tolist()):
        reach, frontier = {v}, {v}
        for _ in range(length):
            frontier = {int(x) for f in frontier for x in graph.neighbors(f).tolist()} - reach
            reach |= frontier
        assert u in reach, f"{name}: walk neighbour {u} is not within {length} hops of {v}"


def check_steps(results, rtol: float = 1e-4):
    graph = small_graph()
    feats = torch.from_numpy(graph.features)
    labels = torch.from_numpy(graph.labels)
    for key, (name, options, overrides) in enumerate(CASES):
        if _expects_oom(name, options, overrides):
            continue
        per_rank = []
        for r in results:
            rec = r[key]
            order = torch.from_numpy(rec["order"])
            assert len(rec["steps"]) == 2
            for s in rec["steps"]:
                s["blocks"] = [block_of(b) for b in s["blocks"]]
                s["x"], s["y"], s["seeds"] = (torch.from_numpy(s[k]) for k in ("x", "y", "seeds"))
                old_src = order[s["blocks"][0].src_ids]
                s["x_ref"] = feats[old_src]
                s["y_ref"] = labels[order[s["seeds"]]]
                assert torch.equal(s["x"], s["x_ref"]), f"{name}: gathered rows differ from the dataset's"
                assert torch.equal(s["y"], s["y_ref"])
                for b in s["blocks"]:
                    b.validate()
                    src, dst = (order[t] for t in b.global_edges())
                    if overrides.get("model") == "pinsage":
                        _check_walk_block(graph, b, src, dst, name)
                        continue
                    ok = [int(u) in set(graph.neighbors(int(v)).tolist()) for u, v in zip(src[:300], dst[:300])]
                    assert all(ok), f"{name}: a sampled edge is not in the graph"
            per_rank.append(rec["steps"])
        ref = _reference_losses(graph, config(graph, **overrides), per_rank)
        got = [[float(per_rank[r][i]["loss"]) for r in range(2)] for i in range(2)]
        assert np.allclose(got, ref, rtol=rtol, atol=rtol / 10), f"{name} {options}: {got} vs reference {ref}"
    # prefetching changes nothing but the timing
    a, b = results[0][0]["steps"], results[0][1]["steps"]
    assert all(float(x["loss"]) == float(y["loss"]) for x, y in zip(a, b))


def check_stats_memory_and_oom(results):
    r0, r1 = results
    for key, (name, options, overrides) in enumerate(CASES):
        if _expects_oom(name, options, overrides):
            assert is_oom_reason(r0[key]["skipped"]) and is_oom_reason(r1[key]["skipped"])
            assert "DGL+C topology" in r0[key]["skipped"]
            continue
        rec = r0[key]
        extra = rec["stats"]["extra"]
        tiers = extra["tiers"]
        assert tiers["features"]["accesses"] == sum(int(s["x"].shape[0]) for s in rec["steps"]) + \
            sum(int(s["x"].shape[0]) for s in r1[key]["steps"])            # summed over both ranks
        assert 0.0 <= extra["feature_hit_rate"] <= 1.0
        assert rec["memory"]["graph_structure"] == rec["per_gpu"][0]["topology_bytes"]
        feat_cat = "cache" if name == "dgl_cache" else "node_features"
        assert rec["memory"][feat_cat] == rec["per_gpu"][0]["feature_bytes"] > 0
        assert 0.0 <= rec["accuracy"] <= 1.0 and "prefetch" in rec["describe"]["pipelining"]
    assert r0[2]["stats"]["extra"]["tiers"]["features"]["remote_gpu"]["accesses"] == 0      # DGL+C
    assert r0[3]["per_gpu"][0]["topology_bytes"] == 0                                      # Quiver
    assert r0[3]["stats"]["extra"]["topology_hit_rate"] == 0.0
    fit = r0[4]["stats"]["extra"]["store"]["fit"]
    assert fit["total_bytes"] <= 9000 and fit["feat_rows"] > 0
    uva = r0[6]                                                                            # DGL+C (UVA)
    assert uva["per_gpu"][0]["topology_bytes"] == 0 and uva["stats"]["extra"]["topology_hit_rate"] == 0.0
    assert 0 < uva["stats"]["extra"]["store"]["fit"]["total_bytes"] <= 2000
