"""End-to-end training experiments of WholeGraph (Table III, IV, V; Figs. 7, 9, 11, 12): shared parts.

Every point trains one pipeline (``impls/pipelines``: ``pyg_host``, ``dgl_host``, ``wholegraph``,
``wholegraph_lib``) on one dataset with one model, on every rank (one process per GPU, DDP),
and stores the same rows whatever the experiment:

- ``epoch_time`` (s): the median epoch. Timing (param ``timing``): with ``both`` (default) the
  first measured epoch is synchronized between stages (it gives the breakdown) and later ones run
  without extra synchronization (they give the epoch time); ``synced`` / ``free`` make every epoch
  one kind. The epochs the epoch time comes from hold at least ``timed_batches`` mini-batches per
  GPU and number at least ``timed_epochs`` (the rule of experiments/kit/training.py: CUDA 50 and
  3), so ``epochs`` is raised where they would not; the point's ``synced_epochs`` says how many
  ran synchronized. An epoch capped by ``max_batches`` (or
  ``host_max_batches`` for the host pipelines) is extrapolated to the full epoch from its time
  per batch (``extra.extrapolated``). ``warmup_batches`` mini-batches run first, untimed (kernel
  compilation, caches, DDP buckets; they are training steps too). The slowest rank's epoch counts.
- ``sample_time``, ``gather_time``, ``train_time`` (s per epoch, synced epochs, mean over ranks).
- ``val_accuracy``, ``test_accuracy``: after the last epoch, on at most ``eval_nodes`` labelled
  nodes per split, all ranks together; the per-epoch validation curve is in the epoch_time
  row's extra (``val_acc_per_epoch``).
- ``memory_<category>`` (GiB per GPU, the largest over ranks): graph_structure, node_features,
  cache, labels, training, total (impls/pipelines/base.py says how each is measured); the
  device's own used-memory figure (nvidia-smi's view) is in ``memory_total``'s extra.
- ``utilization`` (%): mean GPU utilization of rank 0's GPU (NVML, every ``util_interval_ms``;
  on CPU ranks the process's CPU utilization, labelled) while the free-running epochs train
  (their first 0.2 s left out: NVML averages over its last sample period), or over all measured
  epochs and evaluations when no epoch runs free; the whole trace and both summaries are in its
  extra (``window`` says which one the value is).

A point that fails on one rank ends the rank group (``impls.pipelines.base.RankFailed``) instead of leaving the other
ranks in a collective until the timeout; the runner then records the group's remaining points as
errors.

``wholegraph.table5`` runs the whole grid; ``fig9``, ``table3``, ``fig7``, ``fig12``, ``table4`` and
``fig11`` read its rows too (``derives_from``), so one GPU run of table5 gives every view, and
each also trains its own smaller grid when run alone.
"""

from __future__ import annotations

from harness import registry
from harness.argtypes import (cap, cap_int, choice, fanouts, names_of, nonneg_int, or_word, positive_float,
                              positive_int, unit_float)
from harness.argtypes import dataset_names as name_list
from harness.errors import HarnessError
from harness.experiment import Cheaper, Measurement, PaperValue, Param, Point
from harness.reportkit import group

from ..kit import training as kit
from . import PAPER_HARDWARE



def pipelines() -> tuple[str, ...]:
    """WholeGraph's training comparisons: every pipeline but XGNN's tiered ones, in the order points
    run, fastest first (the GPU pipelines, then the host ones): a run stopped at its time limit keeps
    the GPU pipelines' rows."""
    found = registry.series("pipelines", without=("tiered",))
    return tuple(s.impl for s in sorted(found, key=lambda s: s.has("host")))


def has(impl: str, trait: str) -> bool:
    """Whether pipeline ``impl`` has ``trait`` (False for one no longer registered)."""
    spec = registry.lookup("pipelines", impl)
    return spec is not None and spec.has(trait)


def is_host(impl: str) -> bool:
    """A host pipeline (the PyG/DGL recipe): capped apart, its graph and features in host memory."""
    return has(impl, "host")


def short_name(impl: str) -> str:
    """A pipeline's name in table columns and the paper's words (PyG, DGL, WG-lib, ours)."""
    spec = registry.lookup("pipelines", impl)
    return spec.label_for("short") if spec is not None else impl


