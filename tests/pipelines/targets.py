"""Rank functions for the pipeline tests (module level: spawned ranks import them by name).

Tensors cross the process boundary as numpy arrays (torch's shared-memory pickling needs the
sending rank alive).
"""

from __future__ import annotations

import numpy as np
import torch

from harness.datasets import Graph
from impls.pipelines.base import PipelineConfig


def planted_graph(num_nodes: int = 400, num_classes: int = 4, feat_dim: int = 8, seed: int = 3) -> Graph:
    """A small undirected graph whose edges mostly stay inside a class, with weak class features."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_nodes).astype(np.int64)
    m = num_nodes * 6
    src = rng.integers(0, num_nodes, m)
    dst = rng.integers(0, num_nodes, m)
    same = rng.random(m) < 0.8
    for c in range(num_classes):
        members = np.flatnonzero(labels == c)
        rows = np.flatnonzero(same & (labels[src] == c))
        dst[rows] = members[rng.integers(0, members.size, rows.size)]
    keep = src != dst
    s = np.concatenate([src[keep], dst[keep]])
    d = np.concatenate([dst[keep], src[keep]])
    key = np.unique(d * num_nodes + s)
    d, s = key // num_nodes, key % num_nodes
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(np.bincount(d, minlength=num_nodes))
    features = rng.normal(0, 1.0, (num_nodes, feat_dim)).astype(np.float32)
    features[np.arange(num_nodes), labels % feat_dim] += 1.0
    perm = rng.permutation(num_nodes)
    return Graph("planted", num_nodes, int(indptr[-1]), indptr, s.astype(np.int32), features, labels,
                 np.sort(perm[: num_nodes // 2]), np.sort(perm[num_nodes // 2: 3 * num_nodes // 4]),
                 np.sort(perm[3 * num_nodes // 4:]), True, 1.0, meta={"num_classes": num_classes})


_LIB = None


def install_fake_pyg_sampler() -> None:
    """PyG's sampler needs pyg-lib or torch-sparse, which have no builds for the CPU image: register
    the Python ``torch_sparse::neighbor_sample`` of tests/sampling/conftest.py (same semantics) in
    this process, once."""
    global _LIB
    import torch_geometric.typing as tgt

    from tests.sampling import conftest as adapter

    if not tgt.WITH_TORCH_SPARSE and not tgt.WITH_PYG_LIB and _LIB is None and adapter._LIB is None:
        _LIB = torch.library.Library("torch_sparse", "DEF")
        _LIB.define("neighbor_sample(Tensor colptr, Tensor row, Tensor input_node, int[] num_neighbors, "
                    "bool replace, bool directed) -> (Tensor, Tensor, Tensor, Tensor)")
        _LIB.impl("neighbor_sample", adapter._fake_neighbor_sample, "CPU")
        adapter._LIB = _LIB                    # that module's fixture must not define it again
    if not tgt.WITH_PYG_LIB:
        tgt.WITH_TORCH_SPARSE = True


def fake_pyg_worker_init(worker_id: int) -> None:
    """``worker_init_fn`` of loader workers (spawned: they start without the fake op)."""
    install_fake_pyg_sampler()


def _np(t):
    return None if t is None else t.detach().cpu().numpy().copy()


def block_np(b) -> dict:
    return {"indptr": _np(b.indptr), "indices": _np(b.indices), "src_ids": _np(b.src_ids), "num_dst": b.num_dst}


def block_of(d: dict):
    from impls.core.blocks import Block

    return Block(torch.from_numpy(d["indptr"]), torch.from_numpy(d["indices"]), torch.from_numpy(d["src_ids"]),
                 d["num_dst"])


def state_np(model) -> dict:
    return {k: _np(v) for k, v in model.state_dict().items()}


def one_step(ctx, graph: Graph, cases: list[dict], fake_pyg: bool = False) -> dict:
    """For every case (pipeline name + PipelineConfig fields): the weights before, the first
    training step's blocks, inputs, labels and loss, the weights after it, the epoch stats of
    one capped epoch, the batch count of a full epoch, and memory()."""
    from harness import registry

    if fake_pyg:
        install_fake_pyg_sampler()
    out = {}
    for i, case in enumerate(cases):
        case = dict(case)
        name = case.pop("pipeline")
        config = PipelineConfig(graph=graph, seed=5, **case)
        pipe = registry.get_impl("pipelines", name).factory(ctx, config)
        steps = []
        try:
            pipe.setup()
            before = state_np(pipe.model)
            pipe.step_hook = lambda s: steps.append({"seeds": _np(s["seeds"]), "y": _np(s["y"]), "x": _np(s["x"]),
                                                     "loss": float(s["loss"]),
                                                     "blocks": [block_np(b) for b in s["blocks"]]})
            stats = pipe.train_epoch(0, max_batches=1)
            after = state_np(pipe.model)
            pipe.step_hook = None
            full = pipe.train_epoch(1)
            out[i] = {"name": name, "before": before, "after": after, "steps": steps, "stats": stats.__dict__,
                      "full": full.__dict__, "memory": pipe.memory(), "accuracy": pipe.evaluate("val"),
                      "report": pipe.memory_report(), "describe": pipe.describe()}
        finally:
            pipe.close()
    return out


def train_planted(ctx, data_root: str, epochs: int) -> dict:
    """The wholegraph pipeline on a products stand-in: validation accuracy after each epoch."""
    from harness import graphs, registry
    from harness.config import RunConfig
    from harness.experiment import RunContext

    graph = graphs.load(RunContext(RunConfig(device="cpu", data_root=data_root), ctx), "ogbn-products", 0.01)
    config = PipelineConfig(graph=graph, model="sage", num_layers=2,
                            hidden=64, fanouts=(5, 5), batch_size=64, lr=0.01, seed=0, eval_batch_size=256,
                            eval_max_nodes=400)
    pipe = registry.get_impl("pipelines", "wholegraph").factory(ctx, config)
    try:
        pipe.setup()
        curve, losses, batches = [], [], []
        for e in range(epochs):
            st = pipe.train_epoch(e, breakdown=e == 0)
            curve.append(pipe.evaluate("val"))
            losses.append(st.loss)
            batches.append(st.batches)
        return {"val": curve, "loss": losses, "batches": batches, "test": pipe.evaluate("test"),
                "train_nodes": int(pipe.split_ids("train").numel())}
    finally:
        pipe.close()


def failing_point(ctx) -> None:
    """A training point whose pipeline fails on rank 1 while building its stores, while rank 0
    waits in a collective: the point must end the rank group, not hang it."""
    import torch.distributed as dist

    from experiments.wholegraph.table5 import Table5
    from experiments.wholegraph.training import train_point
    from harness import registry
    from harness.config import RunConfig
    from harness.experiment import Point, RunContext
    from impls.pipelines.wholegraph import WholeGraphPipeline

    class Failing(WholeGraphPipeline):
        def build_stores(self):
            if self.me == 1:
                raise ValueError("deliberate failure while building the stores")
            dist.barrier()                     # rank 0 waits here for a peer that never comes

    registry.register_impl("pipelines", "failing_on_rank1")(lambda rank, config: Failing(rank, config))
    point = Point("failing_on_rank1", {"dataset": "planted", "scale": 1.0, "model": "sage", "backend": "native",
                                       "layers": 2, "hidden": 8, "fanouts": [3, 3], "batch_size": 16, "epochs": 1},
                  ctx.world_size)
    exp = Table5()
    cfg = RunConfig(device="cpu")
    import experiments.wholegraph.training as training

    original = training.pipeline_config

    def with_graph(exp_, point_, ctx_):
        config = original(exp_, point_, ctx_)
        config.graph = planted_graph()
        return config

    training.pipeline_config = with_graph
    train_point(exp, point, RunContext(cfg, ctx))


def prefetch_runs(ctx, graph: Graph, case: dict) -> dict:
    """One free-running epoch of ``case`` without and with prefetch, from the same seed: every
    step's seeds, blocks, inputs, labels and loss, and the weights after the epoch."""
    from harness import registry

    out = {}
    for prefetch in ("0", "1"):
        case_now = dict(case)
        name = case_now.pop("pipeline")
        options = {**case_now.pop("options", {}), "prefetch": prefetch}
        config = PipelineConfig(graph=graph, seed=5, options=options, **case_now)
        pipe = registry.get_impl("pipelines", name).factory(ctx, config)
        steps = []
        try:
            pipe.setup()
            pipe.step_hook = lambda s: steps.append({"seeds": _np(s["seeds"]), "y": _np(s["y"]), "x": _np(s["x"]),
                                                     "loss": float(s["loss"]),
                                                     "blocks": [block_np(b) for b in s["blocks"]]})
            stats = pipe.train_epoch(0, breakdown=False)
            pipe.step_hook = None
            out[prefetch] = {"steps": steps, "after": state_np(pipe.model), "batches": stats.batches,
                             "enabled": pipe.prefetch_enabled(), "describe": pipe.describe()}
        finally:
            pipe.close()
    return out


