"""Quiver (XGNN's baseline, section 2.3 and Fig. 3c): topology in pinned host memory sampled by the
GPU through zero copy (UVA), the hottest features partitioned over each NVLink clique of GPUs (row
i of the cached set on member i mod k; every clique holds the same set), the rest on the host.

``build_quiver(rank, graph, feat_ratio=R, topology=None)`` (collective): cliques come from the GPU
topology (impls/core/topology.Topology.cliques; the lent H200 machines are one clique).
``feat_ratio=None`` with a ``budget``: the largest feature ratio that fits; without one, every row.
Sampling: the reservoir kernel (one thread per target) over the host CSR.
"""

from __future__ import annotations

from harness.needs import Needs
from harness.registry import register_impl
from impls import reimplemented

from . import budget as _budget
from .ggms import ordered_graph, resolve_topology
from .tiered import TieredStore
from .tiers import clique_layout, host_layout

_NEEDS = Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), note="host shared memory on CPU ranks")


def build_quiver(rank, graph, *, feat_ratio: float | None = None, budget=None, reserve_bytes: int = 0,
                 hotness="degree", topology=None, fanouts=None, batch_size: int = 6000, counters: bool = True,
                 reordering=None) -> TieredStore:
    indptr, indices, features, order, sizes = ordered_graph(graph, hotness, fanouts, batch_size, reordering)
    world = rank.world_size
    cliques = resolve_topology(topology, world, rank.device).cliques()
    fit = _budget.fit_quiver(sizes, cliques, budget, reserve_bytes=reserve_bytes, feat_ratio=feat_ratio)
    n = order.num_nodes
    return TieredStore(rank, "quiver", indptr, indices, features, order, host_layout(n, world),
                       clique_layout(n, fit.feat_rows, cliques), fit=fit, counters=counters,
                       sampler_variant="original")


@register_impl("storage", "quiver", needs=_NEEDS,
               summary="Quiver: topology in pinned host memory (GPU sampling by UVA), hottest features "
                       "partitioned over each NVLink clique, rest on the host",
               reimplements="Quiver", real_package=reimplemented.QUIVER)
def make_quiver(rank, graph, **options):
    return build_quiver(rank, graph, **options)
