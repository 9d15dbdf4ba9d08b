"""XGNN's training experiments (Tables 1, 4, 5; Figs. 10, 11, 12, 15): shared parts.

Every point trains one *system* (a column of the paper's tables) on one dataset with one model,
data-parallel on every rank (one process per GPU, DDP), through the tiered-store pipelines
(``impls/pipelines``: ``xgnn``, ``dgl_cache``, ``quiver``) or the WholeGraph pipeline, with
XGNN's model settings (section 6.1, ``impls.models.PAPER_MODELS["xgnn"]``: GCN 3 layers with
fanouts 15, 10, 5; GraphSAGE 2 layers with 10, 25; PinSAGE 3 layers of the 5 nodes most visited by
4 random walks of length 3, weighted by visit count; hidden 256). A system is a pipeline plus
options (:data:`SYSTEMS`): XGNN's "DGL" is DGL+C's placement without a feature cache, "DGL-Host"
is Quiver's without one (topology and features in host memory), XGNN-G / XGNN-F prioritize the
topology / the features, and Fig. 10's steps switch GGMS, the batched KHop and the solver on one
by one. Rows are the same whatever the experiment:

- ``epoch_time`` (s): E2E, the average free-running epoch (sampling pipelined with training on a
  sampler thread: the paper's footnote 1). ``sample_time``, ``gather_time`` (Table 4's E: feature
  extraction) and ``train_time`` (T) come from the first ``synced_epochs`` measured epochs
  (median; default 1), run with the device synchronized between stages and without prefetching, so each stage is timed alone (the paper
  times its Sampler and Trainer stages apart). Capped epochs are extrapolated to the full epoch.
- ``feature_hit_rate`` (H: share of feature rows read from GPU memory, local or peer),
  ``topology_hit_rate``, ``feat_ratio`` (R: share of feature rows on the GPUs), ``graph_ratio``.
- ``memory_total_gpus`` / ``memory_topology_gpus`` / ``memory_features_gpus`` (GiB summed over
  the GPUs: Table 5's Mem., Fig. 12) and ``memory_per_gpu`` (the largest GPU's total).
- ``val_accuracy``, ``test_accuracy`` (the per-epoch curve and the epoch times in the
  epoch_time row's extra, for Fig. 15b).

The GPU memory budget (param ``budget``)
---------------------------------------
The paper trains on 16 GB V100s, where the topology of UK or CF does not fit next to the training
workspace (Table 4's OOM cells) while TW's and PA's do. The stand-ins are much smaller than the
real graphs and our GPUs much larger, so the budget is a model of the paper's GPU, scaled like the
graph. Default rule ``v100``: per GPU, the room the V100 leaves for the stores,
``16 GiB - W(model)``, as a multiple of the dataset's topology as in the paper:

    budget = (16 GiB - W(model)) / Volume_G(dataset, XGNN Table 3) x topology bytes of the stand-in

with W = 6 GiB for GCN (and PinSAGE), 4 GiB for GraphSAGE: the training workspace implied by
DGL+C's cells of Table 4 (topology + R x features + W = 16 GB gives W = 5.4-6.8 for GCN and
3.8-4.0 for GraphSAGE), so the stores get the whole budget (``reserve_bytes=0``). The rule puts
the TW topology at 0.56x (GCN) / 0.47x (GraphSAGE) of the budget, PA's at 0.64x / 0.53x, UK's at
1.13x / 0.94x and CF's at 1.37x / 1.14x: DGL and DGL+C (topology replicated on every GPU) OOM on
CF and on UK with GCN, as in Table 4, and XGNN fits everywhere on several GPUs (on one, CF's
topology does not fit: Fig. 15a); DGL+C's cache ratio comes out near the paper's (TW GraphSAGE
17% vs 16%, UK GraphSAGE 1% vs 1%). Being relative to the topology, the rule also holds for the PA
stand-in, which is symmetrized (twice Table 3's 6.4 GB at scale 1). ``v100:G`` is the same rule
for a V100 of G GiB (Fig. 16's PCIe platform has 32 GB cards). Other rules: ``none``
(everything on the GPUs; Table 5's A100s), ``topo:X`` (X times the stand-in's topology bytes,
no reserve) or a size (``512MiB``, ``2GiB``: a real per-GPU budget, the pipelines estimate the
training workspace). WholeGraph keeps everything on the GPUs: a point whose share (topology and
features over the GPUs) exceeds the budget is an OOM row (Table 1's "x" on one GPU).

Stand-ins and batches: each dataset runs at the scale whose stand-in stores ``max_edges`` edges
(CUDA 1.2e8, quick 2e7; CPU 6e5, quick 3e5; the four stand-ins are shared by every experiment);
the batch is the paper's 6000 seeds per GPU or fewer, so that every GPU runs at least
``min_batches`` mini-batches per epoch (CUDA 10, CPU 4): the stand-ins have about ``scale`` x 1M
training nodes (34k-82k at the CUDA default) where the paper's epochs are 21 mini-batches of 6000
per GPU on 8 GPUs. The batch is the same for every GPU count of an experiment (computed for its
largest): on 4 GPUs at the CUDA default about 0.85k (CF) to 2k (TW) seeds, the batches of the
earlier default (6e7 edges, 4 mini-batches: 1.1k-2.6k) with twice the mini-batches per epoch.
The measured epochs follow the timed-epoch rule of experiments/kit/training.py: the free-running
epochs E2E comes from hold at least ``timed_batches`` (CUDA 50) mini-batches per GPU, 5 epochs of
10 at the CUDA default, and the synchronized epochs S/E/T come from as many mini-batches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.argtypes import BadValue, cap, cap_int, choice, names_of, nonneg_int, or_word, positive_float, positive_int
from harness.argtypes import dataset_names as name_list
from harness.experiment import Cheaper, Measurement, Param, Point
from harness.reportkit import Report, finite, machine_kind, newest_per_kind
from harness.worlds import Worlds, world_sizes

from ..kit import training as kit

GIB = 1 << 30
PAPER_GPU_GIB = 16.0                                # V100 SXM2 16 GB
WORKSPACE_GIB = {"gcn": 6.0, "sage": 4.0, "pinsage": 6.0}
# XGNN Table 3: Volume_G and Volume_F (GB as printed; they match GiB of int32 CSRs)
VOLUME_G = {"twitter-2010": 5.6, "ogbn-papers100M": 6.4, "uk-2006-05": 11.3, "com-friendster": 13.7}
VOLUME_F = {"twitter-2010": 40.0, "ogbn-papers100M": 53.0, "uk-2006-05": 74.0, "com-friendster": 34.0}
DATASETS = ("twitter-2010", "ogbn-papers100M", "uk-2006-05", "com-friendster")
SHORT = {"twitter-2010": "TW", "ogbn-papers100M": "PA", "uk-2006-05": "UK", "com-friendster": "CF"}
MODELS = ("gcn", "sage", "pinsage")
MODEL_NAMES = {"gcn": "GCN", "sage": "GraphSAGE", "pinsage": "PinSAGE"}
MODEL_SHORT = {"gcn": "GCN", "sage": "GSG", "pinsage": "PSG"}


@dataclass(frozen=True)
class System:
    """A column of the paper: the pipeline that runs it and its options (None: not runnable here)."""

    impl: str
    label: str
    options: dict = field(default_factory=dict)
    note: str = ""
    unavailable: str | None = None
    paper: str | None = None      # the paper's column it is compared with (default: its own key; "": none)
    judge_oom: bool = True        # False: its stores sit elsewhere than the paper's, so its OOM cells differ


REIMPL = " (re-impl.)"          # label suffix: the harness's re-implementation of that system's policy


_FIG10_BASE = {"graph_store": "replicated", "feat_store": "replicated", "sampler_variant": "original",
               "placement": "clique", "graph_ratio": 1.0}
SYSTEMS: dict[str, System] = {
    "dgl": System("dgl_host", "DGL", {},
                  "real DGL 2.1 (`pip install '.[dgl]'`): its NeighborSampler and DataLoader with CPU worker "
                  "processes over the host graph, features sliced from host memory, DGL's layers on CPU ranks and "
                  "PyG's on GPUs (DGL's PyPI builds are CPU builds); the paper's DGL samples on the GPUs with the "
                  "topology on every GPU, which a CPU build cannot, so its OOM cells are not judged and its times "
                  "are not compared with the paper's DGL column", judge_oom=False, paper=""),
    "dgl_gpu": System("dgl_cache", "DGL policy" + REIMPL, {"cache_ratio": 0.0},
                      "XGNN's DGL configuration (6.1) on the harness's stores: topology on every GPU, features read "
                      "from host memory, no feature cache (DGL+C's pipeline with R = 0)", paper="dgl"),
    "quiver": System("quiver", "Quiver" + REIMPL, {},
                     "topology in pinned host memory (UVA sampling), hottest features over each NVLink clique"),
    "dgl_cache": System("dgl_cache", "DGL+C" + REIMPL, {},
                        "topology replicated on every GPU, hottest features cached on every GPU, reservoir KHop"),
    "dgl_cache_uva": System("dgl_cache", "DGL+C (UVA)" + REIMPL, {"graph_location": "host"},
                            "DGL+C with its topology in pinned host memory sampled by UVA (DGL's use_uva mode), "
                            "hottest features cached on every GPU; not in the paper, which runs DGL+C with the "
                            "topology on every GPU"),
    "xgnn": System("xgnn", "XGNN", {}, "GGMS (solver placement), batched KHop, pipelined sampler"),
    "dgl_host": System("quiver", "DGL-Host" + REIMPL, {"feat_ratio": 0.0},
                       "topology and features in host memory, GPU sampling by UVA (Quiver's pipeline with R = 0)"),
    "xgnn_g": System("xgnn", "XGNN-G", {"priority": "graph"}, "GGMS with topology first"),
    "xgnn_f": System("xgnn", "XGNN-F", {"priority": "feat"}, "GGMS with features first"),
    "wholegraph": System("wholegraph", "WholeGraph", {},
                         "the harness's WholeGraph pipeline: CSR and features sharded over the GPUs"),
    "gnnlab": System("dgl_cache", "GNNLab", None, unavailable=(
        "GNNLab (factored design: dedicated sampler GPUs and trainer GPUs with a feature cache) is not "
        "implemented in this harness")),
    # XGNN Fig. 10: the optimizations switched on one by one
    "base": System("xgnn", "BASE", dict(_FIG10_BASE), "DGL+C's settings: both stores replicated, reservoir KHop"),
    "msg": System("xgnn", "+MSG", {**_FIG10_BASE, "graph_store": "ggms", "graph_ratio": None},
                  "topology in GGMS"),
    "msf": System("xgnn", "+MSF", {**_FIG10_BASE, "graph_store": "ggms", "graph_ratio": None, "feat_store": "ggms"},
                  "features in GGMS too"),
    "oga": System("xgnn", "+OGA", {"placement": "clique", "sampler_variant": "batched"}, "batched KHop"),
    "psa": System("xgnn", "+PSA", {"placement": "solver"}, "placement solver"),
}
FIG10_STEPS = ("base", "msg", "msf", "oga", "psa")
# PinSAGE's random-walk sampler runs over the tiered stores (impls/sampling/random_walk.py); not here:
NO_PINSAGE = {
    "dgl": "real DGL's loader here samples KHop neighbours (PinSAGE's random walks run on the DGL policy "
           "re-implementation, dgl_gpu)",
    "quiver": "Quiver has no PinSAGE sampler (the paper's Table 4: x)",
    "dgl_host": "DGL-Host is Quiver's pipeline here, which has no PinSAGE sampler (the paper's Table 4: x)",
    "wholegraph": "the WholeGraph pipeline samples KHop neighbours only (PinSAGE's random walks run over the "
                  "tiered stores)",
}


# ----------------------------------------------------------------------------- parameters


model_list = names_of("models", *MODEL_NAMES)


def system_list(*allowed: str):
    return names_of("systems", *allowed)


def combo_list(text: str) -> tuple[tuple[str, str], ...]:
    """``gcn:twitter-2010,sage:uk-2006-05`` -> ((model, dataset), ...)."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        model, sep, ds = item.partition(":")
        if not sep:
            raise BadValue(f"combos take model:dataset pairs like gcn:TW,sage:UK, not '{item}'")
        out.append((model_list(model)[0], name_list(ds)[0]))
    if not out:
        raise BadValue("expected at least one model:dataset pair")
    return tuple(out)