def pipeline_name(impl: str) -> str:
    """A pipeline's name in captions and legends: WholeGraph (ours), WholeGraph (pylibwholegraph)..."""
    spec = registry.lookup("pipelines", impl)
    return spec.title if spec is not None else impl


def shared_store() -> list[str]:
    """WholeGraph's storage and sampling: ours and the real library's, in the registry's order."""
    return [impl for impl in pipelines() if has(impl, "shared_store")]


def ours() -> str:
    """The paper's design as this harness implements it: WholeGraph's shared store, our code."""
    return registry.names("pipelines", traits=("shared_store",), family="ours")[0]
MODELS = ("gcn", "sage", "gat")
DATASETS = ("ogbn-products", "ogbn-papers100M", "friendster", "uk-2007-05")
SHORT = {"ogbn-products": "products", "ogbn-papers100M": "papers100M", "friendster": "Friendster",
         "uk-2007-05": "UK_domain"}
MODEL_NAMES = {"gcn": "GCN", "sage": "GraphSAGE", "gat": "GAT", "pinsage": "PinSAGE"}
GIB = 2 ** 30
MEMORY = ("graph_structure", "node_features", "cache", "labels", "training", "total")

# WholeGraph Table V: average epoch time (s), DGX-A100 (8 GPUs): {dataset: {model: (PyG, DGL, ours)}}
TABLE5 = {
    "ogbn-products": {"gcn": (225.97, 26.05, 0.93), "sage": (228.96, 30.8, 0.99), "gat": (246.81, 29.21, 3.28)},
    "ogbn-papers100M": {"gcn": (358.58, 220.28, 5.7), "sage": (314.88, 273.67, 6.0), "gat": (404.66, 269.7, 24.25)},
    "friendster": {"gcn": (286.78, 159.48, 2.79), "sage": (262.45, 167.96, 2.93), "gat": (287.76, 154.56, 12.83)},
    "uk-2007-05": {"gcn": (122.61, 77.1, 2.77), "sage": (127.48, 77.38, 3.01), "gat": (153.71, 85.1, 10.85)},
}
# WholeGraph Table III: (valid %, test %) after about 24 epochs: {dataset: {model: {framework: (v, t)}}}
TABLE3 = {
    "ogbn-products": {
        "gcn": {"dgl_host": (91.09, 78.02), "pyg_host": (91.41, 76.86), "wholegraph": (91.51, 78.46)},
        "sage": {"dgl_host": (91.30, 77.73), "pyg_host": (92.33, 78.29), "wholegraph": (92.02, 78.25)},
        "gat": {"dgl_host": (89.97, 77.55), "pyg_host": (90.77, 78.72), "wholegraph": (90.58, 78.16)},
    },
    "ogbn-papers100M": {
        "gcn": {"dgl_host": (66.17, 63.73), "pyg_host": (65.55, 63.19), "wholegraph": (65.98, 63.41)},
        "sage": {"dgl_host": (68.28, 65.25), "pyg_host": (68.28, 65.16), "wholegraph": (68.14, 64.94)},
        "gat": {"dgl_host": (67.79, 64.71), "pyg_host": (68.33, 65.10), "wholegraph": (68.21, 65.21)},
    },
}
# WholeGraph Table IV (ogbn-papers100M, 8x A100): GB per GPU measured, theoretical total GB
TABLE4 = {"graph_structure": (3.1, 24.0), "node_features": (6.7, 53.0), "training": (20.4, None)}


def table5_paper_values() -> tuple[PaperValue, ...]:
    out = []
    for ds, per_model in TABLE5.items():
        for model, values in per_model.items():
            for impl, value in zip(("pyg_host", "dgl_host", "wholegraph"), values):
                out.append(PaperValue("Table V", impl, {"dataset": ds, "model": model}, "epoch_time", value, "s"))
    return tuple(out)


def table3_paper_values() -> tuple[PaperValue, ...]:
    out = []
    for ds, per_model in TABLE3.items():
        for model, per_fw in per_model.items():
            for impl, (val, test) in per_fw.items():
                params = {"dataset": ds, "model": model}
                out.append(PaperValue("Table III", impl, params, "val_accuracy", val / 100, ""))
                out.append(PaperValue("Table III", impl, params, "test_accuracy", test / 100, ""))
    return tuple(out)


