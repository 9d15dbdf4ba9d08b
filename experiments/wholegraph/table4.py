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
from harness.reportkit import Axis, FigureSpec, Panel, Report, Series, draw, group, legend_handles

from . import PALETTE
from .training import (GIB, MODEL_NAMES, MODELS, SHORT, TABLE4, TrainingExperiment, collect, common_parameters, ours,
                       pipeline_name, records_caption, shared_store, short_name, table4_paper_values)
from .training_report import header, history, kind_of, machine_order, shown_caption, shown_records

STORES = (("graph_structure", "Graph Structure"), ("node_features", "Node Feature"))
# the categories are not systems: their own colours, none of the palette's
PAPER_GPUS = 8


def theoretical_bytes(graph: dict) -> dict:
    n, e = graph["nodes"], graph["edges"]
    return {"graph_structure": (n + 1) * 8 + e * graph["id_bytes"],
            "node_features": n * graph["feature_dim"] * graph["feature_bytes"]}


def one_per_pipeline(shown: list[dict], labels: dict) -> list[dict]:
    """Per machine kind and pipeline, the GraphSAGE record (Table IV's own model) where there is one,
    else the first model's: the stores do not depend on the model, only the training memory does."""
    out = []
    for recs in group(shown, lambda r: (kind_of(r, labels), r["key"]["impl"])).values():
        out.append(min(recs, key=lambda r: (r["key"]["model"] != "sage", MODELS.index(r["key"]["model"])
                                            if r["key"]["model"] in MODELS else len(MODELS))))
    pipes = shared_store()
    return sorted(out, key=lambda r: (machine_order(kind_of(r, labels)), pipes.index(r["key"]["impl"])))


@register_experiment
class Table4(TrainingExperiment):
    title = "WholeGraph Table IV: memory per GPU (graph structure, node features, training)"
    derives_from = ("wholegraph.table5",)
    parameters = common_parameters(datasets=("ogbn-papers100M",), models=("sage",))
    paper_values = table4_paper_values()

    @property
    def impls(self):
        return tuple(shared_store())

    differs_from_paper = ("A papers100M stand-in at 4% scale with int32 neighbor ids (the paper: the real graph, 8 "
                          "bytes per edge) over 1, 2 and 4 H200s instead of 8 A100s, stores measured from their "
                          "allocations instead of nvidia-smi at pauses: the shares per GPU compare, the sizes do not.")

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs, expand=False)
        pipes = shared_store()
        records = [r for r in collect(rows, prefer=self.id) if r["key"]["impl"] in pipes and "memory_total" in r["metrics"]]
        records = [r for r in records if r["key"]["dataset"] == "ogbn-papers100M"] or records
        shown, at_paper = shown_records(records, rep.labels, lambda r: (r["key"]["dataset"], r["key"]["model"]))
        shown = one_per_pipeline(shown, rep.labels)
        empty = "no memory rows of a WholeGraph pipeline"
        table = rep.table([row for rec in shown for row in memory_rows(rec, kind_of(rec, rep.labels))], empty=empty)
        runs_table = history(rep, [row for rec in records for row in memory_rows(rec, rep.label(rec["key"]["run_id"]))],
                             empty)
        headline = ""
        mine = [r for r in shown if r["key"]["impl"] == ours()]
        if mine:
            headline = "ours per GPU: " + "; ".join(
                f"{kind_of(r, rep.labels)} stores {sum(r['metrics'].get(f'memory_{c}') or 0 for c, _ in STORES):.3g} "
                f"GiB, training {r['metrics'].get('memory_training') or 0:.3g} GiB" for r in mine) + \
                " (paper 8x A100: 3.1 + 6.7 GB of stores, 20.4 GB training; no claim judged: the stores' even " \
                "spread is by construction, the stand-in's sizes are not the paper's); newest runs on " + \
                ", ".join(dict.fromkeys(kind_of(r, rep.labels) for r in shown))
        rep.notes += NOTES
        rep.notes += [n for n in (used_parts_note(rec, kind_of(rec, rep.labels)) for rec in shown) if n]
        if any(rec.get("device") == "cpu" for rec in shown):
            rep.notes.append("CPU ranks: host memory, not GPU memory; the graph is the whole CSR on every rank (the "
                             "sharded CSR store needs CUDA ranks), the features a host shared-memory shard per rank.")
        rep.notes += rep.skip_notes(rep.rows[rep.rows["impl"].isin(pipes)])
        caption = shown_caption(rep, shown, at_paper,
                                "GPU memory per GPU by category for the WholeGraph pipelines, with the theoretical "
                                "totals of the graph and their share per GPU; the figure: the memory per GPU by "
                                "category and what the device reports used. Each store's size per GPU is its total "
                                "over the GPUs by construction (the pipelines shard it so), so it is not a claim this "
                                "table can reproduce; no verdict.",
                                *records_caption(shown, models=False))
        fig = memory_figure(shown, rep.labels) if shown else None
        return rep.artifact("WholeGraph Table IV: memory per GPU", caption, table, fig, headline=headline,
                            skips=False, history=runs_table)


