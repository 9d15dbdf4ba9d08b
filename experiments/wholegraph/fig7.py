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
from harness.tables import caption_hardware, run_labels, skip_notes

from . import PAPER_HARDWARE
from .table5 import default_backend
from .training import (MODEL_NAMES, PIPELINE_NAMES, SHORT, TrainingExperiment, collect, common_parameters,
                       datasets_caption, settings_caption)


@register_experiment
class Fig7(TrainingExperiment):
    title = "WholeGraph Fig. 7: validation accuracy per epoch, DGL vs WholeGraph (GraphSAGE, products)"
    impls = ("dgl_host", "pyg_host", "wholegraph", "wholegraph_lib")
    derives_from = ("wholegraph.table5",)
    parameters = common_parameters(datasets=("ogbn-products",), models=("sage",))

    def report(self, rows, runs) -> ReportArtifact:
        import matplotlib.pyplot as plt
        import pandas as pd

        labels = run_labels(rows, runs)
        records = [r for r in collect(rows, prefer=self.id) if default_backend(r)
                   and r["extra"].get("epoch_time", {}).get("val_acc_per_epoch")]
        preferred = [r for r in records if r["key"]["dataset"] == "ogbn-products" and r["key"]["model"] == "sage"]
        records = preferred or records
        out, curves = [], []
        for rec in records:
            k = rec["key"]
            curve = rec["extra"]["epoch_time"]["val_acc_per_epoch"]
            name = PIPELINE_NAMES.get(k["impl"], k["impl"])
            label = f"{name} {SHORT.get(k['dataset'], k['dataset'])} {MODEL_NAMES[k['model']]}"
            curves.append((labels.get(k["run_id"], k["run_id"]), label, curve))
            row = {"Machine": labels.get(k["run_id"], k["run_id"]), "Pipeline": name,
                   "Dataset": SHORT.get(k["dataset"], k["dataset"]), "Model": MODEL_NAMES[k["model"]]}
            for i, acc in enumerate(curve, start=1):
                row[f"epoch {i}"] = acc
            out.append(row)
        table = pd.DataFrame.from_records(out)
        notes, headline, status = [], "", "measured"
        if not table.empty:
            if table["Machine"].nunique() == 1:
                table = table.drop(columns=["Machine"])
            finals: dict = {}
            for rec in records:
                k = rec["key"]
                finals.setdefault((k["run_id"], k["dataset"], k["model"]), []).append(
                    rec["extra"]["epoch_time"]["val_acc_per_epoch"][-1])
            gaps = [max(v) - min(v) for v in finals.values() if len(v) > 1]
            if gaps:
                headline = f"final validation accuracy of the pipelines within {100 * max(gaps):.1f} points"
                status = "reproduced" if max(gaps) <= 0.03 else "partly"
        else:
            table = pd.DataFrame({"note": ["no per-epoch validation curves"]})
        notes.append("Paper (Fig. 7, ogbn-products, GraphSAGE): DGL and WholeGraph reach almost the same validation "
                     "accuracy iteration by iteration. Here: validation accuracy after each epoch, same model, "
                     "seeds and batches on every pipeline (only the samplers' random draws differ).")
        notes += skip_notes(rows, labels)
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for machine, label, curve in curves:
            ax.plot(range(1, len(curve) + 1), curve, marker="o", label=f"{label} ({machine})")
        ax.set_xlabel("epoch")
        ax.set_ylabel("validation accuracy")
        ax.grid(True, alpha=0.3)
        if curves:
            ax.legend(fontsize=7)
        ax.set_title("WholeGraph Fig. 7: validation accuracy per epoch")
        fig.tight_layout()
        caption = (f"Validation accuracy after every epoch. Datasets: {datasets_caption(records)}. Models: "
                   f"{settings_caption(records)}. Paper: {PAPER_HARDWARE}. " + caption_hardware(runs))
        return ReportArtifact("fig7", "WholeGraph Fig. 7: validation accuracy per epoch", caption, table, notes, fig,
                              headline=headline, status=status)