def profiled_epochs(ctx, graph: Graph, case: dict) -> int:
    """Two epochs of ``case``; HARNESS_PROFILE_DIR / _EPOCH in the environment pick one to profile."""
    from harness import registry

    case_now = dict(case)
    name = case_now.pop("pipeline")
    pipe = registry.get_impl("pipelines", name).factory(ctx, PipelineConfig(graph=graph, seed=5, **case_now))
    try:
        pipe.setup()
        return sum(pipe.train_epoch(e, breakdown=e == 0).batches for e in range(2))
    finally:
        pipe.close()


def capped_host_epochs(ctx, graph: Graph, workers: int, caps: list[int]) -> list[tuple[int, int]]:
    """pyg_host with ``workers`` loader processes: (batches run, batches of a full epoch) of one
    epoch per cap."""
    from harness import registry

    install_fake_pyg_sampler()
    config = PipelineConfig(graph=graph, seed=5, model="sage", num_layers=2, hidden=16, fanouts=(4, 3),
                            batch_size=16, lr=0.01, eval_batch_size=64,
                            options={"num_workers": workers, "multiprocessing_context": "fork"})
    pipe = registry.get_impl("pipelines", "pyg_host").factory(ctx, config)
    try:
        pipe.setup()
        out = []
        for e, cap in enumerate(caps):
            st = pipe.train_epoch(e, max_batches=cap)
            out.append((st.batches, st.batches_full))
        return out
    finally:
        pipe.close()


def profiled_layers(ctx, graph: Graph) -> list[dict]:
    """The wholegraph pipeline trained one capped epoch, then each layer alone on one mini-batch
    (experiments.wholegraph.training.profile_layers, what Fig. 11's points add to their rows)."""
    from experiments.wholegraph.training import profile_layers
    from harness import registry

    config = PipelineConfig(graph=graph, seed=5, model="gcn", num_layers=2, hidden=16, fanouts=(4, 3), batch_size=32)
    pipe = registry.get_impl("pipelines", "wholegraph").factory(ctx, config)
    try:
        pipe.setup()
        pipe.train_epoch(0, max_batches=1)
        return profile_layers(pipe)
    finally:
        pipe.close()