def table4_paper_values() -> tuple[PaperValue, ...]:
    return tuple(PaperValue("Table IV", "wholegraph", {"dataset": "ogbn-papers100M"}, f"memory_{cat}", measured, "GB",
                            note=f"theoretical total {total} GB" if total else "")
                 for cat, (measured, total) in TABLE4.items())


# ----------------------------------------------------------------------------- parameters


model_list = names_of("models", *MODEL_NAMES)
backend_list = names_of("backends", "native", "pyg", "dgl", "default")


workers_param = or_word("auto", nonneg_int)


# Defaults by device: (cuda, cuda --quick, cpu, cpu --quick). The CPU ones are toy settings that
# finish table5 in about a minute on 2 cores; the CUDA ones are the paper's (Sec. IV).
DEFAULTS = {
    "max_edges": (1.3e8, 3e7, 1.3e6, 1.3e6),
    "hidden": (256, 256, 64, 32),
    "fanouts": ((30, 30, 30), (30, 30, 30), (5, 5, 5), (5, 5, 5)),
    "batch_size": (512, 512, 64, 64),
    "lr": (0.003, 0.003, 0.01, 0.01),
    "epochs": (2, 1, 2, 1),
    "warmup_batches": (3, 2, 1, 1),
    "max_batches": (None, 20, None, 6),
    "eval_nodes": (10000, 4096, 1024, 256),
    "eval_batch_size": (1024, 1024, 256, 256),
}


def common_parameters(datasets=DATASETS, models=MODELS, backends=("default",)) -> dict[str, Param]:
    return {
        "datasets": Param(datasets, name_list, "datasets (stand-ins unless the real one is under the data root)"),
        "models": Param(models, model_list, "models: gcn, sage, gat (pinsage)"),
        "backends": Param(backends, backend_list,
                          "layer backends: default (pyg for pyg_host; for dgl_host DGL's where its build "
                          "runs them, else PyG's; native otherwise), native, pyg, dgl"),
        "max_edges": Param(None, positive_float, "largest stand-in (stored edges); bigger graphs run at the scale "
                                                 "that fits (default: CUDA 1.3e8 = products at 1.0, CPU 1.3e6)"),
        "hidden": Param(None, positive_int, "hidden width (paper: 256; CPU default 64)"),
        "layers": Param(3, positive_int, "layers (paper: 3)"),
        "heads": Param(4, positive_int, "GAT heads (paper: 4)"),
        "fanouts": Param(None, fanouts, "fanout per hop, seeds first (paper: 30,30,30; CPU default 5,5,5)"),
        "batch_size": Param(None, positive_int, "seeds per GPU per mini-batch (paper: 512; CPU default 64)"),
        "lr": Param(None, positive_float, "Adam learning rate (default 0.003; CPU 0.01)"),
        "dropout": Param(0.0, unit_float, "dropout between layers"),
        "epochs": Param(None, positive_int, "measured epochs (default 2; --quick 1 / CPU --quick 1)"),
        "warmup_batches": Param(None, nonneg_int, "untimed training steps before the first epoch"),
        "max_batches": Param(None, cap_int, "cap on mini-batches per epoch (every pipeline; none = no cap); capped "
                                                 "epochs are extrapolated (default none; --quick 20, CPU --quick 6)"),
        "host_max_batches": Param(None, cap_int, "cap on mini-batches per epoch for pyg_host / dgl_host only"),
        "eval_nodes": Param(None, cap_int, "labelled nodes evaluated per split, all ranks together (all = every "
                                                "one; default CUDA 10000, CPU 1024)"),
        "eval_batch_size": Param(None, positive_int, "seeds per evaluation mini-batch"),
        "workers": Param("auto", workers_param, "loader worker processes per rank for pyg_host / dgl_host "
                                                "(auto: 0 on CPU, cores per rank - 1 on GPUs, <= 8)"),
        "prefetch": Param("auto", choice("auto", "0", "1"),
                          "next mini-batch sampled and gathered on a side stream while one trains (free-running "
                          "epochs): auto = the pipeline's default (on for ours and pylibwholegraph on GPUs)"),
        "layer_impl": Param("auto", choice("auto", "sparse", "segment"),
                            "native layers' g-SpMM: sparse (cuSPARSE CSR product), segment (gather + segment "
                            "reduce), auto = impls/models/ops.py's default per device"),
        "layer_backward": Param("auto", choice("auto", "atomic", "dup_split", "transpose"),
                                "native layers' backward in x (impls/models/ops.py)"),
        "layer_sddmm": Param("auto", choice("auto", "sampled", "gather"),
                             "native layers' g-SDDMM (GAT's attention gradient): sampled (cuSPARSE SDDMM), "
                             "gather (two gathered copies), auto = sampled with the sparse g-SpMM"),
        "timing": Param("both", choice("both", "synced", "free"),
                        "both: first epoch synced (breakdown), later ones free-running (epoch time)"),
        "util_interval_ms": Param(20.0, positive_float, "utilization sampling interval (GPU: NVML)"),
        **kit.timed_parameters(),
    }


