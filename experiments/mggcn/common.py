"""What the MG-GCN artifacts share: datasets and their scales, world sizes, building a trainer on
every rank (with out-of-memory agreement), timing epochs, gathering to rank 0, report helpers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness import registry
from harness.argtypes import BadValue, bool_flag, choice, int_list, str_list
from harness.errors import SkipPoint
from harness.experiment import Experiment, Param
from harness.worlds import Worlds, world_sizes

GiB = float(1 << 30)


@dataclass(frozen=True)
class DatasetChoice:
    key: str              # the name used in --param datasets=...
    registry: str         # harness.datasets name of the stand-in / real graph
    label: str            # as MG-GCN prints it
    paper_model: str | None
    gpu_scale: float      # default scales (1.0 = the paper's Table 1 size)
    cpu_scale: float
    quick_scale: float


# MG-GCN's Table 1 rows: REDDIT is DGL's 115M-edge release, PROTEINS is CAGNET's HipMCL graph
# (8.74M / 1.3B) and CORA's numbers are CiteSeer's (see harness/datasets/catalog.toml).
DATASETS = {
    "reddit": DatasetChoice("reddit", "reddit-dgl", "REDDIT", "2x16", 1.0, 0.01, 0.005),
    "products": DatasetChoice("products", "ogbn-products", "PRODUCTS", "3x256", 1.0, 0.004, 0.002),
    "proteins": DatasetChoice("proteins", "protein-hipmcl", "PROTEIN", "3x256", 0.1, 0.001, 0.0005),
    "papers": DatasetChoice("papers", "ogbn-papers100M", "PAPERS", "3x208", 0.01, 0.0002, 0.0001),
    "arxiv": DatasetChoice("arxiv", "ogbn-arxiv", "ARXIV", None, 1.0, 0.05, 0.02),
    "cora": DatasetChoice("cora", "citeseer", "CORA", None, 1.0, 1.0, 1.0),
}
SWEEP_FACTORS = (1, 2, 4, 8, 16, 32, 64, 128)
SWEEP_SCALES = {"gpu": 1.0, "cpu": 0.05, "quick": 0.02}
DGL_MODEL = "2x512"       # Sec. 6.1's first model: the DGL / CAGNET comparisons (Figs. 10-13)


def sweep_choice(factor: int) -> DatasetChoice:
    return DatasetChoice(f"{factor}x", f"bter-arxiv-x{factor}", f"{factor}x", None,
                         SWEEP_SCALES["gpu"], SWEEP_SCALES["cpu"], SWEEP_SCALES["quick"])


def name_list(text: str) -> tuple[str, ...]:
    return tuple(name.lower() for name in str_list(text))


def dataset_list(text: str) -> tuple[str, ...]:
    names = name_list(text)
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise BadValue(f"unknown dataset {', '.join(unknown)} (known: {', '.join(DATASETS)})")
    return names


def scale_map(text: str) -> dict[str, float]:
    """``products=1,proteins=0.1`` -> {name: scale}."""
    out = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        try:
            scale = float(value)
        except ValueError:
            scale = -1.0
        if not sep or scale <= 0:
            raise BadValue(f"scales take NAME=SCALE pairs, got '{item}'")
        out[name.strip().lower()] = scale
    return out


def model_list(text: str) -> tuple[str, ...]:
    from impls.fullbatch.model import ModelConfig

    out = name_list(text)
    for m in out:
        if m != "paper":
            try:
                ModelConfig.parse(m)
            except ValueError as exc:
                raise BadValue(str(exc)) from None
    return out


def common_parameters() -> dict[str, Param]:
    return {
        "scales": Param({}, scale_map, "per-dataset scale, e.g. products=1,proteins=0.1 "
                                       "(default: paper size for Reddit/Products on GPUs)"),
        "gpus": Param(None, int_list, "world sizes to run (default 1, 2, 4, 8 up to --gpus/--ranks)"),
        "lr": Param(0.01, float, "Adam learning rate"),
        "first_layer_backward": Param("exact", choice("exact", "identity"),
                                      "exact, or identity: drop the first layer's backward SpMM as "
                                      "MG-GCN's code does when that layer multiplies first (inexact dW)"),
        **engine_parameters(),
    }


# --- the trainers, by what their registry entries say they are ------------------------------------
# (impls/fullbatch: TRAITS); the MG-GCN artifacts fill their roles from these, never by name

def trainers(*traits: str, without: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The full-batch trainers with every one of ``traits`` and none of ``without``, in the registry's order."""
    return registry.names("fullbatch", traits=traits, without=without)


