"""What the MG-GCN artifacts share: datasets and their scales, world sizes, building a trainer on
every rank (with out-of-memory agreement), timing epochs, gathering to rank 0, report helpers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.errors import HarnessError, SkipPoint
from harness.experiment import Param, int_list

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
    names = tuple(x.strip().lower() for x in text.split(",") if x.strip())
    if not names:
        raise HarnessError("expected a comma-separated list of names")
    return names


def dataset_list(text: str) -> tuple[str, ...]:
    names = name_list(text)
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise HarnessError(f"unknown dataset {', '.join(unknown)} (known: {', '.join(DATASETS)})")
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
            raise HarnessError(f"scales take NAME=SCALE pairs, got '{item}'")
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
                raise HarnessError(str(exc)) from None
    return out


def common_parameters() -> dict[str, Param]:
    return {
        "scales": Param({}, scale_map, "per-dataset scale, e.g. products=1,proteins=0.1 "
                                       "(default: paper size for Reddit/Products on GPUs)"),
        "gpus": Param(None, int_list, "world sizes to run (default 1, 2, 4, 8 up to --gpus/--ranks)"),
        "lr": Param(0.01, float, "Adam learning rate"),
        "first_layer_backward": Param("exact", first_layer_choice,
                                      "exact, or identity: drop the first layer's backward SpMM as "
                                      "MG-GCN's code does when that layer multiplies first (inexact dW)"),
    }


def first_layer_choice(text: str) -> str:
    if text not in ("exact", "identity"):
        raise HarnessError(f"first_layer_backward must be exact or identity, not '{text}'")
    return text


def mggcn_params(exp, cfg) -> dict:
    """Point params that select a non-default MG-GCN variant (kept out of the rows otherwise)."""
    choice = exp.param(cfg, "first_layer_backward")
    return {} if choice == "exact" else {"first_layer_backward": choice}


def dataset_scale(choice: DatasetChoice, cfg, exp) -> float:
    """--scale wins, then --param scales=..., then the dataset's default for this device."""
    if cfg.scale is not None:
        return float(cfg.scale)
    explicit = exp.param(cfg, "scales") if "scales" in exp.parameters else {}
    if choice.key in explicit:
        return explicit[choice.key]
    if cfg.device == "cuda":
        return choice.gpu_scale
    return choice.quick_scale if cfg.quick else choice.cpu_scale


def world_sizes(cfg, exp=None) -> list[int]:
    from harness.needs import detect

    if cfg.device == "cuda":
        limit, ladder = cfg.world_size or max(1, detect().gpu_count), (1, 2, 4, 8)
    else:
        limit, ladder = cfg.world_size or 2, (1, 2, 4)
    requested = exp.param(cfg, "gpus") if exp is not None and "gpus" in exp.parameters else None
    if requested:
        sizes = sorted({w for w in requested if 1 <= w <= limit})
        if not sizes:
            raise HarnessError(f"--param gpus={','.join(map(str, requested))}: none fits the "
                               f"{limit} {'GPUs' if cfg.device == 'cuda' else 'ranks'} of this run")
        return sizes
    sizes = [w for w in ladder if w <= limit]
    if limit not in sizes:
        sizes.append(limit)
    return sizes


def resolve_model(text: str, choice: DatasetChoice) -> str | None:
    return choice.paper_model if text == "paper" else text


# --- inside the ranks ---------------------------------------------------------------------------

_GRAPHS: dict = {}
_SHARES: dict = {}


def agree(ctx, ok: bool) -> bool:
    """True when every rank says ok (one all-reduce), so all ranks skip a point together."""
    if ctx is None or ctx.world_size == 1:
        return ok
    import torch
    import torch.distributed as dist

    flag = torch.tensor([0 if ok else 1], dtype=torch.int32, device=ctx.torch_device())
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return int(flag.item()) == 0


def limit_threads(ctx) -> None:
    """CPU ranks: one core each, so a world of P ranks uses P cores and scaling is comparable.

    (OpenMP threads of several ranks competing for the same cores slow every rank down by an
    order of magnitude on a small machine.)
    """
    if ctx.device == "cpu":
        import torch

        torch.set_num_threads(1)


def load_graph(choice: DatasetChoice, scale: float, cfg, ctx):
    """The dataset as a FullGraph; rank 0 generates/caches a stand-in first, the others wait."""
    from harness import datasets
    from impls.fullbatch.problem import from_dataset

    key = (choice.registry, scale, cfg.seed, str(cfg.data_root))
    if key in _GRAPHS:
        return _GRAPHS[key]
    _GRAPHS.clear()
    _SHARES.clear()
    problem = failure = None
    if ctx.rank == 0:
        try:
            datasets.load(choice.registry, scale=scale, seed=cfg.seed, data_root=cfg.data_root)
        except HarnessError as exc:          # e.g. a scale too small for the graph: a skipped point
            problem = str(exc)
        except Exception as exc:             # anything else is an error row, on every rank alike
            failure = f"{type(exc).__name__}: {exc}"
    if not agree(ctx, problem is None and failure is None):
        if problem:                          # only rank 0 knows why; only its rows are stored
            raise SkipPoint(problem)
        raise RuntimeError(failure or "rank 0 could not prepare the dataset")
    graph = from_dataset(datasets.load(choice.registry, scale=scale, seed=cfg.seed,
                                       data_root=cfg.data_root))
    _GRAPHS[key] = graph
    return graph


