"""XGNN's Global GNN Memory Store (GGMS, VLDB'24 sections 3-4): topology and features over all GPUs
and the host, with XGNN Fig. 5's three access functions.

``build_ggms(rank, graph, graph_ratio=..., feat_ratio=...)`` (collective) is XGNN's
``DistGraph(dataset, graph_ratio, feat_ratio, ...)``:

1. Partitioner (4.3): nodes are reordered by hotness (``hotness="degree"`` by default,
   ``"presample"``, ``"none"`` or an array; impls/storage/reorder.py). The ``graph_ratio`` hottest
   nodes keep their topology on GPUs, the ``feat_ratio`` hottest their features; each part is split
   into one logical partition per GPU by modulo (hot node i in partition i mod n at i // n), the
   rest stays in pinned host memory read by zero copy.
2. Placement Solver (4.2, impls/placement/xgnn_solver.py): ``placement="solver"`` places the
   logical partitions for the GPU ``topology`` (copies where some GPU cannot reach a partition
   over NVLink; on a fully connected machine each GPU stores exactly its own partition);
   ``placement="modulo"`` stores partition g on GPU g only (needs every pair connected);
   ``placement="clique"`` splits modulo within each NVLink clique, every clique holding a copy
   (Quiver's policy: GGMS before its solver, XGNN Fig. 10's steps before +PSA).
3. Data Access Manager (4.1): peer buffers mapped by every rank (torch symmetric memory), host rows
   page-locked and mapped; ``locate_topology`` / ``locate_features`` forward a request to (tier,
   owner GPU, local offset) with a modulo and a division, and ``num_neighbors``, ``neighbors``,
   ``features`` and the KHop ``sampler()`` read through them (impls/storage/tiered.py).

Ratios left as None are searched under ``budget`` (bytes per GPU, or '16GiB'): topology first
(``priority="graph"``, XGNN's default) or features first (``"feat"``, XGNN-F); a given ratio that
does not fit raises :class:`impls.storage.budget.OutOfMemoryBudget` (an "OOM" row). Without a
budget, None means everything on GPUs.
"""

from __future__ import annotations

from harness.errors import HarnessError, SkipPoint
from harness.needs import Needs
from harness.registry import register_impl

from . import budget as _budget
from .reorder import reorder
from .tiered import TieredStore, row_bytes_of
from .tiers import clique_layout, ggms_layout, replicated_layout

_NEEDS = Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), note="host shared memory on CPU ranks")

PLACEMENTS = ("solver", "modulo", "clique")
STORES = ("ggms", "replicated")


def graph_arrays(graph) -> tuple:
    """(indptr, indices, features or None, train_idx or None) of a harness Graph or a dict/tuple."""
    if isinstance(graph, dict):
        return graph["indptr"], graph["indices"], graph.get("features"), graph.get("train_idx")
    if isinstance(graph, tuple):
        return (tuple(graph) + (None, None))[:4]
    features = graph.feature_tensor() if hasattr(graph, "feature_tensor") else getattr(graph, "features", None)
    return graph.indptr, graph.indices, features, getattr(graph, "train_idx", None)


def ordered_graph(graph, hotness, fanouts, batch_size: int, reordering) -> tuple:
    """(indptr, indices, features, order, sizes): the graph's arrays, its rows in hotness order
    (``reordering`` if given, else the pre-sampling reorder) and the store's sizes in that order."""
    indptr, indices, features, train_idx = graph_arrays(graph)
    order = reordering or reorder(indptr, indices, hotness, train_idx=train_idx, fanouts=fanouts,
                                  batch_size=batch_size)
    return indptr, indices, features, order, _budget.StoreSizes.of(indptr, order.order, row_bytes_of(features))


