"""Shared machinery of the ICS'22 placement experiments and XGNN Fig. 13.

- :func:`load_graph`: a dataset (stand-in unless the real one is present) as plain arrays, kept
  in the run's cache; the one place that talks to ``harness.datasets``.
- :class:`Workbench`: hotness, policies and placements kept per graph in the run's cache
  (:func:`workbench`), so a sweep over buffer sizes and topologies computes METIS / PaGraph
  partitions once per process.
- :class:`BreakdownExperiment`: ICS'22 Figs. 4, 5, 6, 10, 11 (loading time and access fractions
  per topology, buffer size and policy), simulated by replaying sampled mini-batches in the
  runner's process; the measured half runs on the ranks the runner launches for it (one per GPU
  of the topology): rank 0 places and replays the same batches, every rank gathers its own for real
  (experiments/kit/placement_loading.py: GPUs, or CPU ranks at toy scale), skipped where the machine lacks the
  topology's GPUs or NVLinks; its report is breakdown_report.py.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

import numpy as np

from harness import registry
from harness.argtypes import choice, or_word, positive_float, positive_int, str_list, unit_float
from harness.artifact import ReportArtifact
from harness.errors import HarnessError, SkipPoint
from harness.experiment import Experiment, Measurement, Param, Point


from .paper import (LAS_MAXS, MEASURABLE_TOPOLOGIES, NUM_LAYERS, PAPER_BATCH, PAPER_LAYER_NODES, PAPER_Q_SIZE,
                    QUICK_PAGRAPH_CAP_S, paper_alpha)


def scaled(value: float, scale: float, floor: int) -> int:
    """A paper size (batch, layer nodes) shrunk with the graph, so it covers the same fraction."""
    return max(int(floor), int(round(value * scale)))


alpha_param = or_word("auto", unit_float)


# --- graphs ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class GraphData:
    name: str
    scale: float
    seed: int
    num_nodes: int
    indptr: np.ndarray
    indices: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    features: np.ndarray | None
    labels: np.ndarray | None
    symmetric: bool
    is_standin: bool
    description: str

    @property
    def feature_dim(self) -> int:
        return 0 if self.features is None else int(self.features.shape[1])

    @property
    def row_bytes(self) -> int:
        """Bytes of one feature row (the unit the cost model charges for)."""
        if self.features is None:
            return 4
        return int(self.features.shape[1] * self.features.dtype.itemsize)

    @property
    def key(self) -> tuple:
        return (self.name, self.scale, self.seed)


def load_graph(ctx, name: str, scale: float, **overrides) -> GraphData:
    """The dataset ``name`` at ``scale`` (a stand-in unless the real one is present at scale 1),
    kept in the run's cache; ``overrides``: the stand-in's (harness.datasets.load)."""
    from harness import datasets

    cfg = ctx.cfg
    data_root = str(cfg.data_root) if cfg.data_root else None

    def load() -> GraphData:
        g = datasets.load(name, scale=scale, seed=cfg.seed, data_root=data_root, **overrides)
        return GraphData(name, scale, cfg.seed, int(g.num_nodes), np.asarray(g.indptr, dtype=np.int64),
                         np.asarray(g.indices), np.asarray(g.train_idx, dtype=np.int64),
                         np.asarray(g.val_idx, dtype=np.int64), np.asarray(g.test_idx, dtype=np.int64),
                         g.features, g.labels, bool(g.symmetric), bool(g.is_standin), g.describe())

    return ctx.cached(("placement-graph", name, scale, cfg.seed, data_root, tuple(sorted(overrides.items()))), load)


# --- cached placements -------------------------------------------------------------------------

class Workbench:
    """Hotness, policies, placements and LAS sets, computed once per process."""

    def __init__(self):
        self._hotness: dict = {}
        self._policies: dict = {}
        self._placements: dict = {}
        self._boosts: dict = {}

    def hotness(self, graph: GraphData, kind: str = "lhop") -> np.ndarray:
        key = (graph.key, kind)
        if key not in self._hotness:
            from impls.placement import hotness as hot

            if kind == "lhop":
                value = hot.lhop_hotness(graph.indptr, graph.indices, graph.train_idx, NUM_LAYERS,
                                         symmetric=graph.symmetric)
            elif kind == "degree":
                value = hot.degree_hotness(graph.indptr, graph.indices)
            elif kind.startswith("presample"):
                from impls.placement.sampling import NodeWiseSampler

                # GNNLab's PreSC#1 with XGNN's GraphSAGE fanouts
                value = hot.presample_hotness(graph.indptr, graph.indices, graph.train_idx,
                                              NodeWiseSampler((25, 10)), 6000, epochs=1, seed=graph.seed)
            else:
                raise HarnessError(f"unknown hotness '{kind}' (lhop, degree, presample)")
            self._hotness[key] = value
        return self._hotness[key]

    def policy(self, name: str, **options):
        from impls.placement import make_policy

        key = (name, tuple(sorted(options.items())))
        if key not in self._policies:
            self._policies[key] = make_policy(name, **options)
        return self._policies[key]

    def placement(self, graph: GraphData, policy: str, topology_name: str, buffer_size: int,
                  hotness: str = "lhop", seed: int = 0, **options):
        from impls.placement.policies import PlacementProblem
        from impls.core.topology import by_name

        key = (graph.key, policy, topology_name, buffer_size, hotness, seed, tuple(sorted(options.items())))
        if key not in self._placements:
            problem = PlacementProblem(graph.indptr, graph.indices, graph.train_idx, self.hotness(graph, hotness),
                                       by_name(topology_name), buffer_size, NUM_LAYERS, seed, graph.symmetric)
            self._placements[key] = self.policy(policy, **options).place(problem)
        return self._placements[key]

    def locality_sets(self, graph: GraphData, placement, gpu: int, q_size: int) -> list[np.ndarray]:
        """ICS'22's Q'_1..Q'_L for one GPU: B = every node it reads from a GPU buffer."""
        from impls.placement.sampling import build_locality_sets

        key = (id(placement), gpu, q_size)
        if key not in self._boosts:
            self._boosts[key] = build_locality_sets(graph.indptr, graph.indices, placement.reachable_mask(gpu),
                                                    NUM_LAYERS, q_size)
        return self._boosts[key]


def policy_options(impl: str, *, alpha: float | None = None, time_cap_s: float | None = None,
                   buffer_fill: str | None = None) -> dict:
    """The options placement policy ``impl`` takes, by what its registry entry says it is: ICS'22's
    ``alpha`` for a duplicating policy, ``time_cap_s`` for a time-capped one, ``buffer_fill`` (where
    given) for a partitioning one."""
    spec = registry.get_impl("placement", impl)
    wanted = {"duplicating": ("alpha", alpha), "time_capped": ("time_cap_s", time_cap_s),
              "partitioning": ("buffer_fill", buffer_fill)}
    return {name: value for trait, (name, value) in wanted.items() if spec.has(trait) and value is not None}


def time_cap(exp, cfg) -> float:
    """The experiment's cap on a time-capped policy (``pagraph_cap_s``; shorter under --quick)."""
    cap = exp.param(cfg, "pagraph_cap_s")
    return min(cap, QUICK_PAGRAPH_CAP_S) if cfg.quick else cap