def budget_rule(text: str) -> str:
    """``v100`` | ``v100:G`` | ``none`` | ``topo:X`` | a size (checked here, resolved per point)."""
    from impls.storage.budget import parse_bytes

    t = text.strip()
    if t in ("v100", "none"):
        return t
    if t.startswith("v100:"):
        if positive_float(t[5:]) <= max(WORKSPACE_GIB.values()):
            raise BadValue(f"a V100 of {t[5:]} GiB leaves no room beside the training workspace")
        return t
    if t.startswith("topo:"):
        positive_float(t[5:])
        return t
    try:
        parse_bytes(t)
    except ValueError as exc:
        raise BadValue(f"budget is v100, v100:G, none, topo:X or a size like 2GiB, not '{text}' ({exc})") from None
    return t


batch_param = or_word("auto", positive_int)


# (cuda, cuda --quick, cpu, cpu --quick)
DEFAULTS = {
    "max_edges": (1.2e8, 2e7, 6e5, 3e5),
    "hidden": (256, 256, 64, 32),
    "min_batches": (10, 4, 4, 4),
    "epochs": (3, 2, 2, 2),
    "synced_epochs": (1, 1, 1, 1),
    "warmup_batches": (2, 1, 1, 1),
    "max_batches": (None, None, None, 3),
    "eval_nodes": (4096, 2048, 256, 128),
    "lr": (0.003, 0.003, 0.01, 0.01),
}


