"""`pyg_host`: PyG's multi-GPU recipe (the baseline of WholeGraph Table V).

- Graph and features in host memory: PyG's ``NeighborSampler`` over the dataset's CSR (its CSC:
  a node's in-edges are its CSR neighbors; int64, in shared memory when workers sample) and the
  dataset's memory-mapped feature matrix.
- Sampling: ``torch_geometric.loader.NeighborLoader`` (``num_neighbors = fanouts``, PyG's
  sampler through pyg-lib or torch-sparse) with ``num_workers`` CPU worker processes
  (persistent; 0 on CPU ranks) sampling ahead of the training loop. The loader is fed the base
  loop's batches (``LoaderBatches``), so it samples exactly the seeds every pipeline trains on.
- Gather: CPU feature slicing into pinned memory and an async copy to the GPU
  (``HostFeatureGather``).
- Model: PyG layers (``backend="pyg"``) under DDP.

From NeighborLoader's output to our Blocks (``blocks_from_pyg``): PyG returns one subgraph per
mini-batch in local ids (``n_id`` global ids, seeds first, then every hop's new nodes;
``edge_index`` = (sampled neighbor, node it was sampled for)). PyG samples every node once, at
the hop where it is first reached (the seeds with ``fanouts[0]``, hop-1 nodes with
``fanouts[1]``, ...), and its layers run over the whole subgraph; only the nodes within
``L - 1 - l`` hops of the seeds matter to layer ``l``. So block ``l`` (hop ``h = L - 1 - l``) has
as destinations the nodes within ``h`` hops (a prefix of ``n_id``), as sources the nodes within
``h + 1`` hops, and as edges every sampled edge into its destinations (each node's one sample of
neighbors, reused by every layer it takes part in). This is PyG's ``trim_to_layer`` view of
the same subgraph, so the model computes what PyG computes. (Our samplers and DGL draw a fresh
sample for every destination at every hop instead; both give ``fanouts[h]`` neighbors per
destination at hop ``h``, seeds first.) Hop boundaries come from ``num_sampled_nodes`` where
PyG reports it (pyg-lib) and otherwise from the hop distances in the sampled edges
(torch-sparse), which are the same numbers.

Options: ``num_workers`` (default: 0 on CPU ranks, cores per rank - 1 on GPUs, at most 8),
``worker_init_fn`` and ``multiprocessing_context`` (passed to the loader; ranks spawned by the
harness start their workers by spawn).
"""

from __future__ import annotations

import torch

from harness.errors import SkipPoint
from harness.needs import Needs
from harness.registry import register_impl
from impls.core.blocks import Block

from .base import Pipeline, tensor_bytes
from .host import HostFeatureGather, LoaderBatches, limit_threads, loader_workers, stop_workers


def _hop_ends(n_id: torch.Tensor, row: torch.Tensor, col: torch.Tensor, batch_size: int, num_layers: int,
              num_sampled_nodes) -> list[int]:
    """ends[h] = number of nodes within h hops of the seeds, h = 0..L (a prefix of n_id)."""
    if num_sampled_nodes is not None and len(num_sampled_nodes) >= num_layers + 1:
        counts = [int(c) for c in num_sampled_nodes][: num_layers + 1]
        ends, total = [], 0
        for c in counts:
            total += c
            ends.append(total)
        if ends[0] != batch_size or ends[-1] != n_id.numel():
            raise RuntimeError("num_sampled_nodes does not add up to the sampled nodes")
        return ends
    n = n_id.numel()
    dist = torch.full((n,), -1, dtype=torch.int64, device=row.device)
    dist[:batch_size] = 0
    for h in range(num_layers):
        new = row[dist[col] == h]
        new = new[dist[new] < 0]
        dist[new] = h + 1
    if bool((dist < 0).any()):
        raise RuntimeError("a sampled node is not reachable from the seeds")
    if n > 1 and bool((dist[1:] < dist[:-1]).any()):
        raise RuntimeError("PyG's nodes are not ordered by hop")
    counts = torch.bincount(dist, minlength=num_layers + 1).cumsum(0)
    return [int(c) for c in counts[: num_layers + 1]]


def blocks_from_pyg(n_id: torch.Tensor, edge_index: torch.Tensor, batch_size: int, num_layers: int,
                    num_sampled_nodes=None) -> list[Block]:
    """NeighborLoader's subgraph of one mini-batch as our Block list (module doc), on the device
    of ``edge_index``/``n_id``."""
    row, col = edge_index[0].to(torch.int64), edge_index[1].to(torch.int64)
    if row.numel() > 1 and bool((col[1:] < col[:-1]).any()):
        order = torch.sort(col, stable=True).indices
        row, col = row[order], col[order]
    ends = _hop_ends(n_id, row, col, int(batch_size), num_layers, num_sampled_nodes)
    blocks = []
    for h in range(num_layers):
        n_dst, n_src = ends[h], ends[h + 1]
        e = int(torch.searchsorted(col, torch.tensor(n_dst, device=col.device)))
        indptr = torch.zeros(n_dst + 1, dtype=torch.int64, device=col.device)
        torch.cumsum(torch.bincount(col[:e], minlength=n_dst), 0, out=indptr[1:])
        blocks.append(Block(indptr=indptr, indices=row[:e], src_ids=n_id[:n_src].to(torch.int64),
                            num_dst=n_dst))
    return blocks[::-1]


