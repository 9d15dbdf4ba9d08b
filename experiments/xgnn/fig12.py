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
from harness.reportkit import (Axis, Band, Claim, Estimate, FigureSpec, Panel, Series, draw, figure, finite, group,
                               ratio)

from . import PALETTE
from .fig11 import ScalingExperiment
from .training import (MODEL_NAMES, SHORT, SHOWN, SYSTEMS, TrainingReport, cell, combo, combo_list, common_parameters,
                       fmt, percent, system_list)


def paper_values() -> tuple[PaperValue, ...]:
    return (PaperValue("Fig. 12, section 6.5", "xgnn", {"model": "sage", "dataset": "uk-2006-05", "gpus": 1},
                       "topology_share_of_memory", 0.5, "", "'most of memory is used by the graph topology' "
                                                            "(no numbers printed): more than half"),)


@register_experiment
class Fig12(ScalingExperiment):
    title = "XGNN Fig. 12: GPU memory of topology and features, and mini-batch Sampler/Trainer time, vs GPUs"
    differs_from_paper = ("1, 2 and 4 NVLink-connected H200s (no 8-GPU cube-mesh, no GPU pair behind one PCIe switch) "
                          "instead of 1-8 V100s of a DGX-1, a UK stand-in at 2% scale under the V100's memory scaled "
                          "like the graph.")
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
        shown = sorted(rep.newest(lambda r: (r["params"]["model"], r["params"]["dataset"], r["world"])).values(),
                       key=lambda r: (rep.kind(r), r["params"]["model"], r["params"]["dataset"], r["world"]))
        out = [memory_row(rec, rep.kind) for rec in shown]
        history = [memory_row(rec, rep.machine) for rec in sorted(
            rep.records, key=lambda r: (r["run_id"], r["params"]["model"], r["params"]["dataset"], r["world"]))]
        table = rep.table(out, empty="no XGNN rows (run xgnn.fig12 or xgnn.fig11)", single=("Machine", "Model+DS"),
                          drop_empty=False)
        claims = fig12_claims(shown, rep.kind)
        headline = ""
        ok = table.dropna(subset=["features GiB (all GPUs)"]) if "features GiB (all GPUs)" in table else table
        if out and len(ok) >= 2:
            first, last = ok.iloc[0], ok.iloc[-1]
            kinds = ", ".join(sorted({rep.kind(rec) for rec in shown}))
            headline = (f"{kinds}: Trainer {first['Trainer ms/batch']:.3g} ms per mini-batch on {int(first['GPUs'])} "
                        f"GPU, {last['Trainer ms/batch']:.3g} ms on {int(last['GPUs'])} (paper: falls); "
                        f"{int(first['GPUs'])} GPU: topology {first['topology share %']:.0f}% of the stores; "
                        f"{int(last['GPUs'])} GPUs: features {last['features GiB (all GPUs)']:.3g} GiB vs "
                        f"{first['features GiB (all GPUs)']:.3g} GiB (paper: topology dominates on 1 GPU, the "
                        "feature cache grows with GPUs)")
        rep.notes += NOTES
        caption = rep.caption(
            "XGNN's GPU memory (topology and features, summed over the GPUs) and mini-batch Sampler / Trainer time "
            "with 1, 2 and 4 GPUs (CPU: ranks); the paper's Fig. 12 measured 1-8 V100s of a DGX-1 and printed no "
            f"values. {SHOWN}", shown=shown)
        return rep.artifact("XGNN Fig. 12: memory and mini-batch time vs GPUs", caption, table,
                            memory_figure(shown, rep.kind), headline=headline, claims=claims,
                            skips=(r := rep.shown_rows(shown))[r["impl"] == SYSTEMS["xgnn"].impl],
                            history=rep.table(history, empty="no XGNN rows", single=(), drop_empty=False))


def fig12_claims(shown: list[dict], kind) -> list[Claim]:
    """Per machine kind, from its fewest to its most GPUs: the topology's share of the stores on the
    fewest (the paper: most of the memory), the feature cache growing, and the Trainer's time per
    mini-batch falling (the paper, 1 to 4 GPUs: a bigger feature cache, a faster Trainer)."""
    out = []
    for machine, recs in group(sorted(shown, key=lambda r: r["world"]), kind).items():
        recs = [r for r in recs if r["status"] == "ok"]
        if len(recs) < 2:
            continue
        first, last = recs[0], recs[-1]
        runs = tuple(sorted({first["run_id"], last["run_id"]}))
        topo, feat = (cell(first, m) for m in ("memory_topology_gpus", "memory_features_gpus"))
        if finite(topo) and finite(feat) and topo + feat > 0:
            out.append(Claim(f"{machine}: topology share of the stores on {first['world']} GPU",
                             Estimate.exact(100 * topo / (topo + feat), "exact: bytes allocated"),
                             Band.between(50, 100, "more than half (the paper: most of the memory)"),
                             "most", null=None, runs=runs, unit="%"))
        grown = ratio(cell(last, "memory_features_gpus"), cell(first, "memory_features_gpus"))
        if grown is not None:
            out.append(Claim(f"{machine}: feature cache on {last['world']} GPUs / on {first['world']}",
                             Estimate.exact(grown, "exact: bytes allocated"), Band.beyond(1.0, text="grows (the paper "
                             "prints no size)"), "grows", runs=runs))
        a, b = trainer_per_batch(first), trainer_per_batch(last)
        if a is not None and b is not None:
            out.append(Claim(f"{machine}: Trainer ms per mini-batch on {first['world']} GPU / on {last['world']}",
                             a.ratio(b), Band.beyond(1.0, text="falls (the paper prints no times)"), "falls",
                             runs=runs))
    return out