def resolve_topology(topology, world_size: int, device: str):
    """A Topology for ``world_size`` GPUs: given, by name (impls.core.topology.by_name), this
    machine's (nvidia-smi, first ``world_size`` GPUs) on CUDA, else all GPUs connected."""
    from impls.core import topology as topo

    if topology is None:
        found = topo.detect() if device == "cuda" else None
        if found is not None and found.num_gpus >= world_size:
            return found if found.num_gpus == world_size else found.subset(list(range(world_size)), found.name)
        return topo.all_to_all(world_size, topo.H200_LINK_GBPS * 18, f"{world_size} ranks, all connected",
                               pcie_gbps=topo.PCIE5_GBPS, local_gbps=topo.HBM_GBPS["H200"])
    if isinstance(topology, str):
        topology = topo.by_name(topology)
    if topology.num_gpus != world_size:
        raise HarnessError(f"topology {topology.name} has {topology.num_gpus} GPUs, the store {world_size} ranks")
    return topology


def solver_plan(placement: str, topology, world_size: int, device: str):
    """(the XGNN solver's plan or None, the topology's cliques) for ``placement``."""
    if placement not in PLACEMENTS:
        raise HarnessError(f"GGMS placement must be one of {', '.join(PLACEMENTS)}, not '{placement}'")
    topo = resolve_topology(topology, world_size, device)
    if placement == "modulo" and not topo.is_fully_connected():
        raise SkipPoint(f"modulo placement needs every GPU pair connected; {topo.name} is not "
                        f"(use placement='solver' or 'clique')")
    if placement != "solver":
        return None, topo.cliques()
    from impls.placement import solve

    return solve(topo), topo.cliques()


def layout_factory(store: str, placement: str, plan, cliques, num_rows: int, world: int):
    """rows -> TierLayout of one part of the store (``store``: ggms | replicated)."""
    if store not in STORES:
        raise HarnessError(f"a GGMS part is stored as one of {', '.join(STORES)}, not '{store}'")
    if store == "replicated":
        return lambda rows: replicated_layout(num_rows, rows, world)
    if placement == "clique":
        return lambda rows: clique_layout(num_rows, rows, cliques)
    return lambda rows: ggms_layout(num_rows, rows, world, plan)


def build_ggms(rank, graph, *, graph_ratio: float | None = None, feat_ratio: float | None = None,
               budget=None, reserve_bytes: int = 0, priority: str = "graph", hotness="degree",
               placement: str = "solver", topology=None, graph_store: str = "ggms", feat_store: str = "ggms",
               fanouts=None, batch_size: int = 6000, counters: bool = True, reordering=None) -> TieredStore:
    """Collective: XGNN's DistGraph(dataset, graph_ratio, feat_ratio) on this process group.

    ``graph_store`` / ``feat_store`` = ``replicated`` keep that part as DGL+C does (the hottest rows
    on every GPU): the steps of XGNN's factor analysis (Fig. 10: BASE, +MSG, +MSF)."""
    indptr, indices, features, order, sizes = ordered_graph(graph, hotness, fanouts, batch_size, reordering)
    world = rank.world_size
    plan, cliques = solver_plan(placement, topology, world, rank.device)
    n = order.num_nodes
    make_graph = layout_factory(graph_store, placement, plan, cliques, n, world)
    make_feat = layout_factory(feat_store, placement, plan, cliques, n, world)
    fit = _budget.fit_layouts("GGMS", sizes, budget, make_graph, make_feat, graph_ratio=graph_ratio,
                              feat_ratio=feat_ratio, reserve_bytes=reserve_bytes, priority=priority)
    return TieredStore(rank, "ggms", indptr, indices, features, order, make_graph(fit.graph_rows),
                       make_feat(fit.feat_rows), fit=fit, counters=counters, sampler_variant="batched")


@register_impl("storage", "ggms", needs=_NEEDS,
               summary="XGNN GGMS: hot topology/features modulo-partitioned over GPUs (solver copies), "
                       "rest in pinned host memory (zero copy); Fig. 5 access functions, per-tier counters")
def make_ggms(rank, graph, **options):
    return build_ggms(rank, graph, **options)
