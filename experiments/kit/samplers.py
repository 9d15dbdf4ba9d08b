"""Measuring samplers inside ranks: shared by wholegraph.sampling, wholegraph.unique and xgnn.fig14.

Every rank loads the dataset's structure (``harness.graphs.load(ctx, name, scale, "structure")``),
builds the implementation once per (impl, options, graph) and times its own batches; an
iteration's time is the slowest rank's (``measure_collective``: barriers around every iteration).
The implementations built on a graph live in the run's cache beside it (``graphs.built_on``) and
close when the next graph is loaded.
"""

from __future__ import annotations

import itertools
from typing import Iterator

import torch

from harness import graphs, registry
from harness.timing import RepeatBudget, measure_collective, timer_for


def implementation(ctx, interface: str, name: str, graph, **options):
    """``name`` of ``interface`` on this rank for ``graph``, built once per run (closed, which is
    collective for sharded stores and WholeGraph, when the next graph is loaded)."""
    rank = ctx.rank

    def build():
        if interface == "sampling":
            return registry.get_impl("sampling", name).factory(rank, graph.indptr, graph.indices, **options)
        return registry.get_impl(interface, name).factory(rank, **options)

    return graphs.built_on(ctx, graph, ("sampling-impl", interface, name, tuple(sorted(options.items()))), build)


def seed_stream(graph, batch: int, seed: int, rank: int, device) -> Iterator[torch.Tensor]:
    """Batches of ``batch`` distinct training nodes (all nodes if the split is smaller), for ever,
    cut from one shuffle of the pool as an epoch's batches are, so no two batches share a seed
    while the pool lasts; past that, the next shuffle continues. A timed loop takes as many as its
    budget runs iterations."""
    pool = torch.from_numpy(graph.train_idx.astype("int64", copy=False))
    if pool.numel() < batch:
        pool = torch.arange(graph.num_nodes)
    gen = torch.Generator().manual_seed(seed * 7919 + rank * 104_729 + batch)
    take = min(batch, pool.numel())
    per_shuffle = pool.numel() // take
    for i in itertools.count():
        if i % per_shuffle == 0:
            order = pool[torch.randperm(pool.numel(), generator=gen)]
        j = i % per_shuffle
        yield order[j * take:(j + 1) * take].to(device)


def seed_batches(graph, batch: int, count: int, seed: int, rank: int, device) -> list[torch.Tensor]:
    """The first ``count`` batches of :func:`seed_stream`."""
    return list(itertools.islice(seed_stream(graph, batch, seed, rank, device), count))


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


class Feed:
    """Calls fn on a fresh input each time (so repeats do not reuse one batch), keeping what each
    call returned; ``prepare`` takes the next input outside the timed region (``measure``'s
    ``setup``: a new shuffle and the copy to the device are not the sampler's time)."""

    def __init__(self, inputs: Iterator, fn):
        self.inputs, self.fn = inputs, fn
        self.results: list = []
        self._next = None

    def prepare(self) -> None:
        self._next = next(self.inputs)

    def __call__(self):
        self.results.append(self.fn(self._next))


def timed(fn_of_input, inputs: Iterator, ctx, budget: RepeatBudget, on_gpu: bool = True, flush=None):
    """Stats of fn over fresh inputs, one per call (barrier per iteration; ``flush`` before each,
    untimed; warm-ups and repeats as ``budget`` says), the per-iteration results of the timed
    iterations (in order) and the number of inputs the calls took."""
    feed = Feed(inputs, fn_of_input)
    stats, spread = measure_collective(feed, timer=timer_for(ctx.device if on_gpu else "cpu"), budget=budget,
                                       setup=feed.prepare, flush=flush)
    return stats, spread, feed.results[-stats.repeats:], len(feed.results)
