"""Baselines in the sampler interface: `pyg`, `dgl`, and an adapter for `wholegraph_lib`.

- ``pyg``: torch_geometric's ``NeighborSampler`` (what ``NeighborLoader`` runs in its
  workers) on the CPU, through pyg-lib or torch-sparse (PyG needs one of them; a clear skip
  otherwise). ``sample`` is one hop; ``sample_minibatch`` is PyG's multi-hop sample with its
  relabeling (sampling + unique). Outputs stay on the CPU, as PyG's loader produces them.
- ``dgl``: ``dgl.sampling.sample_neighbors`` (+ ``dgl.to_block`` per hop for a mini-batch) on
  the sampler's device, with one DGL OpenMP thread as in a worker of DGL's DataLoader (see
  :class:`DglSampler`); a clear skip where DGL does not import (no PyPI build for torch >= 2.4).

Both baselines answer in the interface of ``impls/sampling/samplers.py``: ``fanout <= 0`` takes
every neighbour (PyG and DGL spell it -1; their 0 takes none), and a repeated seed is sampled
once per copy, its neighbours at its own position.
- ``LibSamplerAdapter``: the real pylibwholegraph sampler (wholegraph_lib.py, library
  convention) returning our convention (int64 offsets and ids).
"""

from __future__ import annotations

import random

import numpy as np
import torch

from harness.errors import HarnessError, SkipPoint
from harness.needs import Needs
from harness.registry import register_impl

from . import rng
from .csr import where_of


def _csr_tensors(indptr, indices):
    ip = torch.as_tensor(np.asarray(indptr) if not isinstance(indptr, torch.Tensor) else indptr)
    ix = torch.as_tensor(np.asarray(indices) if not isinstance(indices, torch.Tensor) else indices)
    return ip.to(torch.int64).cpu(), ix.to(torch.int64).cpu()


def _group_by_seed(n: int, nbr_global: torch.Tensor, seed_index: torch.Tensor):
    order = torch.sort(seed_index, stable=True).indices
    counts = torch.bincount(seed_index, minlength=n)
    offsets = torch.zeros(n + 1, dtype=torch.int64, device=counts.device)
    torch.cumsum(counts, 0, out=offsets[1:])
    return offsets, nbr_global[order].to(torch.int64)


def pyg_backend() -> str:
    """'pyg-lib' or 'torch-sparse' (what PyG's NeighborSampler will call); SkipPoint if neither."""
    try:
        import torch_geometric.typing as tgt
    except Exception as exc:
        raise SkipPoint(f"torch_geometric does not import: {str(exc).splitlines()[0][:120]}") from None
    if getattr(tgt, "WITH_PYG_LIB", False):
        return "pyg-lib"
    if getattr(tgt, "WITH_TORCH_SPARSE", False):
        return "torch-sparse"
    raise SkipPoint("PyG's neighbor sampler needs pyg-lib or torch-sparse, and neither imports here "
                    "(torch-sparse/torch-scatter wheels for the H200 image: ../shared/wheels/)")


def pyg_data(indptr, indices):
    """A PyG Data whose in-edges of v are v's CSR neighbors (edge_index sorted by destination)."""
    from torch_geometric.data import Data

    ip, ix = _csr_tensors(indptr, indices)
    n = ip.numel() - 1
    dst = torch.repeat_interleave(torch.arange(n), ip[1:] - ip[:-1])
    return Data(edge_index=torch.stack([ix, dst]), num_nodes=n)