def common_parameters(**defaults) -> dict[str, Param]:
    """The parameters every XGNN training experiment takes; ``defaults`` adds or replaces entries."""
    params = {
        "budget": Param("v100", budget_rule, "GPU memory budget per GPU: v100 (the paper's 16 GB V100 scaled like "
                                             "the graph, module doc), none, topo:X (X x topology bytes) or a size"),
        "max_edges": Param(None, positive_float, "stand-in size: the scale whose stand-in stores this many edges "
                                                 "(CUDA 1.2e8, quick 2e7; CPU 6e5, quick 3e5)"),
        "batch_size": Param("auto", batch_param, "seeds per GPU per mini-batch (auto: 6000 or fewer so that every "
                                                 "GPU runs min_batches per epoch)"),
        "min_batches": Param(None, positive_int, "mini-batches per GPU per epoch the auto batch keeps (CUDA 10, "
                                                 "quick and CPU 4)"),
        "hidden": Param(None, positive_int, "hidden width (paper: 256; CPU 64, quick 32)"),
        "epochs": Param(None, positive_int, "measured epochs at least: the first synced_epochs synchronized (S/E/T), the rest "
                                            "free-running (E2E) (CUDA 3, quick 2; CPU 2); more where timed_batches asks"),
        "synced_epochs": Param(None, positive_int, "how many of the measured epochs come first synchronized between "
                                                   "stages (S/E/T: their median); the rest are free-running (E2E)"),
        "warmup_batches": Param(None, nonneg_int, "untimed training steps before the first epoch"),
        "max_batches": Param(None, cap_int, "cap on mini-batches per epoch (extrapolated; CPU --quick 3)"),
        "eval_nodes": Param(None, cap_int, "labelled nodes evaluated per split"),
        "lr": Param(None, positive_float, "Adam learning rate (CUDA 0.003, CPU 0.01)"),
        "stage_barrier": Param("off", choice("off", "on"), "synced epochs: a barrier of all ranks before each "
                                                          "stage, so T does not absorb the peers' S and E "
                                                          "(pipelines/base.py)"),
    }
    params.update(kit.timed_parameters())
    params.update(defaults)
    return params