def paper_method() -> str:
    """The trainer the paper's claims are about (MG-GCN)."""
    return trainers("paper_method")[0]


def has_trait(impl: str, trait: str) -> bool:
    """Whether trainer ``impl`` has ``trait`` (False for one no longer registered: a stored row's)."""
    spec = registry.lookup("fullbatch", impl)
    return spec is not None and spec.has(trait)


def trainer_label(impl: str, use: str = "") -> str:
    """A trainer's name in tables and figures (``use``: another its entry names, e.g. "short"); a stored
    row's implementation no longer registered by its own name."""
    spec = registry.lookup("fullbatch", impl)
    return (spec.label_for(use) if use else spec.title) if spec is not None else impl


# MG-GCN's engine variants a run may ask for (staged.py, problem.py); a point carries the ones that
# differ from the default, so the default's rows stay comparable with every earlier run's
ENGINE_DEFAULTS = {"order": "default", "transport": "peer", "partition": "rows", "local_first": True,
                   "first_layer_backward": "exact"}


def engine_parameters() -> dict[str, Param]:
    return {
        "order": Param("default", choice("default", "original", "random", "random_parts"),
                       "vertex order: default (random_parts with several ranks, the input order with one), "
                       "original, random (the paper's permutation), random_parts (each vertex in a random "
                       "part, the input order inside each)"),
        "transport": Param("peer", choice("peer", "broadcast"),
                           "how the staged SpMM moves the blocks: peer (copy-engine copies out of the peers' "
                           "buffers) or broadcast (the paper's NCCL broadcasts)"),
        "partition": Param("rows", choice("rows", "nnz"), "partition vector: uniform rows (the paper's) or "
                                                          "equal nonzeros per rank"),
        "local_first": Param(True, bool_flag, "multiply the local block while the first remote ones arrive "
                                              "(off: the paper's stage order; broadcast only)"),
    }


def mggcn_params(exp, cfg) -> dict:
    """Point params that select a non-default MG-GCN variant (kept out of the rows otherwise)."""
    out = {}
    for name, default in ENGINE_DEFAULTS.items():
        if name in exp.parameters and exp.param(cfg, name) != default:
            out[name] = exp.param(cfg, name)
    return out


def engine_options(params: dict, world: int) -> dict:
    """The MG-GCN factory's arguments a point's params select (defaults where they say nothing).

    Fig. 7's points name the order by ``permute`` (the paper's random permutation or not)."""
    from impls.fullbatch import default_order

    order = params.get("order", "default")
    if "permute" in params:
        order = "random" if params["permute"] else "original"
    return {"order": default_order(world) if order == "default" else order,
            "partition": params.get("partition", "rows"),
            "transport": params.get("transport", ENGINE_DEFAULTS["transport"]),
            "local_first": bool(params.get("local_first", True)),
            "first_layer_backward": params.get("first_layer_backward", "exact")}


def variant_label(row) -> str:
    """The engine variant a report row's point asked for ('' for the default): 'transport=broadcast'."""
    import pandas as pd

    parts = []
    for name, default in ENGINE_DEFAULTS.items():
        value = row.get(f"p_{name}")
        if value is not None and not (isinstance(value, float) and pd.isna(value)) and value != default:
            parts.append(f"{name}={value}")
    return ", ".join(parts)


