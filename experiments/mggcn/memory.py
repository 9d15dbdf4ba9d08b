"""MG-GCN Sec. 4.2: peak memory per GPU with the L + 3 shared buffers vs a naive implementation.

The paper's claim is structural: each layer adds one n/P x d buffer, against 4x-6x in
frameworks that allocate every operator's output, and that is what lets Proteins fit on 4 V100s
and Papers on 8 A100s.  Three implementations train the same model for a few epochs:

* ``mggcn`` with ``buffers=reuse``: the L + 3 buffers (buffers.py);
* ``mggcn`` with ``buffers=fresh``: the naive implementation: same kernels and schedule, every
  intermediate in its own allocation kept for the epoch (as a tape would keep it);
* ``single_gpu``: plain torch autograd (one GPU only).

On GPUs ``peak_memory`` is ``torch.cuda.max_memory_allocated`` over building and training,
everything the rank holds included; ``memory_bound`` is what MG-GCN should need (tiles of Â and
Â^T, X, weights and Adam state, the L + 3 buffers and the loss layer's workspace) and the
report's bound adds ``cusparse_workspace`` and ``cublas_workspace``, which a probe measures
after training (no shape names them in advance).  On CPU
ranks the device peak cannot be measured (a skipped row says so) and ``buffer_bytes``, the
bytes of dense intermediates the engine held at its peak (counted by the engine, host memory),
is what compares reuse with fresh allocation.
"""

from __future__ import annotations

from harness import graphs
from harness.artifact import ReportArtifact
from harness.experiment import Measurement, Param, Point
from harness.ranks import all_gather
from harness.registry import register_experiment
from harness.reportkit import Report, colour, figure

from . import PALETTE, PAPER_HARDWARE
from .common import (DATASETS, GiB, MGGCNExperiment, at_paper_settings, build_trainer, common_parameters,
                     dataset_list, epoch_counts, graph_params, has_trait, limit_threads, machine_kinds,
                     mggcn_params, model_list, newest, release, run_number, scale_note, trainers)

BOUND_ROUNDING = 0.002


def memory_variants() -> list[tuple[str, str]]:
    """(trainer, buffers) of every point: the staged engine (MG-GCN) with its shared buffers and with
    fresh allocations, then plain autograd on one device (the ``reference``)."""
    return ([(impl, buffers) for impl in trainers("staged") for buffers in ("reuse", "fresh")]
            + [(impl, "autograd") for impl in trainers("reference")])


