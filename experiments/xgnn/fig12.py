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
from harness.reportkit import bars, figure, finish, finite, numeric, ratio, verdict

from .fig11 import ScalingExperiment
from .training import TrainingReport, cell, combo, combo_list, common_parameters, fmt, percent, system_list


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
        rep = TrainingReport(self, rows, runs, systems=("xgnn",))
        wanted = [r for r in rep.records if (r["params"]["model"], r["params"]["dataset"]) == ("sage", "uk-2006-05")]
        rep.records = wanted or rep.records         # the paper's GraphSAGE on UK where measured
        out = []
        for rec in sorted(rep.records, key=lambda r: (r["run_id"], r["params"]["model"],
                                                                 r["params"]["dataset"], r["world"])):
            topo, feat = cell(rec, "memory_topology_gpus"), cell(rec, "memory_features_gpus")
            share = ratio(topo, topo + feat) if finite(topo) and finite(feat) else None
            e = rec["extra"].get("epoch_time", {})
            batches = e.get("batches_full")
            s, gt, t = (rec["metrics"].get(k) for k in ("sample_time", "gather_time", "train_time"))
            out.append({"Machine": rep.machine(rec), "Model+DS": combo(rec["params"]["model"], rec["params"]["dataset"]),
                        "GPUs": rec["world"], "topology GiB (all GPUs)": fmt(topo), "features GiB (all GPUs)": fmt(feat),
                        "topology share %": fmt(100 * share) if share is not None else None,
                        "R% (features)": percent(cell(rec, "feat_ratio")), "graph ratio %": percent(cell(rec, "graph_ratio")),
                        "Sampler ms/batch": fmt(1e3 * s / batches) if finite(s) and batches else None,
                        "Trainer ms/batch": fmt(1e3 * (gt + t) / batches) if finite(gt) and finite(t) and batches else None,
                        "batches/GPU": batches, "E2E s": fmt(cell(rec, "epoch_time")),
                        "budget GiB/GPU": fmt(e.get("budget_bytes") / 2 ** 30) if e.get("budget_bytes") else None})
        table = rep.table(out, empty="no XGNN rows (run xgnn.fig12 or xgnn.fig11)", single=("Machine", "Model+DS"),
                          drop_empty=False)
        headline, status = "", "measured"
        ok = table.dropna(subset=["features GiB (all GPUs)"]) if "features GiB (all GPUs)" in table else table
        if out and len(ok) >= 2:
            first, last = ok.iloc[0], ok.iloc[-1]
            grows = last["features GiB (all GPUs)"] > first["features GiB (all GPUs)"]
            most = finite(first.get("topology share %")) and first["topology share %"] > 50
            headline = (f"{first['GPUs']} GPU(s): topology {first['topology share %']:.0f}% of the stores; "
                        f"{last['GPUs']} GPUs: features {last['features GiB (all GPUs)']:.3g} GiB vs "
                        f"{first['features GiB (all GPUs)']:.3g} GiB (paper: topology dominates on 1 GPU, the "
                        "feature cache grows with GPUs)")
            status = verdict([grows, most])
        rep.notes += NOTES
        fig, axes = figure((10, 3.8), ncols=2)
        memory = numeric(table, "GPUs", ["topology GiB (all GPUs)", "features GiB (all GPUs)"])
        if not memory.dropna(how="all").empty:
            bars(axes[0], memory, stacked=True)
        times = numeric(table, "GPUs", ["Sampler ms/batch", "Trainer ms/batch"])
        if not times.dropna(how="all").empty:
            bars(axes[1], times)
        axes[0].set(title="(a) GPU memory of the stores", ylabel="GiB over all GPUs")
        axes[1].set(title="(b) Sampler and Trainer per mini-batch", ylabel="ms per mini-batch")
        caption = rep.caption(
            "XGNN's GPU memory (topology and features, summed over the GPUs) and mini-batch Sampler / Trainer time "
            "with 1, 2 and 4 GPUs (CPU: ranks); the paper's Fig. 12 measured 1-8 V100s of a DGX-1.")
        return rep.artifact("XGNN Fig. 12: memory and mini-batch time vs GPUs", caption, table, finish(fig),
                            headline=headline, status=status, skips=rep.rows[rep.rows["impl"] == "xgnn"])


NOTES = [
    "Paper (section 6.5, no numbers printed): 1 GPU - most memory holds the topology; 2 GPUs - the topology is split "
    "over both and more features are cached (the Trainer does not improve: one PCIe switch); 4 GPUs - one copy of "
    "the topology over the GPUs, a bigger feature cache, a faster Trainer; 8 GPUs - two copies of each, the same "
    "per-batch times, half the epoch.",
    "Memory: the GPU bytes of XGNN's stores (topology and feature partitions, padded as allocated) summed over the "
    "GPUs. Per-batch times: the synchronized epoch's sampling and extraction + training seconds over its mini-batches "
    "per GPU.",
]
