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

from harness.needs import Needs
from harness.registry import register_impl
from impls import reimplemented
_CPU_OR_GPU = Needs(devices=("cpu", "cuda"))


@register_impl("placement", "naive", needs=_CPU_OR_GPU,
               summary="ICS'22 NAIVE: contiguous id ranges, hottest of each part buffered")
def make_naive(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import Naive

    return Naive(buffer_fill)


@register_impl("placement", "random", needs=_CPU_OR_GPU,
               summary="ICS'22 RAND: random permutation then contiguous parts")
def make_random(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import RandomPartition

    return RandomPartition(buffer_fill)


@register_impl("placement", "metis", needs=Needs(devices=("cpu", "cuda"), packages=("pymetis",)),
               summary="METIS k-way parts (pymetis), DGL-style local training nodes")
def make_metis(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import Metis

    return Metis(buffer_fill)


@register_impl("placement", "pagraph", needs=_CPU_OR_GPU,
               summary="PaGraph: training-node partitioning (quadratic, time-capped), each GPU caching its "
                       "partition's highest-out-degree nodes, no peer reads",
               reimplements="PaGraph", real_package=reimplemented.PAGRAPH)
def make_pagraph(device=None, gpus=None, time_cap_s: float | None = None, buffer_fill: str | None = None,
                 method: str = "bitset", **_):
    from .pagraph import PaGraph

    return PaGraph(time_cap_s, buffer_fill or "out_degree", method)


@register_impl("placement", "hash_modulo", needs=_CPU_OR_GPU,
               summary="WholeGraph: node v on GPU v mod n")
def make_hash_modulo(device=None, gpus=None, buffer_fill: str | None = None, **_):
    from .policies import HashModulo

    return HashModulo(buffer_fill)


@register_impl("placement", "clique", needs=_CPU_OR_GPU,
               summary="Quiver: hottest nodes spread over each fully connected clique",
               reimplements="Quiver", real_package=reimplemented.QUIVER)
def make_clique(device=None, gpus=None, **_):
    from .policies import Clique

    return Clique()


@register_impl("placement", "clique_opt", needs=_CPU_OR_GPU,
               summary="ICS'22 Algorithm 1 per clique (duplication with alpha)")
def make_clique_opt(device=None, gpus=None, alpha: float = 0.0, **_):
    from .policies import CliqueOpt

    return CliqueOpt(alpha)


@register_impl("placement", "xgnn_solver", needs=_CPU_OR_GPU,
               summary="XGNN Fig. 8 pruning search: modulo partitions placed for the topology")
def make_xgnn_solver(device=None, gpus=None, **_):
    from .policies import XGNNSolver

    return XGNNSolver()


POLICIES = ("naive", "random", "metis", "pagraph", "hash_modulo", "clique", "clique_opt", "xgnn_solver")


_FACTORIES = {"naive": make_naive, "random": make_random, "metis": make_metis, "pagraph": make_pagraph,
              "hash_modulo": make_hash_modulo, "clique": make_clique, "clique_opt": make_clique_opt,
              "xgnn_solver": make_xgnn_solver}


def make_policy(name: str, **options):
    """Policy ``name`` built with ``options`` (e.g. ``alpha``, ``time_cap_s``, ``buffer_fill``).

    The same factories the registry holds, looked up here directly so that using a policy does
    not import every other implementation of the project.
    """
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise KeyError(f"unknown placement policy '{name}' (known: {', '.join(POLICIES)})") from None
    return factory(**options)


# the placement API other interfaces use (the GGMS store places with the solver, the hotness
# reordering pre-samples; the measured loader gathers a Placement's batches)
from .hotness import presample_hotness  # noqa: E402,F401
from .result import Placement  # noqa: E402,F401
from .sampling import NodeWiseSampler  # noqa: E402,F401
from .xgnn_solver import solve  # noqa: E402,F401
