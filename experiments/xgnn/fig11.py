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
from harness.reportkit import caption_hardware, run_labels, skip_notes

from harness.reportkit import finite
from . import PAPER_HARDWARE
from .training import (MODEL_SHORT, SHORT, SYSTEMS, XGNNTraining, budget_caption, cell, collect, combo_list,
                       common_parameters, datasets_caption, drop_single, fmt, ratio, settings_caption, system_list)

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
        import matplotlib.pyplot as plt
        import pandas as pd

        labels = run_labels(rows, runs)
        records = [r for r in collect(rows, prefer=self.id) if r["params"]["system"] in SYSTEMS11]
        groups: dict = {}
        for rec in records:
            p = rec["params"]
            groups.setdefault((labels.get(rec["run_id"], rec["run_id"]), p["model"], p["dataset"]), {}).setdefault(
                p["system"], {})[rec["world"]] = rec
        out, notes, wins, scal = [], [], [], []
        for (machine, model, ds), systems in groups.items():
            worlds = sorted({w for per in systems.values() for w in per})
            for w in worlds:
                row = {"Machine": machine, "Model+DS": f"{MODEL_SHORT[model]}+{SHORT.get(ds, ds)}", "GPUs": w}
                for system in SYSTEMS11:
                    rec = systems.get(system, {}).get(w)
                    row[f"{SYSTEMS[system].label} s"] = fmt(cell(rec, "epoch_time"))
                    r = cell(rec, "feat_ratio")
                    row[f"{SYSTEMS[system].label} R%"] = fmt(100 * r) if finite(r) else r
                d, x = (cell(systems.get(s, {}).get(w), "epoch_time") for s in SYSTEMS11)
                row["DGL+C / XGNN"] = fmt(ratio(d, x))
                if ratio(d, x) is not None:
                    wins.append(ratio(d, x) > 1)
                out.append(row)
            for system in SYSTEMS11:
                per = systems.get(system, {})
                ok = [(w, cell(per[w], "epoch_time")) for w in sorted(per) if finite(cell(per[w], "epoch_time"))]
                if len(ok) >= 2:
                    (w0, t0), (w1, t1) = ok[0], ok[-1]
                    scal.append((system, t0 / t1, w1 / w0))
                    notes.append(f"{machine} {MODEL_SHORT[model]}+{SHORT.get(ds, ds)} {SYSTEMS[system].label}: "
                                 f"{w0} -> {w1} GPUs speeds the epoch up {t0 / t1:.2f}x (ideal {w1 / w0:.0f}x)")
        table = pd.DataFrame.from_records(out)
        headline, status = "", "measured"
        if table.empty:
            table = pd.DataFrame({"note": ["no Fig. 11 rows"]})
        else:
            table = drop_single(table, ("Machine",))
        if wins:
            headline = f"XGNN faster than DGL+C at {sum(wins)}/{len(wins)} GPU counts"
            xs = [s for sys_, s, _ in scal if sys_ == "xgnn"]
            ds_ = [s for sys_, s, _ in scal if sys_ == "dgl_cache"]
            better_scaling = bool(xs and ds_ and min(xs) >= max(ds_) * 0.95)
            if xs and ds_:
                headline += (f"; speedup from fewest to most GPUs XGNN {min(xs):.2f}-{max(xs):.2f}x, DGL+C "
                             f"{min(ds_):.2f}-{max(ds_):.2f}x (paper: XGNN faster, scales better)")
            status = ("reproduced" if all(wins) and better_scaling else "partly" if any(wins) else "not reproduced")
        notes.append("Paper (section 6.4, no numbers printed): XGNN outperforms DGL+C and scales better, because more "
                     "GPUs hold more of XGNN's partitioned topology and features (less host traffic) and more NVLinks "
                     "serve its remote reads; DGL+C replicates both on every GPU. R%: feature rows on the GPUs.")
        notes += skip_notes(rows[rows["impl"].isin(list(SYSTEMS11))], labels)
        fig, axes = plt.subplots(1, max(1, len(groups)), figsize=(5 * max(1, len(groups)), 3.8), squeeze=False)
        for ax, ((machine, model, ds), systems) in zip(axes[0], groups.items()):
            for system in SYSTEMS11:
                per = systems.get(system, {})
                pts = [(w, cell(per[w], "epoch_time")) for w in sorted(per) if finite(cell(per[w], "epoch_time"))]
                if pts:
                    ax.plot([w for w, _ in pts], [t for _, t in pts], marker="o", label=SYSTEMS[system].label)
            ax.set_title(f"{MODEL_SHORT[model]}+{SHORT.get(ds, ds)}")
            ax.set_xlabel("GPUs")
            ax.set_ylabel("seconds per epoch")
            ax.legend()
        fig.tight_layout()
        caption = ("End-to-end epoch time of DGL+C and XGNN with 1, 2 and 4 GPUs (CPU: ranks), the same batch per "
                   f"GPU for every count; the paper's Fig. 11 measured 1-8 GPUs ({PAPER_HARDWARE}). GPU memory "
                   f"budget: {budget_caption(records)}. Datasets: {datasets_caption(records)}. Models: "
                   f"{settings_caption(records)}. " + caption_hardware(runs))
        return ReportArtifact("fig11", "XGNN Fig. 11: scalability", caption, table, notes, fig,
                              headline=headline, status=status)
