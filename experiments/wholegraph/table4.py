"""WholeGraph Table IV: GPU memory per GPU for graph structure, node features and training.

The paper trains on ogbn-papers100M over 8 A100s and reads nvidia-smi at pauses: 3.1 GB of graph
structure and 6.7 GB of features per GPU (of 24 GB and 53 GB in total: both stores spread over
every GPU) and 20.4 GB for training. Here every training point of the WholeGraph pipelines
measures its stores from their sizes (this rank's shard) and training as the allocator's peak
during the training epochs (impls/pipelines/base.py); the theoretical totals are computed from
the graph: (N + 1) x 8 bytes of row offsets + E x id bytes of neighbor ids, and N x F x element
bytes of features, and their share per GPU is the total / GPUs. A table5 run gives these rows
(``derives_from``); run alone this trains papers100M with GraphSAGE.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.registry import register_experiment
from harness.tables import caption_hardware, run_labels, skip_notes

from . import PAPER_HARDWARE
from .training import (GIB, MODEL_NAMES, PIPELINE_NAMES, SHORT, TABLE4, TrainingExperiment, collect,
                       common_parameters, datasets_caption, table4_paper_values)

PIPES = ("wholegraph", "wholegraph_lib")


def theoretical_bytes(graph: dict) -> dict:
    n, e = graph["nodes"], graph["edges"]
    return {"graph_structure": (n + 1) * 8 + e * graph["id_bytes"],
            "node_features": n * graph["feature_dim"] * graph["feature_bytes"]}


@register_experiment
class Table4(TrainingExperiment):
    title = "WholeGraph Table IV: memory per GPU (graph structure, node features, training)"
    impls = PIPES
    derives_from = ("wholegraph.table5",)
    parameters = common_parameters(datasets=("ogbn-papers100M",), models=("sage",))
    paper_values = table4_paper_values()

    def report(self, rows, runs) -> ReportArtifact:
        import matplotlib.pyplot as plt
        import pandas as pd

        labels = run_labels(rows, runs)
        records = [r for r in collect(rows, prefer=self.id)
                   if r["key"]["impl"] in PIPES and "memory_total" in r["metrics"]]
        preferred = [r for r in records if r["key"]["dataset"] == "ogbn-papers100M"]
        records = preferred or records
        out = []
        for rec in records:
            k, m = rec["key"], rec["metrics"]
            graph = rec["extra"].get("epoch_time", {}).get("graph")
            world = k["world_size"]
            theory = theoretical_bytes(graph) if graph else {}
            used = rec["extra"].get("memory_total", {}).get("device_used_gib")
            for cat, name in (("graph_structure", "Graph Structure"), ("node_features", "Node Feature"),
                              ("training", "Training"), ("total", "Total (categories)")):
                total = theory.get(cat)
                paper = TABLE4.get(cat, (None, None))
                out.append({"Machine": labels.get(k["run_id"], k["run_id"]), "GPUs": world,
                            "Pipeline": PIPELINE_NAMES.get(k["impl"], k["impl"]),
                            "Dataset": SHORT.get(k["dataset"], k["dataset"]), "Model": MODEL_NAMES[k["model"]],
                            "Category": name, "measured GiB/GPU": m.get(f"memory_{cat}"),
                            "theory total GiB": total / GIB if total else None,
                            "theory GiB/GPU": total / GIB / world if total else None,
                            "paper GB/GPU": paper[0], "paper total GB": paper[1],
                            "device used GiB (nvidia-smi view)": used if cat == "total" else None})
        table = pd.DataFrame.from_records(out)
        notes, headline, status = [], "", "measured"
        if not table.empty:
            if table["Machine"].nunique() == 1:
                table = table.drop(columns=["Machine"])
            table = table[[c for c in table.columns if table[c].notna().any() or c.startswith("paper")]]
            ours = table[(table["Pipeline"] == PIPELINE_NAMES["wholegraph"])
                         & table["Category"].isin(["Graph Structure", "Node Feature"])]
            ratios = [r["measured GiB/GPU"] / r["theory GiB/GPU"] for _, r in ours.iterrows()
                      if r.get("theory GiB/GPU")]
            if ratios:
                headline = (f"ours: stores per GPU {min(ratios):.2f}-{max(ratios):.2f}x of total/GPUs "
                            "(paper: 3.1 of 24/8 GB, 6.7 of 53/8 GB)")
                status = "reproduced" if all(0.9 <= x <= 1.15 for x in ratios) else "partly"
        else:
            table = pd.DataFrame({"note": ["no memory rows of a WholeGraph pipeline"]})
        notes.append("Paper (Table IV, ogbn-papers100M, 8x A100, nvidia-smi at pauses): graph structure 3.1 GB per GPU "
                     "of 24 GB in total, node features 6.7 of 53 GB, training 20.4 GB per GPU. The paper stores 8 bytes "
                     "per edge; the stand-ins store int32 neighbor ids below 2^31 nodes.")
        notes.append("Measured per GPU (the largest over ranks): stores from their allocation sizes (this rank's shard; "
                     "ours pads a shard to ceil(N/GPUs) rows, pylibwholegraph pads feature rows to 16 bytes); training = "
                     "torch.cuda.max_memory_allocated during the training epochs minus what was allocated before the "
                     "model (model, gradients, Adam state, DDP buckets, sampled blocks, gathered features, activations). "
                     "'device used' is total minus free device memory after training (CUDA context, NCCL, caches "
                     "included), the number nvidia-smi shows.")
        if any(rec.get("device") == "cpu" for rec in records):
            notes.append("CPU ranks: host memory, not GPU memory; the graph is the whole CSR on every rank (the "
                         "sharded CSR store needs CUDA ranks), the features a host shared-memory shard per rank.")
        notes += skip_notes(rows[rows["impl"].isin(PIPES)], labels)
        fig, ax = plt.subplots(figsize=(7, 3.8))
        if "measured GiB/GPU" in table:
            sel = table[table["Category"] != "Total (categories)"]
            plot = sel.pivot_table(index="Category", columns="Pipeline", values="measured GiB/GPU", aggfunc="first")
            plot.plot.bar(ax=ax)
            ax.set_ylabel("GiB per GPU")
        ax.set_title("WholeGraph Table IV: memory per GPU")
        fig.tight_layout()
        caption = (f"GPU memory per GPU by category for the WholeGraph pipelines, with the theoretical totals of the "
                   f"graph and their share per GPU. Datasets: {datasets_caption(records)}. Paper: {PAPER_HARDWARE}. "
                   + caption_hardware(runs))
        return ReportArtifact("table4", "WholeGraph Table IV: memory per GPU", caption, table, notes, fig,
                              headline=headline, status=status)