def memory_figure(shown: list[dict], labels: dict):
    """Memory per GPU by category, a row per machine and pipeline, with what the device reports used
    (the nvidia-smi view the paper read: CUDA context, NCCL and allocator caches too) marked beside.
    The stores' share per GPU is not drawn: it is the total over the GPUs by construction."""
    categories = (*STORES, ("training", "Training"))
    spec = FigureSpec([Panel(
        [Series(name, [r["metrics"].get(f"memory_{cat}") or 0.0 for r in shown], colour=PALETTE[cat.replace("_", " ")])
         for cat, name in categories],
        kind="stacked", horizontal=True, groups=[f"{kind_of(r, labels)} {short_name(r['key']['impl'])}" for r in shown],
        width=0.6, x=Axis("GiB per GPU"), legend=False, title_size=9,
        title="paper (8x A100, real graph, nvidia-smi): 3.1 + 6.7 + 20.4 GB per GPU",
        points=[Series("device used (nvidia-smi view)",
                       [r["extra"].get("memory_total", {}).get("device_used_gib") for r in shown], colour="black",
                       style={"marker": "D", "markersize": 6})])],
        size=(9, min(6.0, 1.9 + 0.45 * len(shown))), layout=False)
    fig, handles = draw(spec), legend_handles(spec)
    header(fig, f"WholeGraph Table IV: memory per GPU, {shown[0]['key']['dataset'].replace('ogbn-', '')} "
                "(newest runs per machine)",
           lambda y: fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=9, frameon=False,
                                bbox_to_anchor=(0.5, y)))
    return fig


def memory_rows(rec: dict, label: str) -> list[dict]:
    """The four category rows of one trained point: measured per GPU beside the theory and the paper."""
    k, m = rec["key"], rec["metrics"]
    graph = rec["extra"].get("epoch_time", {}).get("graph")
    theory = theoretical_bytes(graph) if graph else {}
    used = rec["extra"].get("memory_total", {}).get("device_used_gib")
    out = []
    for cat, name in (("graph_structure", "Graph Structure"), ("node_features", "Node Feature"),
                      ("training", "Training"), ("total", "Total (categories)")):
        total, paper = theory.get(cat), TABLE4.get(cat, (None, None))
        out.append({"Machine": label, "GPUs": k["world_size"],
                    "Pipeline": pipeline_name(k["impl"]),
                    "Dataset": SHORT.get(k["dataset"], k["dataset"]), "Model": MODEL_NAMES[k["model"]],
                    "Category": name, "measured GiB/GPU": m.get(f"memory_{cat}"),
                    "theory total GiB": total / GIB if total else None,
                    "theory GiB/GPU": total / GIB / k["world_size"] if total else None,
                    "paper GB/GPU": paper[0], "paper total GB": paper[1],
                    "device used GiB (nvidia-smi view)": used if cat == "total" else None})
    return out


def used_parts_note(rec: dict, label: str) -> str:
    """What a point's 'device used' (nvidia-smi's view, the fullest rank's device) was made of, where
    its row measured it (impls/pipelines/base.py, device_used_parts)."""
    parts = rec["extra"].get("memory_total", {}).get("device_used_parts")
    if not parts or not parts.get("used"):
        return ""
    gib = lambda key: parts[key] / GIB  # noqa: E731
    text = (f"{label} {pipeline_name(rec['key']['impl'])}: device used {gib('used'):.1f} GiB on "
            f"rank {parts.get('rank', 0)}'s GPU = torch's caching allocator {gib('reserved'):.1f} GiB reserved "
            f"({gib('allocated'):.1f} allocated now, peak {gib('max_allocated'):.1f}; peak reserved "
            f"{gib('max_reserved'):.1f})")
    own, others = parts.get("own_bytes"), parts.get("others_bytes")
    if own is not None:
        text += (f" + {(own - parts['reserved']) / GIB:.1f} GiB of this process outside that allocator (CUDA context, "
                 f"NCCL, CuPy, stores allocated outside torch)")
    if others is not None:
        text += (f" + {others / GIB:.1f} GiB of {parts.get('other_processes', 0)} other process"
                 f"{'es' if parts.get('other_processes', 0) != 1 else ''} on this GPU (peer ranks' contexts)"
                 + ("" if own is not None else "; NVML does not list this process by its pid, so the largest "
                                                  "listed is taken for it"))
    return text + "."


NOTES = [
    "Paper (Table IV, ogbn-papers100M, 8x A100, nvidia-smi at pauses): graph structure 3.1 GB per GPU of 24 GB in "
    "total, node features 6.7 of 53 GB, training 20.4 GB per GPU. The paper stores 8 bytes per edge; the stand-ins "
    "store int32 neighbor ids below 2^31 nodes.",
    "Measured per GPU (the largest over ranks): stores from their allocation sizes (this rank's shard; ours pads a "
    "shard to ceil(N/GPUs) rows, pylibwholegraph pads feature rows to 16 bytes); training = "
    "torch.cuda.max_memory_allocated during the training epochs minus what was allocated before the model (model, "
    "gradients, Adam state, DDP buckets, sampled blocks, gathered features, activations). 'device used' is total "
    "minus free device memory after training (CUDA context, NCCL, caches included), the number nvidia-smi shows.",
]
