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
from harness.reportkit import figure, finish, finite, group, lines, ratio, span

from . import PAPER_HARDWARE
from .training import (SYSTEMS, TrainingReport, XGNNTraining, cell, combo, combo_list, common_parameters, fmt, percent,
                       system_list)

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
        groups = group(rep.records, lambda r: (rep.machine(r), r["params"]["model"], r["params"]["dataset"]))
        out, wins, scal = [], [], []
        for (machine, model, ds), records in groups.items():
            systems = group(records, lambda r: r["params"]["system"], lambda r: r["world"])
            for w in sorted({r["world"] for r in records}):
                row = {"Machine": machine, "Model+DS": combo(model, ds), "GPUs": w}
                for system in SYSTEMS11:
                    rec = systems.get(system, {}).get(w)
                    row[f"{SYSTEMS[system].label} s"] = fmt(cell(rec, "epoch_time"))
                    row[f"{SYSTEMS[system].label} R%"] = percent(cell(rec, "feat_ratio"))
                d, x = (cell(systems.get(s, {}).get(w), "epoch_time") for s in SYSTEMS11)
                row["DGL+C / XGNN"] = fmt(ratio(d, x))
                if ratio(d, x) is not None:
                    wins.append(ratio(d, x) > 1)
                out.append(row)
            for system in SYSTEMS11:
                if len(times := epoch_times(systems.get(system, {}))) >= 2:
                    (w0, t0), (w1, t1) = times[0], times[-1]
                    scal.append((system, t0 / t1))
                    rep.notes.append(f"{machine} {combo(model, ds)} {SYSTEMS[system].label}: {w0} -> {w1} GPUs "
                                     f"speeds the epoch up {t0 / t1:.2f}x (ideal {w1 / w0:.0f}x)")
        table = rep.table(out, empty="no Fig. 11 rows", drop_empty=False)
        headline, status = "", "measured"
        if wins:
            headline = f"XGNN faster than DGL+C at {sum(wins)}/{len(wins)} GPU counts"
            xs, ds_ = ([s for name, s in scal if name == system] for system in ("xgnn", "dgl_cache"))
            if xs and ds_:
                headline += (f"; speedup from fewest to most GPUs XGNN {span(xs)}x, DGL+C {span(ds_)}x (paper: XGNN "
                             "faster, scales better)")
            better_scaling = bool(xs and ds_ and min(xs) >= max(ds_) * 0.95)
            status = "reproduced" if all(wins) and better_scaling else "partly" if any(wins) else "not reproduced"
        rep.notes.append(NOTE)
        fig, axes = figure((5 * max(1, len(groups)), 3.8), ncols=max(1, len(groups)), squeeze=False)
        for ax, ((machine, model, ds), records) in zip(axes[0], groups.items()):
            systems = group(records, lambda r: r["params"]["system"], lambda r: r["world"])
            lines(ax, [(SYSTEMS[s].label, *zip(*times)) for s in SYSTEMS11
                       if (times := epoch_times(systems.get(s, {})))],
                  xlabel="GPUs", ylabel="seconds per epoch", legend_size=None, grid=False, marker="o")
            ax.legend()
            ax.set_title(combo(model, ds))
        caption = rep.caption(
            "End-to-end epoch time of DGL+C and XGNN with 1, 2 and 4 GPUs (CPU: ranks), the same batch per GPU for "
            f"every count; the paper's Fig. 11 measured 1-8 GPUs ({PAPER_HARDWARE}).")
        return rep.artifact("XGNN Fig. 11: scalability", caption, table, finish(fig), headline=headline,
                            status=status, skips=rep.rows[rep.rows["impl"].isin(SYSTEMS11)])


def epoch_times(per_world: dict) -> list[tuple[int, float]]:
    """(GPUs, seconds) of the points that trained, by GPU count."""
    return [(w, t) for w in sorted(per_world) if finite(t := cell(per_world[w], "epoch_time"))]


NOTE = ("Paper (section 6.4, no numbers printed): XGNN outperforms DGL+C and scales better, because more GPUs hold "
        "more of XGNN's partitioned topology and features (less host traffic) and more NVLinks serve its remote "
        "reads; DGL+C replicates both on every GPU. R%: feature rows on the GPUs.")