class PygSampler:
    name = "pyg"

    def __init__(self, where, indptr, indices, seed: int | None = 0, **_):
        self.backend = pyg_backend()
        self.device, _ = where_of(where)
        self.data = pyg_data(indptr, indices)
        self.num_nodes = self.data.num_nodes
        self._samplers: dict = {}
        self._rng = random.Random(seed)

    def _sampler(self, fanouts):
        from torch_geometric.sampler import NeighborSampler

        key = tuple(library_fanout(f) for f in fanouts)
        if key not in self._samplers:
            self._samplers[key] = NeighborSampler(self.data, num_neighbors=list(key), is_sorted=True)
        return self._samplers[key]

    def _run(self, seeds, fanouts, seed, generator):
        from torch_geometric.sampler import NodeSamplerInput

        torch.manual_seed(rng.resolve_seed(seed, generator, self._rng))   # PyG draws from torch's RNG
        seeds = torch.as_tensor(seeds).reshape(-1).to("cpu", torch.int64)
        # One intra-op thread, as in a NeighborLoader worker (torch DataLoader workers run so): the sampler is
        # serial, and idle OpenMP threads of a many-core process only slow it down.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return seeds, self._sampler(fanouts).sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds))
        finally:
            torch.set_num_threads(threads)

    def sample(self, seeds, fanout, *, seed=None, generator=None, check=True):
        seeds, out = self._run(seeds, [fanout], seed, generator)
        return _group_by_seed(seeds.numel(), out.node[out.row], out.col)

    def sample_minibatch(self, seeds, fanouts, *, seed=None, generator=None) -> dict:
        _, out = self._run(seeds, fanouts, seed, generator)
        return {"nodes": int(out.node.numel()), "edges": int(out.row.numel())}

    def loader(self, seeds, fanouts, batch: int, workers: int):
        """PyG's NeighborLoader over ``seeds`` (shuffled, persistent workers): (loader, edges of one
        of its batches, its name)."""
        from torch_geometric.loader import NeighborLoader

        loader = NeighborLoader(self.data, num_neighbors=list(fanouts), batch_size=batch, shuffle=True,
                                num_workers=workers, is_sorted=True, input_nodes=seeds,
                                persistent_workers=workers > 0, prefetch_factor=2 if workers > 0 else None)
        return loader, (lambda b: int(b.edge_index.size(1))), f"PyG NeighborLoader ({self.backend})"

    def describe(self) -> str:
        import torch_geometric

        return (f"PyG {torch_geometric.__version__} NeighborSampler via {self.backend}, CPU, "
                f"in this process (NeighborLoader's per-worker sampler)")

    def close(self) -> None:
        self._samplers.clear()


