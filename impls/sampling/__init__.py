"""Interface `sampling`: neighbor sampling on a CSR graph (WholeGraph III-C, XGNN section 5).

Implementations register with ``register_impl("sampling", name, ...)`` and are created
per rank by their factory from a CSR (``indptr`` int64 of length ``num_nodes + 1``,
``indices`` of neighbor ids). A sampler draws at most ``fanout`` neighbors per seed
without replacement; a seed with degree <= fanout gets every neighbor. Each module
documents its output convention (``wholegraph_lib``: the library's CSR-style
``(sample_offsets, sampled_ids)``).

Ours (samplers.py, unique.py, minibatch.py; kernels/*.cu on CUDA, numba on CPU; bit-identical):

- ``path_doubling`` (WholeGraph Alg. 1), ``reservoir`` (one thread per target), ``khop_batched``
  (XGNN KHop; ``variant="original"`` is the reservoir KHop it improves on) return
  ``(offsets int64 [n + 1], neighbors int64)``: a CSR over the seeds of global neighbor ids,
  ``min(degree, fanout)`` distinct CSR positions per seed, whole lists in CSR order when
  degree <= fanout. Options: ``store`` (local | split | sharded over the ranks' GPUs, csr.py),
  ``count_remote`` (requests to rows of other ranks, ``remote_stats()``), ``seed``.
- ``pinsage_walk`` (random_walk.py): PinSAGE's neighbours by random walks with restart, the top
  ``fanout`` visited nodes per target; ``weighted = True`` and ``sample_weighted`` also returns
  their visit counts (float32), which ``sample_blocks`` attaches to the blocks as edge weights.
- interface ``unique`` (declared here too): ``hash_append`` (WholeGraph Fig. 5), ``dense_append``,
  ``sort`` (torch.unique),
  ``wholegraph_lib``: ``append_unique(targets, neighbors) -> (unique_ids, local_neighbors,
  dup_count)`` with the targets first in their order.
- ``minibatch.sample_blocks(sampler, unique, seeds, fanouts)`` -> list of ``blocks.Block``.
- baselines.py: ``pyg`` (NeighborSampler, pyg-lib or torch-sparse), ``dgl``, and an adapter
  giving ``wholegraph_lib`` our convention. The experiments' measuring helpers live in
  experiments/kit/samplers.py.
"""

from typing import TYPE_CHECKING, Callable, Protocol, runtime_checkable

from harness.registry import register_interface

if TYPE_CHECKING:
    import torch


@runtime_checkable
class Sampler(Protocol):
    """``sample(seeds, fanout) -> (offsets int64 [n + 1], neighbors int64)``: at most ``fanout``
    distinct neighbours of each seed copy from its CSR list (every one, in CSR order, where the
    degree is at most ``fanout``; ``fanout <= 0``: every neighbour)."""

    def sample(self, seeds, fanout: int, *, seed: int | None = None, generator=None,
               check: bool = True) -> "tuple[torch.Tensor, torch.Tensor]": ...

    def describe(self) -> str: ...

    def close(self) -> None: ...


class SamplerFactory(Protocol):
    def __call__(self, where, indptr, indices, **options) -> Sampler: ...


@runtime_checkable
class MinibatchSampler(Sampler, Protocol):
    """A sampler that samples a whole mini-batch itself, with its own de-duplication (trait
    ``own_minibatch``): ``sample_minibatch(seeds, fanouts) -> {"nodes": .., "edges": ..}``."""

    def sample_minibatch(self, seeds, fanouts, *, seed: int | None = None, generator=None) -> dict: ...


@runtime_checkable
class LoaderSampler(Sampler, Protocol):
    """A sampler with a host loader of worker processes (trait ``loader``): ``loader(seeds,
    fanouts, batch, workers) -> (iterable of batches, edges of a batch, its name)``."""

    def loader(self, seeds, fanouts, batch: int, workers: int) -> "tuple[object, Callable, str]": ...


@runtime_checkable
class AppendUnique(Protocol):
    """``append_unique(targets, neighbors) -> (unique_ids, local_neighbors, dup_count or None)``:
    the targets first in their order, then every other neighbour once; ``unique_ids[local]`` gives
    the neighbours back."""

    def append_unique(self, targets, neighbors, check: bool = True, id_bound: int | None = None): ...

    def describe(self) -> str: ...


class UniqueFactory(Protocol):
    def __call__(self, where, **options) -> AppendUnique: ...


SAMPLING_TRAITS = {
    "paper": "WholeGraph's Algorithm 1 as implemented here: the sampler the others are compared with",
    "blocks": "ours: sample() per hop, composed with an append-unique of interface unique into Blocks "
              "(sample_blocks); takes store= (local | split | sharded)",
    "own_minibatch": "samples a whole mini-batch with its own de-duplication (a MinibatchSampler)",
    "library": "the paper system's own package (real WholeGraph): takes mode= (its memory type); "
               "sample_raw() is its own call, in its own output convention",
    "host": "samples on the host CPU whatever the rank's device",
    "cpu_library": "a library's CPU sampler: fewer repeats, mini-batches bounded by cpu_max_edges",
    "loader": "has a host loader of worker processes (a LoaderSampler)",
    "walks": "neighbours by random walks with restart (PinSAGE), not draws from the neighbour list: "
             "not in the neighbour-sampling comparisons",
}
UNIQUE_TRAITS = {
    "paper": "WholeGraph's hash-table append-unique: the one the pipelines use",
    "reference": "the simple reference (torch.unique) every other is checked and timed against",
    "library": "the paper system's own package (real WholeGraph): has no duplicate counts (built with "
               "dup_count=False where they are not needed); library_call(targets, neighbors) is its own "
               "call, without the harness's conversions",
}

register_interface("sampling", Sampler, factory=SamplerFactory, traits=SAMPLING_TRAITS,
                   summary="sample(seeds, fanout) -> (offsets, neighbors) on a CSR graph")
register_interface("unique", AppendUnique, factory=UniqueFactory, traits=UNIQUE_TRAITS,
                   summary="append_unique(targets, neighbors) -> (unique ids, local ids, duplicate counts)")

# the sampling API other interfaces use (the pipelines sample blocks and use the baselines' loaders;
# the tiered stores sample over their own CSR parts)
from .baselines import make_lib_adapter, pyg_backend  # noqa: E402,F401
from .minibatch import sample_blocks  # noqa: E402,F401
from .random_walk import RandomWalkSampler  # noqa: E402,F401
from .samplers import KHopBatchedSampler  # noqa: E402,F401