def engine_extra(trainer) -> dict:
    """What a row records of the engine that measured it."""
    share = trainer.share
    return {"permuted": bool(share.permuted),
            "engine": (f"order={share.order} partition={share.partition} transport={trainer.transport_name} "
                       f"local_first={trainer.stages.local_first}")}


def choice_of(key: str) -> DatasetChoice:
    """A dataset of the MG-GCN tables by its key, or a graph of the density sweep ('16x')."""
    if key in DATASETS:
        return DATASETS[key]
    return sweep_choice(int(key.removesuffix("x")))


class MGGCNExperiment(Experiment):
    """What every MG-GCN artifact shares: full-batch training on one rank per GPU, the datasets'
    scales and the GPU counts of the scaling figures."""

    interface = "fullbatch"
    metric, unit, better = "epoch_time", "s", "lower"
    spawn_ranks = True
    # 1, 2, 4, 8 GPUs (CPU: 1, 2, 4 ranks) up to the run's count, and the run's own
    worlds = Worlds(ladder=(1, 2, 4, 8), cpu=Worlds(ladder=(1, 2, 4)))

    @property
    def impls(self) -> tuple[str, ...]:
        """The trainer the artifact measures: the paper's (subclasses that compare others say which)."""
        return (paper_method(),)

    def shown_caption(self, rep, text: str, shown, paper: str, every: str = "Every run") -> str:
        """The caption of a report that shows the runs ``shown`` (rows): its text, the paper's
        machine, the graphs' scales and where every run is (``<artifact>.history.md``)."""
        return rep.caption(f"{text} Paper: {paper}. " + scale_note(shown), f"{every}: {self.artifact}.history.md.",
                           runs=shown["run_id"])

    @staticmethod
    def shown_skips(rep, shown):
        """The rows of the runs ``shown`` (their skipped points are the report's notes)."""
        return rep.rows[rep.rows["run_id"].isin(set(shown["run_id"]))]

    def default_scale(self, cfg, dataset=None) -> float:
        """--param scales=..., else the dataset's default for this device."""
        choice = choice_of(dataset)
        explicit = self.param(cfg, "scales") if "scales" in self.parameters else {}
        if choice.key in explicit:
            return explicit[choice.key]
        if cfg.device == "cuda":
            return choice.gpu_scale
        return choice.quick_scale if cfg.quick else choice.cpu_scale

    def datasets_and_models(self, cfg):
        """(dataset, model, scale) of every dataset and model the run asks for (``--param datasets``,
        ``models``; 'paper' = the model the paper trains on that dataset)."""
        for ds in self.param(cfg, "datasets"):
            choice = DATASETS[ds]
            scale = self.scale(cfg, choice.key)
            for text in self.param(cfg, "models"):
                if (model := resolve_model(text, choice)) is not None:
                    yield ds, model, scale

    def world_sizes(self, cfg) -> list[int]:
        """``--param gpus`` (those above the run's count left out), else :attr:`worlds`."""
        if "gpus" in self.parameters and self.param(cfg, "gpus"):
            return world_sizes(cfg, Worlds(counts=self.param(cfg, "gpus")), self.id)
        return super().world_sizes(cfg)


def resolve_model(text: str, choice: DatasetChoice) -> str | None:
    return choice.paper_model if text == "paper" else text


# --- inside the ranks ---------------------------------------------------------------------------

def limit_threads(rank) -> None:
    """CPU ranks: one core each, so a world of P ranks uses P cores and scaling is comparable.

    (OpenMP threads of several ranks competing for the same cores slow every rank down by an
    order of magnitude on a small machine.)
    """
    if rank.device == "cpu":
        import torch

        torch.set_num_threads(1)


def load_graph(choice: DatasetChoice, scale: float, ctx):
    """The dataset as a FullGraph on every rank (rank 0 prepares a stand-in first); one graph at a
    time is kept, with its shares, in the run's cache."""
    from harness import datasets
    from harness.ranks import load_on_ranks
    from impls.fullbatch.problem import from_dataset

    cfg = ctx.cfg

    def load():
        return from_dataset(datasets.load(choice.registry, scale=scale, seed=cfg.seed, data_root=cfg.data_root))

    return ctx.cached(("graph", choice.registry, scale, cfg.seed, str(cfg.data_root)),
                      lambda: load_on_ranks(ctx.rank, load), replaces=("graph", "share"))


