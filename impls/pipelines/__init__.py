"""Interface `pipelines`: end-to-end mini-batch GNN training systems (WholeGraph Table V).

Every implementation is created per rank by its factory ``make(rank, config) -> Pipeline``
(``rank``: the launcher's RankContext, ``config``: :class:`base.PipelineConfig`) and runs
data-parallel on every rank of the process group:

    pipe = registry.get_impl("pipelines", "wholegraph").factory(rank, PipelineConfig(...))
    pipe.setup()                                  # collective: stores, model under DDP
    stats = pipe.train_epoch(0)                   # EpochStats: epoch/sample/gather/train seconds...
    acc = pipe.evaluate("val")                    # accuracy over every rank's share (all-reduced)
    pipe.memory()                                 # bytes per category on this rank's device
    pipe.close()                                  # collective

The epoch loop, the model step (DistributedDataParallel, Adam, cross-entropy), evaluation and
memory accounting live in :mod:`base`; an implementation supplies where the graph and the
features live and how a mini-batch is sampled and gathered (``sample(seeds) -> blocks``,
``gather(blocks) -> x``, or ``iterate`` for loader-driven pipelines).

- ``wholegraph`` (ours): CSR sharded over the GPUs (torch symmetric memory), features in the
  shared store, path_doubling + hash_append sampling, the one-kernel p2p gather.
- ``wholegraph_lib``: the same pipeline on real pylibwholegraph (WholeMemory CSR, its sampler,
  its append_unique, WholeMemoryEmbedding gather).
- ``pyg_host``: PyG's recipe (host graph and features, NeighborLoader workers, CPU feature
  slicing, pinned copy, PyG layers).
- ``dgl_host``: DGL's recipe where DGL imports.

A pipeline says on its registry entry what it cannot do beyond its ``Needs`` (``unavailable(device)``:
PyG's sampler needs pyg-lib or torch-sparse) and what it is (its traits, below).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harness.registry import register_interface

if TYPE_CHECKING:
    from harness.launcher import RankContext

    from .base import EpochStats, PipelineConfig


@runtime_checkable
class Pipeline(Protocol):
    """A training system on every rank of the process group (every method but the per-rank ones
    is collective): ``setup()``, ``train_epoch(epoch) -> EpochStats``, ``evaluate(split)``,
    ``memory()`` (bytes per category on this rank's device), ``describe()`` (where each part lives),
    ``close()``."""

    def setup(self) -> None: ...

    def train_epoch(self, epoch: int, *, breakdown: bool | None = None) -> "EpochStats": ...

    def evaluate(self, split: str = "val", max_nodes: int | None = None) -> float: ...

    def memory(self) -> dict[str, int]: ...

    def describe(self) -> dict[str, str]: ...

    def close(self) -> None: ...


class PipelineFactory(Protocol):
    def __call__(self, rank: "RankContext", config: "PipelineConfig") -> Pipeline: ...


TRAITS = {
    "host": "the PyG/DGL recipe: graph and features in host memory, mini-batches from loader worker "
            "processes, features sliced on the CPU and copied (batch caps: host_max_batches)",
    "shared_store": "WholeGraph's design: the CSR and the features in the GPUs' shared memory, sampled and "
                    "gathered on the GPUs",
    "tiered": "XGNN's tiered stores: hot topology and features on the GPUs, the rest in host memory "
              "(a memory budget; its synchronized epochs run without prefetching)",
    "topology": "places its stores by the GPUs' NVLink topology (takes topology=, a named one)",
    "library": "the paper system's own package (real WholeGraph)",
    "pyg_layers": "trains PyG's layers by default",
    "dgl_layers": "trains DGL's layers by default where its DGL build runs them, else PyG's",
}

register_interface("pipelines", Pipeline, factory=PipelineFactory, traits=TRAITS,
                   summary="end-to-end mini-batch GNN training, data-parallel on every rank")