# ----------------------------------------------------------------------------- the experiment base

class TrainingExperiment(kit.TrainingExperiment):
    """Base of every training experiment: grid = pipelines x datasets x models x backends."""


    @property
    def impls(self):
        return pipelines()

    warm_and_cold = ("Warm: compiled kernels, allocator pools and resident stores (3 untimed warm-up batches). "
                     "Every batch of an epoch has its own seeds (a fresh shuffle per epoch). The stage "
                     "breakdown comes from the first, synchronized epoch, the epoch time from the later "
                     "free-running ones (on GPUs 50 mini-batches per GPU or more, at least 3 epochs: the "
                     "timed-epoch rule, experiments/kit/training.py); host pipelines read features from a memory-mapped file, so their first "
                     "epoch may pay page-cache misses.")
    parameters = common_parameters()
    defaults = DEFAULTS

    def default_scale(self, cfg, dataset=None) -> float:
        """The scale whose stand-in stores ``max_edges`` edges."""
        from harness import datasets

        return float(f"{datasets.scale_for_edges(dataset, self.setting(cfg, 'max_edges')):.2g}")

    def backends_for(self, impl: str, cfg) -> list[str]:
        out = []
        for b in self.param(cfg, "backends"):
            if b == "default":
                b = default_layers(impl, cfg.device)
            if b not in out:
                out.append(b)
        return out

    def points(self, cfg):
        (world,) = self.world_sizes(cfg)
        fanouts = list(self.setting(cfg, "fanouts"))
        layers = self.param(cfg, "layers")
        if "fanouts" not in cfg.params and len(fanouts) != layers:
            fanouts = (fanouts * layers)[:layers]
        if len(fanouts) != layers:
            raise HarnessError(f"{layers} layers need {layers} fanouts, got {fanouts}")
        common = {"layers": layers, "hidden": self.setting(cfg, "hidden"), "fanouts": fanouts,
                  "batch_size": self.setting(cfg, "batch_size"), "epochs": self.setting(cfg, "epochs")}
        for name in self.param(cfg, "datasets"):
            scale = self.scale(cfg, name)
            for model in self.param(cfg, "models"):
                for impl in [i for i in pipelines() if i in self.impls]:
                    for backend in self.backends_for(impl, cfg):
                        params = {"dataset": name, "scale": scale, "model": model, "backend": backend, **common}
                        if model == "gat":
                            params["heads"] = self.param(cfg, "heads")
                        params.update(explicit_params(self, cfg))
                        cap = self.batch_cap(impl, cfg)
                        if cap is not None:
                            params["max_batches"] = cap
                        synced, free = self.timed_counts(cfg, params, world, *self.asked_epochs(cfg, params["epochs"]),
                                                         free_running=self.param(cfg, "timing") != "synced")
                        params.update(epochs=synced + free, synced_epochs=synced)
                        yield Point(impl, params, world)

    def asked_epochs(self, cfg, epochs: int) -> tuple[int, int]:
        """(synchronized, free-running) epochs the ``timing`` parameter asks of ``epochs``: with
        ``both`` the first one synchronized (the breakdown) and the others free (the epoch time; a
        single epoch is the synchronized one)."""
        timing = self.param(cfg, "timing")
        if timing == "synced":
            return epochs, 0
        if timing == "free":
            return 0, epochs
        return 1, epochs - 1

    def batch_cap(self, impl: str, cfg):
        caps = [cap(self.setting(cfg, "max_batches"))]
        if is_host(impl):
            caps.append(cap(self.param(cfg, "host_max_batches")))
        caps = [c for c in caps if c is not None]
        return min(caps) if caps else None

    def skip_reason(self, point, cfg):
        from harness.needs import detect
        from impls import models

        problem = models.needs_for(point.params.get("backend", "native")).unmet(detect())
        if problem:
            return f"{point.params.get('backend')} layers: {problem}"
        return None

    def run_point(self, point, ctx):
        return train_point(self, point, ctx)

    # budget levels (harness.plan): the cells Table V reads, cheaper; capped epochs are extrapolated
    # from their time per batch, host caps in whole loader waves (impls/pipelines/base.py)
    BUDGET_CAPS = {1: (None, 16), 2: (20, 8)}       # level: (every pipeline's cap, host pipelines' cap)
    BUDGET_EVAL_NODES = 2048                         # accuracy (Table III) on fewer nodes: host loaders are slow

    def cheaper(self, point, level, cfg):
        if level not in self.BUDGET_CAPS:
            return None
        every, host = self.BUDGET_CAPS[level]
        params, notes, changes = dict(point.params), [], {}
        if params.get("epochs", 1) > 1:
            params["epochs"] = 1
            if "synced_epochs" in params:
                params["synced_epochs"] = min(params["synced_epochs"], 1)
            notes.append("1 measured epoch")
        for limit, applies, who in ((every, True, "every pipeline's"), (host, is_host(point.impl), "host")):
            if limit and applies and (params.get("max_batches") or float("inf")) > limit:
                params["max_batches"] = limit
                notes.append(f"{who} epoch capped at {limit} mini-batches (extrapolated)")
        evaluated = cap(self.setting(cfg, "eval_nodes"))
        if evaluated is None or evaluated > self.BUDGET_EVAL_NODES:
            changes["params"] = {**cfg.params, "eval_nodes": str(self.BUDGET_EVAL_NODES)}
            notes.append(f"accuracy on {self.BUDGET_EVAL_NODES} labelled nodes per split")
        return Cheaper(Point(point.impl, params, point.world_size), "; ".join(notes), changes)

    def memory_need(self, point, cfg):
        """Graph and features as stored: spread over the GPUs for ours and pylibwholegraph, in host
        memory for the host pipelines (their GPUs hold the model and one mini-batch)."""
        from harness import datasets

        p = point.params
        size = datasets.stored_bytes(p["dataset"], p["scale"])
        if is_host(point.impl):
            return {"host": size}
        return {"gpu": size / max(1, point.world_size)}