def rank_share(graph, ctx, order: str, partition: str, seed: int):
    """This rank's share of ``graph``; one at a time is kept (a big graph's tiles are gigabytes)."""
    from impls.fullbatch.problem import rank_share as build

    rank = ctx.rank
    return ctx.cached(("share", id(graph), rank.world_size, rank.rank, order, partition, seed),
                      lambda: build(graph, rank.rank, rank.world_size, order=order, partition=partition, seed=seed),
                      replaces=("share",))


def estimate_mggcn_bytes(share, dims: list[int], reuse: bool = True) -> int:
    """Device bytes MG-GCN will hold on this rank (tiles, X, buffers, loss workspace, Adam).

    Without buffer reuse every intermediate is its own allocation: up to ~4x the planned buffers.
    """
    from impls.fullbatch.buffers import BufferPlan
    from impls.fullbatch.mggcn import tile_bytes

    plan = BufferPlan(tuple(dims), share.rows, max(share.part_rows), share.world)
    tiles = sum(tile_bytes(t) for t in share.forward_tiles + share.backward_tiles)
    weights = sum(a * b for a, b in zip(dims[:-1], dims[1:])) * 4 * 4
    loss = 3 * len(share.train_rows) * dims[-1] * 4
    return tiles + share.features.nbytes + plan.total_bytes * (1 if reuse else 4) + loss + weights


def estimate_cagnet_bytes(share, dims: list[int]) -> int:
    """Device bytes CAGNET 1D will hold on this rank at its peak: tiles, X, what autograd keeps of
    every layer (its input, (F H) W and the activation), the backward's B G and dH, a receive
    buffer, the weights with their gradients and Adam state."""
    from impls.fullbatch.mggcn import tile_bytes

    tiles = sum(tile_bytes(t) for t in share.forward_tiles + share.backward_tiles)
    widest = max(dims)
    kept = share.rows * sum(2 * d for d in dims[1:]) * 4
    transient = (3 * share.rows + max(share.part_rows)) * widest * 4
    weights = sum(a * b for a, b in zip(dims[:-1], dims[1:])) * 4 * 4
    return tiles + share.features.nbytes + kept + transient + weights


def build_trainer(exp, point, graph, ctx, device: str | None = None, **options):
    """Build ``point.impl`` for this point on this rank; SkipPoint on every rank if any runs out of memory.

    The point's params name the model, and for a ``staged`` trainer (MG-GCN) the engine variant
    (:func:`engine_options`: vertex order, partition, transport, stage order, first-layer backward);
    ``options`` go to a staged trainer only (overlap, buffers, profiling) and win over the params. A
    ``distributed`` trainer gets its rank's share. ``device``: another device than the rank's (a
    library without a CUDA build, on the host).
    """
    import torch

    from impls.fullbatch.model import ModelConfig

    from harness.ranks import agree

    cfg, rank = ctx.cfg, ctx.rank
    spec = registry.get_impl("fullbatch", point.impl)
    model_text, lr = point.params["model"], exp.param(cfg, "lr")
    if spec.has("staged"):
        options = {**engine_options(point.params, rank.world_size), **options}
        if not options.get("reuse_buffers", True):
            options["transport"] = "broadcast"         # peer copies read the shared buffers
    else:
        options = {}
    model = ModelConfig.parse(model_text, lr=lr)
    factory = spec.factory
    device = device or str(rank.torch_device())
    kwargs = dict(device=device, seed=cfg.seed, rank=rank.rank, world=rank.world_size)
    if spec.has("distributed"):
        if spec.has("staged"):
            share = rank_share(graph, ctx, options.pop("order"), options.pop("partition"), cfg.seed)
        else:                        # 1D rows as CAGNET cuts them: the input order, uniform rows
            share = rank_share(graph, ctx, "original", "rows", cfg.seed)
        kwargs["share"] = share
        if rank.device == "cuda":
            dims = model.dims(graph.feature_dim, graph.num_classes)
            need = (estimate_mggcn_bytes(share, dims, reuse=options.get("reuse_buffers", True)) if spec.has("staged")
                    else estimate_cagnet_bytes(share, dims))
            free = torch.cuda.mem_get_info(rank.local_rank)[0]
            # decided before anything is allocated, by every rank together: a rank that ran out
            # of memory in the middle of a collective would leave the others waiting
            if not agree(rank, need < 0.95 * free):
                name = spec.label_for("short")
                raise SkipPoint(f"out of memory: {name} needs about {need / GiB:.1f} GiB per GPU "
                                f"here, {free / GiB:.1f} GiB free")
    trainer = skip = failure = None
    try:
        trainer = factory(graph, model, **kwargs, **options)
    except torch.cuda.OutOfMemoryError as exc:
        skip = f"out of GPU memory while building: {str(exc).splitlines()[0][:160]}"
    except ImportError as exc:
        skip = f"cannot import: {exc}"
    except SkipPoint as exc:                 # e.g. a CPU build of DGL asked for a GPU
        skip = str(exc)
    except Exception as exc:                 # every rank must leave the point together
        failure = f"{type(exc).__name__}: {exc}"
    if not agree(rank, skip is None and failure is None):
        release(trainer)
        if skip:
            raise SkipPoint(skip)
        raise RuntimeError(failure or "another rank could not build its part")
    return trainer


