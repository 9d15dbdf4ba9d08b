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

``unavailable(name, device)`` gives the reason a pipeline cannot run here beyond its
``Needs`` (PyG's sampler needs pyg-lib or torch-sparse), or None.
"""

from __future__ import annotations

from typing import Callable

_PROBES: dict[str, Callable[[str], str | None]] = {}


def register_probe(name: str, probe: Callable[[str], str | None]) -> None:
    """A check run before a pipeline is launched: ``probe(device) -> reason or None``."""
    _PROBES[name] = probe


def unavailable(name: str, device: str) -> str | None:
    """Why pipeline ``name`` cannot run here beyond its declared Needs, or None."""
    from harness import registry

    registry.discover()
    probe = _PROBES.get(name)
    return probe(device) if probe else None