def default_layers(impl: str, device: str) -> str:
    """A pipeline's own layers: PyG's, DGL's where its build runs them (else PyG's), or native."""
    spec = registry.get_impl("pipelines", impl)
    if spec.has("pyg_layers"):
        return "pyg"
    return default_dgl_layers(device) if spec.has("dgl_layers") else "native"


def default_dgl_layers(device: str) -> str:
    """dgl_host's layers on ``device``: DGL's where its build runs them, else PyG's (the PyG row's)."""
    from harness.needs import _import_problem

    if _import_problem("dgl") is not None:
        return "dgl"                    # a skipped row either way; its reason names DGL
    from impls.pipelines.dgl_host import default_layers

    return default_layers(device)


def pipeline_config(exp, point, cfg):
    from impls.pipelines.base import PipelineConfig

    p = point.params
    workers = exp.param(cfg, "workers")
    return PipelineConfig(
        dataset=p["dataset"], scale=p["scale"], data_root=str(cfg.data_root) if cfg.data_root else None,
        model=p["model"], backend=p["backend"], num_layers=p["layers"], hidden=p["hidden"],
        heads=p.get("heads", exp.param(cfg, "heads")), fanouts=tuple(p["fanouts"]), batch_size=p["batch_size"],
        lr=exp.setting(cfg, "lr"), dropout=exp.param(cfg, "dropout"), seed=cfg.seed, epochs=p["epochs"],
        max_batches_per_epoch=p.get("max_batches"), eval_batch_size=exp.setting(cfg, "eval_batch_size"),
        eval_max_nodes=cap(exp.setting(cfg, "eval_nodes")),
        options={"num_workers": None if workers == "auto" else workers,
                 **explicit_options(exp, cfg)})


