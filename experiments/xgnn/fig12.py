"""XGNN Fig. 12: GPU memory of topology and features over all GPUs, and the Sampler / Trainer time
of a mini-batch, with 1, 2, 4 (paper: and 8) GPUs, XGNN training GraphSAGE on UK.

The paper: on one GPU most of the memory holds the topology; on two the topology is split over
both and more features fit (the Trainer does not improve: two GPUs share one PCIe switch); on four
one copy of the topology spans the GPUs, the feature cache grows and the Trainer speeds up; on eight
there are two copies of each (two cliques) and the per-batch times stay, while the epoch halves.
Here XGNN under the V100 budget rule (training.py) on 1, 2 and 4 GPUs (CPU: 1 and 2 ranks): memory
is the stores' GPU bytes summed over the GPUs, the per-batch times are the synchronized epoch's
sampling and extraction + training divided by its mini-batches per GPU. The report also reads
xgnn.fig11's rows (its XGNN GraphSAGE+UK points are these), so a Fig. 11 run gives this figure.
"""

from __future__ import annotations

from harness.argtypes import int_list
from harness.artifact import ReportArtifact
from harness.experiment import PaperValue, Param
from harness.registry import register_experiment
from harness.reportkit import caption_hardware, run_labels, skip_notes

from .fig11 import ScalingExperiment
from harness.reportkit import finite
from .training import (MODEL_SHORT, SHORT, budget_caption, cell, collect, combo_list, common_parameters,
                       datasets_caption, drop_single, fmt, settings_caption, system_list)


def paper_values() -> tuple[PaperValue, ...]:
    return (PaperValue("Fig. 12, section 6.5", "xgnn", {"model": "sage", "dataset": "uk-2006-05", "gpus": 1},
                       "topology_share_of_memory", 0.5, "", "'most of memory is used by the graph topology' "
                                                            "(no numbers printed): more than half"),)


