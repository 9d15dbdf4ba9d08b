"""Baselines in the sampler interface: `pyg`, `dgl`, and an adapter for `wholegraph_lib`.

- ``pyg``: torch_geometric's ``NeighborSampler`` (what ``NeighborLoader`` runs in its
  workers) on the CPU, through pyg-lib or torch-sparse (PyG needs one of them; a clear skip
  otherwise). ``sample`` is one hop; ``sample_minibatch`` is PyG's multi-hop sample with its
  relabeling (sampling + unique). Outputs stay on the CPU, as PyG's loader produces them.
- ``dgl``: ``dgl.sampling.sample_neighbors`` (+ ``dgl.to_block`` per hop for a mini-batch) on
  the sampler's device; a clear skip where DGL does not import (no PyPI build for torch >= 2.4).
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

        key = tuple(int(f) for f in fanouts)
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

    def describe(self) -> str:
        import torch_geometric

        return (f"PyG {torch_geometric.__version__} NeighborSampler via {self.backend}, CPU, "
                f"in this process (NeighborLoader's per-worker sampler)")

    def close(self) -> None:
        self._samplers.clear()


class DglSampler:
    name = "dgl"

    def __init__(self, where, indptr, indices, **_):
        from harness.dgl_compat import import_dgl

        try:
            dgl = import_dgl()
        except ImportError as exc:
            raise SkipPoint(str(exc)) from None
        self.dgl = dgl
        self.device, _ = where_of(where)
        if self.device.type == "cuda":
            from harness.dgl_compat import layers_unavailable

            problem = layers_unavailable(self.device)     # a CPU build samples on the host only
            if problem:
                raise SkipPoint(problem)
        ip, ix = _csr_tensors(indptr, indices)
        self.num_nodes = ip.numel() - 1
        g = dgl.graph(("csc", (ip, ix, torch.arange(ix.numel()))), num_nodes=self.num_nodes)
        self.g = g.to(self.device) if self.device.type == "cuda" else g

    def sample(self, seeds, fanout, *, seed=None, generator=None, check=True):
        if seed is not None:
            self.dgl.seed(int(seed))
        seeds = torch.as_tensor(seeds).reshape(-1).to(self.device, torch.int64)
        fr = self.dgl.sampling.sample_neighbors(self.g, seeds, int(fanout), edge_dir="in", replace=False)
        src, dst = fr.edges()
        sorted_seeds, perm = torch.sort(seeds)
        seed_index = perm[torch.searchsorted(sorted_seeds, dst)]
        return _group_by_seed(seeds.numel(), src, seed_index)

    def sample_minibatch(self, seeds, fanouts, *, seed=None, generator=None) -> dict:
        if seed is not None:
            self.dgl.seed(int(seed))
        targets = torch.as_tensor(seeds).reshape(-1).to(self.device, torch.int64)
        edges = 0
        for fanout in fanouts:
            fr = self.dgl.sampling.sample_neighbors(self.g, targets, int(fanout), edge_dir="in", replace=False)
            block = self.dgl.to_block(fr, targets)
            edges += block.num_edges()
            targets = block.srcdata[self.dgl.NID]
        return {"nodes": int(targets.numel()), "edges": int(edges)}

    def describe(self) -> str:
        return f"DGL {self.dgl.__version__} sample_neighbors + to_block on {self.device}"

    def close(self) -> None:
        self.g = None


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

    def describe(self) -> str:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()


@register_impl("sampling", "pyg", needs=Needs(packages=("torch_geometric",), note="pyg-lib or torch-sparse"),
               summary="PyG NeighborSampler (NeighborLoader's sampler) on the CPU")
def make_pyg(where, indptr, indices, **options):
    return PygSampler(where, indptr, indices, **options)


@register_impl("sampling", "dgl", needs=Needs(packages=("dgl",)),
               summary="DGL sample_neighbors (+ to_block per hop)")
def make_dgl(where, indptr, indices, **options):
    return DglSampler(where, indptr, indices, **options)


def make_lib_adapter(rank, indptr, indices, **options) -> LibSamplerAdapter:
    if not hasattr(rank, "torch_device"):
        raise HarnessError("wholegraph_lib needs a rank context (it builds its CSR collectively)")
    return LibSamplerAdapter(rank, indptr, indices, **options)