# experiment parameter -> pipeline option, passed only when not "auto"
EXPLICIT_OPTIONS = {"prefetch": "prefetch", "layer_impl": "impl", "layer_backward": "backward",
                    "layer_sddmm": "sddmm"}


def explicit_params(exp, cfg) -> dict:
    """The EXPLICIT_OPTIONS parameters this run sets (not "auto"), by parameter name."""
    return {name: exp.param(cfg, name) for name in EXPLICIT_OPTIONS
            if name in exp.parameters and exp.param(cfg, name) != "auto"}


def explicit_options(exp, cfg) -> dict:
    return {EXPLICIT_OPTIONS[name]: value for name, value in explicit_params(exp, cfg).items()}


def profile_layers(pipe) -> list[dict]:
    """Each layer of the trained model alone on one training mini-batch of this rank (forward +
    backward, experiments.kit.layers.layer_profile): where a layer set's training time goes. Untimed
    for the epochs (after them); the rank's own batch, no collective."""
    from harness.timing import timer_for
    from ..kit.layers import layer_profile

    seeds = pipe.epoch_batches(0)[0][0]
    _, blocks = next(iter(pipe.iterate([seeds], training=False)))
    x = pipe.features(blocks)
    return layer_profile(pipe.model, blocks, x, timer=timer_for(pipe.device.type))


def fullest(parts: list) -> dict | None:
    """Of every rank's ``device_used_parts``, the one of the rank whose device is the fullest (the
    'device used' figure is the largest over the ranks), with its rank."""
    ranked = [(p["used"], r, p) for r, p in enumerate(parts) if p]
    if not ranked:
        return None
    _, r, p = max(ranked, key=lambda x: (x[0], -x[1]))
    return {**p, "rank": r}


def train_point(exp, point, ctx) -> list[Measurement]:
    from harness.ranks import all_gather
    from impls.pipelines.base import MEMORY_CATEGORIES
    from impls.pipelines.monitor import UtilizationMonitor

    cfg, rank = ctx.cfg, ctx.rank
    p = point.params
    config = pipeline_config(exp, point, cfg)
    timing = exp.param(cfg, "timing")
    pipe = registry.get_impl("pipelines", point.impl).factory(rank, config)
    monitor = UtilizationMonitor(rank.torch_device(), exp.param(cfg, "util_interval_ms") / 1e3) \
        if rank.is_main else None
    categories = MEMORY_CATEGORIES + ("total",)

    def finish(pipe):
        mem, report = pipe.memory(), pipe.memory_report()
        g = pipe.graph
        graph = {"nodes": int(g.num_nodes), "edges": int(g.num_edges), "feature_dim": int(g.feature_dim),
                 "feature_bytes": int(g.features.dtype.itemsize), "id_bytes": int(g.indices.dtype.itemsize),
                 "classes": int(g.num_classes), "train_nodes": int(pipe.split_ids("train").numel()),
                 "standin": bool(g.is_standin)}
        layers = profile_layers(pipe) if getattr(exp, "profile_layers", False) and rank.is_main else None
        return {"test": pipe.evaluate("test"), "report": report, "describe": pipe.describe(), "graph": graph,
                "layers": layers,
                "locations": pipe.store_locations(), "workers": getattr(pipe, "workers", None),
                "mem_max": dict(zip(categories, rank.all_reduce_floats([mem[k] for k in categories]))),
                "used": rank.all_reduce_floats([report.get("device_used_bytes", 0)])[0],
                "used_parts": fullest(all_gather(rank, report.get("device_used_parts")))}

    warm = exp.setting(cfg, "warmup_batches")
    if "synced_epochs" in p:
        def synced(e):
            return e < p["synced_epochs"]
    else:                       # points made before the timed-epoch rule
        def synced(e):
            return timing == "synced" or (timing == "both" and e == 0)
    trained = kit.run_epochs(pipe, rank, f"{point.impl} {p['dataset']} {p['model']}/{p['backend']}", config.epochs,
                             warmup_batches=warm, synced=synced, monitor=monitor, finish=finish)
    stats, f, util = trained.stats, trained.final, trained.util
    epoch_extra = {
        "epochs": len(stats), "setup_s": trained.setup_s, "warmup_batches": warm,
        "timing": ["synced" if s.breakdown else "free" for s in stats],
        "epoch_s_measured": [s.epoch_s for s in stats], "batches_run": stats[0].batches,
        "batches_full": stats[0].batches_full, "extrapolated": any(s.capped for s in stats),
        "loss_per_epoch": [s.loss for s in stats], "val_acc_per_epoch": trained.val_curve,
        "sampled_edges_per_epoch": [s.sampled_edges for s in stats],
        "gathered_gb_per_epoch": [s.gathered_bytes / 1e9 for s in stats],
        "lr": config.lr, "dropout": config.dropout, "eval_nodes": config.eval_max_nodes,
        "graph": f["graph"], "components": f["describe"], "workers": f["workers"],
        **({"layer_profile": f["layers"]} if f["layers"] else {}),
    }
    out = kit.epoch_measurements(trained, epoch_extra)
    out += kit.accuracy_measurements(trained.val_curve[-1], f["test"])
    for cat in categories:
        extra = {}
        if cat == "total":
            extra = {"bytes_max_over_ranks": {k: int(v) for k, v in f["mem_max"].items()},
                     "device_used_gib": f["used"] / GIB if f["used"] else None, "locations": f["locations"],
                     "device_used_parts": f["used_parts"],
                     "training_measure": f["report"].get("training_measure")}
        out.append(Measurement(f"memory_{cat}", "GiB", value=f["mem_max"][cat] / GIB, extra=extra))
    if util.get("samples"):
        # the free-running epochs' training time when there are samples in it: the synced epoch waits
        # between stages on purpose, and evaluation runs between epochs
        training = util.get("training", {})
        value, window = ((training["mean"], "free-running training epochs") if training.get("samples")
                         else (util["mean"], "all measured epochs and evaluations"))
        out.append(Measurement("utilization", "%", value=value, better="higher",
                               extra={"utilization": util, "window": window}))
    return out