def trainer_per_batch(rec) -> Estimate | None:
    """Extraction + training per mini-batch of the synchronized epochs, with its t interval."""
    stats = rec.get("stats", {})
    batches = rec["extra"].get("epoch_time", {}).get("batches_full")
    e, t = (Estimate.from_stats(stats.get(m), "synced epochs") for m in ("gather_time", "train_time"))
    if e is None or t is None or not batches:
        return None
    return e.plus(t).times(1 / batches)


def memory_row(rec, machine) -> dict:
    """A point's row: GPU memory of the stores over the GPUs and the per-batch stage times."""
    topo, feat = cell(rec, "memory_topology_gpus"), cell(rec, "memory_features_gpus")
    share = ratio(topo, topo + feat) if finite(topo) and finite(feat) else None
    e = rec["extra"].get("epoch_time", {})
    batches = e.get("batches_full")
    s, gt, t = (rec["metrics"].get(k) for k in ("sample_time", "gather_time", "train_time"))
    return {"Machine": machine(rec), "Model+DS": combo(rec["params"]["model"], rec["params"]["dataset"]),
            "GPUs": rec["world"], "topology GiB (all GPUs)": fmt(topo), "features GiB (all GPUs)": fmt(feat),
            "topology share %": fmt(100 * share) if share is not None else None,
            "R% (features)": percent(cell(rec, "feat_ratio")), "graph ratio %": percent(cell(rec, "graph_ratio")),
            "Sampler ms/batch": fmt(1e3 * s / batches) if finite(s) and batches else None,
            "Trainer ms/batch": fmt(1e3 * (gt + t) / batches) if finite(gt) and finite(t) and batches else None,
            "batches/GPU": batches, "E2E s": fmt(cell(rec, "epoch_time")),
            "budget GiB/GPU": fmt(e.get("budget_bytes") / 2 ** 30) if e.get("budget_bytes") else None}


def memory_figure(shown: list[dict], kind):
    """(a) the stores' GPU memory (topology under features, stacked) and (b) the Sampler and Trainer
    time of a mini-batch, against the GPU count, on the machine kind with the most GPUs."""
    if not shown:
        return figure((10, 3.8), ncols=2)[0]
    top = max(shown, key=lambda r: r["world"])
    mine = [memory_row(r, kind) for r in shown if kind(r) == kind(top)
            and (r["params"]["model"], r["params"]["dataset"]) == (top["params"]["model"], top["params"]["dataset"])]
    gpus = [str(r["GPUs"]) for r in mine]
    where = f"{MODEL_NAMES[top['params']['model']]} on {SHORT.get(top['params']['dataset'])}, {kind(top)}"
    stores = [Series(store, [r[f"{store} GiB (all GPUs)"] or 0 for r in mine]) for store in ("topology", "features")]
    stages = [Series(stage, [r[f"{stage} ms/batch"] for r in mine]) for stage in ("Sampler", "Trainer")]
    return draw(FigureSpec(
        [Panel(stores, kind="stacked", groups=gpus, width=0.6, x=Axis("GPUs"), y=Axis("GiB over all GPUs"),
               title=f"(a) GPU memory of the stores ({where})", title_size=10),
         Panel(stages, groups=gpus, x=Axis("GPUs"), y=Axis("ms per mini-batch"), legend={"loc": "upper left"},
               title="(b) Sampler and Trainer per mini-batch", title_size=10)],
        PALETTE, ncols=2, size=(10, 3.8)))


NOTES = [
    "Paper (section 6.5, no numbers printed): 1 GPU - most memory holds the topology; 2 GPUs - the topology is split "
    "over both and more features are cached (the Trainer does not improve: one PCIe switch); 4 GPUs - one copy of "
    "the topology over the GPUs, a bigger feature cache, a faster Trainer; 8 GPUs - two copies of each, the same "
    "per-batch times, half the epoch.",
    "Memory: the GPU bytes of XGNN's stores (topology and feature partitions, padded as allocated) summed over the "
    "GPUs. Per-batch times: the synchronized epoch's sampling and extraction + training seconds over its mini-batches "
    "per GPU.",
]
