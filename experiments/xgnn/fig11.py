"""XGNN Fig. 11: scalability of DGL+C and XGNN: epoch time with 1, 2, 4 (paper: and 8) GPUs.

The paper trains GCN on PA and GraphSAGE on UK and finds XGNN faster than DGL+C and scaling better:
with more GPUs XGNN splits the topology and the features over more GPUs (more of them on GPUs, less
host traffic) and uses every NVLink for sampling and feature extraction, while DGL+C replicates the
topology and its cache on every GPU. Here both run under the V100 budget rule (training.py) on 1, 2
and 4 GPUs of the machine (CPU: 1 and 2 ranks); the batch per GPU is the same for every GPU count,
so an epoch has fewer mini-batches per GPU with more GPUs, as in the paper. The XGNN GraphSAGE+UK
points are also Fig. 12's (its report reads this experiment's rows).
"""

from __future__ import annotations

from harness.argtypes import int_list
from harness.artifact import ReportArtifact
from harness.experiment import PaperValue, Param
from harness.registry import register_experiment
from harness.reportkit import Axis, Band, Claim, FigureSpec, Panel, Series, draw, finite, group, ratio, span

from . import PAPER_HARDWARE
from .training import (MODEL_NAMES, SHORT, SHOWN, SYSTEMS, TrainingReport, XGNNTraining, cell, combo, combo_list,
                       common_parameters, estimate, extrapolated, fmt, percent, speedup_claim, system_list)

SYSTEMS11 = ("dgl_cache", "xgnn")
COMBOS = (("gcn", "ogbn-papers100M"), ("sage", "uk-2006-05"))


def paper_values() -> tuple[PaperValue, ...]:
    return (PaperValue("Fig. 11, section 6.4", "xgnn", {"model": "gcn", "dataset": "ogbn-papers100M"},
                       "faster_than_dgl_cache", 1.0, "", "XGNN outperforms DGL+C and has better scalability "
                                                         "(no numbers printed)"),
            PaperValue("Fig. 11, section 6.4", "xgnn", {"model": "sage", "dataset": "uk-2006-05"},
                       "faster_than_dgl_cache", 1.0, "", "XGNN outperforms DGL+C and has better scalability "
                                                         "(no numbers printed)"))


class ScalingExperiment(XGNNTraining):
    """Points on several GPU counts (the same batch per GPU for every count)."""

    def points(self, cfg):
        gpus = self.world_sizes(cfg)
        for model, ds in self.param(cfg, "combos"):
            for system in self.param(cfg, "systems"):
                for world in gpus:
                    yield self.point(system, ds, model, world, cfg, ref_world=max(gpus))


@register_experiment
class Fig11(ScalingExperiment):
    title = "XGNN Fig. 11: scalability of DGL+C and XGNN (epoch time vs GPUs)"
    differs_from_paper = ("1, 2 and 4 NVLink-connected H200s instead of 1-8 V100s of a DGX-1, stand-ins of PA and UK "
                          "at about 2% scale under the V100's memory scaled like the graph; DGL+C is a re-implementation "
                          "of its policy.")
    impls = ("dgl_cache", "xgnn")
    paper_values = paper_values()
    parameters = common_parameters(
        gpus=Param((1, 2, 4), int_list, "GPU counts (paper: 1, 2, 4, 8; those above the machine's are left out; "
                                        "CPU: 1 and 2 ranks)"),
        combos=Param(COMBOS, combo_list, "model:dataset pairs (paper: gcn:PA, sage:UK)"),
        systems=Param(SYSTEMS11, system_list(*SYSTEMS11), "systems: dgl_cache, xgnn"),
    )

    def report(self, rows, runs) -> ReportArtifact:
        rep = TrainingReport(self, rows, runs, systems=SYSTEMS11)
        shown = list(rep.newest(lambda r: (r["params"]["model"], r["params"]["dataset"], r["params"]["system"],
                                           r["world"])).values())
        out, claims, scal = scaling_rows(shown, rep.kind, rep.notes)
        history, _, _ = scaling_rows(rep.records, rep.machine, [])
        table = rep.table(out, empty="no Fig. 11 rows", drop_empty=False)
        headline = ""
        if wins := [c.effect.value > 1 for c in claims if c.effect is not None and "/ XGNN" in c.what]:
            kinds = ", ".join(sorted({rep.kind(rec) for rec in shown}))
            headline = f"{kinds}: XGNN faster than DGL+C at {sum(wins)}/{len(wins)} GPU counts"
            xs, ds_ = ([s for name, s in scal if name == system] for system in ("xgnn", "dgl_cache"))
            if xs and ds_:
                headline += (f"; speedup from fewest to most GPUs XGNN {span(xs)}x, DGL+C {span(ds_)}x (paper: XGNN "
                             "faster, scales better)")
        rep.notes.append(NOTE)
        caption = rep.caption(
            "End-to-end epoch time of DGL+C and XGNN with 1, 2 and 4 GPUs (CPU: ranks), the same batch per GPU for "
            f"every count; the paper's Fig. 11 measured 1-8 GPUs ({PAPER_HARDWARE}) and printed no values. {SHOWN}",
            shown=shown)
        return rep.artifact("XGNN Fig. 11: scalability", caption, table, scaling_figure(shown, rep.kind),
                            headline=headline, claims=claims, history=rep.table(history, empty="no Fig. 11 rows",
                                                                                drop_empty=False),
                            skips=(r := rep.shown_rows(shown))[r["impl"].isin({SYSTEMS[s].impl for s in SYSTEMS11})])