def release(trainer) -> None:
    if trainer is not None:
        trainer.close()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass


def epoch_counts(cfg) -> tuple[int, int]:
    """(warm-up, timed) epochs."""
    if cfg.device == "cuda":
        return cfg.warmup_or(3, 2), cfg.repeats_or(10, 5)
    return cfg.warmup_or(1, 1), cfg.repeats_or(5, 3)


def time_epochs(trainer, ctx, device: str | None = None, counts: tuple[int, int] | None = None):
    """Epoch times (the slowest rank's, per epoch) after warm-up, barriers around each epoch.
    ``device``: where the trainer runs, if not on the rank's device; ``counts``: (warm-up, timed)
    epochs other than :func:`epoch_counts`."""
    from harness.timing import measure_collective, timer_for

    warmup, repeats = counts or epoch_counts(ctx.cfg)
    try:
        stats, _ = measure_collective(trainer.train_epoch, timer=timer_for(device or ctx.rank.device),
                                      warmup=warmup, repeats=repeats)
    except Exception as exc:
        if ctx.rank.world_size == 1 and "out of memory" in str(exc).lower():
            raise SkipPoint(f"out of GPU memory while training: {str(exc).splitlines()[0][:160]}") from None
        raise
    if not math.isfinite(trainer.loss_value()):
        raise RuntimeError("training diverged (loss is not finite)")
    return stats


def measure_epoch_time(exp, point, graph, ctx, device: str | None = None, counts: tuple[int, int] | None = None,
                       extra: dict | None = None) -> list:
    """The epoch-time measurement of one point (Table 3, Figs. 9-13 share it); ``device`` and
    ``counts`` as :func:`time_epochs`, ``extra`` recorded with the row."""
    from harness.experiment import Measurement

    trainer = build_trainer(exp, point, graph, ctx, device=device)
    try:
        stats = time_epochs(trainer, ctx, device=device, counts=counts)
        engine = engine_extra(trainer) if has_trait(point.impl, "staged") else {}
    finally:
        release(trainer)
    return [Measurement("epoch_time", "s", stats, extra={**graph_params(graph), **engine, **(extra or {})})]


def graph_params(graph) -> dict:
    return {"nodes": int(graph.num_nodes), "edges": int(graph.num_edges),
            "standin": bool(graph.meta.get("is_standin", True))}


# --- reports ------------------------------------------------------------------------------------
# A report's figure and table show, for every cell, the newest run on each kind of machine at the
# paper's settings; every run's rows go to the artifact's history.

