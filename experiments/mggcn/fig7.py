"""MG-GCN Fig. 7: effect of the random vertex permutation on epoch time, per GPU count.

Sec. 5.2 / 6.3: with the graph's own ordering some tiles A^{ij} hold far more nonzeros than
others, so at some stages one GPU computes while the rest wait; a random relabelling before the
uniform 1D cut balances them.  The paper reports a 1.5x improvement on Products and Reddit with
8 GPUs and a slightly slower run with few GPUs on some datasets.  Besides the epoch times, each
point records how unbalanced the tiles are: the sum over stages of the heaviest tile's nonzeros,
over the ideal (all nonzeros spread evenly), which is what a stage-synchronous SpMM pays for.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.experiment import Measurement, PaperValue, Param, Point
from harness.ranks import all_gather
from harness.registry import register_experiment
from harness.reportkit import TOLERANCE, Band, Claim, Estimate, Report, figure

from . import PAPER_HARDWARE_V100
from .common import (DATASETS, DGL_MODEL, MGGCNExperiment, at_paper_settings, build_trainer, common_parameters,
                     dataset_label, dataset_list, engine_extra, gpu_colours, graph_params, limit_threads, load_graph,
                     machine_kinds, mggcn_params, newest, release, run_number, scale_suffix, time_epochs)


@register_experiment
class Fig7(MGGCNExperiment):
    title = "Effect of random permutation on epoch time (MG-GCN Fig. 7)"
    paper_hardware = PAPER_HARDWARE_V100
    differs_from_paper = ("MG-GCN's schedule (NCCL broadcasts in the paper's stage order, overlapped) as the harness "
                          "re-implements it in PyTorch, on H200 GPUs all linked by NVLink, not the authors' code on a "
                          "DGX-1's 8 V100s in a hybrid cube-mesh; synthetic stand-ins of PRODUCTS and REDDIT at the "
                          "paper's size.")
    warm_and_cold = ("Full batch: every epoch reads the same graph and features, as in the paper's "
                     "back-to-back epochs; 3 untimed warm-up epochs; graphs beyond the smallest are many times "
                     "the L2.")
    paper_values = (
        PaperValue("Sec. 6.3 (Fig. 7)", "mggcn", {"dataset": "products", "gpus": 8},
                   "permutation_speedup", 1.5, "x", "1.5x runtime improvement on Products with 8 GPUs"),
        PaperValue("Sec. 6.3 (Fig. 7)", "mggcn", {"dataset": "reddit", "gpus": 8},
                   "permutation_speedup", 1.5, "x", "1.5x runtime improvement on Reddit with 8 GPUs"),
        PaperValue("Sec. 6.3 (Fig. 6)", "mggcn", {"dataset": "products", "permute": False},
                   "spmm_time", 50.0, "ms", "SpMM on Products, original ordering"),
        PaperValue("Sec. 6.3 (Fig. 6)", "mggcn", {"dataset": "products", "permute": True},
                   "spmm_time", 38.0, "ms", "SpMM on Products, permuted ordering"),
    )
    parameters = {
        "datasets": Param(("reddit", "products", "arxiv", "proteins"), dataset_list,
                          "datasets (reddit, products, proteins, papers, arxiv, cora)"),
        "model": Param(DGL_MODEL, str, "LAYERSxHIDDEN (the DGX-V100 comparisons use 2 x 512)"),
        **common_parameters(),
    }

    def points(self, cfg):
        for ds in self.param(cfg, "datasets"):
            scale = self.scale(cfg, ds)
            for world in self.world_sizes(cfg):
                for permute in (False, True):
                    yield Point(self.impls[0], {"dataset": ds, "model": self.param(cfg, "model"),
                                                "scale": scale, "gpus": world, "permute": permute,
                                                **mggcn_params(self, cfg)}, world)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        from impls.fullbatch.problem import nnz_imbalance

        limit_threads(ctx.rank)
        graph = load_graph(DATASETS[point.params["dataset"]], point.params["scale"], ctx)
        # the paper's schedule: its stage order makes every rank wait for the heaviest tile of a
        # stage, what the permutation evens out (the engine's default multiplies the local block first)
        trainer = build_trainer(self, point, graph, ctx, transport="broadcast", local_first=False)
        try:
            balance = nnz_imbalance(all_gather(ctx.rank, trainer.tile_nnz))
            stats = time_epochs(trainer, ctx)
            engine = engine_extra(trainer)
        finally:
            release(trainer)
        extra = {**graph_params(graph), **engine}
        return [Measurement("epoch_time", "s", stats, extra=extra),
                Measurement("stage_nnz_imbalance", "x", value=balance["stage_nnz_max_sum_over_ideal"],
                            extra=extra),
                Measurement("rank_nnz_imbalance", "x", value=balance["rank_nnz_max_over_mean"],
                            extra=extra)]

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        rep = Report(self, rows, runs)
        cell = ["p_dataset", "p_gpus", "p_model", "p_scale"]
        history = pd.DataFrame.from_records(
            {"run": run_number(run_id), "machine": rep.label(run_id), **permutation_row(grp)}
            for (run_id, *_), grp in rep.ok.groupby(["run_id", *cell], sort=False))
        ok = rep.ok
        paper_runs = ok["p_model"] == DGL_MODEL if not ok.empty else None
        shown = newest(at_paper_settings(rep, ok, paper_runs), cell, machine_kinds(rep))
        records = [{"Machine": kind, **permutation_row(grp)}
                   for (kind, *_), grp in shown.groupby(["machine", *cell], sort=False)]
        measured = {(r["dataset"], r["#G"]) for r in records}
        records += [{"dataset": dataset_label(ds), "#G": gpus, "paper improvement": factor}
                    for (ds, gpus), factor in PAPER_IMPROVEMENT.items() if (dataset_label(ds), gpus) not in measured]
        records.sort(key=lambda r: (r["dataset"], r["#G"], r.get("Machine", "")))
        table = rep.table(records, single=("Machine",), drop_empty=False)
        rep.notes.append("Paper (Sec. 6.3, DGX-V100): 1.5x with 8 GPUs on Products and Reddit; permutation can be "
                         "slightly slower with few GPUs. Fig. 6: one Products SpMM 50 ms (original) vs 38 ms "
                         "(permuted). 'stage nnz imbalance' = sum over stages of the heaviest tile's nonzeros / (all "
                         "nonzeros / P): 1.0 is perfect balance.")
        caption = self.shown_caption(
            rep,
            "Epoch time with the graph's own vertex order over epoch time after a random permutation (> 1: "
            "permutation helps), uniform 1D partition, overlap on; each machine's newest run per dataset and GPU "
            "count. The claim judged: permutation speeds the epoch up at the most GPUs measured on each dataset (the "
            "paper's 1.5x is at 8 GPUs).",
            shown, PAPER_HARDWARE_V100)
        return rep.artifact("MG-GCN Fig. 7: effect of permutation", caption, table,
                            improvement_figure(records), headline=improvement_headline(records),
                            claims=permutation_claims(shown),
                            skips=self.shown_skips(rep, shown), history=history)


PAPER_IMPROVEMENT = {("products", 8): 1.5, ("reddit", 8): 1.5}      # Sec. 6.3
PAPER_LABEL = "paper, 8 GPUs (8x V100)"


def permutation_row(grp) -> dict:
    """One point's epoch times with the original and the permuted order, and its tiles' balance."""
    def pick(metric, permute):
        hit = grp[(grp["metric"] == metric) & (grp["p_permute"] == permute)]["value"]
        return float(hit.iloc[0]) if not hit.empty else None

    first = grp.iloc[0]
    ds, gpus = first["p_dataset"], int(first["p_gpus"])
    original, permuted = pick("epoch_time", False), pick("epoch_time", True)
    return {"dataset": dataset_label(ds) + scale_suffix(first["p_scale"]), "#G": gpus,
            "original (s)": original, "permuted (s)": permuted,
            "improvement (orig/perm)": original / permuted if original and permuted else None,
            "stage nnz imbalance orig": pick("stage_nnz_imbalance", False),
            "stage nnz imbalance perm": pick("stage_nnz_imbalance", True),
            "paper improvement": PAPER_IMPROVEMENT.get((ds, gpus))}


def permutation_claims(shown) -> list[Claim]:
    """Per machine and dataset the paper names (PRODUCTS, REDDIT): epoch time original / permuted at the
    most GPUs measured, within 1.5x of the paper's 1.5x at 8 GPUs, or of its sign at fewer."""
    out = []
    epochs = shown[shown["metric"] == "epoch_time"]
    for (machine, ds), grp in epochs.groupby(["machine", "p_dataset"], sort=False):
        if ds not in {d for d, _ in PAPER_IMPROVEMENT}:
            continue
        gpus = int(grp["p_gpus"].astype(int).max())
        at = grp[grp["p_gpus"].astype(int) == gpus]
        orig, perm = (at[at["p_permute"] == flag] for flag in (False, True))
        if orig.empty or perm.empty:
            continue
        a, b = (Estimate.from_stats(x["stats"].iloc[0], "epochs") for x in (orig, perm))
        paper = PAPER_IMPROVEMENT.get((ds, gpus))
        band = Band.factor(paper, TOLERANCE) if paper else Band.beyond(1.0, text=f"faster with the permutation (the paper's "
                                                                             f"1.5x is at 8 GPUs, not measured here)")
        out.append(Claim(f"{machine} {dataset_label(ds)}, {gpus} GPUs: epoch time original / permuted",
                         a.ratio(b) if a is not None and b is not None else None, band,
                         "1.5x at 8 GPUs", runs=tuple(sorted(set(at["run_id"])))))
    return out


