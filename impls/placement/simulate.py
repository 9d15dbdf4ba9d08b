"""Replay sampled mini-batches against a placement: where every input feature is read from.

Data-parallel training as in ICS'22 Sec. 3: each epoch the training nodes are shuffled and
split evenly over the GPUs (global shuffling), or each GPU shuffles its own part when the policy
partitioned them (PaGraph, METIS: ``Placement.train_parts``). Every GPU samples its mini-batches,
and each input node is classified with that GPU's ``dev_num`` lookup: local, a peer GPU, or the
host. The counts feed the cost model (Eq. 3) or the per-link model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .cost import CostModel, LinkModel
from .result import Placement


@dataclass
class ReplayResult:
    """Rows each GPU read, per batch and source: ``batch_reads[g]`` is (batches, n + 1).

    Columns 0..n-1 are GPUs (the diagonal entry is the GPU's own buffer), column n the host.
    """

    placement: Placement
    batch_reads: list[np.ndarray]
    epochs: int
    meta: dict = field(default_factory=dict)

    @property
    def num_gpus(self) -> int:
        return self.placement.num_gpus

    def reads(self) -> np.ndarray:
        """(n, n + 1) totals over all batches."""
        return np.stack([r.sum(axis=0) for r in self.batch_reads])

    def split(self) -> np.ndarray:
        """(n, 3): local, peer-GPU and host rows read by each GPU."""
        reads = self.reads()
        n = self.num_gpus
        local = reads[np.arange(n), np.arange(n)]
        host = reads[:, n]
        peer = reads[:, :n].sum(axis=1) - local
        return np.stack([local, peer, host], axis=1)

    def fractions(self) -> dict:
        """Access fractions over all GPUs (they sum to 1) and per GPU."""
        split = self.split().astype(np.float64)
        total = split.sum()
        per_gpu = split / np.maximum(split.sum(axis=1, keepdims=True), 1)
        overall = split.sum(axis=0) / max(total, 1)
        return {"local": float(overall[0]), "peer": float(overall[1]), "host": float(overall[2]),
                "per_gpu": per_gpu}

    def modeled_time(self, cost: CostModel) -> np.ndarray:
        """Eq. 3 summed over each GPU's batches (seconds per replayed epoch, per GPU)."""
        split = self.split()
        return cost.read_cost(split[:, 0], split[:, 1], split[:, 2]) / self.epochs

    def link_time(self, model: LinkModel) -> np.ndarray:
        """Per-link model summed over batches (seconds per replayed epoch, per GPU)."""
        return np.array([model.batch_time(g, r).sum() if len(r) else 0.0
                         for g, r in enumerate(self.batch_reads)]) / self.epochs


def gpu_batches(train_idx: np.ndarray, placement: Placement, batch_size: int,
                rng: np.random.Generator) -> list[list[np.ndarray]]:
    """One epoch of mini-batches per GPU (global or local shuffling, see module doc)."""
    n = placement.num_gpus
    if placement.train_parts is not None:
        shares = [rng.permutation(part) for part in placement.train_parts]
    else:
        shares = np.array_split(rng.permutation(np.asarray(train_idx, dtype=np.int64)), n)
    return [[share[i:i + batch_size] for i in range(0, len(share), batch_size)] for share in shares]


def replay_batches(indptr, indices, train_idx, placement: Placement, sampler_for_gpu: Callable[[int], object],
                   batch_size: int, epochs: int = 1, max_batches: int | None = None, seed: int = 0):
    """Yield ``(gpu, input_nodes)`` for every replayed mini-batch, in replay order.

    The one source of replayed batches: :func:`replay` counts reads over them and the measured
    path (``experiments.kit.placement_loading``) gathers their features on real ranks, so both see the
    same batches for the same sampler and seed.
    """
    n = placement.num_gpus
    rng = np.random.default_rng(seed)
    samplers = [sampler_for_gpu(g) for g in range(n)]
    for _ in range(epochs):
        for g, batches in enumerate(gpu_batches(train_idx, placement, batch_size, rng)):
            for batch in batches[:max_batches]:
                yield g, samplers[g].sample(indptr, indices, batch, rng, edges=False).input_nodes


def count_reads(placement: Placement, gpu: int, nodes: np.ndarray) -> np.ndarray:
    """Rows ``gpu`` reads from every GPU (columns 0..n-1) and the host (column n) for one batch."""
    n = placement.num_gpus
    dev_num = placement.lookup(gpu).dev_num[nodes]
    # dev_num -1 (host) lands in the last column
    return np.bincount(np.where(dev_num < 0, n, dev_num), minlength=n + 1)


def replay(indptr, indices, train_idx, placement: Placement, sampler_for_gpu: Callable[[int], object],
           batch_size: int, epochs: int = 1, max_batches: int | None = None, seed: int = 0,
           keep_batches: bool = False) -> ReplayResult:
    """Sample ``epochs`` epochs (at most ``max_batches`` batches per GPU and epoch) and count reads.

    ``keep_batches``: also keep every GPU's input nodes per batch in ``meta["input_batches"]``
    (what the measured path gathers).
    """
    n = placement.num_gpus
    kept: list[list[np.ndarray]] = [[] for _ in range(n)]
    for g, nodes in replay_batches(indptr, indices, train_idx, placement, sampler_for_gpu, batch_size,
                                   epochs, max_batches, seed):
        kept[g].append(np.asarray(nodes, dtype=np.int64))
    return count_replayed(placement, kept, epochs, keep_batches)


def count_replayed(placement: Placement, input_batches: list[list[np.ndarray]], epochs: int = 1,
                   keep_batches: bool = False) -> ReplayResult:
    """The reads of batches already sampled (``input_batches[g]``: GPU g's input nodes per batch,
    from :func:`replay_batches`) over ``placement``: a sweep over buffer sizes and policies that
    sample alike (the same training split, sampler and seed) samples once."""
    n = placement.num_gpus
    batch_reads = [np.stack([count_reads(placement, g, nodes) for nodes in per_gpu]) if per_gpu else
                   np.zeros((0, n + 1), dtype=np.int64) for g, per_gpu in enumerate(input_batches)]
    meta = {"input_nodes": int(sum(len(b) for per_gpu in input_batches for b in per_gpu)),
            "batches": [len(r) for r in batch_reads]}
    if keep_batches:
        meta["input_batches"] = input_batches
    return ReplayResult(placement, batch_reads, epochs, meta)
