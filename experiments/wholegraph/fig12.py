"""WholeGraph Fig. 12: GPU utilization over time while training, PyG / DGL / WholeGraph.

The paper plots the utilization of one GPU of the 8 during training on ogbn-papers100M: PyG and
DGL fluctuate and sometimes drop to zero (the GPU waits for data from the host), WholeGraph stays
at 95% and above. Here rank 0's GPU is sampled through NVML in a side thread during the measured
epochs of every training point (``utilization`` rows; summary and trace in their extra). On CPU
ranks the same rows hold the training process's CPU utilization, labelled so (there is no GPU to
watch). A table5 run gives these rows (``derives_from``); run alone this trains papers100M with
GraphSAGE.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.registry import register_experiment
from harness.reportkit import Band, Claim, Estimate, Report, finite, group, span

from . import PAPER_HARDWARE
from .training import (MODEL_NAMES, MODELS, SHORT, TrainingExperiment, collect, common_parameters, datasets_caption,
                       has, is_host, ours, pipeline_name, short_name)
from .training_report import (PAPER_ROW, cell_order, default_backend, figure_machine, header, history, in_order,
                              kind_of, machine_order, pipeline_colour, shown_caption, shown_records)

MIN_SAMPLES = 25          # 0.5 s of signal at the 20 ms poll interval
ORDER = ("pyg_host", "dgl_host", "wholegraph_lib", "wholegraph")        # the paper's panels, in its order
HEADLINE_COLUMNS = ("Machine", "Pipeline", "Dataset", "Model", "Signal", "window", "mean %", "median %",
                    ">= 90% of time", "at 0% of time", "samples", "whole-span mean %")


def window(rec: dict) -> dict:
    """The summary the row's value is: the free-running training epochs where sampled, else the whole span."""
    whole = rec["extra"]["utilization"]["utilization"]
    training = whole.get("training") or {}
    return training if training.get("samples") else whole


def long_enough(rec: dict) -> bool:
    return (window(rec).get("samples") or 0) >= MIN_SAMPLES


@register_experiment
class Fig12(TrainingExperiment):
    title = "WholeGraph Fig. 12: GPU utilization over time during training"
    metric, unit, better = "utilization", "%", "higher"
    derives_from = ("wholegraph.table5",)
    parameters = common_parameters(datasets=("ogbn-papers100M",), models=("sage",))
    differs_from_paper = ("One GPU of 4 H200s instead of 8 A100s, polled every 20 ms, on a papers100M stand-in at 4% "
                          "scale whose epochs last under a second for ours with GCN and GraphSAGE (too few NVML "
                          "samples to mean much) and a few seconds with GAT.")

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs, expand=False)
        records = [r for r in collect(rows, prefer=self.id) if default_backend(r) and "utilization" in r["extra"]]
        shown, at_paper = shown_records(records, rep.labels, lambda r: (r["key"]["dataset"], r["key"]["model"]))
        shown.sort(key=lambda r: (machine_order(kind_of(r, rep.labels)), *cell_order(r["key"]["dataset"],
                                  r["key"]["model"]), in_order(ORDER)(r["key"]["impl"])))
        table = rep.table([{c: v for c, v in utilization_row(r, kind_of(r, rep.labels)).items()
                            if c in HEADLINE_COLUMNS} for r in shown], empty="no utilization rows", drop_empty=False)
        runs_table = history(rep, [utilization_row(r, rep.label(r["key"]["run_id"])) for r in records],
                             "no utilization rows")
        headline = ""
        judged = [r for r in shown if str(window_kind(r)).startswith("gpu") and long_enough(r)]
        mine = [window(r)["mean"] for r in judged if r["key"]["impl"] == ours()]
        hosts = [window(r)["mean"] for r in judged if is_host(r["key"]["impl"])]
        if mine:
            kinds = ", ".join(dict.fromkeys(kind_of(r, rep.labels) for r in judged))
            headline = (f"ours: GPU busy {span(mine, '.0f')}% on average" + (f", PyG/DGL {span(hosts, '.0f')}%"
                                                                             if hosts else "")
                        + f" (paper: 95% and above; PyG/DGL fluctuate, sometimes 0); newest runs on {kinds}, windows "
                        f"of at least {MIN_SAMPLES} samples")
        if any(window_kind(r) == "cpu_process" for r in shown):
            rep.notes.append("Signal cpu_process: CPU ranks, no GPU to watch; the training process's CPU utilization "
                             "(percent of one core, psutil), not the paper's quantity.")
        rep.notes += NOTES
        fig = traces_figure(shown, rep.labels) if shown else None
        caption = shown_caption(rep, shown, at_paper,
                                "Utilization of rank 0's device over the measured training epochs, per pipeline (the "
                                "figure: one dataset, the paper's papers100M where measured, on the machine with the "
                                f"most GPUs). Datasets: {datasets_caption(shown)}. Paper: one GPU of {PAPER_HARDWARE}, "
                                "ogbn-papers100M.")
        return rep.artifact("WholeGraph Fig. 12: utilization over time", caption, table, fig, headline=headline,
                            claims=[c for r in shown if (c := utilization_claim(r, kind_of(r, rep.labels)))],
                            history=runs_table)


