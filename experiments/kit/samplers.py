"""Measuring samplers inside ranks: shared by wholegraph.sampling, wholegraph.unique and xgnn.fig14.

Every rank loads the dataset (rank 0 generates/caches a stand-in first), builds the
implementation once per (impl, options, dataset) and times its own batches; an iteration's
time is the slowest rank's (``measure_collective``: barriers around every iteration). The graph
and the implementations built on it live in the run's cache (``ctx``: the point's
``harness.experiment.RunContext``), one graph at a time.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

from harness import datasets, registry
from harness.errors import HarnessError
from harness.ranks import load_on_ranks
from harness.timing import RepeatBudget, measure_collective, timer_for

UNIFORM_PREFIX = "uniform:"


@dataclass
class UniformGraph:
    """A synthetic uniform random graph (not a paper's dataset): every node draws Poisson(degree)
    neighbours uniformly from all nodes; every node is a training node. docs/machines.md lists
    PyG's NeighborLoader on such a graph of 2M nodes; ``uniform:2000000:50`` rebuilds one."""

    name: str
    num_nodes: int
    degree: int
    indptr: np.ndarray
    indices: np.ndarray
    train_idx: np.ndarray

    @classmethod
    def build(cls, spec: str, scale: float, seed: int) -> "UniformGraph":
        nodes, degree = parse_uniform(spec)
        nodes = max(2, int(round(nodes * scale)))
        rng = np.random.default_rng(seed * 1_000_003 + 17)
        indptr = np.zeros(nodes + 1, dtype=np.int64)
        np.cumsum(rng.poisson(degree, nodes), out=indptr[1:])
        index_dtype = np.int32 if nodes < 2 ** 31 else np.int64
        indices = rng.integers(0, nodes, int(indptr[-1]), dtype=index_dtype)
        return cls(spec, nodes, degree, indptr, indices, np.arange(nodes, dtype=np.int64))


def is_uniform(name: str) -> bool:
    return name.startswith(UNIFORM_PREFIX)


def parse_uniform(spec: str) -> tuple[int, int]:
    """'uniform:NODES:DEGREE' -> (nodes, degree)."""
    try:
        nodes, degree = (int(x) for x in spec[len(UNIFORM_PREFIX):].split(":"))
    except ValueError:
        nodes = degree = 0
    if nodes < 2 or degree < 1:
        raise HarnessError(f"a uniform graph is '{UNIFORM_PREFIX}NODES:DEGREE' (NODES >= 2, DEGREE >= 1), "
                           f"not '{spec}'")
    return nodes, degree


def load_graph(ctx, name: str, scale: float):
    """The dataset on every rank; rank 0 prepares the stand-in first, the others wait. Loading
    another graph closes the implementations built on the previous one.

    Sampling reads no features, so stand-ins are made with one feature column (same graph and
    splits as the full-width stand-in, without writing gigabytes of features). ``uniform:N:D``
    is a synthetic uniform random graph (:class:`UniformGraph`), built by every rank alike."""
    cfg = ctx.cfg

    def load():
        if is_uniform(name):
            return UniformGraph.build(name, scale, cfg.seed)
        return load_on_ranks(ctx.rank, lambda: datasets.load(name, scale=scale, seed=cfg.seed, data_root=cfg.data_root,
                                                             **_lean(name, scale)))

    return ctx.cached(("sampling-graph", name, scale, cfg.seed, str(cfg.data_root)), load,
                      replaces=("sampling-graph", "sampling-impl"))


def _lean(name: str, scale: float) -> dict:
    """Stand-in overrides: one feature column (real datasets at scale 1.0 load as they are)."""
    if scale == 1.0 and datasets.real_available(name):
        return {}
    return {"feature_dim": 1}


def implementation(ctx, interface: str, name: str, graph, **options):
    """``name`` of ``interface`` on this rank for ``graph``, built once per run (closed, which is
    collective for sharded stores and WholeGraph, when the next graph is loaded)."""
    rank = ctx.rank

    def build():
        if interface == "sampling":
            return registry.get_impl("sampling", name).factory(rank, graph.indptr, graph.indices, **options)
        return registry.get_impl(interface, name).factory(rank, **options)

    return ctx.cached(("sampling-impl", interface, name, id(graph), tuple(sorted(options.items()))), build)


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
