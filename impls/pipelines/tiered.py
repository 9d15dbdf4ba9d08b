"""What the pipelines over a tiered store share (``xgnn``, ``dgl_cache``, ``quiver``): XGNN's
Table 4 systems on the harness's own stores and kernels (impls/storage/tiered.py).

- Ids: the store reorders nodes by hotness once (XGNN 4.3), and the pipeline trains in those
  hot-order ids throughout: the split ids and the labels are translated at setup, so a mini-batch
  needs no id translation. Every rank gets the same seeds as the other pipelines, relabelled.
- Sampling: the store's KHop sampler over the tiered topology (``batched`` for XGNN, the
  reservoir ``original`` for DGL+C and Quiver) + ``hash_append`` through ``sample_blocks``. For
  PinSAGE (``config.model == "pinsage"``) the store's random-walk sampler instead, the same for
  every system (walks with restart, the top ``fanouts[h]`` visited nodes weighted by visit count;
  options ``random_walks``, ``walk_length``, ``restart_prob``: XGNN's 4, 3 and DGL's 0.5).
- Gather: the store's ``features`` (GPU-tier rows from the local or a peer GPU, host rows by
  zero copy; one gather kernel over the part-pointer table).
- Pipelining (option ``prefetch``, default 1): a sampler thread prepares the next mini-batches
  (at most ``prefetch`` ahead) on a side CUDA stream while the training thread gathers and trains
  the current one (XGNN pipelines its Sampler and Trainer: section 6.2 footnote); the training
  stream waits on an event recorded after each batch's sampling, and the batch's tensors are
  recorded on the training stream for the caching allocator. ``prefetch=0`` samples on demand.
  With ``breakdown=True`` the base loop synchronizes the device between stages, so the sample
  time is the wait for the next prefetched batch; ``breakdown=False`` overlaps for real.
- Memory budget: ``config.memory_budget_bytes`` (bytes per GPU) sizes the GPU tiers (the store's
  ratios left unset are the largest that fit after ``reserve_bytes`` for training, default
  :func:`impls.storage.budget.estimate_workspace`); what does not fit raises
  :class:`impls.storage.budget.OutOfMemoryBudget`, recorded by the runner as an "OOM" row.
- Counters: each ``train_epoch`` resets the store's per-tier counters and reports them summed
  over ranks in ``EpochStats.extra["tiers"]`` (hit rates: ``extra["feature_hit_rate"]``,
  ``extra["topology_hit_rate"]``); the store's layout and memory in ``extra["store"]``.

Common options: ``reserve_bytes``, ``hotness`` (degree | presample | none), ``sampler_variant``
(batched | original), ``prefetch``; each pipeline adds its own.
"""

from __future__ import annotations

import numpy as np
import torch

from harness import registry
from impls.sampling import sample_blocks

from .base import Pipeline, prefetch_on_side_stream


class TieredPipeline(Pipeline):
    name = ""
    store_category = "node_features"      # where the GPU feature rows are counted in memory()

    # --- stores ------------------------------------------------------------------------------
    def build_store(self, graph, budget, reserve: int):
        raise NotImplementedError

    def reserve_bytes(self) -> int:
        option = self.option("reserve_bytes")
        if option is not None:
            return int(option)
        if self.config.memory_budget_bytes is None:
            return 0
        from impls.storage import estimate_workspace

        c = self.config
        return estimate_workspace(self.num_nodes, c.batch_size, c.fanouts, self.feature_dim, c.hidden,
                                  self.num_classes, num_layers=c.num_layers)

    def build_stores(self) -> None:
        g = self.graph
        self.store = self.build_store(g, self.config.memory_budget_bytes, self.reserve_bytes())
        order = self.store.reordering
        if not order.is_identity():
            self._split_ids = {k: torch.from_numpy(order.rank[v.numpy()]) for k, v in self._split_ids.items()}
            self._labels_hot = torch.from_numpy(np.asarray(g.labels)[order.order])
        else:
            self._labels_hot = None
        seed = self.config.seed * 1009 + self.me + 1
        if self.config.model == "pinsage":
            walks = self.walk_settings()
            self.sampler = self.store.walk_sampler(walks["random_walks"], walks["walk_length"],
                                                   walks["restart_prob"], seed=seed)
        else:
            variant = self.option("sampler_variant", self.store.sampler_variant)
            self.sampler = self.store.sampler(variant, seed=seed)
        self.unique = registry.get_impl("unique", "hash_append").factory(self.rank)
        self._sync()
        self._barrier()

    def walk_settings(self) -> dict:
        """PinSAGE's walks: XGNN's 4 walks of length 3 (PAPER_MODELS), restart probability 0.5 (DGL)."""
        from impls.models import PAPER_MODELS

        paper = PAPER_MODELS["xgnn"]["pinsage"]
        return {"random_walks": int(self.option("random_walks", paper["random_walks"])),
                "walk_length": int(self.option("walk_length", paper["walk_length"])),
                "restart_prob": float(self.option("restart_prob", 0.5))}

    def setup(self) -> None:
        super().setup()
        if self._labels_hot is not None:            # labels in hot order, replacing the original ones
            self.labels = self._labels_hot.to(self.device)
            self._labels_hot = None

    # --- mini-batches ---------------------------------------------------------------------------
    def sample(self, seeds):
        return sample_blocks(self.sampler, self.unique, seeds, self.config.fanouts, check=False)

    def gather(self, blocks):
        return self.store.features(blocks[0].src_ids, check=False)

    def iterate(self, batches, training):
        depth = self.prefetch_depth(cpu_default=1)         # the sampler thread runs on CPU ranks too
        if depth <= 0 or len(batches) <= 1:
            yield from super().iterate(batches, training)
            return
        pending = iter(batches)

        def sample_next():
            seeds = next(pending, None)
            if seeds is None:
                return None
            seeds = seeds.to(self.device)
            return seeds, self.sample(seeds)

        yield from prefetch_on_side_stream(self.device, sample_next, depth, f"{self.name}-sampler-r{self.me}")

    # --- epochs ---------------------------------------------------------------------------------
    def train_epoch(self, epoch, **kwargs):
        self.store.reset_counters()
        stats = super().train_epoch(epoch, **kwargs)
        self._sync()
        tiers = self.store.hit_rates(all_ranks=True)
        stats.extra.update({"tiers": tiers, "feature_hit_rate": tiers["features"]["hit_rate"],
                            "topology_hit_rate": tiers["topology"]["hit_rate"],
                            "store": self.store.summary()})
        return stats

    # --- memory and description -----------------------------------------------------------------
    def store_bytes(self):
        mine = self.store.memory()["per_gpu"][self.me]
        out = {"graph_structure": mine["topology_bytes"], "node_features": 0, "cache": 0}
        out[self.store_category] = mine["feature_bytes"]
        return out

    def store_locations(self):
        s = self.store
        return {"graph_structure": s.graph.describe(),
                self.store_category: f"{s.feat_layout.describe()}; "
                                     + ("GPU buffers + pinned host (zero copy)" if self.device.type == "cuda"
                                        else "host shared memory standing in for GPU and host tiers")}

    def describe(self):
        return {**super().describe(), "store": self.store.describe(),
                "sampling": self.sampler.describe() + "; " + self.unique.describe(),
                "gather": "store.features: one gather kernel over GPU buffers (local, peers) and pinned host rows",
                "pipelining": f"prefetch {self.prefetch_depth(cpu_default=1)} batch(es) on a sampler thread"}

    def close(self):
        store = getattr(self, "store", None)
        if store is not None:
            store.close()
            self.store = None
        self.sampler = None
        super().close()