BUSY = Band.between(90, 100, "busy 90% or more in at least 80% of the samples (the paper: 95% and above)")
IDLE = Band.between(1e-9, 1, "idle in some samples (the paper: PyG's and DGL's fluctuate, sometimes 0)")


def utilization_claim(rec: dict, machine: str) -> Claim | None:
    """The paper's Fig. 12 on one GPU trace: ours (and pylibwholegraph) keeps the GPU busy (its window's
    p10-p90 within BUSY), PyG's and DGL's idle at times; judged on windows of MIN_SAMPLES or more."""
    if not str(window_kind(rec)).startswith("gpu"):
        return None
    u, impl = window(rec), rec["key"]["impl"]
    where = f"{machine} {pipeline_name(impl)} {MODEL_NAMES[rec['key']['model']]}"
    common = {"null": None, "points": u.get("samples") or 0, "needs": MIN_SAMPLES, "runs": (rec["key"]["run_id"],)}
    if has(impl, "shared_store") and finite(u.get("p50")):
        spread = Estimate(u["p50"], u["p10"], u["p90"], "the window's samples: median and p10-p90",
                          u.get("samples") or 0, spread="p10-p90")
        return Claim(f"{where}: GPU utilization", spread, BUSY, "95% and above", unit="%", **common)
    if is_host(impl) and finite(u.get("share_zero")):
        return Claim(f"{where}: share of samples at 0%", Estimate.exact(u["share_zero"], "exact: a count of samples"),
                     IDLE, "sometimes 0", unit="", **common)
    return None


def window_kind(rec: dict) -> str | None:
    return rec["extra"]["utilization"]["utilization"].get("kind")


def utilization_row(rec: dict, label: str) -> dict:
    """A row of the table: the window's summary and the whole span's mean."""
    k = rec["key"]
    whole = rec["extra"]["utilization"]["utilization"]
    u = window(rec)
    return {"Machine": label, "Pipeline": pipeline_name(k["impl"]),
            "Dataset": SHORT.get(k["dataset"], k["dataset"]), "Model": MODEL_NAMES[k["model"]],
            "Signal": whole.get("kind"), "window": "free epochs" if u is not whole else "all epochs + eval",
            "mean %": u.get("mean"), "whole-span mean %": whole.get("mean"), "p10 %": u.get("p10"),
            "median %": u.get("p50"), "p90 %": u.get("p90"), ">= 90% of time": u.get("share_ge_90"),
            "at 0% of time": u.get("share_zero"), "samples": u.get("samples"), "interval ms": whole.get("interval_ms")}


