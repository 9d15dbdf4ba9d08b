"""WholeGraph Fig. 9: epoch time broken down into sampling, feature gathering and training.

PyG, DGL and WholeGraph (ours; pylibwholegraph where it runs) training GCN, GraphSAGE and GAT on
ogbn-products and ogbn-papers100M. The breakdown comes from the synchronized epoch of every
training point (``sample_time``, ``gather_time``, ``train_time`` rows), so a table5 run gives it
(``derives_from``); run alone, this trains its own grid. The paper gives the figure without
numbers: for PyG and DGL sampling and gathering take most of the epoch (training "can hardly be
seen"), for WholeGraph training takes most of it. Its layout, followed here: one panel per dataset
and system with the three models in it, each panel on its own seconds axis (epoch times differ by
orders of magnitude between systems), each bar stacked by the stages of its synchronized epoch.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.registry import register_experiment
from harness.reportkit import Axis, Band, Claim, FigureSpec, Panel, Report, Series, draw, legend_handles, span

from . import PALETTE
from .training import (MODEL_NAMES, MODELS, SHORT, TrainingExperiment, collect, common_parameters, has, is_host, ours,
                       pipeline_name, pipelines, records_caption, short_name)
from .training_report import (STATES, Intervals, cell_order, dataset_title, default_backend, epoch_state, header,
                              history, in_order, kind_of, machine_order, shown_caption, shown_records)

STAGES = (("sample_time", "sample s"), ("gather_time", "gather s"), ("train_time", "train s"))
# the stages are not systems: their own colours in WholeGraph's palette, by name
STAGE_NAMES = {"sample s": "sampling", "gather s": "gathering", "train s": "training"}
PANEL_IMPLS = ("pyg_host", "dgl_host", "wholegraph", "wholegraph_lib")      # the paper's panels, in its order
DATASETS = ("ogbn-products", "ogbn-papers100M")


def breakdown_row(rec, label: str) -> dict:
    """A record's synchronized epoch: seconds per stage, their shares, the free-running epoch."""
    k, m = rec["key"], rec["metrics"]
    row = {"Machine": label, "Dataset": SHORT.get(k["dataset"], k["dataset"]), "Model": MODEL_NAMES[k["model"]],
           "Pipeline": pipeline_name(k["impl"])}
    for metric, col in STAGES:
        row[col] = m[metric]
    total = sum(m[s] for s, _ in STAGES)
    row["synced epoch s"] = total
    row["sample+gather %"] = 100 * (m["sample_time"] + m["gather_time"]) / total if total else None
    row["train %"] = 100 * m["train_time"] / total if total else None
    row["epoch s"] = m.get("epoch_time")
    state = epoch_state(rec)
    row["capped"] = {"bound": "below whole loader waves", "capped": "extrapolated"}.get(state)
    return row


def has_breakdown(rec) -> bool:
    return all(s in rec["metrics"] for s, _ in STAGES)


@register_experiment
class Fig9(TrainingExperiment):
    title = "WholeGraph Fig. 9: epoch time breakdown (sampling, gathering, training)"
    derives_from = ("wholegraph.table5",)
    parameters = common_parameters(datasets=DATASETS)
    differs_from_paper = ("1, 2 and 4 H200s instead of 8 A100s, a stand-in of papers100M at 4% scale, DGL 2.1 with "
                          "PyG's layers on GPUs, and stage times from one epoch synchronized between stages.")

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs, expand=False)
        records = [r for r in collect(rows, prefer=self.id) if default_backend(r) and has_breakdown(r)]
        records = [r for r in records if r["key"]["dataset"] in DATASETS] or records
        shown, at_paper = shown_records(records, rep.labels, lambda r: (r["key"]["dataset"], r["key"]["model"]))
        shown.sort(key=lambda r: (machine_order(kind_of(r, rep.labels)), *cell_order(r["key"]["dataset"],
                                  r["key"]["model"]), in_order(PANEL_IMPLS)(r["key"]["impl"])))
        empty = "no breakdown rows (train with timing=both or synced)"
        table = rep.table([breakdown_row(r, kind_of(r, rep.labels)) for r in shown], empty=empty)
        runs_table = history(rep, [breakdown_row(r, rep.label(r["key"]["run_id"])) for r in records], empty)
        headline = ""
        if "Pipeline" in table:
            for pipe, sel in table.groupby("Pipeline", sort=False):
                rep.notes.append(f"{pipe}: sampling + gathering {span(sel['sample+gather %'], '.0f')}% of the synced "
                                 f"epoch, training {span(sel['train %'], '.0f')}%")
            mine = table[table["Pipeline"] == pipeline_name(ours())]
            hosts = table[table["Pipeline"].isin([pipeline_name(i) for i in pipelines() if is_host(i)])]
            kinds = ", ".join(dict.fromkeys(kind_of(r, rep.labels) for r in shown))
            if not mine.empty:
                headline = (f"ours: training {span(mine['train %'], '.0f')}% of the epoch"
                            + (f"; PyG/DGL: sampling + gathering {span(hosts['sample+gather %'], '.0f')}%"
                               if not hosts.empty else "")
                            + f" (paper: training dominates for WholeGraph, sampling + gathering for PyG/DGL); "
                            f"newest runs on {kinds}")
        rep.notes.append("Paper (Fig. 9, no numbers printed): for PyG and DGL sampling and gathering take most of "
                         "the epoch, training 'can hardly be seen'; for WholeGraph sampling and gathering are much "
                         "smaller than training.")
        rep.notes.append("Stages are timed with a device synchronization between them (sampling = until the "
                         "mini-batch's blocks are on the GPU; for loader pipelines the time the training loop waits "
                         "for its workers); 'epoch s' is the free-running epoch time of Table V.")
        if "capped" in table and table["capped"].notna().any():
            rep.notes.append("Capped: the host pipelines' epochs run a capped number of mini-batches, extrapolated to "
                             "the full epoch; those capped below whole waves of the loader's workers overstate the "
                             "epoch and its sampling share (a partial wave of batches costs a whole one; Table V's "
                             "notes).")
        caption = shown_caption(rep, shown, at_paper,
                                "Seconds per epoch in sampling (sub-graphs generated and moved to the GPU), gathering "
                                "features to the GPU, and training, per pipeline and model; the figure stacks them per "
                                "synchronized epoch, one panel (on its own axis) per dataset and pipeline.",
                                *records_caption(shown))
        fig = breakdown_figure(shown, rep.labels) if shown else None
        return rep.artifact("WholeGraph Fig. 9: epoch time breakdown", caption, table, fig, headline=headline,
                            claims=[c for r in shown if (c := dominance_claim(r, kind_of(r, rep.labels),
                                                                              Intervals(records, rep.labels)))],
                            history=runs_table)