@register_experiment
class Fig12(ScalingExperiment):
    title = "XGNN Fig. 12: GPU memory of topology and features, and mini-batch Sampler/Trainer time, vs GPUs"
    impls = ("xgnn",)
    derives_from = ("xgnn.fig11",)
    paper_values = paper_values()
    parameters = common_parameters(
        gpus=Param((1, 2, 4), int_list, "GPU counts (paper: 1, 2, 4, 8; CPU: 1 and 2 ranks)"),
        combos=Param((("sage", "uk-2006-05"),), combo_list, "model:dataset pairs (paper: sage:UK)"),
        systems=Param(("xgnn",), system_list("xgnn"), "system: xgnn"),
    )

    def report(self, rows, runs) -> ReportArtifact:
        import matplotlib.pyplot as plt
        import pandas as pd

        labels = run_labels(rows, runs)
        records = [r for r in collect(rows, prefer=self.id) if r["params"]["system"] == "xgnn"]
        prefer = [r for r in records if (r["params"]["model"], r["params"]["dataset"]) == ("sage", "uk-2006-05")]
        records = prefer or records
        out, notes = [], []
        for rec in sorted(records, key=lambda r: (r["run_id"], r["params"]["model"], r["params"]["dataset"],
                                                  r["world"])):
            p = rec["params"]
            row = {"Machine": labels.get(rec["run_id"], rec["run_id"]),
                   "Model+DS": f"{MODEL_SHORT[p['model']]}+{SHORT.get(p['dataset'], p['dataset'])}",
                   "GPUs": rec["world"]}
            topo, feat = cell(rec, "memory_topology_gpus"), cell(rec, "memory_features_gpus")
            row["topology GiB (all GPUs)"] = fmt(topo)
            row["features GiB (all GPUs)"] = fmt(feat)
            row["topology share %"] = fmt(100 * topo / (topo + feat)) if finite(topo) and finite(feat) and \
                (topo + feat) > 0 else None
            r, g = cell(rec, "feat_ratio"), cell(rec, "graph_ratio")
            row["R% (features)"] = fmt(100 * r) if finite(r) else r
            row["graph ratio %"] = fmt(100 * g) if finite(g) else g
            e = rec["extra"].get("epoch_time", {})
            batches = e.get("batches_full")
            s, gt, t = (rec["metrics"].get(k) for k in ("sample_time", "gather_time", "train_time"))
            row["Sampler ms/batch"] = fmt(1e3 * s / batches) if finite(s) and batches else None
            row["Trainer ms/batch"] = fmt(1e3 * (gt + t) / batches) if finite(gt) and finite(t) and batches else None
            row["batches/GPU"] = batches
            row["E2E s"] = fmt(cell(rec, "epoch_time"))
            row["budget GiB/GPU"] = fmt(e.get("budget_bytes") / 2 ** 30) if e.get("budget_bytes") else None
            out.append(row)
        table = pd.DataFrame.from_records(out)
        headline, status = "", "measured"
        if table.empty:
            table = pd.DataFrame({"note": ["no XGNN rows (run xgnn.fig12 or xgnn.fig11)"]})
        else:
            table = drop_single(table, ("Machine", "Model+DS"))
            ok = table.dropna(subset=["features GiB (all GPUs)"]) if "features GiB (all GPUs)" in table else table
            if len(ok) >= 2:
                first, last = ok.iloc[0], ok.iloc[-1]
                grows = last["features GiB (all GPUs)"] > first["features GiB (all GPUs)"]
                most = finite(first.get("topology share %")) and first["topology share %"] > 50
                headline = (f"{first['GPUs']} GPU(s): topology {first['topology share %']:.0f}% of the stores; "
                            f"{last['GPUs']} GPUs: features {last['features GiB (all GPUs)']:.3g} GiB vs "
                            f"{first['features GiB (all GPUs)']:.3g} GiB (paper: topology dominates on 1 GPU, the "
                            "feature cache grows with GPUs)")
                status = "reproduced" if grows and most else "partly" if grows or most else "not reproduced"
        notes.append("Paper (section 6.5, no numbers printed): 1 GPU - most memory holds the topology; 2 GPUs - the "
                     "topology is split over both and more features are cached (the Trainer does not improve: one "
                     "PCIe switch); 4 GPUs - one copy of the topology over the GPUs, a bigger feature cache, a faster "
                     "Trainer; 8 GPUs - two copies of each, the same per-batch times, half the epoch.")
        notes.append("Memory: the GPU bytes of XGNN's stores (topology and feature partitions, padded as allocated) "
                     "summed over the GPUs. Per-batch times: the synchronized epoch's sampling and extraction + "
                     "training seconds over its mini-batches per GPU.")
        notes += skip_notes(rows[rows["impl"] == "xgnn"], labels)
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        if "GPUs" in table and "topology GiB (all GPUs)" in table:
            plot = table.set_index("GPUs")
            mem = plot[["topology GiB (all GPUs)", "features GiB (all GPUs)"]].apply(pd.to_numeric, errors="coerce")
            if not mem.dropna(how="all").empty:
                mem.plot.bar(ax=axes[0], stacked=True)
            axes[0].set_ylabel("GiB over all GPUs")
            tm = plot[["Sampler ms/batch", "Trainer ms/batch"]].apply(pd.to_numeric, errors="coerce")
            if not tm.dropna(how="all").empty:
                tm.plot.bar(ax=axes[1])
            axes[1].set_ylabel("ms per mini-batch")
        axes[0].set_title("(a) GPU memory of the stores")
        axes[1].set_title("(b) Sampler and Trainer per mini-batch")
        fig.tight_layout()
        caption = ("XGNN's GPU memory (topology and features, summed over the GPUs) and mini-batch Sampler / Trainer "
                   "time with 1, 2 and 4 GPUs (CPU: ranks); the paper's Fig. 12 measured 1-8 V100s of a DGX-1. GPU "
                   f"memory budget: {budget_caption(records)}. Datasets: {datasets_caption(records)}. Models: "
                   f"{settings_caption(records)}. " + caption_hardware(runs))
        return ReportArtifact("fig12", "XGNN Fig. 12: memory and mini-batch time vs GPUs", caption, table, notes, fig,
                              headline=headline, status=status)
