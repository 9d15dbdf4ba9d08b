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
from harness.reportkit import Band, Claim, Estimate, Report, figure, finish

from . import PAPER_HARDWARE
from .common import (DGL_MODEL, SWEEP_FACTORS, MGGCNExperiment, at_paper_settings, common_parameters,
                     gpu_colours, limit_threads, load_graph, machine_kinds, measure_epoch_time, mggcn_params, newest,
                     run_number, sweep_choice)


@register_experiment
class Fig9(MGGCNExperiment):
    title = "Speedup vs average degree on the x1..x128 density sweep (MG-GCN Fig. 9)"
    differs_from_paper = ("MG-GCN as the harness re-implements it in PyTorch, on H200 GPUs; the sweep's graphs are "
                          "the harness's power-law stand-ins with arxiv's nodes and k times its edges, one per "
                          "density, not BTER graphs with the median of 10; the paper does not name the model (2x512"
                          " here).")
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
                yield Point(self.impls[0], {"dataset": choice.key, "factor": k, "model": self.param(cfg, "model"),
                                            "scale": scale, "gpus": world, **mggcn_params(self, cfg)}, world)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        limit_threads(ctx.rank)
        graph = load_graph(sweep_choice(point.params["factor"]), point.params["scale"], ctx)
        return measure_epoch_time(self, point, graph, ctx)

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        rep = Report(self, rows, runs)
        ok = rep.ok[rep.ok["metric"] == "epoch_time"]
        history = pd.DataFrame.from_records(
            {"run": run_number(run_id), "machine": rep.label(run_id), **density_row(grp)}
            for (run_id, _), grp in ok.groupby(["run_id", "p_factor"], sort=True))
        paper_runs = ok["p_model"] == DGL_MODEL if not ok.empty else None
        points = speedups(at_paper_settings(rep, ok, paper_runs))
        shown = newest(points, ["p_factor", "p_gpus", "p_model", "p_scale"], machine_kinds(rep))
        records = density_table(shown)
        table = rep.table(records, single=("Machine",), drop_empty=False)
        claims, headline = superlinear_claims(shown)
        scales = sorted(set(shown["p_scale"])) if not shown.empty else []
        caption = rep.caption(
            "Epoch time on one GPU over epoch time on P GPUs of the same run, for the stand-ins of MG-GCN's BTER "
            "density sweep (arxiv's degree profile, k x its edges, 512 features, 40 classes) at scale "
            f"{', '.join(f'{s:g}' for s in scales) or '-'} of arxiv's 169,343 vertices; each machine's newest run "
            "per density and GPU count. Dotted: linear speedup; dashed: where the paper sees super-linear speedup "
            "begin. The claims judged: where a density beyond the paper's threshold was measured, the speedup "
            f"there over the GPU count (above 1: super-linear). Paper: {PAPER_HARDWARE}.", "Every run: fig9.history.md.",
            runs=shown["run_id"])
        return rep.artifact("MG-GCN Fig. 9: speedup vs density", caption, table, density_figure(shown),
                            headline=headline, claims=claims,
                            skips=self.shown_skips(rep, shown), history=history)


PAPER_SUPERLINEAR_AFTER = {2: 32, 4: 32, 8: 64}     # Sec. 6.5: super-linear beyond these density factors
SUPERLINEAR = Band.beyond(1.0, text="super-linear (the paper prints no factor)")


def density_row(grp) -> dict:
    """One run's density: average degree, seconds on one GPU, speedup on each other GPU count."""
    one = grp[grp["p_gpus"] == 1]["value"]
    rec = {"density": f"{int(grp['p_factor'].iloc[0])}x",
           "avg degree": float(grp["p_edges"].iloc[0]) / float(grp["p_nodes"].iloc[0]),
           "1 GPU (s)": float(one.iloc[0]) if not one.empty else None}
    for gpus in sorted(set(grp["p_gpus"].astype(int)) - {1}):
        t = grp[grp["p_gpus"] == gpus]["value"]
        rec[f"speedup {gpus} GPUs"] = float(one.iloc[0]) / float(t.iloc[0]) if not one.empty and not t.empty else None
    return rec


def speedups(rows):
    """One row per run, density and GPU count above one: its speedup over the same run's one GPU
    (``value``), that run's one-GPU seconds and the graph's average degree."""
    import pandas as pd

    out = []
    for (run_id, factor), grp in rows.groupby(["run_id", "p_factor"], sort=True):
        one = grp[grp["p_gpus"] == 1]
        if one.empty:
            continue
        one_est = Estimate.from_stats(one["stats"].iloc[0], "epochs") if "stats" in one else None
        for _, r in grp[grp["p_gpus"] != 1].iterrows():
            mine = Estimate.from_stats(r.get("stats"), "epochs")
            out.append({"run_id": run_id, "p_factor": int(factor), "p_gpus": int(r["p_gpus"]), "p_model": r["p_model"],
                        "p_scale": r["p_scale"], "value": float(one["value"].iloc[0]) / float(r["value"]),
                        "one_gpu": float(one["value"].iloc[0]), "degree": float(r["p_edges"]) / float(r["p_nodes"]),
                        "estimate": one_est.ratio(mine) if one_est is not None and mine is not None else None})
    return pd.DataFrame.from_records(out, columns=["run_id", "p_factor", "p_gpus", "p_model", "p_scale", "value",
                                                   "one_gpu", "degree", "estimate"])