def dominance_claim(rec, machine: str, intervals) -> Claim | None:
    """The paper's Fig. 9 on one pipeline: training dominates WholeGraph's epoch (training / sampling +
    gathering above 1), sampling and gathering dominate PyG's and DGL's (the inverse above 1)."""
    impl = rec["key"]["impl"]
    s, g, t = (intervals.of(rec, metric) for metric, _ in STAGES)
    if s is None or g is None or t is None or not (s.value + g.value > 0 and t.value > 0):
        return None
    loading = s.plus(g)
    if loading.value <= 0:
        return None
    shared = has(impl, "shared_store")          # WholeGraph's design: training dominates
    what = "training / sampling + gathering" if shared else "sampling + gathering / training"
    effect = t.ratio(loading) if shared else loading.ratio(t)
    where = f"{machine} {pipeline_name(impl)} {rec['key']['model']} on {rec['key']['dataset']}"
    return Claim(f"{where}: {what}", effect, Band.beyond(1.0, text="dominates (the paper prints no numbers)"),
                 "dominates", runs=(rec["key"]["run_id"],),
                 withheld="epoch capped below whole loader waves (its sampling share overstated)"
                 if epoch_state(rec) == "bound" else "")


def panel_machines(shown: list[dict], labels: dict) -> dict:
    """{(dataset, impl): machine kind}: the machine with the most GPUs that trained the pipeline on the dataset."""
    out: dict = {}
    for rec in sorted(shown, key=lambda r: machine_order(kind_of(r, labels)), reverse=True):
        out[(rec["key"]["dataset"], rec["key"]["impl"])] = kind_of(rec, labels)
    return out


def breakdown_figure(shown: list[dict], labels: dict):
    """The paper's layout: a panel per dataset (rows) and pipeline (columns) on its own seconds axis,
    the models' bars in it, each stacked by the stages of its synchronized epoch (its seconds above it);
    capped epochs hatched."""
    from matplotlib.patches import Patch

    machines = panel_machines(shown, labels)
    datasets = sorted({d for d, _ in machines}, key=lambda d: cell_order(d, "")[:2])
    impls = sorted({impl for _, impl in machines}, key=in_order(PANEL_IMPLS))
    panels, capped_states = [], set()
    for ds in datasets:
        for c, impl in enumerate(impls):
            machine = machines.get((ds, impl))
            recs = {x["key"]["model"]: x for x in shown if x["key"]["dataset"] == ds and x["key"]["impl"] == impl
                    and kind_of(x, labels) == machine and x["key"]["model"] in MODELS}
            if not recs:
                panels.append(Panel([], frame=False, title=f"{short_name(impl)}, {SHORT.get(ds, ds)}: no run",
                                    title_size=9))
                continue
            rows = [breakdown_row(recs[m], machine) if m in recs else None for m in MODELS]
            states = [epoch_state(recs[m]) if m in recs else "measured" for m in MODELS]
            hatches = [STATES[state][1].get("hatch") if state != "measured" else None for state in states]
            capped_states |= {state for state, hatch in zip(states, hatches) if hatch}
            panels.append(Panel(
                [Series(STAGE_NAMES[col], [row[col] if row else None for row in rows], style={"linewidth": 0.5},
                        each=[{"hatch": h, "edgecolor": "white"} if h else {"edgecolor": PALETTE[STAGE_NAMES[col]]}
                              for h in hatches]) for _, col in STAGES],
                kind="stacked", groups=[MODEL_NAMES[m].replace("GraphSAGE", "SAGE") for m in MODELS], width=0.7,
                totals="{:.3g} s", x=Axis(limits=(-0.5, len(MODELS) - 0.5)),
                y=Axis("seconds per epoch" if c == 0 else "", margin=0.15), grid=False, legend=False,
                title=f"{short_name(impl)}, {dataset_title(next(iter(recs.values())))}\n{machine}", title_size=9))
    spec = FigureSpec(panels, PALETTE, ncols=len(impls), size=(min(10.5, 2.7 * len(impls) + 0.8),
                                                               1.2 + 2.3 * len(datasets)), layout=False)
    fig = draw(spec)
    handles = legend_handles(spec) + [Patch(facecolor="0.85", edgecolor="0.3", hatch=STATES[s][1]["hatch"],
                                            label=STATES[s][0]) for s in ("capped", "bound") if s in capped_states]
    header(fig, "WholeGraph Fig. 9: epoch time breakdown (newest runs; the synchronized epoch)",
           lambda y: fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=9, frameon=False,
                                bbox_to_anchor=(0.5, y)))
    return fig
