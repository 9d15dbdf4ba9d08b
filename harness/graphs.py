"""The one way an experiment gets a graph: ``load(ctx, dataset, scale, view)``.

Every view is a :class:`harness.datasets.Graph` (CSR on the host, features, labels, splits),
read through harness.datasets (the on-disk cache of stand-ins and converted real data) and kept in
the run's in-process cache (``ctx.cached``) under one key: what decides its bits (view, dataset,
scale, seed, data root, stand-in only). One graph is kept at a time: loading another drops the
previous one and everything built on it (:func:`built_on`: a rank's share, a sampler over the
CSR). On ranks, rank 0 loads first (generating a stand-in into the disk cache once), then the
others open what it prepared (``harness.ranks.load_on_ranks``).

Views (:data:`VIEWS`):

- ``host``: the dataset as stored: memory-mapped CSR, features, labels and splits;
- ``structure``: the CSR and splits for samplers, which read no features: a stand-in is made
  with one feature column (the same graph and splits as the full-width one, without writing
  its features); ``uniform:NODES:DEGREE`` names a synthetic uniform random graph;
- ``fullbatch``: for full-batch training: float32 features in memory (fp16/bf16 converted),
  training ids as int64, single-label classes required (ValueError otherwise).

At scale 1.0 the real dataset is read where it is under the data root or converted in the cache,
unless ``standin=True`` (the dataset tables measure their stand-ins). ``overrides`` change the
stand-in's generation (``harness.datasets.load``: ``feature_signal``, say); such a stand-in is a
graph of its own, cached under its own key.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .errors import HarnessError

if TYPE_CHECKING:
    from .datasets.graph import Graph
    from .experiment import RunContext

VIEWS = ("host", "structure", "fullbatch")
UNIFORM_PREFIX = "uniform:"
GRAPH, ON_GRAPH = "graph", "on-graph"       # the kinds of the run cache's entries


def load(ctx: "RunContext", dataset: str, scale: float, view: str = "host", *,
         standin: bool = False, **overrides: Any) -> "Graph":
    """``dataset`` at ``scale`` as ``view`` (module doc), loaded once per process."""
    if view not in VIEWS:
        raise HarnessError(f"unknown graph view '{view}' ({', '.join(VIEWS)})")
    if is_uniform(dataset) and view != "structure":
        raise HarnessError(f"a uniform graph ('{dataset}') has no features or labels: "
                           "only the 'structure' view reads it")
    if is_uniform(dataset) and overrides:
        raise HarnessError(f"a uniform graph ('{dataset}') takes no stand-in overrides ({', '.join(overrides)})")
    cfg = ctx.cfg
    data_root = str(cfg.data_root) if cfg.data_root else None
    key = (GRAPH, view, dataset, float(scale), cfg.seed, data_root, bool(standin), tuple(sorted(overrides.items())))

    def build() -> "Graph":
        from .ranks import load_on_ranks

        return load_on_ranks(ctx.rank, lambda: _read(view, dataset, float(scale), cfg.seed, data_root,
                                                     standin, cfg.device, overrides))

    return ctx.cached(key, build, replaces=(GRAPH, ON_GRAPH))


def built_on(ctx: "RunContext", graph: "Graph", what: tuple, build: Callable[[], Any], *,
             alone: bool = False):
    """``build()``: something made from ``graph`` (a rank's share of it, a sampler over its CSR),
    kept in the run's cache while the graph is and closed with it. ``what`` identifies it among
    the things built on the graph; ``alone``: drop (close) those first, so that one is kept at a
    time (a share of a big graph is gigabytes)."""
    return ctx.cached((ON_GRAPH, id(graph)) + tuple(what), build, replaces=(ON_GRAPH,) if alone else ())


def _read(view: str, dataset: str, scale: float, seed: int, data_root: str | None, standin: bool,
          device: str, overrides: dict) -> "Graph":
    from . import datasets

    if view == "structure" and is_uniform(dataset):
        return uniform_graph(dataset, scale, seed)
    overrides = dict(overrides)
    if view == "structure" and not (scale == 1.0 and not standin and datasets.real_available(dataset, data_root)):
        overrides["feature_dim"] = 1
    graph = datasets.load(dataset, scale=scale, seed=seed, data_root=data_root, prefer_real=not standin,
                          device=device, **overrides)
    return full_batch(graph) if view == "fullbatch" else graph


def full_batch(graph: "Graph") -> "Graph":
    """``graph`` with float32 features in memory and int64 training ids (memory-mapped float32
    features are used in place); ValueError without features or single-label classes."""
    if graph.features is None:
        raise ValueError(f"{graph.name} has no node features")
    if graph.labels is None or graph.labels.ndim != 1:
        raise ValueError(f"{graph.name}: full-batch GCN here needs single-label classes")
    features = graph.features
    if features.dtype != np.float32:
        features = np.asarray(graph.feature_tensor().float().numpy())
    meta = {**graph.meta, "feature_dtype": "float32", "num_classes": graph.num_classes}
    return dataclasses.replace(graph, features=features, train_idx=np.asarray(graph.train_idx, dtype=np.int64),
                               meta=meta)


# --- synthetic uniform graphs --------------------------------------------------------------------

def is_uniform(name: str) -> bool:
    return name.startswith(UNIFORM_PREFIX)


def parse_uniform(spec: str) -> tuple[int, int]:
    """'uniform:NODES:DEGREE' -> (nodes, degree)."""
    try:
        nodes, degree = (int(x) for x in spec[len(UNIFORM_PREFIX):].split(":"))
    except ValueError:
        nodes = degree = 0
    if nodes < 2 or degree < 1:
        raise HarnessError(f"a uniform graph is '{UNIFORM_PREFIX}NODES:DEGREE' (NODES >= 2, DEGREE >= 1), "
                           f"not '{spec}'")
    return nodes, degree


def uniform_graph(spec: str, scale: float, seed: int) -> "Graph":
    """A synthetic uniform random graph (not a paper's dataset): every node draws Poisson(degree)
    neighbours uniformly from all nodes; every node is a training node. docs/machines.md lists
    PyG's NeighborLoader on such a graph of 2M nodes; ``uniform:2000000:50`` rebuilds one."""
    from .datasets.graph import Graph

    nodes, degree = parse_uniform(spec)
    nodes = max(2, int(round(nodes * scale)))
    rng = np.random.default_rng(seed * 1_000_003 + 17)
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    np.cumsum(rng.poisson(degree, nodes), out=indptr[1:])
    index_dtype = np.int32 if nodes < 2 ** 31 else np.int64
    indices = rng.integers(0, nodes, int(indptr[-1]), dtype=index_dtype)
    none = np.empty(0, dtype=np.int64)
    return Graph(spec, nodes, int(indptr[-1]), indptr, indices, features=None, labels=None,
                 train_idx=np.arange(nodes, dtype=np.int64), val_idx=none, test_idx=none, is_standin=True,
                 scale=scale, meta={"symmetric": False, "degree": degree})