def workbench(ctx) -> Workbench:
    """The run's workbench (one per process that runs the experiment's points)."""
    return ctx.cached(("workbench",), Workbench)


def timeout_skip(exc) -> SkipPoint:
    return SkipPoint(f"timeout: {exc}")


# --- ICS'22 breakdown figures (4, 5, 6, 10, 11) ---------------------------------------------------

class BreakdownExperiment(Experiment):
    """Loading time and access fractions per topology x buffer size x policy (ICS'22 Sec. 5).

    Each simulated point places the features with the policy, replays sampled mini-batches
    (ICS'22's layer-wise sampler: 3 layers of 8192 nodes, shrunk with the stand-in) on every GPU,
    classifies each input node as local / peer GPU / host with the GPU's dev_num lookup, and
    charges Eq. 3 with C_gpu and C_cpu. 'Our+LAS' adds locality-aware sampling with s = MAXS.
    """

    interface = "placement"
    metric, unit, better = "loading_time", "ms/batch", "lower"
    warm_and_cold = ("Simulated points are modelled (Eq. 3), not timed. Measured loading: warm (untimed warm-up "
                     "launches compile the kernels and lock the host pages), the L2 flushed before each timed pass "
                     "over the batches; batches of one pass share hot rows, as in training.")
    dataset = ""
    buffers: tuple[tuple[str, float], ...] = ()
    topologies: tuple[str, ...] = ("2GPU", "(2+2)GPU", "4GPU", "(2*4)GPU", "8GPU")
    las_topologies: tuple[str, ...] = ("2GPU", "(2+2)GPU")
    quick_scale = 0.01
    full_scale = 0.1
    figure_caption = ""
    claims: tuple[tuple[str, str, str], ...] = ()   # (source, policy claimed faster, slower policy)
    default_batch_sizes = "scaled"
    measured_topologies: tuple[str, ...] = MEASURABLE_TOPOLOGIES
    # what a run must leave at its default to be at the paper's settings, and what its shown
    # cells must share (experiments/placement/shown.py)
    method_params = ("alpha", "las_scale", "c_gpu_us", "c_cpu_us", "baseline_fill", "measured_rows")
    size_params = ("batch_sizes",)

    @property
    def differs_from_paper(self) -> str:
        return (f"Loading time per mini-batch modelled with Eq. 3 over sampled batches of a {self.dataset} stand-in "
                "a fraction of the real size and, where measured, gathered on 4 H200s with NVLink between all (as the "
                "paper's NVSwitch), not epoch times on the paper's 8x V100; the 8-GPU configurations are modelled "
                "only, PaGraph is re-implemented and METIS is pymetis.")

    @property
    def parameters(self):  # a property so subclasses' class attributes feed the defaults
        return {
            "topologies": Param(self.topologies, str_list, "ICS'22 configurations to simulate"),
            "buffers": Param(tuple(label for label, _ in self.buffers), str_list,
                             "buffer sizes per GPU as fractions of N ('0.1N', 'N/4', ...)"),
            "las_topologies": Param(self.las_topologies, str_list,
                                    "where Our+LAS is also run ('none' for nowhere)"),
            "alpha": Param("auto", alpha_param, "Algorithm 1 alpha; auto = 0.2 on pairs, 0 otherwise (paper)"),
            "las_scale": Param(LAS_MAXS, positive_float, "LAS scale factor s (default MAXS = 8)"),
            "max_batches": Param(48, positive_int, "mini-batches replayed per GPU"),
            "batch_sizes": Param(self.default_batch_sizes, choice("scaled", "paper"),
                                 "seeds per batch and nodes per layer: 'scaled' shrinks the paper's with the graph "
                                 "(same fraction of it per batch), 'paper' keeps them (per-batch reads as large as "
                                 "the paper's, so measured gathers are not launch-bound)"),
            "c_gpu_us": Param(None, positive_float, "C_gpu: microseconds per node read from a peer GPU"),
            "c_cpu_us": Param(None, positive_float, "C_cpu: microseconds per node read from the host"),
            "pagraph_cap_s": Param(120.0, positive_float, "PaGraph partitioning time cap (s)"),
            "baseline_fill": Param("default", choice("default", "hottest", "partition_order"),
                                   "what partitioners buffer: default (see impls/placement/policies.py), "
                                   "hottest, partition_order"),
            "measured": Param(self.measured_topologies, measured_param,
                              "topologies whose loading is also measured by gathering every replayed batch "
                              "on real ranks (GPUs with --device cuda, CPU ranks at toy scale otherwise); "
                              "true = " + ",".join(MEASURABLE_TOPOLOGIES) + ", false/none = nowhere"),
            "check_batches": Param(2, int, "measured: batches per rank whose rows are checked (-1: all)"),
            "measured_rows": Param("paper", or_word("paper", positive_int),
                                   "measured: rows one timed launch gathers at least, by gathering that many "
                                   "consecutive replayed batches together; 'paper' = the paper's batch plus 3 x 8192 "
                                   "sampled nodes (one of its mini-batches), so a launch moves data, not just itself"),
            "measured_repeats": Param(5, positive_int, "measured: timed passes over every batch (the error bars)"),
            "measured_gather": Param("fused", choice("fused", "split"),
                                     "measured on GPUs: 'fused' = one kernel per batch reading every row where "
                                     "dev_num says (GPU buffers and the mapped host table in one pointer table; "
                                     "ICS'22 3.2), 'split' = a p2p_shared gather, a host gather and two scatters"),
        }

    def default_scale(self, cfg, dataset=None) -> float:
        return self.quick_scale if cfg.quick else self.full_scale

    # --- grid -----------------------------------------------------------------------------
    def buffer_fraction(self, label: str) -> float:
        table = dict(self.buffers)
        if label in table:
            return table[label]
        match = re.fullmatch(r"N/(\d+)", label) or re.fullmatch(r"([0-9.]+)N", label)
        if not match:
            raise HarnessError(f"buffer '{label}' is not like 0.1N or N/4")
        return 1 / float(match.group(1)) if label.startswith("N/") else float(match.group(1))

    def points(self, cfg):
        scale = self.scale(cfg)
        las_tops = set(self.param(cfg, "las_topologies")) - {"none"}
        measured = self.param(cfg, "measured")
        for topology in self.param(cfg, "topologies"):
            for buffer in self.param(cfg, "buffers"):
                frac = self.buffer_fraction(buffer)
                base = {"dataset": self.dataset, "scale": scale, "topology": topology, "buffer": buffer,
                        "buffer_fraction": frac}
                world = int(re.search(r"\d+", topology).group()) if topology[0] != "(" else \
                    (4 if topology == "(2+2)GPU" else 8)
                for impl in self.impls:
                    yield Point(impl, {**base, "las": False, "mode": "simulated"}, world)
                if topology in las_tops:
                    for impl in registry.names("placement", traits=("ics22",)):
                        yield Point(impl, {**base, "las": True, "mode": "simulated"}, world)
                if topology in measured:
                    for impl in self.impls:
                        yield Point(impl, {**base, "las": False, "mode": "measured"}, world)

    def skip_reason(self, point, cfg):
        if point.params.get("mode") == "measured":
            return measured_skip_reason(self, point.params["topology"], cfg)
        return None

    def on_ranks(self, point: Point) -> bool:
        return point.params.get("mode") == "measured"

    # --- one point --------------------------------------------------------------------------
    def run_point(self, point: Point, ctx) -> list[Measurement]:
        if point.params.get("mode") == "measured":
            return self.run_measured(point, ctx)
        setup = self.setup(point, ctx)
        return setup.measurements(self.replay(point, ctx, setup, keep_batches=False))

    def replay(self, point: Point, ctx, setup, keep_batches: bool):
        """The point's sampled mini-batches replayed over its placement (the same batches for the
        same training split, sampler and seed). Without LAS the sampler does not depend on the
        placement, so every policy that shuffles globally (and every buffer size of one that splits
        the training nodes) replays the batches sampled once per process."""
        from impls.placement.simulate import count_replayed, replay, replay_batches

        graph, placement = setup.graph, setup.placement
        if point.params.get("las"):
            return replay(graph.indptr, graph.indices, graph.train_idx, placement, setup.sampler_for, setup.batch,
                          epochs=1, max_batches=setup.max_batches, seed=ctx.cfg.seed, keep_batches=keep_batches)
        parts = None if placement.train_parts is None else hashlib.blake2b(
            b"".join(np.ascontiguousarray(p, dtype=np.int64).tobytes() + b"|" for p in placement.train_parts)).hexdigest()
        key = ("placement-batches", graph.key, placement.num_gpus, setup.batch, setup.layer_nodes, setup.max_batches,
               ctx.cfg.seed, parts)

        def sample():
            kept = [[] for _ in range(placement.num_gpus)]
            for g, nodes in replay_batches(graph.indptr, graph.indices, graph.train_idx, placement, setup.sampler_for,
                                           setup.batch, 1, setup.max_batches, ctx.cfg.seed):
                kept[g].append(np.asarray(nodes, dtype=np.int64))
            return kept

        return count_replayed(placement, ctx.cached(key, sample), 1, keep_batches)

    def setup(self, point: Point, ctx) -> "PointSetup":
        """Graph, placement, sampler and cost model of a point (simulated and measured alike)."""
        from impls.placement.pagraph import PlacementTimeout
        from impls.placement.sampling import LayerWiseSampler, LocalityBoost
        from impls.core.topology import by_name

        cfg, bench = ctx.cfg, workbench(ctx)
        prm = point.params
        graph = load_graph(ctx, self.dataset, prm["scale"])
        topology = by_name(prm["topology"])
        buffer_size = int(prm["buffer_fraction"] * graph.num_nodes)
        alpha = self.param(cfg, "alpha")
        fill = self.param(cfg, "baseline_fill")
        options = policy_options(point.impl, alpha=paper_alpha(prm["topology"]) if alpha == "auto" else alpha,
                                 time_cap_s=time_cap(self, cfg), buffer_fill=None if fill == "default" else fill)
        try:
            placement = bench.placement(graph, point.impl, prm["topology"], buffer_size,
                                        seed=cfg.seed, **options)
        except PlacementTimeout as exc:
            raise timeout_skip(exc) from None
        scale = prm["scale"]
        size_scale = 1.0 if self.param(cfg, "batch_sizes") == "paper" else scale
        layer_nodes = scaled(PAPER_LAYER_NODES, size_scale, 32)
        batch = scaled(PAPER_BATCH.get(self.dataset, 512), size_scale, 8)
        q_size = scaled(PAPER_Q_SIZE, scale, 32)
        las_scale = self.param(cfg, "las_scale")

        def sampler_for(gpu):
            boost = None
            if prm["las"]:
                boost = LocalityBoost(bench.locality_sets(graph, placement, gpu, q_size), las_scale)
            return LayerWiseSampler(layer_nodes, NUM_LAYERS, boost)

        max_batches = self.param(cfg, "max_batches") if not cfg.quick else min(self.param(cfg, "max_batches"), 8)
        cost = cost_model(graph, topology, self.param(cfg, "c_gpu_us"), self.param(cfg, "c_cpu_us"))
        return PointSetup(graph, topology, placement, options, batch, layer_nodes, sampler_for, max_batches,
                          cost, las_scale if prm["las"] else None)

    # --- measured points ------------------------------------------------------------------------
    def run_measured(self, point: Point, ctx) -> list[Measurement]:
        """On every rank of the runner's launch (rank g = GPU g of the topology): rank 0 places and
        replays the point's batches as the simulated point does, every rank gathers its own for
        real, and the rows put the measured time beside the modeled one of the same batches."""
        from harness.ranks import all_gather, prepare_on_rank0

        from ..kit.placement_loading import measure_placement

        job, modeled = prepare_on_rank0(ctx.rank, lambda: self.measure_job(point, ctx))
        result = measure_placement(ctx.rank, job)
        return measured_rows(modeled, all_gather(ctx.rank, result))

    def measure_job(self, point: Point, ctx):
        """(what every rank gathers, what the simulator says of the same batches)."""
        from ..kit.placement_loading import MeasureJob, portable

        cfg = ctx.cfg
        setup = self.setup(point, ctx)
        sim = self.replay(point, ctx, setup, keep_batches=True)
        batches = sim.meta["input_batches"]
        per_region = batches_per_region(self.param(cfg, "measured_rows"), batches,
                                        PAPER_BATCH.get(self.dataset, 512) + NUM_LAYERS * PAPER_LAYER_NODES)
        job = MeasureJob(point.impl, portable(setup.placement), batches,
                         row_elems=max(1, setup.graph.row_bytes // 4), check_batches=self.param(cfg, "check_batches"),
                         warmup=1 if cfg.quick else 3, gather=self.param(cfg, "measured_gather"),
                         batches_per_region=per_region,
                         repeats=min(2, self.param(cfg, "measured_repeats")) if cfg.quick else
                         self.param(cfg, "measured_repeats"))
        modeled = Modeled(setup.extra(sim), float(setup.per_batch_model(sim).max()) * 1e3,
                          max(1, setup.graph.row_bytes // 4) * 4, [np.asarray(r) for r in sim.batch_reads],
                          sim.fractions(), host_locality(sim, setup.placement, setup.graph.row_bytes))
        return job, modeled

    # --- report -------------------------------------------------------------------------------
    def report(self, rows, runs) -> ReportArtifact:
        from .breakdown_report import breakdown_report

        return breakdown_report(self, rows, runs)


@dataclass
class Modeled:
    """What the simulator says of a measured point's batches (rank 0 computes it for every rank)."""

    extra: dict
    modeled_ms: float           # Eq. 3, slowest GPU's mean per batch
    row_bytes: int
    batch_reads: list           # per GPU: reads per batch and tier, as the simulator counts them
    fractions: dict
    locality: dict              # how the host rows of a batch lie in memory (host_locality)


@dataclass
class PointSetup:
    graph: GraphData
    topology: object
    placement: object
    options: dict
    batch: int
    layer_nodes: int
    sampler_for: object
    max_batches: int
    cost: object
    las_scale: float | None

    def per_batch_model(self, result) -> np.ndarray:
        """Eq. 3 seconds per batch, per GPU."""
        return result.modeled_time(self.cost) / np.maximum(np.array(result.meta["batches"]), 1)

    def extra(self, result) -> dict:
        placement, graph, cost = self.placement, self.graph, self.cost
        return {"batch_size": self.batch, "layer_nodes": self.layer_nodes, "alpha": self.options.get("alpha"),
                "buffer_fill": placement.meta.get("buffer_fill"),
                "cache_ratio": round(placement.unique_stored() / graph.num_nodes, 4),
                "batches_replayed": int(sum(result.meta["batches"])), "c_gpu_us": cost.c_gpu * 1e6,
                "c_cpu_us": cost.c_cpu * 1e6, "las_scale": self.las_scale,
                "partition_s": round(placement.meta.get("partition_s", placement.meta.get("place_s", 0.0)), 4),
                "standin": graph.is_standin}

    def measurements(self, result) -> list[Measurement]:
        per_batch = self.per_batch_model(result)
        placement, graph, batch = self.placement, self.graph, self.batch
        full_batches = [math.ceil(len(p) / batch) for p in
                        (placement.train_parts or np.array_split(graph.train_idx, self.topology.num_gpus))]
        epoch = float(max(b * t for b, t in zip(full_batches, per_batch)))
        frac = result.fractions()
        return [
            Measurement("loading_time", "ms/batch", value=float(per_batch.max()) * 1e3, extra=self.extra(result)),
            Measurement("epoch_loading_time", "s", value=epoch),
            Measurement("local_fraction", "fraction", value=frac["local"], better="higher"),
            Measurement("peer_fraction", "fraction", value=frac["peer"], better="higher"),
            Measurement("host_fraction", "fraction", value=frac["host"], better="lower"),
        ]


def batches_per_region(rows: str | int, batches: list[list[np.ndarray]], paper_rows: int) -> int:
    """Consecutive batches one timed launch gathers so that it reads at least ``rows`` rows
    ('paper': ``paper_rows``, the input nodes of one of the paper's mini-batches at most), given
    the replayed batches' mean size; at most half a GPU's batches, so each repeat has two regions."""
    target = paper_rows if rows == "paper" else int(rows)
    sizes = [len(b) for per_gpu in batches for b in per_gpu]
    fewest = min((len(per_gpu) for per_gpu in batches), default=1)
    if not sizes:
        return 1
    return int(max(1, min(math.ceil(target / max(1.0, float(np.mean(sizes)))), fewest // 2 or 1)))


def host_locality(sim, placement, row_bytes: int) -> dict:
    """How the host rows of the replayed batches lie in memory: rows per batch, and the distinct
    4 KiB pages and 2 MiB regions they touch (per batch, mean over GPUs and batches), so two
    policies with one host share can be told apart by their access pattern."""
    rows, pages, huge = [], [], []
    for gpu, per_gpu in enumerate(sim.meta["input_batches"]):
        dev = placement.lookup(gpu).dev_num
        for nodes in per_gpu:
            host = nodes[dev[nodes] < 0]
            first = host.astype(np.int64) * row_bytes
            last = first + row_bytes - 1
            rows.append(len(host))
            pages.append(len(np.union1d(first >> 12, last >> 12)))
            huge.append(len(np.union1d(first >> 21, last >> 21)))
    mean = (lambda v: round(float(np.mean(v)), 1) if v else 0.0)
    return {"host_rows_per_batch": mean(rows), "host_pages_4k_per_batch": mean(pages),
            "host_regions_2m_per_batch": mean(huge)}


OVERHEAD_FACTOR = 2.0      # measured within this factor of the launch floor: the launch, not the rows


def measured_rows(modeled: Modeled, results: list[dict]) -> list[Measurement]:
    """Rows of one measured point: measured loading time (slowest GPU, median of the repeats, their
    spread as the stats) beside the modeled one of the same batches and the launch floor."""
    from harness.timing import Stats

    for g, res in enumerate(results):
        if not np.array_equal(res["batch_reads"], modeled.batch_reads[g]):
            raise RuntimeError(f"GPU {g}: the measured gather read other tiers than the simulator counts "
                               f"for the same batches ({res['batch_reads'].sum(axis=0).tolist()} vs "
                               f"{modeled.batch_reads[g].sum(axis=0).tolist()})")
    device = results[0]["device"]
    on = "cuda" if device == "cuda" else "cpu"
    repeats = len(results[0]["per_batch_s"])
    slowest = [max(r["per_batch_s"][i] for r in results) * 1e3 for i in range(repeats)]   # per repeat
    measured_ms = float(np.median(slowest))
    floors = [r["floor_per_batch_s"] for r in results if r.get("floor_per_batch_s")]
    floor_ms = float(np.median([max(f[i] for f in floors) for i in range(len(floors[0]))])) * 1e3 if floors else None
    bound = floor_ms is not None and (measured_ms < OVERHEAD_FACTOR * floor_ms or modeled.modeled_ms < floor_ms)
    extra = {**modeled.extra, **modeled.locality, "measured_on": on,
             "measured_label": "GPU-measured" if on == "cuda" else "CPU-measured (toy scale, not GPU)",
             "modeled_ms": modeled.modeled_ms, "row_bytes": modeled.row_bytes,
             "checked_batches": int(sum(r["checked"] for r in results)),
             "per_gpu_ms": [round(r["mean_s"] * 1e3, 6) for r in results],
             "store": results[0]["store"], "host": results[0]["host"], "counts_match_simulator": True,
             "measured_gather": results[0].get("gather", "split"),
             "flush_mib": round(results[0].get("flush_bytes", 0) / (1 << 20), 3),
             "measured_repeats": repeats, "batches_per_region": results[0]["batches_per_region"],
             "rows_per_region": round(max(r["rows_per_region"] for r in results), 1),
             "launch_floor_ms": floor_ms, "overhead_bound": bool(bound), "overhead_factor": OVERHEAD_FACTOR,
             "per_pass_ms": [round(v, 6) for v in slowest]}
    frac = modeled.fractions
    return [
        Measurement("loading_time", "ms/batch", stats=Stats.from_samples(slowest), value=measured_ms, extra=extra),
        Measurement("modeled_loading_time", "ms/batch", value=modeled.modeled_ms),
        *([Measurement("launch_floor", "ms/batch", value=floor_ms)] if floor_ms is not None else []),
        Measurement("local_fraction", "fraction", value=frac["local"], better="higher"),
        Measurement("peer_fraction", "fraction", value=frac["peer"], better="higher"),
        Measurement("host_fraction", "fraction", value=frac["host"], better="lower"),
    ]


def measured_param(text: str) -> tuple[str, ...]:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return MEASURABLE_TOPOLOGIES
    if low in ("0", "false", "no", "off", "none"):
        return ()
    return str_list(text)


def machine_nvlinks(count: int) -> tuple[np.ndarray, str]:
    """(count x count) bool: which GPU pairs of this machine have NVLink (nvidia-smi topo -m 'NV#'),
    else which can access each other (torch peer access), and which of the two it is."""
    import torch

    from harness import envinfo

    links = np.zeros((count, count), dtype=bool)
    try:
        topo = envinfo.parse_topology(envinfo._run(["nvidia-smi", "topo", "-m"]) or "")
    except Exception:  # noqa: BLE001
        topo = None
    if topo and len(topo["matrix"]) >= count:
        for i in range(count):
            for j in range(count):
                cell = topo["matrix"][i][j] if j < len(topo["matrix"][i]) else ""
                links[i, j] = i == j or cell.upper().startswith("NV")
        return links, "NVLink (nvidia-smi topo -m)"
    for i in range(count):
        for j in range(count):
            links[i, j] = i == j or torch.cuda.can_device_access_peer(i, j)
    return links, "peer access (torch; NVLink not confirmed)"


def measured_skip_reason(exp, topology_name: str, cfg) -> str | None:
    """Why a measured point cannot run here, or None. CPU ranks run it at toy scale; on CUDA the
    run needs the topology's GPUs, NVLink on every pair the topology links, and CuPy."""
    import importlib.util

    from impls.core.topology import by_name

    topology = by_name(topology_name)
    n = topology.num_gpus
    if cfg.device != "cuda":
        return None
    (gpus,) = exp.world_sizes(cfg)
    if gpus < n:
        return f"measuring {topology_name} needs {n} GPUs (one rank per GPU of the topology), this run has {gpus}"
    if importlib.util.find_spec("cupy") is None:
        return "measuring on GPUs needs CuPy (the p2p_shared and host_uva gather kernels)"
    links, how = machine_nvlinks(n)
    missing = [(i, j) for i in range(n) for j in range(i + 1, n) if topology.link_gbps[i, j] > 0 and not links[i, j]]
    if missing:
        pairs = ", ".join(f"GPU{i}-GPU{j}" for i, j in missing)
        return (f"{topology_name} reads peers over NVLink between {pairs}, which this machine's GPUs 0-{n - 1} "
                f"lack ({how}); measuring it here would time another link structure")
    return None


def cost_model(graph: GraphData, topology, c_gpu_us: float | None = None, c_cpu_us: float | None = None):
    """Eq. 3's C_gpu and C_cpu: given in microseconds per node, else the topology's bandwidths."""
    from impls.placement.cost import CostModel

    peer_gbps = max(float(topology.link_gbps.max()), 1e-9)
    model = CostModel.from_bandwidths(graph.row_bytes, peer_gbps, topology.pcie_gbps)
    c_gpu, c_cpu = c_gpu_us, c_cpu_us
    if c_gpu is not None or c_cpu is not None:
        model = CostModel(model.c_gpu if c_gpu is None else c_gpu * 1e-6,
                          model.c_cpu if c_cpu is None else c_cpu * 1e-6, source="--param")
    return model