# ----------------------------------------------------------------------------- the budget

def topology_bytes(graph) -> int:
    """One copy of the stand-in's topology as a GPU stores it (int64 offsets, the ids)."""
    from impls.storage.budget import topology_gpu_bytes

    id_bytes = 4 if graph.num_nodes < 2 ** 31 else 8
    return topology_gpu_bytes(int(graph.num_nodes), [int(graph.num_edges)], id_bytes, False)[0]


def volume_g(dataset: str) -> float:
    """XGNN Table 3's topology volume (GB) or, for other datasets, the real graph's int32 CSR."""
    if dataset in VOLUME_G:
        return VOLUME_G[dataset]
    from harness import datasets

    spec = datasets.get(dataset)
    edges = spec.standin.stored_edges if spec.standin else spec.edges
    return (spec.nodes + 1 + edges) * 4 / GIB


def budget_bytes(rule: str, dataset: str, model: str, topo_bytes: int) -> int | None:
    """Per-GPU budget of a point (module doc)."""
    from impls.storage.budget import parse_bytes

    if rule == "none":
        return None
    if rule == "v100" or rule.startswith("v100:"):
        room = v100_gib(rule) - WORKSPACE_GIB.get(model, 6.0)
        return int(room / volume_g(dataset) * topo_bytes)
    if rule.startswith("topo:"):
        return int(float(rule[5:]) * topo_bytes)
    return parse_bytes(rule)


def folds_workspace(rule: str) -> bool:
    """True when the rule's budget is for the stores only (the workspace is modelled in it)."""
    return rule == "v100" or rule.startswith(("v100:", "topo:"))


def v100_gib(rule: str) -> float:
    """The GPU memory a ``v100`` / ``v100:G`` rule models (GiB)."""
    return float(rule[5:]) if rule.startswith("v100:") else PAPER_GPU_GIB


