"""`dgl_host`: DGL's multi-GPU recipe (the other baseline of WholeGraph Table V), where DGL imports.

- Graph and features in host memory: a DGL graph over the dataset's CSR (in-edges of v = its
  CSR neighbors) and the dataset's memory-mapped features.
- Sampling: ``dgl.dataloading.NeighborSampler`` in ``dgl.dataloading.DataLoader`` with
  ``num_workers`` CPU worker processes, fed the base loop's batches (``shuffle=False`` over the
  concatenated seeds, same batch size). DGL draws a fresh sample for every destination at every
  hop, as our samplers do; its fanouts are listed input layer first, so ours are passed
  reversed (``fanouts[0]`` applies to the seeds in both).
- Gather: CPU feature slicing into pinned memory, async copy (``HostFeatureGather``), as the
  paper's baselines gather from host memory.
- Model: our native layers under DDP (the same model as the other pipelines; they mirror DGL's
  SAGEConv mean and GATConv, and GraphConv ``norm='both'`` with the option ``norm="both"``): the
  harness has no DGL layer backend.

DGL has no PyPI build for torch >= 2.4, so on most machines this is a skipped row
(``Needs(packages=("dgl",))``). Options: ``num_workers`` (as pyg_host).
"""

from __future__ import annotations

import torch

from harness.needs import Needs
from harness.registry import register_impl
from impls.core.blocks import Block

from .base import Pipeline, tensor_bytes
from .host import HostFeatureGather, limit_threads, loader_workers


def block_from_dgl(block, device) -> Block:
    """One DGL block (dst nodes first among its src nodes) as our Block, on ``device``."""
    import dgl

    src, dst = block.edges(order="eid")
    src, dst = src.to(device, torch.int64), dst.to(device, torch.int64)
    order = torch.sort(dst, stable=True).indices
    n_dst = int(block.num_dst_nodes())
    indptr = torch.zeros(n_dst + 1, dtype=torch.int64, device=device)
    torch.cumsum(torch.bincount(dst, minlength=n_dst), 0, out=indptr[1:])
    src_ids = block.srcdata[dgl.NID].to(device, torch.int64)
    return Block(indptr=indptr, indices=src[order], src_ids=src_ids, num_dst=n_dst)


class DglHostPipeline(Pipeline):
    name = "dgl_host"

    def cap_unit(self) -> int:
        return max(1, getattr(self, "workers", 0))     # each worker builds a whole batch

    def build_stores(self) -> None:
        import dgl

        self.dgl = dgl
        g = self.graph
        self.workers = loader_workers(self.option("num_workers"), self.device, self.world)
        limit_threads(self.device, self.world, self.workers)
        ip = torch.from_numpy(g.indptr).to(torch.int64)
        ix = torch.from_numpy(g.indices).to(torch.int64)
        self.g = dgl.graph(("csc", (ip, ix, torch.arange(ix.numel()))), num_nodes=int(g.num_nodes))
        self.g.create_formats_()
        self.sampler = dgl.dataloading.NeighborSampler(list(reversed(self.config.fanouts)))
        self.feature_gather = HostFeatureGather(g.feature_tensor(), self.device)

    def iterate(self, batches, training):
        if not batches:
            return
        seeds = torch.cat([b.to("cpu", torch.int64) for b in batches])
        loader = self.dgl.dataloading.DataLoader(self.g, seeds, self.sampler, batch_size=int(batches[0].numel()),
                                                 shuffle=False, drop_last=False, num_workers=self.workers)
        for input_nodes, output_nodes, dgl_blocks in loader:
            blocks = [block_from_dgl(b, self.device) for b in dgl_blocks]
            blocks[0].host_src_ids = input_nodes.to("cpu", torch.int64)
            yield output_nodes.to(self.device, torch.int64), blocks

    def gather(self, blocks):
        ids = getattr(blocks[0], "host_src_ids", None)
        return self.feature_gather.gather(blocks[0].src_ids if ids is None else ids)

    def store_bytes(self):
        if self.device.type == "cuda":
            return {"graph_structure": 0, "node_features": 0, "cache": 0}
        return {"graph_structure": tensor_bytes(*self.g.adj_tensors("csc")),
                "node_features": tensor_bytes(self.feature_gather.features), "cache": 0}

    def store_locations(self):
        return {"graph_structure": "host memory: DGL graph (CSC)", "node_features": self.feature_gather.describe()}

    def describe(self):
        return {**super().describe(),
                "sampling": f"DGL {self.dgl.__version__} NeighborSampler + DataLoader, {self.workers} workers per rank",
                "gather": self.feature_gather.describe()}

    def close(self):
        self.g = None
        super().close()


@register_impl("pipelines", "dgl_host", needs=Needs(packages=("dgl",), note="no PyPI build for torch >= 2.4"),
               summary="DGL recipe: host graph/features, NeighborSampler DataLoader workers, CPU feature slicing, "
                       "pinned copy, DDP")
def make(rank, config):
    return DglHostPipeline(rank, config)