@register_experiment
class Memory(MGGCNExperiment):
    title = "Peak memory per GPU: L+3 shared buffers vs a naive implementation (MG-GCN Sec. 4.2)"
    metric, unit, better = "peak_memory", "GiB", "lower"
    differs_from_paper = ("MG-GCN as the harness re-implements it in PyTorch, on H200 GPUs; the paper states the "
                          "structure (L + 3 shared buffers against 4x-6x per layer elsewhere), not sizes, so this "
                          "measures the peak against the planned bound and against fresh allocations; synthetic "
                          "stand-ins.")
    paper_values = ()     # Sec. 4.2 states the structure (L + 3 buffers; 4x-6x elsewhere), no sizes
    parameters = {
        "datasets": Param(("reddit", "products", "proteins"), dataset_list,
                          "datasets (reddit, products, proteins, papers, arxiv, cora)"),
        "models": Param(("paper",), model_list, "'paper' and/or LAYERSxHIDDEN"),
        **common_parameters(),
    }

    @property
    def impls(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(impl for impl, _ in memory_variants()))

    def points(self, cfg):
        measures = ("device_peak",) if cfg.device == "cuda" else ("device_peak", "engine")
        for ds, model, scale in self.datasets_and_models(cfg):
            for world in self.world_sizes(cfg):
                for impl, buffers in memory_variants():
                    if not has_trait(impl, "distributed") and world != 1:
                        continue
                    staged = has_trait(impl, "staged")
                    for measure in measures:
                        if not staged and measure == "engine":      # the engine counts its own buffers
                            continue
                        extra = mggcn_params(self, cfg) if staged else {}
                        yield Point(impl, {"dataset": ds, "model": model, "scale": scale, "gpus": world,
                                           "buffers": buffers, "measure": measure, **extra}, world)

    def skip_reason(self, point, cfg):
        if point.params["measure"] == "device_peak" and cfg.device != "cuda":
            return ("peak device memory needs CUDA (torch.cuda.max_memory_allocated); on CPU ranks "
                    "see the engine-counted buffer_bytes rows")
        return None

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        import torch

        limit_threads(ctx.rank)
        graph = graphs.load(ctx, DATASETS[point.params["dataset"]].registry, point.params["scale"], "fullbatch")
        on_gpu = ctx.rank.device == "cuda"
        if on_gpu:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        # the paper's broadcasts: peer copies keep the buffers in symmetric memory, which torch's
        # allocator statistics (the measured peak) do not see
        options = ({"reuse_buffers": point.params["buffers"] == "reuse", "transport": "broadcast"}
                   if has_trait(point.impl, "staged") else {})
        trainer = build_trainer(self, point, graph, ctx, **options)
        warmup, _ = epoch_counts(ctx.cfg)
        try:
            for _ in range(max(2, warmup)):
                trainer.train_epoch()
            report = trainer.memory_report() if has_trait(point.impl, "staged") else None
            if on_gpu:
                torch.cuda.synchronize()
                peak = torch.cuda.max_memory_allocated() - before
            # after the peak is read: the probe resets the counter
            workspaces = trainer.measure_library_workspaces() if (on_gpu and report is not None) else {}
        finally:
            release(trainer)
        extra = graph_params(graph)
        out = []
        if report is not None:
            # the largest rank decides whether a graph fits: report the maximum over ranks
            engine_peak = max(all_gather(ctx.rank, report.engine_peak_bytes))
            bound = max(all_gather(ctx.rank, report.static_bytes + report.planned_buffer_bytes
                               + report.loss_workspace_bytes))
            out.append(Measurement("buffer_bytes", "GiB", value=engine_peak / GiB,
                                   extra={**extra, "buffer_count": report.buffer_count}))
            if point.params["buffers"] == "reuse":
                out.append(Measurement("memory_bound", "GiB", value=bound / GiB, extra=extra))
                for library, size in workspaces.items():
                    out.append(Measurement(f"{library}_workspace", "GiB",
                                           value=max(all_gather(ctx.rank, size)) / GiB, extra=extra))
        if on_gpu:
            out.append(Measurement("peak_memory", "GiB", value=max(all_gather(ctx.rank, peak)) / GiB, extra=extra))
        return out

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        rep = Report(self, rows, runs)
        point = ["p_dataset", "p_model", "p_gpus"]
        history = pd.DataFrame.from_records(
            {"run": run_number(run_id), **memory_row(rep.label(run_id), ds, model, int(gpus), grp)}
            for (run_id, ds, model, gpus), grp in rep.ok.groupby(["run_id", *point], sort=False))
        # each variant's newest measurement: a later run may have measured some of them again
        shown = newest(at_paper_settings(rep, rep.ok), [*point, "p_scale", "impl", "p_buffers", "p_measure"],
                       machine_kinds(rep))
        records = [memory_row(kind, ds, model, int(gpus), grp)
                   for (kind, ds, model, gpus), grp in shown.groupby(["machine", *point], sort=False)]
        records.sort(key=lambda r: (r["run"], r["dataset"], r["model"], r["#G"]))
        peaks = any(r["MG-GCN peak (GiB)"] is not None for r in records)
        columns = HEADLINE_PEAK if peaks else HEADLINE_ENGINE
        table = rep.table([{("Machine" if k == "run" else k): r[k] for k in columns} for r in records],
                          single=("Machine",), keep=())
        rep.notes.append(
            "Paper (Sec. 4.2): 'each layer only increases the memory use by a single buffer, compared to 4x or 6x in "
            "other deep learning frameworks'; 'for L-layer GCN, the total number of buffers is L + 3' (L + 1 on one "
            "GPU: nothing is broadcast). 'planned' = tiles of A and A^T, X, labels, W, dW, Adam state, the L + 3 "
            "buffers and the loss workspace, counted from their shapes; the workspaces = the largest allocation of "
            "one tile SpMM (cuSPARSE) and of one GEMM after dropping cuBLAS's cached workspace, probed alone after "
            "training (runs without them predate the probe); bound = planned + workspaces; 'within bound': "
            f"peak <= bound x {1 + BOUND_ROUNDING:g} (the allocator rounds every tensor up to 512 B). The planned "
            "bytes, workspaces and engine-counted buffers of every run: memory.history.md.")
        caption = rep.caption(
            "Per-GPU peak memory (torch.cuda.max_memory_allocated, maximum over ranks) while building and training "
            "a few epochs, each machine's newest measurement of each variant; 'naive' runs the same kernels with a "
            "fresh allocation per intermediate, 'autograd' is single_gpu (plain PyTorch autograd). Without device "
            "peaks (CPU ranks) the table shows the bytes of dense intermediates the engine holds at its peak. The "
            f"paper states the structure, not sizes. Paper: {PAPER_HARDWARE}. " + scale_note(shown),
            runs=shown["run_id"])
        return rep.artifact("MG-GCN Sec. 4.2: peak memory per GPU", caption, table, memory_figure(records, peaks),
                            headline=memory_headline(records), history=history,
                            skips=self.shown_skips(rep, shown))