def density_table(shown) -> list[dict]:
    """Fig. 9 as a table: a row per machine and measured density with its speedups, and the GPU
    counts the paper sees super-linear there (a row of its own where nothing was measured)."""
    gpu_counts = sorted(set(shown["p_gpus"]))
    claimed = [k for k in SWEEP_FACTORS if k > min(PAPER_SUPERLINEAR_AFTER.values())]
    records = []
    for (kind, k), at in shown.groupby(["machine", "p_factor"], sort=True):
        latest = at.sort_values("run_id").iloc[-1]
        rec = {"Machine": kind, "density": k, "avg degree": latest["degree"], "1 GPU (s)": latest["one_gpu"]}
        for gpus in gpu_counts:
            hit = at[at["p_gpus"] == gpus]["value"]
            rec[f"speedup {gpus} GPUs"] = float(hit.iloc[0]) if not hit.empty else None
        records.append(rec)
    records += [{"density": k} for k in claimed if k not in set(shown["p_factor"])]
    records.sort(key=lambda r: (r["density"], r.get("Machine") or ""))
    for rec in records:
        paper = [g for g, after in sorted(PAPER_SUPERLINEAR_AFTER.items()) if rec["density"] > after]
        rec["paper: super-linear on"] = f"{', '.join(map(str, paper))} GPUs" if paper else None
        rec["density"] = f"{rec['density']}x"
    return records


def superlinear_claims(shown) -> tuple[list[Claim], str]:
    """Per machine, GPU count with a paper threshold and measured density beyond it: the speedup over
    the GPU count above 1 (super-linear); the headline names what was not measured."""
    claims, parts = [], []
    for kind in sorted(set(shown["machine"])):
        mine = shown[shown["machine"] == kind]
        text = []
        for gpus, after in sorted(PAPER_SUPERLINEAR_AFTER.items()):
            at = mine[mine["p_gpus"] == gpus].sort_values("p_factor")
            beyond = at[at["p_factor"] > after]
            if beyond.empty:
                claims.append(Claim(f"{kind}, {gpus} GPUs beyond {after}x: speedup / {gpus}", None, SUPERLINEAR,
                                    f"super-linear beyond {after}x"))
            if at.empty:
                text.append(f"{gpus} GPUs not measured")
                continue
            if beyond.empty:
                last = at.iloc[-1]
                text.append(f"{gpus} GPUs {last['value']:.2f}x at {int(last['p_factor'])}x, not measured beyond "
                            f"{after}x")
                continue
            for _, r in beyond.iterrows():
                claims.append(Claim(f"{kind}, {gpus} GPUs at {int(r['p_factor'])}x: speedup / {gpus}",
                                    r["estimate"].times(1 / gpus) if r["estimate"] is not None else None,
                                    SUPERLINEAR,
                                    f"super-linear beyond {after}x", runs=(r["run_id"],)))
            superlinear = bool((beyond["value"] > gpus).all())
            text.append(", ".join(f"{gpus} GPUs {r['value']:.2f}x at {int(r['p_factor'])}x"
                                  for _, r in beyond.iterrows())
                        + f" ({'super-linear' if superlinear else 'not super-linear'}; paper: beyond {after}x)")
        parts.append(f"{kind}: " + "; ".join(text))
    return claims, " | ".join(parts)


def density_figure(shown):
    """Fig. 9's layout: speedup over one GPU vs the density factor, a line per GPU count (a marker
    per machine), linear speedup dotted, the paper's super-linear thresholds dashed."""
    from matplotlib.lines import Line2D

    fig, ax = figure((8, 4.8))
    colours = gpu_colours(set(shown["p_gpus"]) | set(PAPER_SUPERLINEAR_AFTER))
    markers = "o^sD"
    for j, kind in enumerate(sorted(set(shown["machine"]))):
        mine = shown[shown["machine"] == kind]
        for gpus in sorted(set(mine["p_gpus"])):
            line = mine[mine["p_gpus"] == gpus].sort_values("p_factor")
            ax.plot(line["p_factor"], line["value"], marker=markers[j % len(markers)], color=colours[gpus],
                    linewidth=2, label=f"{gpus} GPUs, {kind}")
            ax.axhline(gpus, ls=":", lw=1, color=colours[gpus])
    for after in sorted(set(PAPER_SUPERLINEAR_AFTER.values())):
        gpus = [g for g, a in PAPER_SUPERLINEAR_AFTER.items() if a == after]
        ax.axvline(after, ls="--", lw=1.2, color="0.4")
        ax.text(after * 1.06, 0.03, f"paper:\n{', '.join(map(str, gpus))} GPUs\nsuper-linear",
                transform=ax.get_xaxis_transform(), va="bottom", fontsize=9, color="0.3")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(SWEEP_FACTORS), [f"{k}x" for k in SWEEP_FACTORS])
    ax.set_xticks([], minor=True)
    ax.set_xlim(0.8, 200)
    ax.set_ylim(0, max([*shown["value"], *shown["p_gpus"], 2]) * 1.15)
    ax.set_xlabel("edges x arxiv's (density factor)")
    ax.set_ylabel("speedup over 1 GPU")
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    handles += [Line2D([], [], ls=":", color="0.3"), Line2D([], [], ls="--", color="0.4")]
    labels += ["linear speedup (each GPU count)", "paper: super-linear beyond"]
    ax.legend(handles, labels, fontsize=9, loc="upper left")
    return finish(fig, ax, "MG-GCN Fig. 9: speedup vs density")
