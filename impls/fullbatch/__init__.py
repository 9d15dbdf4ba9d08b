"""Interface `fullbatch`: full-graph GCN training (MG-GCN and its baselines).

Every implementation is built by its factory (:class:`TrainerFactory`) as ``factory(graph, model,
device=..., seed=..., rank=..., world=..., **options)`` from a :class:`problem.FullGraph` and a
:class:`model.ModelConfig`, and returns a :class:`FullBatchTrainer`: ``train_epoch()``,
``compute_gradients() -> (loss, logits, dW)``, ``loss_value()`` and ``close()``.  All train the
same model (model.py) from the same initial weights, so their losses and gradients agree.  Those
with trait ``distributed`` span several ranks; they must be built on every rank of an initialized
process group and take their rank's 1D share (``share=``). What each is, experiments read from its
traits (:data:`TRAITS`), never from its name.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness.errors import SkipPoint
from harness.needs import Needs
from harness.registry import register_impl, register_interface
from impls import reimplemented

from .model import ModelConfig, layer_order  # noqa: F401  (re-exported for experiments/tests)


@runtime_checkable
class FullBatchTrainer(Protocol):
    """One rank's part of full-graph GCN training: ``train_epoch()`` runs forward, loss, backward,
    the gradients' all-reduce and an Adam step; ``compute_gradients()`` the same without the step,
    returning (loss, this rank's logits, the weights' gradients); ``loss_value()`` the last epoch's
    loss (every rank the same); ``close()`` frees what it holds."""

    def train_epoch(self) -> None: ...

    def compute_gradients(self): ...

    def loss_value(self) -> float: ...

    def close(self) -> None: ...


@runtime_checkable
class StagedTrainer(FullBatchTrainer, Protocol):
    """MG-GCN's staged engine (trait ``staged``): its rank's ``share`` (vertex order, partition),
    ``transport_name`` and ``stages`` (the staged SpMM: ``local_first``) say which engine variant
    measured a row; ``memory_report()`` counts its buffers (Sec. 4.2); ``measure_library_workspaces()``
    probes the sparse and dense libraries' workspaces on GPUs."""

    share: object
    transport_name: str
    stages: object

    def memory_report(self): ...

    def measure_library_workspaces(self) -> dict: ...


class TrainerFactory(Protocol):
    def __call__(self, graph, model, *, device: str = "cpu", seed: int = 0, rank: int = 0, world: int = 1,
                 **options) -> FullBatchTrainer: ...


TRAITS = {
    "paper_method": "MG-GCN itself: the method the paper proposes, the subject of its claims",
    "distributed": "spans the ranks of a process group, each with its 1D share (share=; the input order in uniform "
                   "rows unless it is staged): measured on every GPU count",
    "single_device": "the whole graph on one device: measured on one GPU",
    "staged": "MG-GCN's staged engine (a StagedTrainer): takes the engine options (order, partition, transport, "
              "local_first, first_layer_backward, reuse_buffers, overlap, profiling)",
    "library": "a GNN library's own GCN layers: Figs. 10-13's and Table 3's one-GPU baselines",
    "paper_baseline": "the library the paper's speedups are over (DGL): the speedups' baseline where it ran on a GPU",
    "host_fallback": "where its library has no CUDA build, may be timed on the host's cores instead (labelled so)",
    "reference": "plain PyTorch autograd on one device: Sec. 4.2's naive memory and Table 3's plain baseline",
}

register_interface("fullbatch", FullBatchTrainer, factory=TrainerFactory, traits=TRAITS,
                   summary="full-graph GCN training: one epoch, its loss and its gradients")


@register_impl("fullbatch", "mggcn", needs=Needs(devices=("cpu", "cuda")), label="MG-GCN", family="MG-GCN",
               order=10, traits=("paper_method", "distributed", "staged"), contract=StagedTrainer,
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
               real_package=reimplemented.CAGNET, label="CAGNET 1D (re-impl.)", labels={"short": "CAGNET 1D"},
               family="CAGNET", order=20, traits=("distributed",),
               summary="CAGNET's published 1D algorithm: uniform rows in the input order, every SpMM by broadcasting "
                       "each rank's block in turn (no overlap), aggregate first in every layer, autograd")
def make_cagnet_1d(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True, share=None, **_):
    """``share``: this rank's 1D share (input order, uniform rows), built here where not given."""
    from .cagnet import Cagnet1D
    from .problem import rank_share

    if share is None:
        share = rank_share(graph, rank, world, order="original", seed=seed, self_loops=self_loops)
    return Cagnet1D(share, model, device=device, seed=seed)


@register_impl("fullbatch", "single_gpu", needs=Needs(devices=("cpu", "cuda")), label="PyTorch autograd",
               order=30, traits=("single_device", "reference"),
               summary="the same GCN on one device in plain torch (autograd, torch.optim.Adam)")
def make_single_gpu(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True, **_):
    from .single_gpu import SingleDeviceGCN

    return SingleDeviceGCN(graph, model, device=device, seed=seed, self_loops=self_loops)


@register_impl("fullbatch", "pyg", needs=Needs(devices=("cpu", "cuda"), packages=("torch_geometric",)),
               label="PyG GCNConv", family="PyG", order=40, traits=("single_device", "library"),
               summary="PyTorch Geometric GCNConv layers on the whole graph (torch sparse adj_t), one device")
def make_pyg(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True,
             adjacency="sparse", **_):
    from .pyg_gcn import PygGCN

    return PygGCN(graph, model, device=device, seed=seed, self_loops=self_loops, adjacency=adjacency)


@register_impl("fullbatch", "dgl", needs=Needs(devices=("cpu", "cuda"), packages=("dgl",),
                                               note="pip install '.[dgl]'; GPUs: a CUDA build of DGL"),
               label="DGL GraphConv", family="DGL", order=50,
               traits=("single_device", "library", "paper_baseline", "host_fallback"),
               summary="DGL GraphConv(norm='right') on the whole graph, one device (MG-GCN's baseline)")
def make_dgl(graph, model, *, device="cpu", seed=0, rank=0, world=1, self_loops=True, **_):
    from harness.dgl_compat import layers_unavailable

    from .dgl_gcn import DglGCN

    problem = layers_unavailable(device)
    if problem:
        raise SkipPoint(problem)

    return DglGCN(graph, model, device=device, seed=seed, self_loops=self_loops)