def traces_figure(shown: list[dict], labels: dict):
    """The paper's figure: one dataset (papers100M where measured, else the most measured one) on the
    machine with the most GPUs, a row per model and a column per pipeline, each trace in its system's
    colour on its own time axis (a host pipeline's epoch lasts 100x ours: on one axis ours would be a
    blip); a trace whose window holds too few samples drawn dotted."""
    import matplotlib.pyplot as plt

    by_dataset = group(shown, lambda r: r["key"]["dataset"])
    dataset = "ogbn-papers100M" if "ogbn-papers100M" in by_dataset else max(by_dataset, key=lambda d: len(by_dataset[d]))
    machine = figure_machine(by_dataset[dataset], labels)
    mine = group([r for r in by_dataset[dataset] if kind_of(r, labels) == machine], lambda r: r["key"]["model"],
                 lambda r: r["key"]["impl"])
    models = sorted(mine, key=lambda m: MODELS.index(m) if m in MODELS else len(MODELS))[:3]
    impls = sorted({i for m in models for i in mine[m]}, key=in_order(ORDER))
    fig, axes = plt.subplots(len(models), len(impls), figsize=(10.5, min(6.0, 1.5 + 1.5 * len(models))),
                             squeeze=False, sharey=True)
    cpu = any(r["extra"]["utilization"]["utilization"].get("kind") == "cpu_process"
              for by_impl in mine.values() for r in by_impl.values())
    few = False
    for row, model in enumerate(models):
        for col, impl in enumerate(impls):
            ax, rec = axes[row, col], mine[model].get(impl)
            title = f"{short_name(impl)}, {MODEL_NAMES[model]}"
            if rec is None:
                ax.set_title(f"{title}: no run", fontsize=9)
                ax.tick_params(left=False, bottom=False, labelleft=False, labelbottom=False)
                for side in ax.spines.values():
                    side.set_visible(False)
                continue
            whole = rec["extra"]["utilization"]["utilization"]
            seconds, enough = whole.get("trace_s", []), long_enough(rec)
            few = few or not enough
            ax.plot(seconds, whole.get("trace", []), color=pipeline_colour(impl), linewidth=1.2,
                    linestyle="-" if enough else ":")
            ax.set_title(f"{title}: mean {window(rec).get('mean') or 0:.0f}%" + ("" if enough else " (few samples)"),
                         fontsize=9)
            ax.set_ylim(-5, 105)
            ax.set_yticks([0, 50, 100])
            ax.grid(True, alpha=0.3)
        axes[row, 0].set_ylabel("CPU %" if cpu else "util. %")
    for col, impl in enumerate(impls):
        last = max((row for row, m in enumerate(models) if impl in mine[m]), default=None)
        if last is not None:
            axes[last, col].set_xlabel("seconds into the measured epochs")
    note = f"; dotted: fewer than {MIN_SAMPLES} samples in the window (epochs too short)" if few else ""
    header(fig, f"WholeGraph Fig. 12: {'CPU' if cpu else 'GPU'} utilization over time, {SHORT.get(dataset, dataset)}, "
                f"{machine} (newest runs)\n{PAPER_ROW}: WholeGraph 95% and above" + note, lambda y: None,
           legend_rows=0)
    return fig


NOTES = [
    "GPU signal: NVML utilization.gpu of rank 0's GPU, polled every 'interval ms' from the first measured epoch "
    "to the last (the trace). 'mean %' and the quantiles cover the window: 'free epochs' = the free-running training "
    "epochs, each one's first 0.2 s left out (NVML averages over its own sample period, 1/6 s to 1 s); 'all epochs "
    "+ eval' (runs before this split) = the whole span, including the synced epoch, which waits between stages on "
    "purpose, and the evaluations between epochs. 'whole-span mean %' is always the whole span. The history table "
    "adds the 10th and 90th percentiles and the poll interval.",
    f"Headline and status use the newest runs' windows of at least {MIN_SAMPLES} samples: a stand-in whose "
    "free-running epoch lasts a fraction of a second (papers100M at scale 0.04: 0.23 s per epoch on 4 GPUs) leaves "
    "too few NVML samples to mean anything; its rows are listed all the same.",
]
