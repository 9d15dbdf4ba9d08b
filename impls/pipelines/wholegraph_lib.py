"""`wholegraph_lib`: the same pipeline as `wholegraph` on real pylibwholegraph.

- Graph structure: a CSR in WholeMemory (``mode``, default ``continuous``: every rank holds
  ``ceil(N / W)`` rows of ``csr_row_ptr`` and its share of ``csr_col_ind``, mapped by all),
  built collectively (impls/sampling/wholegraph_lib.py).
- Sampling: the library's ``unweighted_sample_without_replacement`` hop by hop and its
  ``append_unique`` (targets first), composed into our Blocks by ``sample_blocks``.
- Node features: a ``WholeMemoryEmbedding`` (impls/gather/wholegraph_lib.py) in the same mode,
  each rank filling the rows the library gives it with the dataset's features; gathered with
  the library's gather (one mapped-memory kernel).
- Model: native layers (or PyG's) under DDP, as ``wholegraph``.

Options: ``mode`` (continuous | chunked | distributed; distributed samples and gathers through
NCCL inside the library, collectively, and so trains without prefetch); ``prefetch`` as ours.
"""

from __future__ import annotations

import torch

from harness import registry
from harness.needs import Needs
from harness.registry import register_impl

from .base import copy_rows
from .wholegraph import WholeGraphPipeline, feature_spec


class WholeGraphLibPipeline(WholeGraphPipeline):
    """Ours with the library's stores: sampling (sample_blocks), describe and close are inherited."""
    name = "wholegraph_lib"

    def build_stores(self) -> None:
        from impls.sampling import make_lib_adapter

        g, rank = self.graph, self.rank
        mode = self.option("mode", "continuous")
        indptr = torch.from_numpy(g.indptr)
        indices = torch.from_numpy(g.indices)
        self.sampler = make_lib_adapter(rank, indptr, indices, mode=mode, seed=self.config.seed * 1009 + self.me + 1)
        self.unique = registry.get_impl("unique", "wholegraph_lib").factory(rank)
        self.spec = feature_spec(g)
        self.gatherer = registry.get_impl("gather", "wholegraph_lib").factory(rank, self.spec, mode=mode)
        local, start = self.gatherer._tensor.get_local_tensor(host_view=False)
        with torch.cuda.device(self.device):
            copy_rows(local, g.feature_tensor(), int(start))   # the dataset's rows, not the closed form
        del local
        self._sync()
        self.gatherer.comm.barrier()

    def prefetch_enabled(self) -> bool:
        # distributed mode samples and gathers through the library's NCCL collectives: from a
        # helper thread they could interleave with DDP's all-reduces in a different order per rank
        return super().prefetch_enabled() and self.option("mode", "continuous") != "distributed"

    def gather(self, blocks):
        with torch.no_grad():                  # features are inputs, not trained embeddings
            return self.gatherer.gather(blocks[0].src_ids, check=False)

    def store_bytes(self):
        inner = self.sampler.inner
        id_bytes = 4 if inner.col_dtype == torch.int32 else 8
        row_stride = -(-self.spec.row_bytes // 16) * 16    # the embedding pads rows to 16 bytes
        return {"graph_structure": inner.row_split[1] * 8 + inner.col_split[1] * id_bytes,
                "node_features": self.gatherer.local_count * row_stride, "cache": 0}

    def store_locations(self):
        return {"graph_structure": self.sampler.describe(), "node_features": self.gatherer.describe()}


@register_impl("pipelines", "wholegraph_lib", needs=Needs(devices=("cuda",), packages=("pylibwholegraph",)),
               summary="real pylibwholegraph: WholeMemory CSR + its sampler and append_unique, "
                       "WholeMemoryEmbedding gather, DDP",
               label="WholeGraph (pylibwholegraph)", family="WholeGraph", order=20, traits=("shared_store", "library"),
               labels={"short": "WG-lib"})
def make(rank, config):
    return WholeGraphLibPipeline(rank, config)
