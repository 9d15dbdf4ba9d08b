"""`xgnn` (ours): XGNN's training system (VLDB'24) on the harness's GGMS store.

- Graph structure and features: GGMS (impls/storage/ggms.py): nodes reordered by degree, the
  ``graph_ratio`` hottest nodes' topology and the ``feat_ratio`` hottest nodes' features split
  modulo over the GPUs (placed by XGNN's solver for the GPU topology), the rest in pinned host
  memory read by zero copy. Under ``config.memory_budget_bytes`` a ratio left unset is the largest
  that fits (topology first: ``priority="graph"``; ``"feat"`` is XGNN-F of section 6.8).
- Sampling: XGNN's batched KHop over the GGMS topology + hash append-unique, prefetched on a
  sampler thread (impls/pipelines/tiered.py); Gather: GPU feature extraction from GGMS.
- Model: per XGNN (section 6.1; impls.models.PAPER_MODELS["xgnn"]): GCN 3 layers with fanouts
  15, 10, 5, GraphSAGE 2 layers with 10, 25, hidden 256, batch 6000, under DDP
  (:func:`xgnn_config` builds such a PipelineConfig).

Options: ``graph_ratio``, ``feat_ratio`` (None: searched under the budget, else 1.0),
``priority`` (graph | feat), ``placement`` (solver | modulo | clique), ``topology`` (a Topology or a
name of impls/core/topology.by_name; default this machine's), ``hotness``, ``sampler_variant``
(batched; original = XGNN without its sampling optimization), ``graph_store`` / ``feat_store``
(ggms | replicated), ``reserve_bytes``, ``prefetch``. XGNN Fig. 10's steps: BASE = both stores
replicated + original sampler; +MSG = graph_store ggms; +MSF = feat_store ggms; +OGA = batched
sampler; +PSA = placement solver (the earlier steps with placement clique).
"""

from __future__ import annotations

from harness.needs import Needs
from harness.registry import register_impl

from .base import PipelineConfig
from .tiered import TieredPipeline

NEEDS = Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), note="numba on CPU")


def xgnn_config(model: str = "gcn", **overrides) -> PipelineConfig:
    """A PipelineConfig with XGNN's model settings (layers, hidden, fanouts, batch) for ``model``."""
    from impls.models import PAPER_MODELS

    paper = dict(PAPER_MODELS["xgnn"][model])
    settings = {"model": model, "num_layers": paper["num_layers"], "hidden": paper["hidden"],
                "fanouts": tuple(paper["fanouts"]), "batch_size": paper["batch_size"]}
    settings.update(overrides)
    return PipelineConfig(**settings)


class XGNNPipeline(TieredPipeline):
    name = "xgnn"

    def build_store(self, graph, budget, reserve):
        from impls.storage import build_ggms

        return build_ggms(self.rank, graph, graph_ratio=self.option("graph_ratio"),
                          feat_ratio=self.option("feat_ratio"), budget=budget, reserve_bytes=reserve,
                          priority=self.option("priority", "graph"), hotness=self.option("hotness", "degree"),
                          placement=self.option("placement", "solver"), topology=self.option("topology"),
                          graph_store=self.option("graph_store", "ggms"),
                          feat_store=self.option("feat_store", "ggms"),
                          fanouts=self.config.fanouts, batch_size=self.config.batch_size)


@register_impl("pipelines", "xgnn", needs=NEEDS,
               summary="XGNN: GGMS (hot topology/features modulo over GPUs, solver placement, host rest by "
                       "zero copy), batched KHop, prefetching sampler thread, DDP",
               label="XGNN", family="XGNN", order=40, traits=("tiered", "topology"))
def make(rank, config):
    return XGNNPipeline(rank, config)
