"""WholeGraph Fig. 7: validation accuracy per epoch of DGL and WholeGraph (GraphSAGE, products).

The paper shows DGL and WholeGraph reaching "almost the same accuracy ... iteration by
iteration". Here every training point evaluates on at most ``eval_nodes`` validation nodes after
each epoch (the curve). On a stand-in the labels are planted communities, so the numbers are not
the paper's; the claim checked is that the pipelines' curves end together (among the pipelines
that trained as many mini-batches: a capped host epoch trains fewer). A table5 run gives these
rows (``derives_from``); run alone this trains its own grid.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.registry import register_experiment
from harness.reportkit import Band, Claim, Report, group

from .table3 import batches_trained, fewer_batches
from .training import (MODEL_NAMES, SHORT, TrainingExperiment, collect, common_parameters, is_host, pipeline_name,
                       records_caption, short_name)
from .training_report import (Intervals, cell_order, default_backend, header, history, in_order, kind_of, machine_order,
                              pipeline_colour, shown_caption, shown_records)

ORDER = ("dgl_host", "pyg_host", "wholegraph_lib", "wholegraph")      # the paper's: DGL beside WholeGraph


def curve(rec) -> list[float]:
    return rec["extra"]["epoch_time"]["val_acc_per_epoch"]


def curve_row(rec, label: str) -> dict:
    k, e = rec["key"], rec["extra"]["epoch_time"]
    return {"Machine": label, "Pipeline": pipeline_name(k["impl"]),
            "Dataset": SHORT.get(k["dataset"], k["dataset"]), "Model": MODEL_NAMES[k["model"]],
            "batches": f"{e.get('batches_run')}/{e.get('batches_full')}",
            **{f"epoch {i}": acc for i, acc in enumerate(curve(rec), start=1)}}


@register_experiment
class Fig7(TrainingExperiment):
    title = "WholeGraph Fig. 7: validation accuracy per epoch, DGL vs WholeGraph (GraphSAGE, products)"
    derives_from = ("wholegraph.table5",)
    parameters = common_parameters(datasets=("ogbn-products",), models=("sage",))
    differs_from_paper = ("A products stand-in whose labels are planted communities, 1-2 epochs instead of the "
                          "paper's curve over training, PyG's and DGL's epochs capped, and H200s instead of 8 A100s.")

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs, expand=False)
        records = [r for r in collect(rows, prefer=self.id) if default_backend(r)
                   and r["extra"].get("epoch_time", {}).get("val_acc_per_epoch")]
        if records:                      # the paper's cell, products GraphSAGE, else the first GraphSAGE one
            cell = min({(r["key"]["dataset"], r["key"]["model"]) for r in records},
                       key=lambda c: (c != ("ogbn-products", "sage"), c[1] != "sage", cell_order(*c)))
            records = [r for r in records if (r["key"]["dataset"], r["key"]["model"]) == cell]
        shown, at_paper = shown_records(records, rep.labels, lambda r: (r["key"]["dataset"], r["key"]["model"]))
        shown.sort(key=lambda r: (machine_order(kind_of(r, rep.labels)), r["key"]["dataset"], r["key"]["model"],
                                  in_order(ORDER)(r["key"]["impl"])))
        empty = "no per-epoch validation curves"
        table = rep.table([curve_row(r, kind_of(r, rep.labels)) for r in shown], empty=empty, drop_empty=False)
        runs_table = history(rep, [curve_row(r, rep.label(r["key"]["run_id"])) for r in records], empty)
        fewer = fewer_batches(shown, rep.labels)
        cells = group([r for r in shown if id(r) not in fewer],
                      lambda r: (kind_of(r, rep.labels), r["key"]["dataset"], r["key"]["model"]))
        gaps = {cell: max(curve(r)[-1] for r in rs) - min(curve(r)[-1] for r in rs)
                for cell, rs in cells.items() if len(rs) > 1}
        headline = ""
        if gaps:
            kinds = ", ".join(dict.fromkeys(k for k, _, _ in gaps))
            headline = (f"final validation accuracy of the pipelines within {100 * max(gaps.values()):.1f} points "
                        f"(paper: DGL and WholeGraph almost the same, epoch by epoch); newest runs on {kinds}")
            capped = [short_name(r["key"]["impl"]) for r in shown if is_host(r["key"]["impl"]) and id(r) in fewer]
            if capped:
                headline += f"; {', '.join(dict.fromkeys(capped))} trained capped epochs (fewer mini-batches): drawn, not compared"
            rep.notes.append("Final validation accuracy, largest difference between pipelines: " + ", ".join(
                f"{k} {SHORT.get(d, d)} {MODEL_NAMES[m]} {100 * g:.1f} pt" for (k, d, m), g in gaps.items()))
        if fewer:
            rep.notes.append("Drawn hollow and left out of the comparison: " + "; ".join(
                f"{kind_of(r, rep.labels)} {short_name(r['key']['impl'])} trained {batches_trained(r)} mini-batches per "
                "epoch, fewer than the other pipelines (capped host epochs)" for r in shown if id(r) in fewer))
        rep.notes.append("Paper (Fig. 7, ogbn-products, GraphSAGE, no numbers printed): DGL and WholeGraph reach "
                         "almost the same validation accuracy iteration by iteration. Here: validation accuracy after "
                         "each epoch, same model, seeds and batches on every pipeline (only the samplers' random draws "
                         "differ).")
        caption = shown_caption(rep, shown, at_paper, "Validation accuracy after every epoch, one panel per machine.",
                                *records_caption(shown))
        fig = curves_figure(shown, rep.labels, fewer) if shown else None
        return rep.artifact("WholeGraph Fig. 7: validation accuracy per epoch", caption, table, fig,
                            headline=headline, claims=curve_claims(cells, Intervals(records, rep.labels)),
                            history=runs_table)


CURVE_POINTS = 5      # epochs a validation curve needs before "the same epoch by epoch" can be judged
GAP = 0.03            # the final validation accuracies of the pipelines within 3 points: "almost the same"


def curve_claims(cells: dict, intervals) -> list[Claim]:
    """Per machine kind and cell: the pipelines' final validation accuracies within GAP of each other,
    judged only on curves of CURVE_POINTS epochs or more (the paper compares whole curves)."""
    out = []
    for (kind, ds, model), recs in cells.items():
        if len(recs) < 2:
            continue
        worst, *_, best = sorted(recs, key=lambda r: curve(r)[-1])
        a, b = intervals.of(best, "val_accuracy"), intervals.of(worst, "val_accuracy")
        out.append(Claim(f"{kind} {SHORT.get(ds, ds)} {MODEL_NAMES[model]}: final validation accuracy of "
                         f"{short_name(best['key']['impl'])} minus {short_name(worst['key']['impl'])}",
                         a.minus(b).times(100) if a is not None and b is not None else None,
                         Band.between(-100 * GAP, 100 * GAP, f"within {100 * GAP:g} points (the paper: almost the "
                                                             "same, epoch by epoch)"),
                         "almost the same", null=None, unit=" pt", points=min(len(curve(r)) for r in recs),
                         needs=CURVE_POINTS, runs=tuple(sorted({r["key"]["run_id"] for r in recs}))))
    return out


def curves_figure(shown: list[dict], labels: dict, fewer: set):
    """A panel per machine kind: each pipeline's validation accuracy per epoch in its colour
    (hollow markers, dotted: trained fewer mini-batches per epoch)."""
    import matplotlib.pyplot as plt

    by_kind = group(shown, lambda r: kind_of(r, labels))
    kinds = sorted(by_kind, key=machine_order)[:4]
    ncols = min(len(kinds), 2 if len(kinds) == 4 else 3)
    nrows = -(-len(kinds) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(min(10.5, 3.4 * ncols + 0.6), min(6.0, 1.2 + 2.5 * nrows)),
                             squeeze=False, sharey=True)
    epochs = max(len(curve(r)) for r in shown)
    for ax, kind in zip(axes.flat, kinds):
        full = max((b for b in map(batches_trained, by_kind[kind]) if b is not None), default=None)
        for rec in by_kind[kind]:
            impl, ys = rec["key"]["impl"], [100 * v for v in curve(rec)]
            short = id(rec) in fewer
            ax.plot(range(1, len(ys) + 1), ys, marker="o", color=pipeline_colour(impl), linestyle=":" if short
                    else "-", markerfacecolor="white" if short else pipeline_colour(impl), markersize=7,
                    label=short_name(impl) + (f" ({batches_trained(rec)} of {full} batches/epoch)" if short else ""))
        first = by_kind[kind][0]["key"]
        ax.set_title(f"{kind}: {SHORT.get(first['dataset'], first['dataset'])} {MODEL_NAMES[first['model']]}",
                     fontsize=10)
        ax.set_xticks(range(1, epochs + 1))
        ax.set_xlim(0.7, epochs + 0.3)
        ax.set_xlabel("epoch")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=9, loc="lower right")
    for ax in axes[:, 0]:
        ax.set_ylabel("validation accuracy (%)")
    for ax in list(axes.flat)[len(kinds):]:
        ax.set_visible(False)
    header(fig, "WholeGraph Fig. 7: validation accuracy per epoch (newest runs per machine)", lambda y: None,
           legend_rows=0)
    return fig
