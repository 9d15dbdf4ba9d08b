"""`quiver`: Quiver's recipe (XGNN section 2.3, Fig. 3c) on the harness's stores.

Topology in pinned host memory sampled by the GPU through zero copy (UVA), the hottest features
partitioned over each NVLink clique (impls/storage/quiver.py), the rest read from the host; the
reservoir sampling kernel, hash append-unique, the same prefetching loop and DDP model as ``xgnn``
(impls/pipelines/tiered.py). Under ``config.memory_budget_bytes`` an unset ``feat_ratio`` is the
largest that fits. (Quiver itself trains PyG layers in spawned processes; XGNN notes the extra
memory that costs. Here the model is the same as the other pipelines', ``backend`` selects it.)

Options: ``feat_ratio``, ``topology`` (cliques), ``hotness``, ``sampler_variant`` (original),
``reserve_bytes``, ``prefetch``.
"""

from __future__ import annotations

from harness.registry import register_impl
from impls import reimplemented

from .tiered import TieredPipeline
from .xgnn import NEEDS


class QuiverPipeline(TieredPipeline):
    name = "quiver"

    def build_store(self, graph, budget, reserve):
        from impls.storage import build_quiver

        return build_quiver(self.rank, graph, feat_ratio=self.option("feat_ratio"), budget=budget,
                            reserve_bytes=reserve, hotness=self.option("hotness", "degree"),
                            topology=self.option("topology"), fanouts=self.config.fanouts,
                            batch_size=self.config.batch_size)


@register_impl("pipelines", "quiver", needs=NEEDS, reimplements="Quiver", real_package=reimplemented.QUIVER,
               summary="Quiver: topology in pinned host memory sampled by UVA, hottest features over each "
                       "NVLink clique, reservoir sampling, DDP",
               label="Quiver", family="Quiver", order=41, traits=("tiered", "topology"))
def make(rank, config):
    return QuiverPipeline(rank, config)