def machine_kinds(rep) -> dict[str, str]:
    """run id -> the machine it ran on (its hardware tag: 4xH200, cpu) however many of its GPUs
    the run used, so that a 1-GPU and a 4-GPU run of one machine are the same machine's cells."""
    kinds = {r.run_id: r.hardware for r in rep.runs}
    if "hardware" in rep.rows:
        for run_id, tag in zip(rep.rows["run_id"], rep.rows["hardware"]):
            kinds.setdefault(run_id, tag)
    return kinds


def at_paper_settings(rep, frame, mask=None, variants=tuple(ENGINE_DEFAULTS)):
    """The rows measured as the paper measured: on GPUs, by a full (not --quick) run, by the default
    engine (no point param of ``variants`` set: a variant's rows are history), and where ``mask``
    (the artifact's own settings) holds; the rows where ``mask`` holds on any machine when none is
    on GPUs, and every row when ``mask`` holds on none (a run on CPU ranks or at other settings
    still reports itself)."""
    import pandas as pd

    if frame.empty:
        return frame
    mask = pd.Series(True, index=frame.index) if mask is None else mask
    quick = {r.run_id for r in rep.runs if (r.manifest.get("config") or {}).get("quick")}
    full = (frame["device"] == "cuda") & ~frame["run_id"].isin(quick)
    for name in variants:
        column = f"p_{name}"
        if column in frame:
            full &= frame[column].isna() | (frame[column] == ENGINE_DEFAULTS[name])
    for keep in (mask & full, mask):
        if keep.any():
            return frame[keep]
    return frame


def newest(frame, cell: list[str], kinds: dict[str, str]):
    """``frame``'s rows of the newest run on each kind of machine for every cell (the values of the
    ``cell`` columns), with that kind as column ``machine``."""
    from harness.reportkit import newest_per_kind

    if frame.empty:
        return frame.assign(machine=[])
    keys = [(run_id, *map(str, values)) for run_id, *values in
            frame[["run_id", *cell]].itertuples(index=False, name=None)]
    chosen = set(newest_per_kind(set(keys), kinds, cell=lambda key: key[1:], run_of=lambda key: key[0]).values())
    out = frame[[key in chosen for key in keys]]
    return out.assign(machine=out["run_id"].map(kinds))


def gpu_colours(counts) -> dict:
    """One shade per GPU count, light for few and dark for many (series that are not systems)."""
    import matplotlib as mpl

    shade, counts = mpl.colormaps["viridis"], sorted(set(counts))
    return {g: shade(0.78 - 0.68 * i / max(1, len(counts) - 1)) for i, g in enumerate(counts)}


def plain_log_y(ax) -> None:
    """A log value axis labelled in plain numbers (0.02, not 2x10^-2), its major lines as the grid."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    low, high = ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if high / low > 30 else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", alpha=0.3)


def run_number(run_id: str) -> str:
    return run_id.split("_")[0]


def dataset_label(key: str) -> str:
    return DATASETS[key].label if key in DATASETS else key


def scale_suffix(scale) -> str:
    """' x0.1' for a stand-in at another scale than the paper's graph, '' at its size."""
    return "" if float(scale) == 1.0 else f" x{float(scale):g}"


def scale_note(rows) -> str:
    if "p_scale" not in rows or "p_dataset" not in rows:
        return ""
    pairs = sorted({(d, float(s)) for d, s in zip(rows["p_dataset"], rows["p_scale"])
                    if isinstance(d, str) and s == s})
    full = [d for d, s in pairs if s == 1.0]
    scaled = [f"{d} x{s:g}" for d, s in pairs if s != 1.0]
    parts = []
    if full:
        parts.append(f"{', '.join(full)} at the paper's size")
    if scaled:
        parts.append("scaled stand-ins: " + ", ".join(scaled))
    return ("Graphs: " + "; ".join(parts) + " (synthetic stand-ins matching nodes, edges, degree skew, "
            "feature width and classes unless the real dataset was found under the data root).")