def scaling_rows(records, machine, notes: list[str]) -> tuple[list[dict], list, list[tuple]]:
    """A row per machine, combination and GPU count (both systems' epoch times and cache ratios), the
    paper's claims (XGNN faster at each count; XGNN's speedup from its fewest to its most GPUs above
    DGL+C's) and each system's speedup from its fewest to its most GPUs (a note each)."""
    out, claims, scal = [], [], []
    for (mach, model, ds), records_ in group(records, lambda r: (machine(r), r["params"]["model"],
                                                                 r["params"]["dataset"])).items():
        systems = group(records_, lambda r: r["params"]["system"], lambda r: r["world"])
        for w in sorted({r["world"] for r in records_}):
            row = {"Machine": mach, "Model+DS": combo(model, ds), "GPUs": w}
            for system in SYSTEMS11:
                rec = systems.get(system, {}).get(w)
                row[f"{SYSTEMS[system].label} s"] = fmt(cell(rec, "epoch_time"))
                row[f"{SYSTEMS[system].label} R%"] = percent(cell(rec, "feat_ratio"))
            d, x = (cell(systems.get(s, {}).get(w), "epoch_time") for s in SYSTEMS11)
            row["DGL+C / XGNN"] = fmt(ratio(d, x))
            if ratio(d, x) is not None:
                claims.append(speedup_claim(f"{mach} {combo(model, ds)}, {w} GPU(s): DGL+C / XGNN epoch time",
                                            systems["dgl_cache"][w], systems["xgnn"][w], "epoch_time", None))
            out.append(row)
        scaling = {}
        for system in SYSTEMS11:
            if len(times := epoch_times(systems.get(system, {}))) >= 2:
                (w0, t0), (w1, t1) = times[0], times[-1]
                scal.append((system, t0 / t1))
                a, b = (estimate(systems[system][w], "epoch_time") for w in (w0, w1))
                if a is not None and b is not None and a.value > 0 and b.value > 0:
                    scaling[system] = ((w0, w1), a.ratio(b), {systems[system][w]["run_id"] for w in (w0, w1)})
                notes.append(f"{mach} {combo(model, ds)} {SYSTEMS[system].label}: {w0} -> {w1} GPUs speeds the epoch "
                             f"up {t0 / t1:.2f}x (ideal {w1 / w0:.0f}x)")
        if len(scaling) == 2 and scaling["xgnn"][0] == scaling["dgl_cache"][0]:
            (w0, w1), x, runs = scaling["xgnn"]
            claims.append(Claim(f"{mach} {combo(model, ds)}: XGNN's speedup from {w0} to {w1} GPUs / DGL+C's",
                                x.ratio(scaling["dgl_cache"][1]), Band.beyond(1.0, text="XGNN scales better (the paper "
                                                                                       "prints no values)"),
                                "scales better", runs=tuple(sorted(runs | scaling["dgl_cache"][2]))))
    return out, claims, scal


def scaling_figure(shown: list[dict], kind):
    """A panel per combination (the paper's (a) GCN on PA, (b) GraphSAGE on UK): epoch time against
    GPUs, a line per system (and machine kind), hollow markers where an epoch was extrapolated."""
    combos = list(dict.fromkeys((r["params"]["model"], r["params"]["dataset"]) for r in shown))
    kinds = sorted({kind(r) for r in shown})
    panels = []
    for i, (model, ds) in enumerate(combos):
        series = []
        for k, style in zip(kinds, ("-", "--", ":", "-.")):
            mine = [r for r in shown if kind(r) == k and (r["params"]["model"], r["params"]["dataset"]) == (model, ds)]
            systems = group(mine, lambda r: r["params"]["system"], lambda r: r["world"])
            for s in SYSTEMS11:
                if times := epoch_times(systems.get(s, {})):
                    capped = any(extrapolated(systems[s][w]) for w, _ in times)
                    worlds, seconds = zip(*times)
                    series.append(Series(f"{SYSTEMS[s].label}, {k}" + (" (hollow: extrapolated)" if capped else ""),
                                         seconds, xs=worlds, style={"linestyle": style, "marker": "o",
                                                                    **({"markerfacecolor": "white"} if capped else {})}))
        worlds = sorted({w for one in series for w in one.xs})
        panels.append(Panel(series, kind="lines", legend={"fontsize": 9},
                            x=Axis("GPUs", log=bool(worlds), base=2, ticks=worlds or None),
                            y=Axis("seconds per epoch", limits=(0, None)),
                            title=f"({'abcdefgh'[i]}) {MODEL_NAMES[model]} on {SHORT.get(ds, ds)}"))
    return draw(FigureSpec(panels, ncols=len(panels), size=(10, 3.8)))


def epoch_times(per_world: dict) -> list[tuple[int, float]]:
    """(GPUs, seconds) of the points that trained, by GPU count."""
    return [(w, t) for w in sorted(per_world) if finite(t := cell(per_world[w], "epoch_time"))]


NOTE = ("Paper (section 6.4, no numbers printed): XGNN outperforms DGL+C and scales better, because more GPUs hold "
        "more of XGNN's partitioned topology and features (less host traffic) and more NVLinks serve its remote "
        "reads; DGL+C replicates both on every GPU. R%: feature rows on the GPUs.")
