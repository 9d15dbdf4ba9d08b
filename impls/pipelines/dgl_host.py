"""`dgl_host`: DGL's multi-GPU recipe (the other baseline of WholeGraph Table V), where DGL imports.

- Graph and features in host memory: a DGL graph over the dataset's CSR (in-edges of v = its
  CSR neighbors) and the dataset's memory-mapped features.
- Sampling: DGL's own ``dgl.dataloading.NeighborSampler`` in its ``dgl.dataloading.DataLoader``
  with ``num_workers`` CPU worker processes (the papers' DGL baselines sample on the CPU), one
  loader per pass as DGL's examples make it, fed the base loop's batches (``shuffle=False`` over
  the concatenated seeds, the same batch size, so every loader batch is one planned batch). DGL's
  loader hands each worker a contiguous share of the batches and returns them round-robin, so a
  pass trains the planned batches in another order. DGL draws a fresh sample for every
  destination at every hop, as our samplers do; its fanouts are listed input layer first, so
  ours are passed reversed (``fanouts[0]`` applies to the seeds in both). Workers are started by
  fork: DGL is imported through :mod:`harness.dgl_compat`, whose stand-in for graphbolt lives
  in this process (a spawned worker would import DGL afresh).
- Gather: CPU feature slicing into pinned memory, async copy (``HostFeatureGather``), as the
  paper's baselines gather from host memory.
- Model: DGL's layers (``backend="dgl"``: dgl.nn GraphConv, SAGEConv, GATConv) where DGL's build
  runs them on the rank's device; DGL's PyPI wheels are CPU builds, which cannot run message
  passing on CUDA tensors, so on GPUs the blocks feed PyG's layers (the PyG row's), or the native
  ones where PyG does not import. ``describe()["layers"]`` says which ran. Under DDP.

A loader with W workers builds W batches at once (``cap_unit``): a capped epoch runs whole waves.
Options: ``num_workers`` (as pyg_host).
"""

from __future__ import annotations

import warnings

import torch

from harness.dgl_compat import import_dgl
from harness.needs import Needs
from harness.registry import register_impl
from impls.core.blocks import Block

from .base import Pipeline, tensor_bytes
from .host import HostFeatureGather, limit_threads, loader_workers


def block_from_dgl(block, device) -> Block:
    """One DGL block (dst nodes first among its src nodes) as our Block, on ``device``; on the
    CPU it keeps the DGL block (``dgl_block``) for DGL's layers."""
    dgl = import_dgl()

    src, dst = block.edges(order="eid")
    src, dst = src.to(device, torch.int64), dst.to(device, torch.int64)
    order = torch.sort(dst, stable=True).indices
    n_dst = int(block.num_dst_nodes())
    indptr = torch.zeros(n_dst + 1, dtype=torch.int64, device=device)
    torch.cumsum(torch.bincount(dst, minlength=n_dst), 0, out=indptr[1:])
    src_ids = block.srcdata[dgl.NID].to(device, torch.int64)
    out = Block(indptr=indptr, indices=src[order], src_ids=src_ids, num_dst=n_dst)
    if torch.device(device).type == "cpu":
        out.dgl_block = block
    return out


def default_layers(device) -> str:
    """The layers dgl_host trains with on ``device`` (module doc)."""
    from harness.needs import _import_problem
    from harness.dgl_compat import layers_unavailable

    if layers_unavailable(device) is None:
        return "dgl"
    return "pyg" if _import_problem("torch_geometric") is None else "native"


class DglHostPipeline(Pipeline):
    name = "dgl_host"

    def __init__(self, rank, config):
        super().__init__(rank, config)
        self.backend = config.backend or default_layers(self.device)

    def cap_unit(self) -> int:
        return max(1, getattr(self, "workers", 0))     # each worker builds a whole batch

    def build_stores(self) -> None:
        dgl = self.dgl = import_dgl()
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
        extra = {"multiprocessing_context": "fork"} if self.workers else {}
        loader = self.dgl.dataloading.DataLoader(self.g, seeds, self.sampler, batch_size=int(batches[0].numel()),
                                                 shuffle=False, drop_last=False, num_workers=self.workers, **extra)
        with warnings.catch_warnings():
            # DGL suggests pinning its CPU workers to cores; the harness leaves the placement to the OS
            warnings.filterwarnings("ignore", message="Dataloader CPU affinity")
            yield from self._blocks(loader)

    def _blocks(self, loader):
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

    def layers(self) -> str:
        """What trains on DGL's blocks, for tables: "DGL <ver> sampler and loader; layers: ..."."""
        from harness.dgl_compat import layers_unavailable

        version = ".".join(self.dgl.__version__.split(".")[:2])
        if self.backend == "dgl":
            return f"DGL {version} sampler and loader; layers: DGL (dgl.nn)"
        why = layers_unavailable(self.device)
        names = {"pyg": "PyG (the PyG row's)", "native": "native (the harness's)"}
        return (f"DGL {version} sampler and loader; layers: {names.get(self.backend, self.backend)}"
                + (f", since {why}" if why else ""))

    def describe(self):
        return {**super().describe(),
                "sampling": f"DGL {self.dgl.__version__} NeighborSampler + DataLoader, {self.workers} worker "
                            "processes per rank (fork)",
                "gather": self.feature_gather.describe(), "layers": self.layers()}

    def close(self):
        self.g = None
        super().close()


@register_impl("pipelines", "dgl_host", needs=Needs(packages=("dgl",), note="pip install '.[dgl]'"),
               summary="DGL recipe: host graph/features, DGL NeighborSampler + DataLoader CPU workers, CPU feature "
                       "slicing, pinned copy, DGL layers (PyG's on GPUs with a CPU build of DGL), DDP",
               label="DGL", family="DGL", order=31, traits=("host", "dgl_layers"), labels={"short": "DGL"})
def make(rank, config):
    return DglHostPipeline(rank, config)
