"""GPU memory budgets: what a tiered store costs per GPU, the largest ratios that fit, and OOM.

A budget is the bytes each GPU may use (``budget_bytes``), of which ``reserve_bytes`` are kept for
training (model, activations, sampled blocks, gathered features: :func:`estimate_workspace`).
The rest holds the store's GPU tiers, sized exactly as the stores allocate them
(impls/storage/tiered.py uses the same formulas): per GPU, a topology buffer of ``rows_per_gpu + 1``
int64 offsets plus the neighbour ids of its rows, and a feature buffer of ``rows_per_gpu`` rows.

- :func:`fit_ggms` (XGNN): topology first by default (``priority="graph"``, XGNN 4.3: "stores the
  graph topology in GPUs first by default"), the rest of the budget for features; ``"feat"``
  prioritizes features (XGNN-F of section 6.8). A ratio left as None is searched: the largest
  that fits. A given ratio that does not fit raises :class:`OutOfMemoryBudget`.
- :func:`fit_dgl_cache` (DGL+C): the whole topology on every GPU (OOM when it does not fit, as
  DGL+C's OOM cells of XGNN Table 4), the largest feature cache ratio R in the rest.
- :func:`fit_quiver`: topology in host memory, features over each clique, largest ratio.

:class:`OutOfMemoryBudget` is a :class:`harness.errors.SkipPoint`: raised inside ``run_point`` the
runner records a ``skipped`` row whose reason starts with ``OOM under budget`` (experiments print
such rows as the papers' "OOM" cells); anywhere else it is an ordinary exception.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from harness.errors import SkipPoint

from .tiers import TierLayout, clique_layout, ggms_layout, replicated_layout, rows_for_ratio

GiB = 1 << 30
SYMM_ALIGN_WORDS = 32    # topology buffers: the indptr words are padded to 256 bytes


class OutOfMemoryBudget(SkipPoint):
    """A store or pipeline does not fit the per-GPU memory budget (an "OOM" result, not a crash)."""

    def __init__(self, what: str, need_bytes: int, budget_bytes: int):
        self.what, self.need_bytes, self.budget_bytes = what, int(need_bytes), int(budget_bytes)
        super().__init__(f"OOM under budget {budget_bytes / GiB:.4g} GiB per GPU: {what} needs "
                         f"{need_bytes / GiB:.4g} GiB")


def is_oom_reason(reason: str | None) -> bool:
    """True for the reason of a row skipped by :class:`OutOfMemoryBudget`."""
    return bool(reason) and reason.startswith("OOM under budget")


def parse_bytes(value) -> int:
    """Bytes from an int, a float (GiB) or a string: '16GiB', '16 GB' (GiB), '512MiB', '123'."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value * GiB)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]i?B?|B)?\s*", str(value), re.I)
    if not m:
        raise ValueError(f"not a size: {value!r} (e.g. 16GiB, 512MiB, 1e9)")
    unit = (m.group(2) or "B").upper().rstrip("B").rstrip("I")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": GiB, "T": 1 << 40}[unit])


# --- what a layout costs -----------------------------------------------------------------------