class DglSampler:
    """DGL's ``sample_neighbors`` in the sampler interface.

    Threads: DGL's CPU sampler is an OpenMP loop over the seeds. Its DataLoader runs it in worker
    processes with one OpenMP thread each (``dgl.dataloading.WorkerInitWrapper``); run in the
    rank's process with the process's threads, it loses most of its time when another process
    holds one of those cores: a thread of the loop waits for a descheduled sibling (2-core host
    under a load of 2-3: one hop of 600 seeds x 10 on a products stand-in took 1.0-95 ms,
    median 40 ms, with 2 threads and 0.9-17 ms, median 1.2 ms, with one). So each call runs with
    one OpenMP thread, as a loader worker does (``threads`` changes it), and restores the
    process's count after it, as the PyG adapter does for PyG's serial sampler.

    Output: ``sample_neighbors`` returns a seed's edges at fanout -1 (0 returns none), takes a
    short list whole in an order of its own, and returns a repeated seed's edges once per copy;
    :func:`edges_by_seed` puts each copy's edges at its position, in CSR order."""

    name = "dgl"

    def __init__(self, where, indptr, indices, threads: int = 1, **_):
        from harness.dgl_compat import import_dgl

        try:
            dgl = import_dgl()
        except ImportError as exc:
            raise SkipPoint(str(exc)) from None
        self.dgl = dgl
        self.threads = int(threads)
        self.device, _ = where_of(where)
        if self.device.type == "cuda":
            from harness.dgl_compat import layers_unavailable

            problem = layers_unavailable(self.device)     # a CPU build samples on the host only
            if problem:
                raise SkipPoint(problem)
        ip, ix = _csr_tensors(indptr, indices)
        self.num_nodes = ip.numel() - 1
        self.degrees = (ip[1:] - ip[:-1]).to(self.device)
        # edge ids are CSR positions: they give back the CSR order of a seed's neighbours
        g = dgl.graph(("csc", (ip, ix, torch.arange(ix.numel()))), num_nodes=self.num_nodes)
        self.g = g.to(self.device) if self.device.type == "cuda" else g

    def _sample_neighbors(self, targets, fanout):
        utils = self.dgl.utils
        before = utils.get_num_threads()
        utils.set_num_threads(self.threads)
        try:
            return self.dgl.sampling.sample_neighbors(self.g, targets, library_fanout(fanout), edge_dir="in",
                                                      replace=False)
        finally:
            utils.set_num_threads(before)

    def sample(self, seeds, fanout, *, seed=None, generator=None, check=True):
        if seed is not None:
            self.dgl.seed(int(seed))
        seeds = torch.as_tensor(seeds).reshape(-1).to(self.device, torch.int64)
        fr = self._sample_neighbors(seeds, fanout)
        src, dst = fr.edges()
        counts = self.degrees[seeds] if int(fanout) <= 0 else self.degrees[seeds].clamp(max=int(fanout))
        return edges_by_seed(seeds, counts, src, dst, fr.edata[self.dgl.EID])

    def sample_minibatch(self, seeds, fanouts, *, seed=None, generator=None) -> dict:
        if seed is not None:
            self.dgl.seed(int(seed))
        targets = torch.as_tensor(seeds).reshape(-1).to(self.device, torch.int64)
        edges = 0
        for fanout in fanouts:
            fr = self._sample_neighbors(targets, fanout)
            block = self.dgl.to_block(fr, targets)
            edges += block.num_edges()
            targets = block.srcdata[self.dgl.NID]
        return {"nodes": int(targets.numel()), "edges": int(edges)}

    def loader(self, seeds, fanouts, batch: int, workers: int):
        """DGL's NeighborSampler in its DataLoader over ``seeds`` (shuffled, persistent workers forked
        from this process, where the shim's graphbolt stand-in lives): (loader, edges of one of its
        batches, its name)."""
        sampler = self.dgl.dataloading.NeighborSampler(list(reversed(fanouts)))
        extra = {"multiprocessing_context": "fork", "persistent_workers": True, "prefetch_factor": 2} \
            if workers else {}
        loader = self.dgl.dataloading.DataLoader(self.g, seeds, sampler, batch_size=batch, shuffle=True,
                                                 num_workers=workers, **extra)
        return loader, (lambda b: sum(int(block.num_edges()) for block in b[2])), \
            f"DGL {self.dgl.__version__} NeighborSampler in its DataLoader"

    def describe(self) -> str:
        return (f"DGL {self.dgl.__version__} sample_neighbors + to_block on {self.device}, {self.threads} OpenMP "
                f"thread{'s' if self.threads != 1 else ''} (as in a DataLoader worker)")

    def close(self) -> None:
        self.g = None


def library_fanout(fanout) -> int:
    """A fanout as PyG and DGL take it: -1 for every neighbour (the interface's ``fanout <= 0``)."""
    fanout = int(fanout)
    return fanout if fanout > 0 else -1


def edges_by_seed(seeds, counts, src, dst, eid):
    """(offsets, neighbours) in the interface's convention from a library's sampled edges
    ``src -> dst`` (``eid``: their CSR positions): the edges of each copy of a seed at that copy's
    position (a library that returns a repeated seed's edges once per copy, in any order of the
    copies' groups: the k-th group of a seed value goes to its k-th copy), each copy's edges in CSR
    order. ``counts`` is what each position must get (min(degree, fanout)); HarnessError when the
    edges do not add up to them or a copy gets an edge twice."""
    n = seeds.numel()
    counts = counts.to(torch.int64)
    offsets = torch.zeros(n + 1, dtype=torch.int64, device=seeds.device)
    torch.cumsum(counts, 0, out=offsets[1:])
    total = int(offsets[-1])
    if total != dst.numel():
        raise HarnessError(f"the sampler returned {dst.numel()} edges for {total} expected "
                           "(min(degree, fanout) per seed copy)")
    if total == 0:
        return offsets, src.to(torch.int64)
    # positions sorted by seed value and edges sorted by destination line up copy by copy
    by_value = torch.sort(seeds, stable=True).indices
    edge_order = torch.sort(dst, stable=True).indices
    if not torch.equal(dst[edge_order], torch.repeat_interleave(seeds[by_value], counts[by_value])):
        raise HarnessError("the sampler's edges do not match min(degree, fanout) per seed copy")
    position = torch.empty(total, dtype=torch.int64, device=seeds.device)
    position[edge_order] = torch.repeat_interleave(by_value, counts[by_value])
    # each copy's edges together, in CSR order: sort by edge id, then (stable) by position
    order = torch.sort(eid, stable=True).indices
    order = order[torch.sort(position[order], stable=True).indices]
    key_pos, key_eid = position[order], eid[order]
    if bool(((key_pos[1:] == key_pos[:-1]) & (key_eid[1:] == key_eid[:-1])).any()):
        raise HarnessError("the sampler gave a seed copy the same edge twice")
    return offsets, src[order].to(torch.int64)


