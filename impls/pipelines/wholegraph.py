"""`wholegraph` (ours): WholeGraph's pipeline on the harness's own stores and kernels.

- Graph structure: the sampling CSR split by rows over every rank's GPU in torch symmetric
  memory (``SamplingCSR(store="sharded")``: every rank keeps ``ceil(N / W)`` rows and reads
  peers' rows directly over NVLink). CPU ranks: ``store="local"``, the whole CSR as the
  dataset's memory map (host memory shared by the ranks through the page cache), because the
  sharded store needs CUDA ranks.
- Node features: the ``p2p_shared`` gather's ShardedTable (chunked: a shard of ``ceil(N / W)``
  rows per rank, peers mapped; host shared memory in /dev/shm on CPU ranks), filled with the
  dataset's features.
- Sampling: ``path_doubling`` (WholeGraph Algorithm 1) + ``hash_append`` (append-unique, Fig. 5)
  through ``sample_blocks``; one multi-hop Block list per mini-batch.
- Gather: the one-kernel ``p2p_shared`` global gather of ``blocks[0].src_ids``.
- Model: native layers (or PyG's with ``backend="pyg"``, WholeGraph Fig. 11) under DDP.
- Several nodes (torchrun's; WholeGraph Sec. III-D, Fig. 13): each node holds a replica of the
  graph structure and the features over its own GPUs (the stores are built on the node's ranks,
  ``rank.node_view()``), samples and gathers within the node, and only DDP's gradient all-reduce
  crosses nodes (NCCL, over every rank). Every rank trains its own share of the training nodes.

Options: ``prefetch`` (1 on GPUs: the next mini-batch is sampled and gathered on a side stream
while this one trains, see impls/pipelines/base.py; 0: strictly sequential), ``sampler``
(path_doubling | reservoir | khop_batched), ``graph_store``
(auto | local | sharded), ``feature_mode`` (chunked | continuous; on GPUs continuous maps every
rank's shard into one CUDA VMM range, shards padded to whole allocation granules).
"""

from __future__ import annotations

import torch

from harness import registry
from harness.needs import Needs
from harness.registry import register_impl
from impls.core.layout import TableSpec
from impls.sampling import sample_blocks

from .base import Pipeline, copy_rows, tensor_bytes


def csr_device_bytes(csr) -> int:
    """Bytes of a SamplingCSR that live on its device (this rank's part when sharded)."""
    if csr.store == "sharded":
        return tensor_bytes(*[t for t in csr._keep if isinstance(t, torch.Tensor)])
    if csr.device.type == "cuda":
        return tensor_bytes(csr.indptr_t, csr.indices_t, *[t for t in csr._keep if isinstance(t, torch.Tensor)])
    return int(csr.indptr_np.nbytes + csr.indices_np.nbytes)


def feature_spec(graph) -> TableSpec:
    dtype = graph.feature_dtype if graph.feature_dtype in ("float32", "float16", "bfloat16") else "float32"
    return TableSpec(int(graph.num_nodes), int(graph.feature_dim), dtype)


class WholeGraphPipeline(Pipeline):
    name = "wholegraph"
    prefetch_batches = True

    def build_stores(self) -> None:
        g, rank = self.graph, self.rank.node_view()         # one replica per node (module doc)
        store = self.option("graph_store", "auto")
        if store == "auto":
            store = "sharded" if self.device.type == "cuda" else "local"
        sampler = self.option("sampler", "path_doubling")
        self.sampler = registry.get_impl("sampling", sampler).factory(
            rank, g.indptr, g.indices, store=store, seed=self.config.seed * 1009 + self.me + 1)
        self.unique = registry.get_impl("unique", "hash_append").factory(rank)
        spec = feature_spec(g)
        self.gatherer = registry.get_impl("gather", "p2p_shared").factory(
            rank, spec, mode=self.option("feature_mode", "chunked"))
        table = self.gatherer.store
        # the dataset's rows, not the closed form (a shard holds ceil(N / W) rows, the last one fewer;
        # more, rounded up to whole granules, in a CUDA VMM range)
        copy_rows(table.local[: table.end - table.start], g.feature_tensor(), table.start)
        self._sync()
        self._barrier()
        self.spec = spec

    def sample(self, seeds):
        return sample_blocks(self.sampler, self.unique, seeds, self.config.fanouts, check=False)

    def gather(self, blocks):
        return self.gatherer.gather(blocks[0].src_ids, check=False)

    def store_bytes(self):
        table = self.gatherer.store
        # CPU continuous: one shared file of the whole table; GPU continuous (VMM): a padded shard each
        host_whole = table.whole is not None and table.base_ptr is None
        rows = table.spec.num_rows if host_whole else table.partition.rows_per_rank
        return {"graph_structure": csr_device_bytes(self.sampler.csr),
                "node_features": rows * self.spec.row_bytes, "cache": 0}

    def store_locations(self):
        return {"graph_structure": self.sampler.csr.describe(), "node_features": self.gatherer.describe()}

    def describe(self):
        out = {**super().describe(), "sampling": self.sampler.describe() + "; " + self.unique.describe(),
               "gather": self.gatherer.describe()}
        if self.rank.nodes > 1:
            out["nodes"] = (f"{self.rank.topology_label()}: a replica of the graph and the features per node over "
                            "its own ranks; only the gradient all-reduce crosses nodes "
                            f"({'NCCL' if self.device.type == 'cuda' else 'gloo'})")
        return out

    def close(self):
        for part in ("gatherer", "sampler"):
            obj = getattr(self, part, None)
            if obj is not None:
                obj.close()
                setattr(self, part, None)
        super().close()


@register_impl("pipelines", "wholegraph",
               needs=Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), peer_access=True,
                           note="numba on CPU"),
               summary="ours: CSR sharded over the GPUs, features in the shared store, path_doubling + "
                       "hash_append, one-kernel p2p gather, DDP",
               label="WholeGraph (ours)", order=10, traits=("shared_store",), labels={"short": "ours"})
def make(rank, config):
    return WholeGraphPipeline(rank, config)
