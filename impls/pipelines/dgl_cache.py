"""`dgl_cache`: DGL+C, XGNN's baseline (section 6.1, Fig. 3a) on the harness's stores.

Topology replicated on every GPU, the hottest features (cache ratio R) cached on every GPU, misses
read from pinned host memory by zero copy (impls/storage/dgl_cache.py); the reservoir KHop
("XGNN without GGMS and sampling optimization"), hash append-unique, the same prefetching loop and
DDP model as ``xgnn`` (impls/pipelines/tiered.py). Under ``config.memory_budget_bytes`` the whole
topology must fit on each GPU (else an "OOM" row, as DGL+C's cells of XGNN Table 4) and an unset
cache ratio is the largest that fits. The feature cache is reported as ``cache`` in ``memory()``.

Options: ``cache_ratio``, ``graph_location`` (gpu, or host: DGL's UVA mode, the topology in pinned
host memory sampled by zero copy), ``hotness``, ``sampler_variant`` (original), ``reserve_bytes``,
``prefetch``.
"""

from __future__ import annotations

from harness.registry import register_impl
from impls import reimplemented

from .tiered import TieredPipeline
from .xgnn import NEEDS


class DGLCachePipeline(TieredPipeline):
    name = "dgl_cache"
    store_category = "cache"

    def build_store(self, graph, budget, reserve):
        from impls.storage import build_dgl_cache

        return build_dgl_cache(self.rank, graph, cache_ratio=self.option("cache_ratio"), budget=budget,
                               reserve_bytes=reserve, hotness=self.option("hotness", "degree"),
                               fanouts=self.config.fanouts, batch_size=self.config.batch_size,
                               graph_location=self.option("graph_location", "gpu"))


@register_impl("pipelines", "dgl_cache", needs=NEEDS, reimplements="DGL+C", real_package=reimplemented.DGL_C,
               summary="DGL+C: topology replicated on every GPU, hottest features cached per GPU, misses by "
                       "zero copy, reservoir KHop, DDP",
               label="DGL+C", family="DGL+C", order=42, traits=("tiered",))
def make(rank, config):
    return DGLCachePipeline(rank, config)