HEADLINE_PEAK = ("run", "dataset", "model", "#G", "buffers", "MG-GCN peak (GiB)", "bound (GiB)", "within bound",
                 "naive peak (GiB)", "autograd peak (GiB)", "naive / MG-GCN")
# MG-GCN's own colour lightened for its naive variant; autograd in a colour no system has
FRESH, AUTOGRAD = PALETTE["MG-GCN light"], PALETTE["autograd"]
HEADLINE_ENGINE = ("run", "dataset", "model", "#G", "buffers", "buffers reuse (GiB)", "buffers fresh (GiB)",
                   "buffer ratio")


def memory_row(machine: str, ds: str, model: str, gpus: int, grp) -> dict:
    """One run's dataset, model and GPU count: peaks with shared and fresh buffers, the planned bound."""
    def value(metric, buffers):
        hit = grp[(grp["metric"] == metric) & (grp["p_buffers"] == buffers)]["value"]
        return float(hit.iloc[0]) if not hit.empty else None

    reuse, fresh = value("peak_memory", "reuse"), value("peak_memory", "fresh")
    planned = value("memory_bound", "reuse")
    cusparse, cublas = value("cusparse_workspace", "reuse"), value("cublas_workspace", "reuse")
    bound = planned + (cusparse or 0.0) + (cublas or 0.0) if planned is not None else None
    buf_reuse, buf_fresh = value("buffer_bytes", "reuse"), value("buffer_bytes", "fresh")
    counts = grp[(grp["metric"] == "buffer_bytes") & (grp["p_buffers"] == "reuse")]
    return {"run": machine, "dataset": DATASETS[ds].label if ds in DATASETS else ds, "model": model, "#G": gpus,
            "buffers": int(counts["p_buffer_count"].iloc[0]) if not counts.empty else None,
            "MG-GCN peak (GiB)": reuse, "planned (GiB)": planned,
            "cuSPARSE workspace (GiB)": cusparse, "cuBLAS workspace (GiB)": cublas, "bound (GiB)": bound,
            "peak / bound": reuse / bound if (reuse is not None and bound) else None,
            "within bound": (reuse <= bound * (1 + BOUND_ROUNDING)) if (reuse is not None and bound) else None,
            "naive peak (GiB)": fresh, "autograd peak (GiB)": value("peak_memory", "autograd"),
            "naive / MG-GCN": fresh / reuse if (reuse and fresh) else None,
            "buffers reuse (GiB)": buf_reuse, "buffers fresh (GiB)": buf_fresh,
            "buffer ratio": buf_fresh / buf_reuse if (buf_reuse and buf_fresh) else None}


