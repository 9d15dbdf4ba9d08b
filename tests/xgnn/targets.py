"""Rank functions for the tiered-store pipelines (module level: spawned ranks import them)."""

from __future__ import annotations

import numpy as np
import torch

from harness.datasets import Graph
from harness.errors import SkipPoint
from impls.pipelines.base import PipelineConfig


def small_graph(num_nodes: int = 480, num_classes: int = 4, feat_dim: int = 8, seed: int = 5) -> Graph:
    """A skewed random graph with class-dependent features (a learnable toy task)."""
    from tests.storage.graphs import skewed_graph

    g = skewed_graph(num_nodes=num_nodes, seed=seed, feat_dim=feat_dim, max_degree=30)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_nodes).astype(np.int64)
    features = g["features"].numpy()
    features[np.arange(num_nodes), labels % feat_dim] += 2.0
    perm = rng.permutation(num_nodes)
    return Graph("toy", num_nodes, int(g["indptr"][-1]), g["indptr"], g["indices"], features, labels,
                 perm[: num_nodes // 2], perm[num_nodes // 2: 3 * num_nodes // 4], perm[3 * num_nodes // 4:],
                 True, 1.0, meta={"num_classes": num_classes})


def config(graph, **kw) -> PipelineConfig:
    base = dict(graph=graph, model="gcn", num_layers=3, hidden=16, fanouts=(15, 10, 5), batch_size=48,
                lr=0.01, seed=3)
    base.update(kw)
    return PipelineConfig(**base)


def train_steps(ctx, cases: list[tuple[str, dict, dict]], steps: int = 2) -> dict:
    """For every (pipeline, options, config overrides): ``steps`` training steps with their
    blocks, inputs, labels and losses, epoch stats, memory, accuracy; or the OOM reason."""
    from harness import registry

    graph = small_graph()
    out = {}
    for key, (name, options, overrides) in enumerate(cases):
        pipe = registry.get_impl("pipelines", name).factory(ctx, config(graph, options=options, **overrides))
        record = {"name": name}
        try:
            pipe.setup()
        except SkipPoint as exc:
            out[key] = {"name": name, "skipped": str(exc)}
            pipe.close()
            continue
        steps_seen = []

        def hook(step, steps_seen=steps_seen):
            steps_seen.append({"seeds": _np(step["seeds"]), "blocks": [_block_np(b) for b in step["blocks"]],
                               "x": _np(step["x"]), "y": _np(step["y"]), "loss": float(step["loss"])})

        pipe.step_hook = hook
        try:
            stats = pipe.train_epoch(0, max_batches=steps)
            record.update(steps=steps_seen, order=pipe.store.reordering.order, stats=stats.__dict__,
                          memory=pipe.memory(), per_gpu=pipe.store.memory()["per_gpu"],
                          accuracy=pipe.evaluate("val"), describe=pipe.describe())
        finally:
            pipe.close()
        out[key] = record
    return out


# tensors cross the process boundary as numpy arrays (torch's shared-memory pickling needs the
# sending rank alive)
def _np(t):
    return None if t is None else t.detach().cpu().numpy().copy()


def _block_np(b) -> dict:
    from impls.core.blocks import edge_weight_of

    return {"indptr": _np(b.indptr), "indices": _np(b.indices), "src_ids": _np(b.src_ids), "num_dst": b.num_dst,
            "dup_count": _np(b.dup_count), "edge_weight": _np(edge_weight_of(b))}


def block_of(d: dict):
    from impls.core.blocks import Block

    from impls.core.blocks import set_edge_weight

    t = {k: (None if d[k] is None else torch.from_numpy(d[k])) for k in ("indptr", "indices", "src_ids", "dup_count")}
    block = Block(t["indptr"], t["indices"], t["src_ids"], d["num_dst"], t["dup_count"])
    if d.get("edge_weight") is not None:
        set_edge_weight(block, torch.from_numpy(d["edge_weight"]))
    return block
