"""WholeGraph Fig. 7: validation accuracy per epoch of DGL and WholeGraph (GraphSAGE, products).

The paper shows DGL and WholeGraph reaching "almost the same accuracy ... iteration by
iteration". Here every training point evaluates on at most ``eval_nodes`` validation nodes after
each epoch (the curve). On a stand-in the labels are planted communities, so the numbers are not
the paper's; the claim checked is that the pipelines' curves end together. A table5 run gives
these rows (``derives_from``); run alone this trains its own grid.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.registry import register_experiment
from harness.reportkit import Report, figure, finish, group, lines

from .table5 import default_backend
from .training import (MODEL_NAMES, PIPELINE_NAMES, SHORT, TrainingExperiment, collect, common_parameters,
                       records_caption)


@register_experiment
class Fig7(TrainingExperiment):
    title = "WholeGraph Fig. 7: validation accuracy per epoch, DGL vs WholeGraph (GraphSAGE, products)"
    impls = ("dgl_host", "pyg_host", "wholegraph", "wholegraph_lib")
    derives_from = ("wholegraph.table5",)
    parameters = common_parameters(datasets=("ogbn-products",), models=("sage",))

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs, expand=False)
        records = [r for r in collect(rows, prefer=self.id) if default_backend(r)
                   and r["extra"].get("epoch_time", {}).get("val_acc_per_epoch")]
        preferred = [r for r in records if r["key"]["dataset"] == "ogbn-products" and r["key"]["model"] == "sage"]
        records = preferred or records
        out, curves = [], []
        for rec in records:
            k, curve = rec["key"], rec["extra"]["epoch_time"]["val_acc_per_epoch"]
            name = PIPELINE_NAMES.get(k["impl"], k["impl"])
            label = f"{name} {SHORT.get(k['dataset'], k['dataset'])} {MODEL_NAMES[k['model']]}"
            curves.append((f"{label} ({rep.label(k['run_id'])})", range(1, len(curve) + 1), curve))
            out.append({"Machine": rep.label(k["run_id"]), "Pipeline": name, "Dataset": SHORT.get(k["dataset"], k["dataset"]),
                        "Model": MODEL_NAMES[k["model"]], **{f"epoch {i}": acc for i, acc in enumerate(curve, start=1)}})
        table = rep.table(out, empty="no per-epoch validation curves", drop_empty=False)
        finals = group(records, lambda r: (r["key"]["run_id"], r["key"]["dataset"], r["key"]["model"]))
        gaps = [max(v) - min(v) for v in ([r["extra"]["epoch_time"]["val_acc_per_epoch"][-1] for r in rs]
                                          for rs in finals.values()) if len(v) > 1]
        headline = f"final validation accuracy of the pipelines within {100 * max(gaps):.1f} points" if gaps else ""
        status = ("reproduced" if max(gaps) <= 0.03 else "partly") if gaps else "measured"
        rep.notes.append("Paper (Fig. 7, ogbn-products, GraphSAGE): DGL and WholeGraph reach almost the same "
                         "validation accuracy iteration by iteration. Here: validation accuracy after each epoch, same "
                         "model, seeds and batches on every pipeline (only the samplers' random draws differ).")
        fig, ax = figure((6, 3.8))
        lines(ax, curves, xlabel="epoch", ylabel="validation accuracy", marker="o")
        caption = rep.caption("Validation accuracy after every epoch.", *records_caption(records))
        return rep.artifact("WholeGraph Fig. 7: validation accuracy per epoch", caption, table,
                            finish(fig, ax, "WholeGraph Fig. 7: validation accuracy per epoch"),
                            headline=headline, status=status)
