"""Interface `placement`: where each node's input features live across GPUs and the host.

Every policy is a factory ``make(device=None, gpus=None, **options) -> Policy`` whose
``place(PlacementProblem) -> Placement`` returns per-GPU node buffers (a node may be on several
GPUs) and, per GPU, ICS'22's ``dev_num`` / ``buf_pos`` lookup. The placement itself is CPU work
(numpy); the GPUs only matter once the features are gathered (the `gather` interface).

Modules: ``result`` (``Placement``: buffers, lookup, ``split_for_gather`` for a sharded store),
``impls.core.topology`` (GPUs, NVLink, PCIe; ICS'22's and XGNN's configurations, nvidia-smi),
``hotness`` (degree, pre-sampling, ICS'22 L-hop reach by SpMV), ``policies`` (the eight below),
``ics22`` (Algorithm 1), ``xgnn_solver`` (XGNN Fig. 8), ``pagraph`` (PaGraph's policy: its partition
under a time cap, each GPU's out-degree cache), ``cost`` (ICS'22 Eq. 3-6 and a
per-link model), ``sampling`` (node-wise and layer-wise samplers, locality-aware sampling with
ICS'22 Algorithm 2), ``simulate`` (replay of mini-batch id streams against a placement).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harness.needs import Needs
from harness.registry import register_impl, register_interface
from impls import reimplemented

if TYPE_CHECKING:
    from .policies import PlacementProblem
    from .result import Placement

_CPU_OR_GPU = Needs(devices=("cpu", "cuda"))


@runtime_checkable
class PlacementPolicy(Protocol):
    """``place(problem) -> Placement``: per-GPU buffers and each GPU's lookup for one
    ``PlacementProblem`` (graph, training nodes, hotness, topology, buffer size). A policy object may
    remember what does not depend on the buffer size (a partition) between calls."""

    name: str

    def place(self, problem: "PlacementProblem") -> "Placement": ...


@runtime_checkable
class SearchingPolicy(PlacementPolicy, Protocol):
    """A policy that searches placements for a topology (trait ``solver``): ``search(topology)``
    returns its plan (``plans_found``, ``states_visited``, ``extra_partitions``)."""

    def search(self, topology): ...


@runtime_checkable
class PreprocessingPolicy(PlacementPolicy, Protocol):
    """A policy whose preprocessing ICS'22 Table 2 times alone (trait ``preprocessing``):
    ``preprocessing(indptr, indices, train_idx, parts, num_layers, seed, symmetric)`` prepares its
    inputs and returns the step to time (a time-capped policy's step times itself: ``elapsed_s``)."""

    def preprocessing(self, indptr, indices, train_idx, parts: int, num_layers: int, seed: int = 0,
                      symmetric: bool | None = None): ...


class PolicyFactory(Protocol):
    def __call__(self, device=None, gpus=None, **options) -> PlacementPolicy: ...


TRAITS = {
    "partitioning": "one partition per GPU, each GPU buffering part of its own (takes buffer_fill)",
    "duplicating": "ICS'22 Algorithm 1 per clique: hot nodes duplicated by the ratio alpha (takes alpha)",
    "time_capped": "quadratic partitioning stopped past a time cap (takes time_cap_s; PlacementTimeout)",
    "ics22": "ICS'22's own placement ('Our'): the subject of its claims, paired with locality-aware sampling",
    "solver": "XGNN's placement solver: searches where each partition goes for the topology (a SearchingPolicy)",
    "reference": "the placement ICS'22's speedups are over (RAND)",
    "preprocessing": "its preprocessing is timed alone (ICS'22 Table 2; a PreprocessingPolicy)",
}

register_interface("placement", PlacementPolicy, factory=PolicyFactory, traits=TRAITS,
                   summary="where each node's input features live across GPUs and the host")


@register_impl("placement", "naive", needs=_CPU_OR_GPU, label="NAIVE", colour="#bdbdbd", order=10,
               traits=("partitioning",),
               summary="ICS'22 NAIVE: contiguous id ranges, hottest of each part buffered")
def make_naive(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import Naive

    return Naive(buffer_fill)


@register_impl("placement", "random", needs=_CPU_OR_GPU, label="RAND", colour="#525252", order=20,
               traits=("partitioning", "reference"),
               summary="ICS'22 RAND: random permutation then contiguous parts")
def make_random(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import RandomPartition

    return RandomPartition(buffer_fill)


@register_impl("placement", "metis", needs=Needs(devices=("cpu", "cuda"), packages=("pymetis",)),
               label="METIS", colour="#e7ba52", order=30, traits=("partitioning", "preprocessing"),
               summary="METIS k-way parts (pymetis), DGL-style local training nodes")
def make_metis(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import Metis

    return Metis(buffer_fill)


@register_impl("placement", "pagraph", needs=_CPU_OR_GPU, label="PG (re-impl.)", family="PaGraph", order=40,
               traits=("partitioning", "time_capped", "preprocessing"),
               labels={"table": "PaGraph (re-impl.)", "paper": "PaGraph"},
               summary="PaGraph: training-node partitioning (quadratic, time-capped), each GPU caching its "
                       "partition's highest-out-degree nodes, no peer reads",
               reimplements="PaGraph", real_package=reimplemented.PAGRAPH)
def make_pagraph(device=None, gpus=None, time_cap_s: float | None = None, buffer_fill: str | None = None,
                 method: str = "bitset", **_):
    from .pagraph import PaGraph

    return PaGraph(time_cap_s, buffer_fill or "out_degree", method)


@register_impl("placement", "hash_modulo", needs=_CPU_OR_GPU, label="hash", colour="#999999", order=45,
               traits=("partitioning",),
               summary="WholeGraph: node v on GPU v mod n")
def make_hash_modulo(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import HashModulo

    return HashModulo(buffer_fill)


@register_impl("placement", "clique", needs=_CPU_OR_GPU, label="Clique", family="Quiver", order=60,
               labels={"system": "Clique (Quiver)"},
               summary="Quiver: hottest nodes spread over each fully connected clique",
               reimplements="Quiver", real_package=reimplemented.QUIVER)
def make_clique(device=None, gpus=None, **_):
    from .policies import Clique

    return Clique()


@register_impl("placement", "clique_opt", needs=_CPU_OR_GPU, label="Our", family="ours", order=50,
               traits=("duplicating", "ics22", "preprocessing"),
               labels={"xgnn": "CliqueOpt", "system": "CliqueOpt (ICS'22)"},
               summary="ICS'22 Algorithm 1 per clique (duplication with alpha)")
def make_clique_opt(device=None, gpus=None, alpha: float = 0.0, **_):
    from .policies import CliqueOpt

    return CliqueOpt(alpha)


@register_impl("placement", "xgnn_solver", needs=_CPU_OR_GPU, label="Solver", family="XGNN", order=70,
               traits=("solver",), labels={"system": "Solver (XGNN)"},
               summary="XGNN Fig. 8 pruning search: modulo partitions placed for the topology")
def make_xgnn_solver(device=None, gpus=None, **_):
    from .policies import XGNNSolver

    return XGNNSolver()


def make_policy(name: str, **options) -> PlacementPolicy:
    """Placement policy ``name`` (any registered, in impls/ or a plug-in) built with ``options``
    (e.g. ``alpha``, ``time_cap_s``, ``buffer_fill``)."""
    from harness import registry

    return registry.get_impl("placement", name).factory(**options)


# the placement API other interfaces use (the GGMS store places with the solver, the hotness
# reordering pre-samples; the measured loader gathers a Placement's batches)
from .hotness import presample_hotness  # noqa: E402,F401
from .result import Placement  # noqa: E402,F401
from .sampling import NodeWiseSampler  # noqa: E402,F401
from .xgnn_solver import solve  # noqa: E402,F401
