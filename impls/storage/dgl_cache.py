"""DGL+C (XGNN's baseline, section 6.1 and Fig. 3a): topology replicated on every GPU, the hottest
features cached on every GPU (the same rows on each: cache ratio R), misses read from pinned host
memory by zero copy, sampled by the reservoir KHop ("XGNN without GGMS and sampling optimization").

``build_dgl_cache(rank, graph, cache_ratio=R)`` (collective). With a ``budget`` the whole topology
must fit on each GPU (else :class:`impls.storage.budget.OutOfMemoryBudget`, DGL+C's "OOM" cells of
XGNN Table 4) and ``cache_ratio=None`` is the largest cache that fits in the rest; without a budget
None caches every row. Hit rate: ``store.hit_rates()["features"]["hit_rate"]`` (all hits are local).

``graph_location="host"``: DGL's UVA mode (``DataLoader(use_uva=True)``): the topology stays in
pinned host memory and the GPU samples it by zero copy, so only the feature cache takes GPU memory.
This is what a DGL+C user does when the topology does not fit one GPU; XGNN's DGL+C keeps it on
the GPUs (``"gpu"``, the default) and runs out of memory there.
"""

from __future__ import annotations

from harness.needs import Needs
from harness.registry import register_impl
from impls import reimplemented

from . import budget as _budget
from .ggms import ordered_graph
from .tiered import TieredStore
from .tiers import host_layout, replicated_layout

GRAPH_LOCATIONS = ("gpu", "host")

_NEEDS = Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), note="host shared memory on CPU ranks")


def build_dgl_cache(rank, graph, *, cache_ratio: float | None = None, budget=None, reserve_bytes: int = 0,
                    hotness="degree", fanouts=None, batch_size: int = 6000, counters: bool = True,
                    reordering=None, graph_location: str = "gpu") -> TieredStore:
    if graph_location not in GRAPH_LOCATIONS:
        raise ValueError(f"DGL+C graph_location must be one of {', '.join(GRAPH_LOCATIONS)}, "
                         f"not {graph_location!r}")
    on_host = graph_location == "host"
    indptr, indices, features, order, sizes = ordered_graph(graph, hotness, fanouts, batch_size, reordering)
    world = rank.world_size
    fit = _budget.fit_dgl_cache(sizes, world, budget, reserve_bytes=reserve_bytes, cache_ratio=cache_ratio,
                                graph_on_host=on_host)
    n = order.num_nodes
    graph_layout = host_layout(n, world) if on_host else replicated_layout(n, n, world)
    return TieredStore(rank, "dgl_cache", indptr, indices, features, order, graph_layout,
                       replicated_layout(n, fit.feat_rows, world), fit=fit, counters=counters,
                       sampler_variant="original")


@register_impl("storage", "dgl_cache", needs=_NEEDS,
               summary="DGL+C: topology replicated on every GPU, hottest features cached on every GPU, "
                       "misses read from pinned host memory (zero copy)",
               reimplements="DGL+C", real_package=reimplemented.DGL_C)
def make_dgl_cache(rank, graph, **options):
    return build_dgl_cache(rank, graph, **options)
