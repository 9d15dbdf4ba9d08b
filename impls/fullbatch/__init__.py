"""Interface `fullbatch`: full-graph GCN training (MG-GCN and its baselines).

Every implementation is built by its factory as ``factory(graph, model, device=..., seed=...,
rank=..., world=..., **options)`` from a :class:`harness.datasets.Graph` (the ``fullbatch`` view
of ``harness.graphs.load``) and a :class:`model.ModelConfig`, and offers ``train_epoch()``,
``compute_gradients() -> (loss, logits, dW)``, ``loss_value()`` and ``close()``.  All train the same model (model.py) from the
same initial weights, so their losses and gradients agree.  ``mggcn`` and ``cagnet_1d``
span several ranks; they must be built on every rank of an initialized process group.
"""

from __future__ import annotations

from harness.errors import SkipPoint
from harness.needs import Needs
from harness.registry import register_impl
from impls import reimplemented

from .model import ModelConfig, layer_order  # noqa: F401  (re-exported for experiments/tests)


@register_impl("fullbatch", "mggcn", needs=Needs(devices=("cpu", "cuda")),
               summary="MG-GCN: 1D rows, staged SpMM (local block first, remote blocks copied from the "
                       "peers or broadcast, overlapped on a second stream), L+3 shared buffers, random parts")
def make_mggcn(graph, model, *, device="cpu", seed=0, rank=0, world=1, order=None, partition="rows",
               self_loops=True, bounds=None, share=None, **options):
    """``order``: the vertex order (problem.VERTEX_ORDERS); by default with several ranks
    ``random_parts``: each vertex in a random part, which balances the tiles as the paper's random
    permutation does (Sec. 5.2), the input order kept inside each part (the SpMM's locality); with
    one rank the input order. ``partition``: uniform rows or equal nonzeros per part.
    ``options``: overlap, reuse_buffers, transport, local_first, first_layer_backward, profile_ops,
    record_timeline."""
    from .mggcn import MGGCN
    from .problem import rank_share

    if order is None:
        order = default_order(world)
    if share is None:
        share = rank_share(graph, rank, world, order=order, partition=partition, seed=seed,
                           self_loops=self_loops, bounds=bounds)
    return MGGCN(share, model, device=device, seed=seed, **options)


def default_order(world: int) -> str:
    """MG-GCN's vertex order by default: random parts across ranks; with one rank nothing to
    balance, and the input order."""
    return "random_parts" if world > 1 else "original"


@register_impl("fullbatch", "cagnet_1d", needs=Needs(devices=("cpu", "cuda")), reimplements="CAGNET",
               real_package=reimplemented.CAGNET,
               summary="CAGNET's published 1D algorithm: uniform rows in the input order, every SpMM by broadcasting "
                       "each rank's block in turn (no overlap), aggregate first in every layer, autograd")
def make_cagnet_1d(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True, share=None, **_):
    """``share``: this rank's 1D share (input order, uniform rows), built here where not given."""
    from .cagnet import Cagnet1D
    from .problem import rank_share

    if share is None:
        share = rank_share(graph, rank, world, order="original", seed=seed, self_loops=self_loops)
    return Cagnet1D(share, model, device=device, seed=seed)


@register_impl("fullbatch", "single_gpu", needs=Needs(devices=("cpu", "cuda")),
               summary="the same GCN on one device in plain torch (autograd, torch.optim.Adam)")
def make_single_gpu(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True, **_):
    from .single_gpu import SingleDeviceGCN

    return SingleDeviceGCN(graph, model, device=device, seed=seed, self_loops=self_loops)


@register_impl("fullbatch", "pyg", needs=Needs(devices=("cpu", "cuda"), packages=("torch_geometric",)),
               summary="PyTorch Geometric GCNConv layers on the whole graph (torch sparse adj_t), one device")
def make_pyg(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True,
             adjacency="sparse", **_):
    from .pyg_gcn import PygGCN

    return PygGCN(graph, model, device=device, seed=seed, self_loops=self_loops, adjacency=adjacency)


@register_impl("fullbatch", "dgl", needs=Needs(devices=("cpu", "cuda"), packages=("dgl",),
                                               note="pip install '.[dgl]'; GPUs: a CUDA build of DGL"),
               summary="DGL GraphConv(norm='right') on the whole graph, one device (MG-GCN's baseline)")
def make_dgl(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True, **_):
    from harness.dgl_compat import layers_unavailable

    from .dgl_gcn import DglGCN

    problem = layers_unavailable(device)
    if problem:
        raise SkipPoint(problem)

    return DglGCN(graph, model, device=device, seed=seed, self_loops=self_loops)
