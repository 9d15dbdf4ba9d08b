"""MG-GCN Fig. 5: runtime of one training epoch broken down by operation.

Sec. 6.2 profiles single-GPU training of the first model (2 layers x 512) and finds the SpMM
taking 60-94% of the time on the large graphs (Proteins, Products, Reddit) and the GeMM 5-20%,
while on the small graphs the GeMM dominates.  Here every operation of MG-GCN's epoch is
bracketed by CUDA events (perf_counter on CPU ranks), summed per kind: SpMM (including the
stage broadcasts when P > 1), GeMM, activation (Eq. 7 and its derivative), loss layer
(softmax cross-entropy), gradient all-reduce and Adam.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.experiment import Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, figure, finish, span
from harness.timing import Stats
from harness.worlds import Worlds

from . import PAPER_HARDWARE
from .common import (MGGCNExperiment, mggcn_params, DATASETS, DGL_MODEL, build_trainer, common_parameters, dataset_list,
                     epoch_counts, graph_params, limit_threads, load_graph,
                     release, scale_note)

OP_LABELS = {"spmm": "SpMM", "gemm": "GeMM", "activation": "activation", "loss": "loss layer",
             "allreduce": "all-reduce dW", "adam": "Adam"}


@register_experiment
class Fig5(MGGCNExperiment):
    title = "Runtime breakdown of a training epoch by operation (MG-GCN Fig. 5)"
    metric, unit, better = "op_time.spmm", "s", "lower"
    warm_and_cold = ("Full batch: every epoch reads the same graph and features, as in the paper's "
                     "back-to-back epochs; 3 untimed warm-up epochs; graphs beyond the smallest are many times "
                     "the L2.")
    paper_values = (
        PaperValue("Sec. 6.2 (Fig. 5)", "mggcn", {"dataset": "proteins,products,reddit", "op": "spmm"},
                   "share_min", 60.0, "%", "SpMM takes 60%-94% of the runtime on the large datasets"),
        PaperValue("Sec. 6.2 (Fig. 5)", "mggcn", {"dataset": "proteins,products,reddit", "op": "spmm"},
                   "share_max", 94.0, "%", "SpMM takes 60%-94% of the runtime on the large datasets"),
        PaperValue("Sec. 6.2 (Fig. 5)", "mggcn", {"dataset": "proteins,products,reddit", "op": "gemm"},
                   "share_min", 5.0, "%", "GeMM is second with 5%-20%"),
        PaperValue("Sec. 6.2 (Fig. 5)", "mggcn", {"dataset": "proteins,products,reddit", "op": "gemm"},
                   "share_max", 20.0, "%", "GeMM is second with 5%-20%"),
    )
    parameters = {
        "datasets": Param(("reddit", "products", "proteins", "arxiv", "cora"), dataset_list,
                          "datasets (reddit, products, proteins, papers, arxiv, cora)"),
        "model": Param(DGL_MODEL, str, "LAYERSxHIDDEN (paper: its first model, 2 x 512)"),
        **common_parameters(),
    }

    worlds = Worlds(default=1)           # the paper profiles one GPU (--gpus N, --param gpus for more)

    def points(self, cfg):
        worlds = self.world_sizes(cfg)
        for ds in self.param(cfg, "datasets"):
            scale = self.scale(cfg, ds)
            for world in worlds:
                yield Point("mggcn", {"dataset": ds, "model": self.param(cfg, "model"),
                                      "scale": scale, "gpus": world, **mggcn_params(self, cfg)}, world)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        import torch.distributed as dist

        limit_threads(ctx.rank)
        graph = load_graph(DATASETS[point.params["dataset"]], point.params["scale"], ctx)
        trainer = build_trainer(self, point, graph, ctx, profile_ops=True)
        warmup, repeats = epoch_counts(ctx.cfg)
        per_epoch = []
        try:
            for _ in range(warmup):
                trainer.train_epoch()
            trainer.collect_op_times()
            for _ in range(repeats):
                if ctx.rank.world_size > 1:
                    dist.barrier()
                trainer.train_epoch()
                per_epoch.append(trainer.collect_op_times())   # this rank's (rank 0 is stored)
        finally:
            release(trainer)
        extra = graph_params(graph)
        out = []
        for kind in OP_LABELS:
            samples = [epoch.get(kind, 0.0) for epoch in per_epoch]
            # one metric per operation: rows of a point must differ in experiment/impl/params/metric
            out.append(Measurement(f"op_time.{kind}", "s", Stats.from_samples(samples),
                                   extra={**extra, "op": kind}))
        totals = [sum(epoch.values()) for epoch in per_epoch]
        out.append(Measurement("profiled_epoch_time", "s", Stats.from_samples(totals), extra=extra))
        return out

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ops = rep.ok[rep.ok["metric"].str.startswith("op_time.")]
        records = []
        for (run_id, ds, gpus), grp in ops.groupby(["run_id", "p_dataset", "p_gpus"], sort=False):
            total = grp["value"].sum()
            rec = {"run": rep.label(run_id), "dataset": DATASETS[ds].label if ds in DATASETS else ds,
                   "#G": int(gpus), "epoch (ms)": 1e3 * total}
            for kind, label in OP_LABELS.items():
                hit = grp[grp["p_op"] == kind]["value"]
                rec[f"{label} %"] = 100.0 * float(hit.iloc[0]) / total if (not hit.empty and total > 0) else None
            records.append(rec)
        table = rep.table(records, single=(), drop_empty=False)
        big = table[table["dataset"].isin(["PROTEIN", "PRODUCTS", "REDDIT"])] if "dataset" in table else table.iloc[0:0]
        for run, mine in big.groupby("run", sort=False):
            spmm, gemm = span(mine["SpMM %"], ".0f", "%-"), span(mine["GeMM %"], ".0f", "%-")
            rep.notes.append(f"{run}: SpMM {spmm}% and GeMM {gemm}% of the epoch on Proteins/Products/Reddit "
                             "(paper: SpMM 60%-94%, GeMM 5%-20%)")
        fig, ax = figure((8, 0.5 * max(4, len(records)) + 1))
        names = [f"{r['run']} {r['dataset']} {r['#G']}G" for r in records]
        left = [0.0] * len(records)
        for label in OP_LABELS.values():
            widths = [r.get(f"{label} %") or 0.0 for r in records]
            ax.barh(names, widths, left=left, label=label)
            left = [a + b for a, b in zip(left, widths)]
        ax.set_xlabel("share of the epoch (%)")
        ax.set_xlim(0, 100)
        ax.legend(fontsize=7, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.08))
        models = sorted(set(ops["p_model"])) if not ops.empty else []
        caption = rep.caption(f"Share of an epoch's time per operation, model {', '.join(models) or '-'}; each "
                              "operation bracketed by CUDA events (perf_counter on CPU ranks), summed per epoch, "
                              "median over epochs, rank 0. SpMM includes its stage broadcasts when P > 1. "
                              f"Paper: {PAPER_HARDWARE}. " + scale_note(rep.rows))
        return rep.artifact("MG-GCN Fig. 5: runtime breakdown by operation", caption, table,
                            finish(fig, ax, "Runtime breakdown by operation (MG-GCN Fig. 5)"))