def rank_share(graph, ctx, permute: bool, seed: int):
    from impls.fullbatch.problem import rank_share as build

    key = (id(graph), ctx.world_size, ctx.rank, permute, seed)
    if key not in _SHARES:
        _SHARES.clear()      # one share at a time: a big graph's tiles are gigabytes
        _SHARES[key] = build(graph, ctx.rank, ctx.world_size, permute=permute, seed=seed)
    return _SHARES[key]


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


def build_trainer(exp, point, graph, cfg, ctx, **options):
    """Build ``point.impl`` for this point on this rank; SkipPoint on every rank if any runs out of memory.

    The point's params name the model, and for mggcn the vertex order (``permute``; by default on
    with several ranks, whose load it balances, and off with one, where it only costs the SpMM its
    locality) and ``first_layer_backward``; ``options`` go to mggcn only (overlap, buffers, profiling).
    """
    import torch

    from harness import registry
    from impls.fullbatch.model import ModelConfig

    impl = point.impl
    model_text, lr = point.params["model"], exp.param(cfg, "lr")
    permute = bool(point.params.get("permute", ctx.world_size > 1))
    if impl == "mggcn":
        options.setdefault("first_layer_backward", point.params.get("first_layer_backward", "exact"))
    else:
        options = {}
    model = ModelConfig.parse(model_text, lr=lr)
    factory = registry.get_impl("fullbatch", impl).factory
    device = str(ctx.torch_device())
    kwargs = dict(device=device, seed=cfg.seed, rank=ctx.rank, world=ctx.world_size)
    if impl == "mggcn":
        share = rank_share(graph, ctx, permute, cfg.seed)
        kwargs["share"] = share
        if ctx.device == "cuda":
            need = estimate_mggcn_bytes(share, model.dims(graph.feature_dim, graph.num_classes),
                                        reuse=options.get("reuse_buffers", True))
            free = torch.cuda.mem_get_info(ctx.local_rank)[0]
            # decided before anything is allocated, by every rank together: a rank that ran out
            # of memory in the middle of a collective would leave the others waiting
            if not agree(ctx, need < 0.95 * free):
                raise SkipPoint(f"out of memory: MG-GCN needs about {need / GiB:.1f} GiB per GPU "
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
    if not agree(ctx, skip is None and failure is None):
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


def time_epochs(trainer, cfg, ctx):
    """Epoch times (the slowest rank's, per epoch) after warm-up, barriers around each epoch."""
    from harness.timing import measure_collective, timer_for

    warmup, repeats = epoch_counts(cfg)
    try:
        stats, _ = measure_collective(trainer.train_epoch, timer=timer_for(ctx.device),
                                      warmup=warmup, repeats=repeats)
    except Exception as exc:
        if ctx.world_size == 1 and "out of memory" in str(exc).lower():
            raise SkipPoint(f"out of GPU memory while training: {str(exc).splitlines()[0][:160]}") from None
        raise
    if not math.isfinite(trainer.loss_value()):
        raise RuntimeError("training diverged (loss is not finite)")
    return stats


def gather(ctx, obj):
    """Every rank's ``obj``, in rank order (on every rank)."""
    if ctx.world_size == 1:
        return [obj]
    import torch.distributed as dist

    out = [None] * ctx.world_size
    dist.all_gather_object(out, obj)
    return out


def measure_epoch_time(exp, point, graph, cfg, ctx) -> list:
    """The epoch-time measurement of one point (Table 3 and Fig. 9 share it)."""
    from harness.experiment import Measurement

    trainer = build_trainer(exp, point, graph, cfg, ctx)
    try:
        stats = time_epochs(trainer, cfg, ctx)
        permuted = {"permuted": bool(trainer.share.permuted)} if point.impl == "mggcn" else {}
    finally:
        release(trainer)
    return [Measurement("epoch_time", "s", stats, extra={**graph_params(graph), **permuted})]


def graph_params(graph) -> dict:
    return {"nodes": int(graph.num_nodes), "edges": int(graph.num_edges),
            "standin": bool(graph.meta.get("is_standin", True))}


# --- reports ------------------------------------------------------------------------------------

def ok_rows(rows):
    from harness.tables import expand_params

    rows = expand_params(rows)
    return rows, rows[rows["status"] == "ok"]


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