def _probe(device: str) -> str | None:
    from impls.sampling import pyg_backend

    try:
        pyg_backend()
    except SkipPoint as exc:
        return str(exc)
    return None


class PygHostPipeline(Pipeline):
    name = "pyg_host"
    default_backend = "pyg"

    def cap_unit(self) -> int:
        return max(1, getattr(self, "workers", 0))     # each worker builds a whole batch

    def build_stores(self) -> None:
        from impls.sampling import pyg_backend

        self.sampler_backend = pyg_backend()
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
        from torch_geometric.sampler import NeighborSampler

        g = self.graph
        n = int(g.num_nodes)
        self.workers = loader_workers(self.option("num_workers"), self.device, self.world)
        limit_threads(self.device, self.world, self.workers)
        # PyG's sampler reads a CSC (colptr over destinations, row = their in-neighbors): the dataset's
        # CSR is that CSC already, so it is handed over directly instead of through a 2 x E edge_index
        # (to_csc of an edge_index sorted by destination gives the same two arrays). In shared memory
        # when worker processes sample (they are spawned: the loader travels to them by pickling).
        self.data = Data(edge_index=torch.empty(2, 0, dtype=torch.int64), num_nodes=n)
        sampler = NeighborSampler(self.data, num_neighbors=list(self.config.fanouts), is_sorted=True)
        sampler.colptr = torch.from_numpy(g.indptr).to(torch.int64).clone()
        sampler.row = torch.from_numpy(g.indices).to(torch.int64)
        if self.workers:
            sampler.colptr.share_memory_()
            sampler.row.share_memory_()
        self.plan = LoaderBatches()
        extra = {}
        if self.option("worker_init_fn") is not None:
            extra["worker_init_fn"] = self.option("worker_init_fn")
        if self.option("multiprocessing_context") is not None:
            extra["multiprocessing_context"] = self.option("multiprocessing_context")
        self.loader = NeighborLoader(self.data, num_neighbors=list(self.config.fanouts), neighbor_sampler=sampler,
                                     input_nodes=None, batch_sampler=self.plan, num_workers=self.workers,
                                     persistent_workers=self.workers > 0, **extra)
        self.feature_gather = HostFeatureGather(g.feature_tensor(), self.device)

    def iterate(self, batches, training):
        if not batches:
            return
        self.plan.batches = list(batches)
        L = self.config.num_layers
        for i, batch in enumerate(self.loader):
            n_id = batch.n_id
            bs = int(batch.batch_size)
            if i == 0 and not torch.equal(n_id[:bs], batches[0].to(n_id.dtype)):
                raise RuntimeError("NeighborLoader's seeds differ from the planned batch")
            dev_ids = n_id.to(self.device, non_blocking=True)
            blocks = blocks_from_pyg(dev_ids, batch.edge_index.to(self.device, non_blocking=True), bs, L,
                                     getattr(batch, "num_sampled_nodes", None))
            blocks[0].host_src_ids = n_id          # for the CPU feature slice
            yield dev_ids[:bs], blocks

    def gather(self, blocks):
        ids = getattr(blocks[0], "host_src_ids", None)
        return self.feature_gather.gather(blocks[0].src_ids if ids is None else ids)

    def store_bytes(self):
        if self.device.type == "cuda":                # graph and features stay on the host
            return {"graph_structure": 0, "node_features": 0, "cache": 0}
        return {"graph_structure": self._host_graph_bytes(), "node_features": tensor_bytes(self.feature_gather.features),
                "cache": 0}

    def _host_graph_bytes(self) -> int:
        sampler = self.loader.node_sampler
        return tensor_bytes(sampler.colptr, sampler.row)

    def store_locations(self):
        where = "shared memory" if self.workers else "host memory"
        return {"graph_structure": f"{where}: PyG NeighborSampler CSC (colptr + int64 row), "
                                   f"{self._host_graph_bytes() / 2**30:.2f} GiB per rank",
                "node_features": self.feature_gather.describe()}

    def describe(self):
        import torch_geometric

        return {**super().describe(),
                "sampling": f"PyG {torch_geometric.__version__} NeighborLoader via {self.sampler_backend}, "
                            f"{self.workers} worker processes per rank; subgraph -> Blocks on the device",
                "gather": self.feature_gather.describe()}

    def close(self):
        loader = getattr(self, "loader", None)
        if loader is not None:
            stop_workers(loader)
            self.loader = None
        self.data = None
        super().close()


@register_impl("pipelines", "pyg_host", needs=Needs(packages=("torch_geometric",), note="pyg-lib or torch-sparse"),
               summary="PyG recipe: host graph/features, NeighborLoader CPU workers, CPU feature slicing, "
                       "pinned copy, PyG layers, DDP",
               label="PyG", family="PyG", order=30, traits=("host", "pyg_layers"), unavailable=_probe,
               labels={"short": "PyG"})
def make(rank, config):
    problem = _probe(rank.device)
    if problem:
        raise SkipPoint(problem)
    return PygHostPipeline(rank, config)
