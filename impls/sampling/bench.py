"""Measuring samplers inside ranks: shared by wholegraph.sampling, wholegraph.unique and xgnn.fig14.

Every rank loads the dataset's structure (``harness.graphs.load(ctx, name, scale, "structure")``),
builds the implementation once per (impl, options, graph) and times its own batches; an
iteration's time is the slowest rank's (``measure_collective``: barriers around every iteration).
The implementations built on a graph live in the run's cache beside it (``graphs.built_on``) and
close when the next graph is loaded.
"""

from __future__ import annotations

import torch

from harness import graphs, registry
from harness.timing import CpuTimer, TorchCudaTimer, measure_collective


def implementation(ctx, interface: str, name: str, graph, **options):
    """``name`` of ``interface`` on this rank for ``graph``, built once per run (closed, which is
    collective for sharded stores and WholeGraph, when the next graph is loaded)."""
    rank = ctx.rank

    def build():
        if interface == "sampling" and name == "wholegraph_lib":
            from .baselines import make_lib_adapter

            return make_lib_adapter(rank, graph.indptr, graph.indices, **options)
        if interface == "sampling":
            return registry.get_impl("sampling", name).factory(rank, graph.indptr, graph.indices, **options)
        return registry.get_impl(interface, name).factory(rank, **options)

    return graphs.built_on(ctx, graph, ("sampling-impl", interface, name, tuple(sorted(options.items()))), build)


def timer_for(ctx, on_gpu: bool = True):
    return TorchCudaTimer() if (ctx.device == "cuda" and on_gpu) else CpuTimer()


def seed_batches(graph, batch: int, count: int, seed: int, rank: int, device) -> list[torch.Tensor]:
    """``count`` batches of ``batch`` distinct training nodes (all nodes if the split is smaller),
    cut from one shuffle of the pool as an epoch's batches are, so no two batches share a seed
    while the pool lasts; past that, the next shuffle continues."""
    pool = torch.from_numpy(graph.train_idx.astype("int64", copy=False))
    if pool.numel() < batch:
        pool = torch.arange(graph.num_nodes)
    gen = torch.Generator().manual_seed(seed * 7919 + rank * 104_729 + batch)
    take = min(batch, pool.numel())
    per_shuffle = pool.numel() // take
    out = []
    for i in range(count):
        if i % per_shuffle == 0:
            order = pool[torch.randperm(pool.numel(), generator=gen)]
        j = i % per_shuffle
        out.append(order[j * take:(j + 1) * take].to(device))
    return out


def epoch_batches(graph, batch: int, world: int, rank: int, seed: int, device) -> list[torch.Tensor]:
    """This rank's share of one epoch: the training nodes shuffled, split over ranks, in batches."""
    pool = torch.from_numpy(graph.train_idx.astype("int64", copy=False))
    gen = torch.Generator().manual_seed(seed * 6151 + 17)
    pool = pool[torch.randperm(pool.numel(), generator=gen)]
    share = pool[rank::world]
    return [share[i:i + batch].to(device) for i in range(0, share.numel(), batch)]


def expected_edges(batch: int, fanouts) -> int:
    """Upper bound on the edges of a mini-batch: batch x (f0 + f0 f1 + ...)."""
    total, width = 0, batch
    for f in fanouts:
        width *= f
        total += width
    return total


class Rotating:
    """Calls fn on the next prepared input each time (so repeats do not reuse one batch)."""

    def __init__(self, inputs, fn):
        self.inputs, self.fn, self.i = inputs, fn, 0
        self.results: list = []

    def __call__(self):
        x = self.inputs[self.i % len(self.inputs)]
        self.i += 1
        self.results.append(self.fn(x))


def timed(fn_of_input, inputs, ctx, warmup: int, repeats: int, on_gpu: bool = True, flush=None):
    """Stats of fn over rotating inputs (barrier per iteration; ``flush`` before each, untimed)
    and the per-iteration results of the timed iterations (in order)."""
    rot = Rotating(inputs, fn_of_input)
    stats, spread = measure_collective(rot, timer=timer_for(ctx, on_gpu), warmup=warmup, repeats=repeats,
                                       flush=flush)
    return stats, spread, rot.results[warmup:]