def memory_headline(records) -> str:
    """Per machine, dataset and model: MG-GCN's peak per GPU count against its bound, fresh
    allocations' and autograd's."""
    parts = []
    for key in dict.fromkeys((r["run"], r["dataset"], r["model"]) for r in records):
        mine = [r for r in records if (r["run"], r["dataset"], r["model"]) == key and r["MG-GCN peak (GiB)"]]
        if not mine:
            continue
        gpus = lambda r: f"{r['#G']} GPU{'s' if r['#G'] > 1 else ''}"  # noqa: E731
        text = f"{key[0]}, {key[1]} {key[2]}: MG-GCN " + ", ".join(f"{r['MG-GCN peak (GiB)']:.3g} GiB on {gpus(r)}"
                                                                   for r in mine)
        bounded = [r["within bound"] for r in mine if r["within bound"] is not None]
        if bounded:
            text += " (within the planned bound)" if all(bounded) else " (above the planned bound on some)"
        naive = [f"{r['naive / MG-GCN']:.2f}x" for r in mine if r["naive / MG-GCN"]]
        if naive:
            text += f"; fresh allocations {' / '.join(naive)} that"
        text += "".join(f"; autograd {r['autograd peak (GiB)']:.3g} GiB on {gpus(r)}" for r in mine
                        if r["autograd peak (GiB)"] is not None)
        parts.append(text)
    return " | ".join(parts)


def memory_figure(records, peaks: bool):
    """Per GPU count the peak of MG-GCN's shared buffers, of fresh allocations and of autograd, a
    panel per machine and dataset; MG-GCN's planned bound marked on its bar."""
    import numpy as np

    if peaks:
        bars = (("MG-GCN peak (GiB)", "MG-GCN (L + 3 shared buffers)", colour("MG-GCN")),
                ("naive peak (GiB)", "same kernels, fresh allocations", FRESH),
                ("autograd peak (GiB)", "PyTorch autograd (single_gpu)", AUTOGRAD))
    else:
        bars = (("buffers reuse (GiB)", "MG-GCN shared buffers (engine count)", colour("MG-GCN")),
                ("buffers fresh (GiB)", "fresh allocations (engine count)", FRESH))
    panels = list(dict.fromkeys((r["run"], r["dataset"], r["model"]) for r in records)) or [("-", "", "")]
    fig, axes = figure((min(10.5, 2 + 3.5 * len(panels)), 4.6), ncols=len(panels), squeeze=False, sharey=True)
    for ax, (kind, ds, model) in zip(axes[0], panels):
        mine = [r for r in records if (r["run"], r["dataset"], r["model"]) == (kind, ds, model)]
        x = np.arange(len(mine))
        width = 0.8 / len(bars)
        for i, (column, label, colour_) in enumerate(bars):
            ax.bar(x + (i - (len(bars) - 1) / 2) * width, [r[column] if r[column] is not None else np.nan
                                                           for r in mine], width, color=colour_, label=label)
        bounds = [r.get("bound (GiB)") if peaks else None for r in mine]
        if any(b is not None for b in bounds):
            ax.plot(x - (len(bars) - 1) / 2 * width, [np.nan if b is None else b for b in bounds], "k_",
                    markersize=22, markeredgewidth=2, label="MG-GCN planned bound", linestyle="none")
        ax.set_xticks(x, [f"{r['#G']} GPU{'s' if r['#G'] > 1 else ''}" for r in mine])
        ax.set_title(f"{kind}: {ds} {model}", fontsize=11)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("GiB per GPU" if peaks else "GiB of dense intermediates per rank")
    axes[0][0].set_ylim(0, 1.5 * axes[0][0].get_ylim()[1])      # room for the legend over the bars
    axes[0][-1].legend(fontsize=9, loc="upper right")
    fig.suptitle("MG-GCN Sec. 4.2: peak memory per GPU")
    fig.tight_layout()
    return fig