def wholegraph_need(graph, world: int) -> int:
    """Per-GPU bytes of the WholeGraph pipeline's stores: ceil(N / W) rows of features and of the CSR."""
    rows = -(-int(graph.num_nodes) // world)
    row_bytes = int(graph.feature_dim) * 4
    id_bytes = 4 if graph.num_nodes < 2 ** 31 else 8
    return rows * row_bytes + (rows + 1) * 8 + -(-int(graph.num_edges) // world) * id_bytes


# ----------------------------------------------------------------------------- the experiment base

class XGNNTraining(kit.TrainingExperiment):
    """Base of XGNN's training experiments: subclasses define ``points`` with :meth:`point`."""

    impls = ("xgnn", "dgl_cache", "quiver", "wholegraph", "dgl_host")
    warm_and_cold = ("Warm: compiled kernels, allocator pools, placed stores and static caches (2 untimed "
                     "warm-up batches). Every batch of an epoch has its own seeds. S/E/T come from the first "
                     "measured epochs, synchronized after each stage (the paper averages the 10 epochs after "
                     "the first); E2E is the median of later free-running epochs; on GPUs each holds 50 "
                     "mini-batches per GPU or more (the timed-epoch rule, experiments/kit/training.py).")
    parameters = common_parameters()
    defaults = DEFAULTS
    timing = "both"              # both | free (Fig. 15b: every epoch free-running)
    eval_every_epoch = True

    def world_sizes(self, cfg) -> list[int]:
        """One count (the run's); a scaling experiment (a ``gpus`` parameter) runs the counts of
        ``--param gpus`` up to the run's, or by default its ladder (CPU: 1 and 2 ranks) and the
        run's own count."""
        if "gpus" not in self.parameters:
            return super().world_sizes(cfg)
        if "gpus" in cfg.params:
            worlds = Worlds(counts=self.param(cfg, "gpus"))
        else:
            worlds = Worlds(ladder=self.param(cfg, "gpus"), cpu=Worlds(ladder=(1, 2)))
        return world_sizes(cfg, worlds, self.id)

    def world(self, cfg) -> int:
        (world,) = self.world_sizes(cfg)
        return world

    def default_scale(self, cfg, dataset=None) -> float:
        """The scale whose stand-in stores ``max_edges`` edges (module doc)."""
        from harness import datasets
        from harness.datasets.plan import MIN_COMMUNITY

        name = dataset
        spec = datasets.get(name)
        scale = datasets.scale_for_edges(name, self.setting(cfg, "max_edges"))
        if spec.standin:        # enough nodes for the stand-in's communities
            scale = max(scale, 1.05 * MIN_COMMUNITY * spec.standin.num_classes / spec.nodes)
        return float(f"{scale:.2g}")

    def batch_for(self, name: str, scale: float, model: str, ref_world: int, cfg) -> int:
        from harness import datasets
        from impls.models import PAPER_MODELS

        given = self.param(cfg, "batch_size")
        if given != "auto":
            return given
        paper = PAPER_MODELS["xgnn"][model]["batch_size"]
        spec = datasets.get(name)
        n = int(round(spec.nodes * scale))
        train = spec.split.counts(n, spec.nodes)[0]
        return max(1, min(paper, train // (ref_world * self.setting(cfg, "min_batches"))))

    def point(self, system: str, dataset: str, model: str, world: int, cfg, *, ref_world: int | None = None,
              budget: str | None = None, **extra) -> Point:
        from impls.models import PAPER_MODELS

        scale = self.scale(cfg, dataset)
        paper = PAPER_MODELS["xgnn"][model]
        params = {"system": system, "dataset": dataset, "scale": scale, "model": model,
                  "layers": paper["num_layers"], "fanouts": list(paper["fanouts"]),
                  "hidden": self.setting(cfg, "hidden"),
                  "batch_size": self.batch_for(dataset, scale, model, ref_world or world, cfg),
                  "budget": budget or self.param(cfg, "budget"), "epochs": self.setting(cfg, "epochs")}
        limit = cap(self.setting(cfg, "max_batches"))
        if limit is not None:
            params["max_batches"] = limit
        if self.param(cfg, "stage_barrier") == "on":       # absent = off: rows of earlier runs read the same
            params["stage_barrier"] = "on"
        params.update(extra)
        synced = self.setting(cfg, "synced_epochs") if params.get("timing", self.timing) == "both" else 0
        synced = min(synced, params["epochs"])
        synced, free = self.timed_counts(cfg, params, world, synced, params["epochs"] - synced)
        params.update(epochs=synced + free, synced_epochs=synced)
        return Point(SYSTEMS[system].impl, params, world)

    def skip_reason(self, point, cfg):
        system = SYSTEMS[point.params["system"]]
        if system.unavailable:
            return system.unavailable
        if point.params["model"] == "pinsage" and point.params["system"] in NO_PINSAGE:
            return NO_PINSAGE[point.params["system"]]
        return None

    def run_point(self, point, ctx):
        return train_system(self, point, ctx)

    def cheaper(self, point, level, cfg):
        """Budget level 1 (harness.plan): the synchronized epochs (S, E, T) and one free-running
        epoch (E2E), no more."""
        least = point.params.get("synced_epochs", self.setting(cfg, "synced_epochs")) + 1
        if level != 1 or point.params.get("epochs", 0) <= least:
            return None
        return Cheaper(Point(point.impl, {**point.params, "epochs": least}, point.world_size),
                       f"{least} measured epochs")


# ----------------------------------------------------------------------------- one training point


def train_system(exp, point, ctx) -> list[Measurement]:
    from harness import graphs, registry
    from impls.pipelines.base import MEMORY_CATEGORIES
    from impls.pipelines.xgnn import xgnn_config
    from impls.storage.budget import OutOfMemoryBudget

    cfg, rank = ctx.cfg, ctx.rank
    p = point.params
    system = SYSTEMS[p["system"]]
    graph = graphs.load(ctx, p["dataset"], p["scale"])
    topo = topology_bytes(graph)
    budget = budget_bytes(p["budget"], p["dataset"], p["model"], topo)
    spec = registry.get_impl("pipelines", system.impl)
    options = {k: v for k, v in system.options.items() if v is not None}
    if p.get("topology") and spec.has("topology"):
        options["topology"] = p["topology"]           # a named GPU topology (impls.core.topology.by_name)
    if budget is not None and folds_workspace(p["budget"]) and spec.has("tiered"):
        options.setdefault("reserve_bytes", 0)
    if spec.has("shared_store") and budget is not None:         # everything on the GPUs, nothing to spill
        need = wholegraph_need(graph, rank.world_size)
        if need > budget:
            raise OutOfMemoryBudget(f"WholeGraph's topology and features (everything on {rank.world_size} "
                                    f"GPU{'s' if rank.world_size > 1 else ''})", need, budget)
    config = xgnn_config(p["model"], graph=graph, hidden=p["hidden"], batch_size=p["batch_size"], lr=exp.setting(cfg, "lr"), seed=cfg.seed,
                         epochs=p["epochs"], max_batches_per_epoch=p.get("max_batches"),
                         eval_batch_size=max(p["batch_size"], 256), eval_max_nodes=cap(exp.setting(cfg, "eval_nodes")),
                         memory_budget_bytes=budget, options=options,
                         stage_barrier=p.get("stage_barrier") == "on")
    label = f"{system.label} {SHORT.get(p['dataset'], p['dataset'])} {MODEL_NAMES[p['model']]}"
    pipe = spec.factory(rank, config)
    warm = exp.setting(cfg, "warmup_batches")
    synced_epochs = p.get("synced_epochs", exp.setting(cfg, "synced_epochs"))     # absent in older rows

    def finish(pipe):
        store = getattr(pipe, "store", None)
        return {"test": pipe.evaluate("test"), "mem": pipe.memory(), "describe": pipe.describe(),
                "used": pipe.memory_report().get("device_used_bytes", 0),
                "store_memory": store.memory() if store is not None else None}

    trained = kit.run_epochs(pipe, rank, label, config.epochs, warmup_batches=warm,
                             synced=lambda e: exp.timing == "both" and e < synced_epochs,
                             evaluate="every" if exp.eval_every_epoch else "last",
                             unprefetched_synced=spec.has("tiered"), finish=finish)
    f = trained.final
    cats = MEMORY_CATEGORIES + ("total",)
    summed = dict(zip(cats, rank.all_reduce_floats([f["mem"][k] for k in cats], "sum")))
    largest = dict(zip(cats, rank.all_reduce_floats([f["mem"][k] for k in cats], "max")))
    used_sum = rank.all_reduce_floats([f["used"] or 0], "sum")[0]
    return measurements(p, graph, topo, budget, trained, summed, largest, used_sum, f["describe"],
                        f["store_memory"], warm, rank.world_size)


def measurements(p, graph, topo, budget, trained, summed, largest, used_sum, describe,
                 store_memory, warm, world) -> list[Measurement]:
    stats, val_curve, synced = trained.stats, trained.val_curve, trained.synced
    last = stats[-1].extra
    store = last.get("store")
    graph_info = {"nodes": int(graph.num_nodes), "edges": int(graph.num_edges),
                  "feature_dim": int(graph.feature_dim), "classes": int(graph.num_classes),
                  "train_nodes": int(len(graph.train_idx)), "standin": bool(graph.is_standin)}
    epoch_extra = {
        "epochs": len(stats), "warmup_batches": warm,
        "timing": ["synced" if s.breakdown else "pipelined" for s in stats],
        "epoch_s_per_epoch": [s.full_epoch_s() for s in stats], "batches_run": stats[0].batches,
        "batches_full": stats[0].batches_full, "extrapolated": any(s.capped for s in stats),
        "loss_per_epoch": [s.loss for s in stats], "val_acc_per_epoch": val_curve,
        "budget_bytes": budget, "topology_bytes": int(topo), "graph": graph_info, "components": describe,
        "store": store, "tiers": last.get("tiers"), "world_size": world,
        "stage_s_slowest_rank": [s.extra.get("stage_s_slowest_rank") for s in synced],
    }
    out = kit.epoch_measurements(trained, epoch_extra)
    hits = [s.extra.get("feature_hit_rate") for s in stats if s.extra.get("feature_hit_rate") is not None]
    if hits:
        out.append(Measurement("feature_hit_rate", "", value=sum(hits) / len(hits), better="higher"))
    topo_hits = [s.extra.get("topology_hit_rate") for s in stats if s.extra.get("topology_hit_rate") is not None]
    if topo_hits:
        out.append(Measurement("topology_hit_rate", "", value=sum(topo_hits) / len(topo_hits), better="higher"))
    if store:
        out.append(Measurement("feat_ratio", "", value=store["feat_ratio"] or 0.0, better="higher"))
        out.append(Measurement("graph_ratio", "", value=store["graph_ratio"] or 0.0, better="higher"))
    elif p["system"] == "wholegraph":
        out.append(Measurement("feat_ratio", "", value=1.0, better="higher"))
        out.append(Measurement("graph_ratio", "", value=1.0, better="higher"))
    out += kit.accuracy_measurements(val_curve[-1], trained.final["test"])
    if store_memory is not None:
        topo_gpus, feat_gpus = store_memory["gpu_topology_bytes"], store_memory["gpu_feature_bytes"]
    else:
        topo_gpus, feat_gpus = summed["graph_structure"], summed["node_features"] + summed["cache"]
    out.append(Measurement("memory_topology_gpus", "GiB", value=topo_gpus / GIB))
    out.append(Measurement("memory_features_gpus", "GiB", value=feat_gpus / GIB))
    out.append(Measurement("memory_total_gpus", "GiB", value=summed["total"] / GIB,
                           extra={"bytes_summed": {k: int(v) for k, v in summed.items()},
                                  "device_used_gib_summed": used_sum / GIB if used_sum else None}))
    out.append(Measurement("memory_per_gpu", "GiB", value=largest["total"] / GIB,
                           extra={"bytes_largest": {k: int(v) for k, v in largest.items()}}))
    return out


# ----------------------------------------------------------------------------- reading rows back

def collect(rows, prefer: str | None = None, key_params: tuple[str, ...] = ("system", "dataset", "model")):
    """One record per point (system, dataset, model), skipped and failed points too."""
    return kit.collect(rows, prefer, key_params, failures=True, reading=system_of_row)


def system_of_row(params: dict, impl: str) -> dict:
    """A row's params with its system as the columns name it: the re-implemented DGL configuration
    (DGL+C's pipeline with no cache) is stored as system 'dgl' with impl dgl_cache."""
    if params.get("system") == "dgl" and impl == SYSTEMS["dgl_gpu"].impl:
        return {**params, "system": "dgl_gpu"}
    return params


def is_oom(rec) -> bool:
    from impls.storage.budget import is_oom_reason

    return rec["status"] == "skipped" and is_oom_reason(rec.get("reason"))


def cell(rec, metric: str):
    """A table cell: the value, "OOM" (over the budget), "x" (cannot run here) or "error"."""
    if rec is None:
        return None
    if rec["status"] == "ok":
        return rec["metrics"].get(metric)
    if is_oom(rec):
        return "OOM"
    return "x" if rec["status"] == "skipped" else "error"


def estimate(rec, metric: str, what: str = "epochs"):
    """A record's metric as the mean of its repeats with its t interval (harness/verdicts.py), or None."""
    from harness.verdicts import Estimate

    if rec is None or rec["status"] != "ok":
        return None
    return Estimate.from_stats(rec.get("stats", {}).get(metric), what)


def speedup_claim(what: str, slow, fast, metric: str, paper: float | None, band=None):
    """The claim that ``fast`` beats ``slow`` in ``metric`` (a time): slow / fast, judged within the
    kit's TOLERANCE of the paper's ratio (``paper``; None: its sign only) or in ``band``."""
    from harness.verdicts import TOLERANCE, Band, Claim

    a, b = estimate(slow, metric), estimate(fast, metric)
    band = band or (Band.factor(paper, TOLERANCE) if paper else Band.beyond(1.0))
    runs = tuple(sorted({r["run_id"] for r in (slow, fast) if r is not None}))
    effect = a.ratio(b) if a is not None and b is not None and a.value > 0 and b.value > 0 else None
    return Claim(what, effect, band, f"{paper:.3g}x" if paper else "faster", runs=runs)


def datasets_caption(records) -> str:
    seen = {}
    for rec in sorted(records, key=lambda r: r["status"] != "ok"):      # trained points first
        ds = rec["params"].get("dataset")
        if ds in seen:
            continue
        g = rec["extra"].get("epoch_time", {}).get("graph")
        kind = (f"stand-in at scale {rec['params'].get('scale', 0):g}" if (g or {}).get("standin", True)
                else "real data")
        size = f", {g['nodes']:,} nodes, {g['edges']:,} edges, {g['train_nodes']:,} training nodes" if g else ""
        seen[ds] = f"{SHORT.get(ds, ds)} ({kind}{size})"
    return "; ".join(seen.values()) or "none trained"


def settings_caption(records) -> str:
    combos = sorted({(MODEL_NAMES.get(r["params"].get("model"), r["params"].get("model")), r["params"].get("layers"),
                      "-".join(map(str, r["params"].get("fanouts", []))), r["params"].get("hidden"),
                      r["params"].get("batch_size"))
                     for r in records if r["status"] == "ok"}, key=str)
    walks = {MODEL_NAMES["pinsage"]: " (top visited of 4 walks of length 3 with restart 0.5)"}
    return "; ".join(f"{m} {l} layers, fanouts {f}{walks.get(m, '')}, hidden {h}, batch {b}/GPU"
                     for m, l, f, h, b in combos)


def budget_caption(records) -> str:
    rules = sorted({str(r["params"].get("budget")) for r in records})
    text = {"v100": "the paper's 16 GB V100 scaled like the graph (stores get (16 GiB - W) / Volume_G x the "
                    "stand-in's topology bytes per GPU, W = 6 GiB GCN and PinSAGE / 4 GiB GraphSAGE; "
                    "experiments/xgnn/training.py)",
            "none": "no budget (everything on the GPUs)"}
    for r in rules:
        if r.startswith("v100:"):
            text[r] = f"the same rule for a {v100_gib(r):g} GB V100 ({v100_gib(r):g} GiB - W)"
    return "; ".join(text.get(r, f"{r} per GPU") for r in rules)


def budget_gib(rec):
    b = rec["extra"].get("epoch_time", {}).get("budget_bytes")
    return b / GIB if b else None


def fmt(x, digits: int = 3):
    """A cell rounded to ``digits`` significant digits; text ("OOM", "x") as it is."""
    if isinstance(x, str) or x is None:
        return x
    return float(f"{x:.{digits}g}") if finite(x) else None


def percent(x):
    """A fraction as a rounded percentage; text ("OOM", "x") as it is."""
    return fmt(100 * x) if finite(x) else x


def combo(model: str, dataset: str) -> str:
    """'GSG+TW': the paper's name of a model on a dataset."""
    return f"{MODEL_SHORT.get(model, model)}+{SHORT.get(dataset, dataset)}"


SHOWN = ("The table and figure show each cell's newest run per machine kind at the paper's settings (its budget "
         "rule, on GPUs); every run is in the artifact's history (.history.md / .history.csv).")


def run_number(rec) -> str:
    """'#0093': the number of a record's run."""
    return "#" + rec["run_id"].split("_", 1)[0]


def extrapolated(rec) -> bool:
    """True for a point whose epochs were capped and extrapolated to the full epoch."""
    return bool(rec and rec["status"] == "ok" and rec["extra"].get("epoch_time", {}).get("extrapolated"))


class TrainingReport(Report):
    """The report of an XGNN training experiment: its rows read back as one record per point
    (skipped and failed points too, ``systems`` only where given), captions ending with the
    budget, the datasets and the models those records trained."""

    def __init__(self, exp, rows, runs, systems: tuple[str, ...] | None = None,
                 key_params: tuple[str, ...] = ("system", "dataset", "model")):
        super().__init__(exp, rows, runs, expand=False)
        self.records = [r for r in collect(rows, exp.id, key_params)
                        if systems is None or r["params"]["system"] in systems]

    def machine(self, rec) -> str:
        return self.label(rec["run_id"])

    def kind(self, rec) -> str:
        """The machine kind of a record's run ('4xH200'), without its run number."""
        return machine_kind(self.machine(rec))

    def paper_budget(self, rec) -> bool:
        """True for a record trained under the experiment's default budget rule (the paper's GPU)."""
        return str(rec["params"].get("budget")) == str(self.exp.parameters["budget"].default)

    def newest(self, cell, setting=None, records=None) -> dict:
        """{(machine kind, *cell(rec)): rec}: each cell's record of the newest run per machine kind
        among the records at the paper's setting (``setting(rec)``, default: the paper's budget
        rule); on GPUs where any such record is, CPU ranks (a toy scale) only where none is."""
        setting = setting or self.paper_budget
        pool = [r for r in (self.records if records is None else records) if setting(r)]
        gpus = [r for r in pool if r.get("device") == "cuda"]
        return newest_per_kind(gpus or pool, self.labels, cell, lambda r: r["run_id"])

    def shown_rows(self, records):
        """The rows of the runs the records come from (their skipped points are the artifact's notes)."""
        return self.rows[self.rows["run_id"].isin({r["run_id"] for r in records})]

    def caption(self, *parts: str, shown=None) -> str:
        """The caption, ending with the budget, datasets, models and hardware of the records
        ``shown`` (default every record)."""
        records = self.records if shown is None else list(shown)
        timing = kit.timing_caption(records)
        return super().caption(*parts, f"GPU memory budget: {budget_caption(records)}. Datasets: "
                                       f"{datasets_caption(records)}. Models: {settings_caption(records)}."
                                       + (f" {timing}" if timing else ""),
                               runs={r["run_id"] for r in records})

    def systems_note(self, systems) -> str:
        return "; ".join(f"{SYSTEMS[s].label} = {SYSTEMS[s].note}" for s in systems if SYSTEMS[s].note)


__all__ = ["SYSTEMS", "FIG10_STEPS", "XGNNTraining", "common_parameters", "collect", "cell", "train_system"]