class LibSamplerAdapter:
    """Real WholeGraph's sampler (collective constructor) in our output convention."""
    name = "wholegraph_lib"

    def __init__(self, rank, indptr, indices, seed: int | None = 0, **options):
        from . import wholegraph_lib

        as_t = lambda a: a if isinstance(a, torch.Tensor) else torch.from_numpy(np.asarray(a))  # noqa: E731
        self.inner = wholegraph_lib.make(rank, as_t(indptr), as_t(indices), seed=seed, **options)
        self.device = self.inner.device
        self._rng = random.Random(seed)

    def sample_raw(self, seeds, fanout, *, seed=None, generator=None, check=True):
        """The library's own outputs (int32 offsets, ids in the CSR's dtype)."""
        return self.inner.sample(seeds, fanout, random_seed=rng.resolve_seed(seed, generator, self._rng) & rng.MASK64,
                                 check=check)

    def sample(self, seeds, fanout, *, seed=None, generator=None, check=True):
        offsets, ids = self.sample_raw(seeds, fanout, seed=seed, generator=generator, check=check)
        return offsets.to(torch.int64), ids.to(torch.int64)

    def sample_minibatch(self, seeds, fanouts, *, seed=None, generator=None) -> dict:
        """Real WholeGraph's own mini-batch: its sampler and its append_unique, hop by hop."""
        from pylibwholegraph.torch.graph_ops import append_unique

        targets = torch.as_tensor(seeds).to(self.inner.col_dtype)
        edges = 0
        with torch.cuda.device(self.device):
            for fanout in fanouts:
                _, ids = self.sample_raw(targets, fanout, seed=seed, generator=generator, check=False)
                targets = append_unique(targets, ids, need_neighbor_raw_to_unique=True)[0]
                edges += ids.numel()
        return {"nodes": int(targets.numel()), "edges": int(edges)}

    def describe(self) -> str:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()


def pyg_unavailable(device: str | None = None) -> str | None:
    try:
        pyg_backend()
    except SkipPoint as exc:
        return str(exc)
    return None


@register_impl("sampling", "pyg", needs=Needs(packages=("torch_geometric",), note="pyg-lib or torch-sparse"),
               summary="PyG NeighborSampler (NeighborLoader's sampler) on the CPU", label="PyG", family="PyG",
               order=50, traits=("own_minibatch", "host", "cpu_library", "loader"), unavailable=pyg_unavailable,
               labels={"loader": "PyG NeighborLoader", "loader_tick": "PyG\nNeighborLoader"})
def make_pyg(where, indptr, indices, **options):
    return PygSampler(where, indptr, indices, **options)


@register_impl("sampling", "dgl", needs=Needs(packages=("dgl",)),
               summary="DGL sample_neighbors (+ to_block per hop)", label="DGL", family="DGL", order=51,
               traits=("own_minibatch", "cpu_library", "loader"),
               labels={"loader": "DGL DataLoader (NeighborSampler)", "loader_tick": "DGL\nDataLoader"})
def make_dgl(where, indptr, indices, **options):
    return DglSampler(where, indptr, indices, **options)


@register_impl("sampling", "wholegraph_lib", needs=Needs(devices=("cuda",), packages=("pylibwholegraph",)),
               summary="real pylibwholegraph unweighted_sample_without_replacement on a CSR in WholeMemory",
               label="WholeGraph", family="WholeGraph", order=40, traits=("library", "own_minibatch"),
               labels={"minibatch": "WholeGraph (its sampler + append_unique)"})
def make_lib_adapter(rank, indptr, indices, **options) -> LibSamplerAdapter:
    if not hasattr(rank, "torch_device"):
        raise HarnessError("wholegraph_lib needs a rank context (it builds its CSR collectively)")
    return LibSamplerAdapter(rank, indptr, indices, **options)