def topology_gpu_bytes(rows_per_gpu: int, edges_per_gpu: list[int], id_bytes: int, shared: bool) -> list[int]:
    """Topology bytes each GPU allocates: one int64 buffer of the row offsets (padded to 256 bytes)
    followed by the neighbour ids; the same size on every GPU when peers map it (symmetric memory:
    the largest GPU's edges), else each GPU its own."""
    if rows_per_gpu == 0:
        return [0] * len(edges_per_gpu)
    head = -(-(rows_per_gpu + 1) // SYMM_ALIGN_WORDS) * SYMM_ALIGN_WORDS    # int64 words

    def nbytes(edges: int) -> int:
        return 8 * (head + -(-max(1, edges) * id_bytes // 8))

    if shared:
        return [nbytes(max(edges_per_gpu))] * len(edges_per_gpu)
    return [nbytes(e) for e in edges_per_gpu]


def feature_gpu_bytes(layout: TierLayout, row_bytes: int) -> list[int]:
    return [layout.rows_per_gpu * row_bytes] * layout.num_gpus


class DegreeIndex:
    """Edges of every modulo partition of the first H hot rows, for any H, in O(P)."""

    def __init__(self, degrees_hot: np.ndarray):
        self.degrees = np.asarray(degrees_hot, dtype=np.int64)
        self._cum: dict[int, list[np.ndarray]] = {}

    def part_edges(self, gpu_rows: int, parts: int) -> list[int]:
        if parts not in self._cum:
            self._cum[parts] = [np.concatenate([[0], np.cumsum(self.degrees[p::parts])]) for p in range(parts)]
        cum = self._cum[parts]
        return [int(cum[p][len(range(p, gpu_rows, parts))]) for p in range(parts)]

    def gpu_edges(self, layout: TierLayout) -> list[int]:
        edges = self.part_edges(layout.gpu_rows, layout.num_parts)
        return [sum(edges[p] for p in layout.store[g]) for g in range(layout.num_gpus)]

    def host_edges(self, layout: TierLayout) -> int:
        return int(self.degrees[layout.gpu_rows:].sum())


def layout_memory(graph_layout: TierLayout | None, feat_layout: TierLayout | None, degrees: DegreeIndex | None,
                  id_bytes: int, row_bytes: int) -> dict:
    """Per-GPU and host bytes of a store's two layouts (what :meth:`TieredStore.memory` reports)."""
    n = (graph_layout or feat_layout).num_gpus
    topo = [0] * n
    host_topo = 0
    if graph_layout is not None:
        edges = degrees.gpu_edges(graph_layout)
        topo = topology_gpu_bytes(graph_layout.rows_per_gpu, edges, id_bytes, graph_layout.reads_peers())
        host_topo = 8 * (graph_layout.host_rows + 1) + degrees.host_edges(graph_layout) * id_bytes \
            if graph_layout.host_rows else 0
    feat = feature_gpu_bytes(feat_layout, row_bytes) if feat_layout is not None else [0] * n
    host_feat = feat_layout.host_rows * row_bytes if feat_layout is not None else 0
    return {"per_gpu": [{"gpu": g, "topology_bytes": topo[g], "feature_bytes": feat[g],
                         "total_bytes": topo[g] + feat[g]} for g in range(n)],
            "gpu_topology_bytes": sum(topo), "gpu_feature_bytes": sum(feat), "gpu_total_bytes": sum(topo) + sum(feat),
            "host_topology_bytes": host_topo, "host_feature_bytes": host_feat}


# --- searching ---------------------------------------------------------------------------------

def largest_fitting(cost: Callable[[int], int], limit: int, max_rows: int) -> int:
    """Largest r in [0, max_rows] with cost(r) <= limit (cost non-decreasing); -1 if none."""
    if cost(0) > limit:
        return -1
    lo, hi = 0, max_rows
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class MemoryFit:
    """The rows of each kind a design keeps on GPUs under a budget, and what they cost per GPU."""

    design: str
    num_nodes: int
    graph_rows: int            # topology rows on GPUs (hot order)
    feat_rows: int             # feature rows on GPUs
    topology_bytes: int        # per GPU (the largest GPU)
    feature_bytes: int
    reserve_bytes: int
    budget_bytes: int | None

    @property
    def graph_ratio(self) -> float:
        return self.graph_rows / self.num_nodes if self.num_nodes else 0.0

    @property
    def feat_ratio(self) -> float:
        return self.feat_rows / self.num_nodes if self.num_nodes else 0.0

    @property
    def total_bytes(self) -> int:
        return self.topology_bytes + self.feature_bytes + self.reserve_bytes

    def to_dict(self) -> dict:
        return asdict(self) | {"graph_ratio": self.graph_ratio, "feat_ratio": self.feat_ratio,
                               "total_bytes": self.total_bytes}


@dataclass(frozen=True)
class StoreSizes:
    """What the budget needs to know of a graph: degrees in hot order, id and feature row bytes."""

    degrees_hot: np.ndarray
    id_bytes: int
    row_bytes: int

    @property
    def num_nodes(self) -> int:
        return int(self.degrees_hot.size)

    @classmethod
    def of(cls, indptr, order: np.ndarray, row_bytes: int, id_bytes: int | None = None) -> "StoreSizes":
        deg = np.diff(np.asarray(indptr, dtype=np.int64))[np.asarray(order)]
        n = deg.size
        return cls(deg, id_bytes or (4 if n < 2 ** 31 else 8), int(row_bytes))


def _fit(design: str, sizes: StoreSizes, budget, reserve: int, make_graph: Callable[[int], TierLayout] | None,
         make_feat: Callable[[int], TierLayout], graph_rows: int | None, feat_rows: int | None,
         priority: str) -> MemoryFit:
    n = sizes.num_nodes
    degrees = DegreeIndex(sizes.degrees_hot)

    def topo_cost(rows: int) -> int:
        if make_graph is None:
            return 0
        layout = make_graph(rows)
        return max(topology_gpu_bytes(layout.rows_per_gpu, degrees.gpu_edges(layout), sizes.id_bytes,
                                      layout.reads_peers()))

    def feat_cost(rows: int) -> int:
        return max(feature_gpu_bytes(make_feat(rows), sizes.row_bytes))

    if budget is None:
        g = n if graph_rows is None else graph_rows
        f = n if feat_rows is None else feat_rows
        return MemoryFit(design, n, g if make_graph else 0, f, topo_cost(g), feat_cost(f), reserve, None)
    budget = parse_bytes(budget)
    if reserve > budget:
        raise OutOfMemoryBudget(f"{design}'s training workspace", reserve, budget)
    order = ("graph", "feat") if priority == "graph" else ("feat", "graph")
    if priority not in ("graph", "feat"):
        raise ValueError(f"priority must be graph or feat, not {priority!r}")
    chosen = {"graph": graph_rows if make_graph else 0, "feat": feat_rows}
    costs = {"graph": topo_cost, "feat": feat_cost}
    # fixed amounts first, then the searched ones in priority order
    for kind in sorted(order, key=lambda k: chosen[k] is None):
        used = reserve + sum(costs[k](chosen[k]) for k in order if k != kind and chosen[k] is not None)
        if chosen[kind] is None:
            rows = largest_fitting(costs[kind], budget - used, n)
            chosen[kind] = max(rows, 0)
        elif used + costs[kind](chosen[kind]) > budget:
            label = {"graph": "topology", "feat": "features"}[kind]
            ratio = chosen[kind] / n if n else 0.0
            raise OutOfMemoryBudget(f"{design} {label} at ratio {ratio:.3g} (+ the rest)",
                                    used + costs[kind](chosen[kind]), budget)
    return MemoryFit(design, n, chosen["graph"], chosen["feat"], topo_cost(chosen["graph"]),
                     feat_cost(chosen["feat"]), reserve, budget)


def _rows(ratio, n):
    return None if ratio is None else rows_for_ratio(ratio, n)


def fit_layouts(design: str, sizes: StoreSizes, budget, make_graph: Callable[[int], TierLayout] | None,
                make_feat: Callable[[int], TierLayout], *, graph_ratio: float | None = None,
                feat_ratio: float | None = None, reserve_bytes: int = 0, priority: str = "graph") -> MemoryFit:
    """Any pair of layout factories (rows -> TierLayout; ``make_graph`` None: topology not on GPUs)."""
    n = sizes.num_nodes
    return _fit(design, sizes, budget, reserve_bytes, make_graph, make_feat, _rows(graph_ratio, n),
                _rows(feat_ratio, n), priority)


def fit_ggms(sizes: StoreSizes, num_gpus: int, budget=None, *, plan=None, reserve_bytes: int = 0,
             graph_ratio: float | None = None, feat_ratio: float | None = None,
             priority: str = "graph") -> MemoryFit:
    """XGNN GGMS: ratios (None: the largest that fits, in ``priority`` order) under the budget."""
    n = sizes.num_nodes
    return _fit("GGMS", sizes, budget, reserve_bytes, lambda r: ggms_layout(n, r, num_gpus, plan),
                lambda r: ggms_layout(n, r, num_gpus, plan), _rows(graph_ratio, n), _rows(feat_ratio, n), priority)


def fit_dgl_cache(sizes: StoreSizes, num_gpus: int, budget=None, *, reserve_bytes: int = 0,
                  cache_ratio: float | None = None, graph_on_host: bool = False) -> MemoryFit:
    """DGL+C: the whole topology replicated (must fit), the largest replicated feature cache.
    ``graph_on_host``: DGL's UVA mode, the topology in pinned host memory (no GPU bytes)."""
    n = sizes.num_nodes
    if graph_on_host:
        return _fit("DGL+C (UVA)", sizes, budget, reserve_bytes, None,
                    lambda r: replicated_layout(n, r, num_gpus), None, _rows(cache_ratio, n), "feat")
    return _fit("DGL+C", sizes, budget, reserve_bytes, lambda r: replicated_layout(n, r, num_gpus),
                lambda r: replicated_layout(n, r, num_gpus), n, _rows(cache_ratio, n), "graph")


def fit_quiver(sizes: StoreSizes, cliques: list[list[int]], budget=None, *, reserve_bytes: int = 0,
               feat_ratio: float | None = None) -> MemoryFit:
    """Quiver: topology on the host (no GPU bytes), features over each clique."""
    n = sizes.num_nodes
    return _fit("Quiver", sizes, budget, reserve_bytes, None, lambda r: clique_layout(n, r, cliques),
                None, _rows(feat_ratio, n), "feat")


# --- the training workspace ------------------------------------------------------------------

def estimate_workspace(num_nodes: int, batch_size: int, fanouts, feat_dim: int, hidden: int,
                       num_classes: int, *, feat_bytes: int = 4, num_layers: int | None = None,
                       factor: float = 3.0, fixed_bytes: int = 256 << 20) -> int:
    """A rough per-GPU training workspace: sampled blocks, gathered features and activations.

    Distinct nodes grow hop by hop as n_{h+1} = n_h + N (1 - exp(-n_h f_h / N)) from ``batch_size``
    seeds (draws spread uniformly over the N nodes: skewed graphs repeat hubs, so fewer);
    sampled edges n_h f_h (int64 CSR and local ids, 16 bytes each, plus 16 bytes per node).
    Gathered input: n_L rows of ``feat_dim`` x ``feat_bytes``. Activations: every layer's output
    rows x width in float32, times ``factor`` (forward, backward, optimizer scratch).
    ``fixed_bytes``: model, CUDA context and allocator slack. An estimate for a default; experiments
    that measured their training memory (Pipeline.memory()["training"]) pass ``reserve_bytes``.
    """
    fanouts = [int(f) for f in fanouts]
    layers = num_layers or len(fanouts)
    n = float(num_nodes)
    nodes = [float(batch_size)]
    edges = 0.0
    for f in fanouts:
        edges += nodes[-1] * f
        nodes.append(min(n, nodes[-1] + n * -math.expm1(-nodes[-1] * f / n)))
    block_bytes = 16 * (edges + sum(nodes))
    gathered = nodes[-1] * feat_dim * feat_bytes
    widths = [hidden] * (layers - 1) + [num_classes]
    act = sum(nodes[len(nodes) - 2 - layer] * widths[layer] * 4 for layer in range(layers))
    return int(block_bytes + gathered + factor * act + fixed_bytes)


def budget_of_gpu(device_index: int = 0, fraction: float = 0.9) -> int:
    """``fraction`` of a CUDA device's total memory (the default budget on a real GPU)."""
    import torch

    return int(torch.cuda.get_device_properties(device_index).total_memory * fraction)


def gib(nbytes: int) -> float:
    return nbytes / GiB


__all__ = ["GiB", "OutOfMemoryBudget", "is_oom_reason", "parse_bytes", "topology_gpu_bytes",
           "feature_gpu_bytes", "DegreeIndex", "layout_memory", "largest_fitting", "MemoryFit", "StoreSizes",
           "fit_layouts", "fit_ggms", "fit_dgl_cache", "fit_quiver", "estimate_workspace", "budget_of_gpu", "gib"]