def improvement_headline(records) -> str:
    """Each machine's improvement per dataset from its fewest to its most GPUs, beside the paper's at 8."""
    parts, most = [], 0
    for kind in dict.fromkeys(r["Machine"] for r in records if r.get("Machine")):
        trends = []
        for ds in dict.fromkeys(r["dataset"] for r in records if r.get("Machine") == kind):
            mine = sorted((r["#G"], r["improvement (orig/perm)"]) for r in records
                          if (r.get("Machine"), r["dataset"]) == (kind, ds) and r["improvement (orig/perm)"])
            if not mine:
                continue
            most = max(most, mine[-1][0])
            (g0, v0), (g1, v1) = mine[0], mine[-1]
            trends.append(f"{ds} {v0:.2f}x at {g0} GPU{'s' if g0 > 1 else ''}"
                          + (f" -> {v1:.2f}x at {g1}" if g1 != g0 else ""))
        if trends:
            parts.append(f"{kind}: original / permuted " + ", ".join(trends))
    if not parts:
        return ""
    return "; ".join(parts) + ("; paper (8 V100s): slightly slower with few GPUs, 1.5x at 8 on PRODUCTS and REDDIT"
                               + (f" (not measured here: at most {most} GPUs)" if most < 8 else ""))


def improvement_figure(records):
    """Fig. 7's layout: per dataset a bar per GPU count, a panel per machine; the paper's 1.5x at 8
    GPUs hatched beside."""
    import numpy as np

    kinds = list(dict.fromkeys(r["Machine"] for r in records if r.get("Machine"))) or ["-"]
    fig, axes = figure((min(10.5, 3 + 4 * len(kinds)), 4.8), ncols=len(kinds), squeeze=False, sharey=True)
    gpu_counts = sorted({r["#G"] for r in records if r.get("Machine")})
    colours = gpu_colours(set(gpu_counts) | {g for _, g in PAPER_IMPROVEMENT})
    for ax, kind in zip(axes[0], kinds):
        mine = [r for r in records if r.get("Machine") == kind]
        datasets = list(dict.fromkeys(r["dataset"] for r in records))
        width = 0.8 / (len(gpu_counts) + 1)
        x = np.arange(len(datasets))
        for i, gpus in enumerate(gpu_counts):
            values = [next((r["improvement (orig/perm)"] for r in mine if r["dataset"] == ds and r["#G"] == gpus),
                           None) for ds in datasets]
            ax.bar(x + i * width, [np.nan if v is None else v for v in values], width, color=colours[gpus],
                   label=f"{gpus} GPU{'s' if gpus > 1 else ''}")
            for xi, v in zip(x, values):
                if v is None:
                    ax.text(xi + i * width, 0.02, "n/a", ha="center", va="bottom", fontsize=9)
        paper = [PAPER_IMPROVEMENT.get((ds.split()[0].lower(), 8)) for ds in datasets]
        ax.bar(x + len(gpu_counts) * width, [np.nan if v is None else v for v in paper], width, fill=False,
               hatch="//", edgecolor=colours.get(8, "k"), linestyle="--", label=PAPER_LABEL)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(x + width * len(gpu_counts) / 2, datasets)
        ax.set_title(kind)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("epoch time original / permuted")
    axes[0][-1].legend(fontsize=9, loc="upper left")
    fig.suptitle("MG-GCN Fig. 7: effect of a random permutation")
    fig.tight_layout()
    return fig
