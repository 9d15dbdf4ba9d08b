"""MG-GCN Fig. 9: speedup over one GPU as the graph gets denser (the x1..x128 sweep).

Sec. 6.1 / 6.5: BTER graphs with Arxiv's degree profile, Arxiv's vertex count and k times its
edges (k = 1..128), 512 random features, 40 classes.  Communication depends only on n x d, the
SpMM's work grows with the edges, so speedup rises with density; the paper sees super-linear
speedup with 2 and 4 GPUs beyond 32x and with 8 GPUs beyond 64x.  The sweep here is the
dataset registry's stand-in for those graphs (bter-arxiv-x{k}); the paper does not name the
model, so the first model (2 x 512) is the default.
"""

from __future__ import annotations

from harness.argtypes import int_list
from harness.artifact import ReportArtifact
from harness.experiment import Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, figure, finish

from . import PAPER_HARDWARE
from .common import (MGGCNExperiment, mggcn_params, DGL_MODEL, SWEEP_FACTORS, common_parameters,
                     limit_threads, load_graph, sweep_choice, measure_epoch_time)


@register_experiment
class Fig9(MGGCNExperiment):
    title = "Speedup vs average degree on the x1..x128 density sweep (MG-GCN Fig. 9)"
    warm_and_cold = ("Full batch: every epoch reads the same graph and features, as in the paper's "
                     "back-to-back epochs; 3 untimed warm-up epochs; graphs beyond the smallest are many times "
                     "the L2.")
    paper_values = (
        PaperValue("Sec. 6.5 (Fig. 9)", "mggcn", {"gpus": 2}, "superlinear_from_factor", 32, "x",
                   "super-linear speedup with 2 GPUs after 32x"),
        PaperValue("Sec. 6.5 (Fig. 9)", "mggcn", {"gpus": 4}, "superlinear_from_factor", 32, "x",
                   "super-linear speedup with 4 GPUs after 32x"),
        PaperValue("Sec. 6.5 (Fig. 9)", "mggcn", {"gpus": 8}, "superlinear_from_factor", 64, "x",
                   "super-linear speedup with 8 GPUs after 64x"),
    )
    parameters = {
        "factors": Param(None, int_list, "density factors k of the sweep (1..128); default all on GPUs, "
                                         "1,2,4,8 on CPU (1,4,16 with --quick)"),
        "model": Param(DGL_MODEL, str, "LAYERSxHIDDEN (not stated by the paper)"),
        **common_parameters(),
    }

    def factors(self, cfg) -> tuple[int, ...]:
        chosen = self.param(cfg, "factors")
        if chosen:
            bad = [k for k in chosen if k not in SWEEP_FACTORS]
            if bad:
                from harness.errors import HarnessError

                raise HarnessError(f"factors must be among {SWEEP_FACTORS}, got {bad}")
            return tuple(chosen)
        if cfg.device == "cuda":
            return SWEEP_FACTORS
        return (1, 4, 16) if cfg.quick else (1, 2, 4, 8)

    def points(self, cfg):
        for k in self.factors(cfg):
            choice = sweep_choice(k)
            scale = self.scale(cfg, choice.key)
            for world in self.world_sizes(cfg):
                yield Point("mggcn", {"dataset": choice.key, "factor": k, "model": self.param(cfg, "model"),
                                      "scale": scale, "gpus": world, **mggcn_params(self, cfg)}, world)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        limit_threads(ctx.rank)
        graph = load_graph(sweep_choice(point.params["factor"]), point.params["scale"], ctx)
        return measure_epoch_time(self, point, graph, ctx)

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ok = rep.ok[rep.ok["metric"] == "epoch_time"]
        records = []
        for (run_id, k), grp in ok.groupby(["run_id", "p_factor"], sort=True):
            one = grp[grp["p_gpus"] == 1]["value"]
            rec = {"run": rep.label(run_id), "density": f"{int(k)}x",
                   "avg degree": float(grp["p_edges"].iloc[0]) / float(grp["p_nodes"].iloc[0]),
                   "1 GPU (s)": float(one.iloc[0]) if not one.empty else None}
            for gpus in sorted(set(grp["p_gpus"].astype(int)) - {1}):
                t = grp[grp["p_gpus"] == gpus]["value"]
                rec[f"speedup {gpus} GPUs"] = (float(one.iloc[0]) / float(t.iloc[0])
                                               if not one.empty and not t.empty else None)
            records.append(rec)
        table = rep.table(records, single=(), drop_empty=False)
        paper_threshold = {2: 32, 4: 32, 8: 64}     # Sec. 6.5: super-linear beyond these factors
        fig, ax = figure((7, 4.2))
        for run, mine in (table.groupby("run", sort=False) if "run" in table else ()):
            factors = [int(d[:-1]) for d in mine["density"]]
            for col in [c for c in mine.columns if c.startswith("speedup ")]:
                gpus = int(col.split()[1])
                if mine[col].notna().any():
                    above = mine[mine[col] > gpus]["density"].tolist()
                    rep.notes.append(f"{run}: super-linear with {gpus} GPUs at "
                                     f"{', '.join(above) if above else 'no measured density'}"
                                     + (f" (paper: beyond {paper_threshold[gpus]}x)" if gpus in paper_threshold else ""))
                ax.plot(factors, mine[col], marker="o", label=f"{run} {col[8:]}")
                ax.axhline(gpus, ls=":", lw=0.7, color="grey")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("edges x arxiv's (density factor)")
        ax.set_ylabel("speedup over 1 GPU")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        scales = sorted(set(rep.rows["p_scale"])) if "p_scale" in rep.rows else []
        caption = rep.caption("Epoch time on one GPU over epoch time on P GPUs, for the stand-ins of MG-GCN's BTER "
                              "density sweep (arxiv's degree profile, k x its edges, 512 features, 40 classes) at "
                              f"scale {', '.join(f'{s:g}' for s in scales)} of arxiv's 169,343 vertices. Dotted: "
                              f"linear speedup. Paper: {PAPER_HARDWARE}.")
        return rep.artifact("MG-GCN Fig. 9: speedup vs density", caption, table,
                            finish(fig, ax, "Speedup vs density (MG-GCN Fig. 9)", tight=False))