# ----------------------------------------------------------------------------- reading rows back

def collect(rows, prefer: str | None = None) -> list[dict]:
    """One record per trained point (pipeline, dataset, model, layer backend; the ok rows only)."""
    return kit.collect(rows, prefer, ("dataset", "model", "backend"), defaults={"backend": "native"})


def fmt_scale(params: dict) -> str:
    return f"{SHORT.get(params['dataset'], params['dataset'])} x{params['scale']:g}"


def datasets_caption(records: list[dict]) -> str:
    seen = {}
    for rec in records:
        g = rec["extra"].get("epoch_time", {}).get("graph", {})
        name = rec["key"]["dataset"]
        if name not in seen:
            kind = f"stand-in at scale {rec['params']['scale']:g}" if g.get("standin", True) else "real data"
            nodes = f", {g['nodes']:,} nodes, {g['edges']:,} edges" if g else ""
            seen[name] = f"{SHORT.get(name, name)} ({kind}{nodes})"
    return "; ".join(seen.values())


def settings_caption(records: list[dict]) -> str:
    combos = sorted({(rec["params"].get("layers"), rec["params"].get("hidden"),
                      "-".join(map(str, rec["params"].get("fanouts", []))), rec["params"].get("batch_size"))
                     for rec in records}, key=str)
    parts = [f"{l} layers, hidden {h}, fanouts {f}, batch {b}" for l, h, f, b in combos]
    return "; ".join(parts)


def records_caption(records: list[dict], models: bool = True, paper: bool = True) -> list[str]:
    """The caption's sentences on what was trained: datasets, models, how the epoch times were
    taken (kit.timing_caption), the paper's testbed."""
    return [f"Datasets: {datasets_caption(records)}.", f"Models: {settings_caption(records)}." if models else "",
            kit.timing_caption(records), f"Paper: {PAPER_HARDWARE}." if paper else ""]


def by_cell(records: list[dict], rep) -> dict:
    """{(machine, dataset, model): {pipeline: record}}."""
    return group(records, lambda r: (rep.label(r["key"]["run_id"]), r["key"]["dataset"], r["key"]["model"]),
                 lambda r: r["key"]["impl"])
