"""WholeGraph Fig. 13: scalability across nodes, the speedup of the epoch time over one node.

The paper (Sec. III-D, IV-D) trains GCN, GraphSAGE and GAT on ogbn-papers100M, Friendster and
UK_domain on 1 to 8 DGX-A100 nodes of 8 GPUs, data-parallel: each node holds a replica of the graph
structure and the features over its own GPUs (the multi-GPU shared memory), samples and gathers
within the node, every GPU trains its own share of the training nodes, and only the gradients cross
nodes (an all-reduce). One node's epoch is the baseline; the speedups are "close to linear".
Fig. 13's bars are not in our text of the paper; what it states in numbers is transcribed: the
claim of close-to-linear speedups up to 8 nodes (drawn as the linear reference) and 80 epochs of
GraphSAGE on papers100M in 66 s on 8 nodes, 0.825 s an epoch, i.e. 7.27x Table V's 6.0 s on one node.

Here the ``wholegraph`` pipeline (ours, impls/pipelines/wholegraph.py) trains as in Table V, with
the same pipeline and the timed-epoch rule of experiments/kit/training.py, on every rank of the run:
with several nodes each node builds its stores on its own ranks (a replica per node) and DDP's
all-reduce runs over every rank (NCCL). Each configuration is its own run, and the report puts the
runs together: one node of G GPUs is the baseline of N nodes of G GPUs. Run it under torchrun:

    # one node of 2 GPUs (the baseline)
    torchrun --nnodes 1 --nproc-per-node 2 -m harness run wholegraph.fig13 --device cuda
    # 2 nodes of 2 GPUs: the same command on each host (node rank 0 and 1), HOST0 the first one's address
    torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint HOST0:29500 --rdzv-id fig13 \\
        -m harness run wholegraph.fig13 --device cuda

On one 4-GPU host, the 2 nodes are two torchrun node processes on localhost, each given its own
GPUs (``CUDA_VISIBLE_DEVICES=0,1`` and ``2,3``) and its own ``NCCL_HOSTID`` so that NCCL carries
the traffic between them over its network transport as it would between hosts: emulated nodes. The
ranks find out (their hosts, harness/launcher.py's ``Topology``), and every table, figure and
manifest says "emulated nodes (one host)". docs/multi-node.md has the commands; .ci/plans/ has the
plan that runs 1 x 2, 2 x 2 (emulated) and 1 x 4 (the intra-node reference: as many GPUs in one node).
"""

from __future__ import annotations

import re
from dataclasses import replace

from harness.artifact import ReportArtifact
from harness.experiment import PaperValue, Point
from harness.launcher import EMULATED
from harness.registry import register_experiment
from harness.reportkit import PAPER_STYLE, Band, Claim, Report, finite, newest_per_kind, ratio, span
from harness.worlds import run_nodes

from ..kit import training as kit
from . import PALETTE
from .training import MODEL_NAMES, SHORT, TABLE5, TrainingExperiment, common_parameters, records_caption
from .training_report import Intervals, cell_order, header, history, paper_setting, speedup_claim

DATASETS = ("ogbn-papers100M", "friendster", "uk-2007-05")
LINEAR_SHARE = 0.8           # "close to linear": every multi-node cell keeps at least this share of N x
# Sec. IV-D: "80 epochs of a 3-layer GraphSAGE model ... on the ogbn-papers100M dataset in 66 seconds ...
# with 8 DGX-A100 servers", against Table V's 6.0 s an epoch on one
PAPER_8_NODES = TABLE5["ogbn-papers100M"]["sage"][2] / (66.0 / 80)
MODEL_STYLE = {model: (marker, PALETTE[MODEL_NAMES[model]])
               for model, marker in (("gcn", "o"), ("sage", "s"), ("gat", "^"))}


@register_experiment
class Fig13(TrainingExperiment):
    title = "WholeGraph Fig. 13: speedup of the epoch time over one node, GCN / GraphSAGE / GAT"
    impls = ("wholegraph",)
    parameters = common_parameters(datasets=DATASETS)
    paper_values = (
        PaperValue("Sec. IV-D (Fig. 13)", "wholegraph", {"dataset": "ogbn-papers100M", "model": "sage", "nodes": 8},
                   "speedup", PAPER_8_NODES, "x",
                   note="80 epochs in 66 s on 8 nodes of 8 A100s, over Table V's 6.0 s an epoch on one node"),
    )
    differs_from_paper = ("Nodes of 2 H100/H200s emulated on one 4-GPU host (two torchrun node processes, NCCL between "
                          "them over its network transport) instead of 1-8 DGX-A100 nodes of 8 GPUs over InfiniBand; "
                          "stand-ins of about 1.3e8 edges for the three graphs; ours is a re-implementation of "
                          "WholeGraph.")

    def points(self, cfg):
        nodes, per_node = run_nodes(cfg)
        for point in super().points(cfg):
            yield Point(point.impl, {**point.params, "nodes": nodes, "ranks_per_node": per_node}, point.world_size)

    def memory_need(self, point, cfg):
        """Each node holds a replica of graph and features over its own GPUs."""
        need = super().memory_need(point, cfg)
        per_node = point.params.get("ranks_per_node")
        if need and "gpu" in need and per_node:
            need = {**need, "gpu": need["gpu"] * point.world_size / per_node}
        return need

    def run_point(self, point, ctx):
        out = super().run_point(point, ctx)
        for m in out:
            if m.metric == "epoch_time":
                m.extra["topology"] = ctx.rank.topology_record()     # the nodes as the ranks found them
        return out

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs, expand=False)
        records = [r for r in collect(rows, self.id) if "epoch_time" in r["metrics"]]
        shown, at_paper = shown_records(records, rep.labels)
        lines = speedup_lines(shown, rep.labels)
        table = rep.table(table_rows(lines), empty="no training point with its one-node baseline")
        claims = linear_claims(lines, Intervals(records, rep.labels))
        runs_table = history(rep, [history_row(r, rep.label(r["run_id"])) for r in records], "no training point")
        emulated = any(p["emulated"] for line in lines.values() for p in line["points"])
        rep.notes += [
            f"Paper (Sec. IV-D): close-to-linear speedups on the three datasets for the three models with up to 8 "
            f"nodes of 8 A100s; in numbers, 80 GraphSAGE epochs on papers100M in 66 s on 8 nodes: {PAPER_8_NODES:.2f}x "
            f"over Table V's 6.0 s on one node. Fig. 13's bars are not transcribed (not in our text of the paper). "
            f"'Close to linear' is taken as {LINEAR_SHARE:.0%}-{1 / LINEAR_SHARE:.0%} of N x at N nodes (the paper's "
            f"one number is {PAPER_8_NODES / 8:.0%} of 8x).",
        ] + ([f"{EMULATED.capitalize()}: two torchrun node processes on one host, each with its own ranks (on GPUs its "
              "own devices and NCCL_HOSTID, so that NCCL carries the gradient all-reduce between the nodes over its "
              "network transport, on the host); a node's replica lives on its own ranks. Nothing crosses a real "
              "network."] if emulated else [])
        caption = rep.caption(
            "Speedup of the epoch time of N nodes over one node of as many GPUs per node (WholeGraph's data-parallel "
            "multi-node training: a replica of the graph and features per node, sampling and gathering within it, "
            "gradients all-reduced over every GPU); 'vs 1 node of as many GPUs': the one node holding all the GPUs "
            "(the intra-node reference) over N nodes. " + (f"Multi-node points here are {EMULATED}. " if emulated else ""),
            *records_caption(shown),
            "Shown: the newest run per setup at the paper's settings." if at_paper else
            "No run at the paper's settings: the newest run per setup (every run: the history table).",
            runs={r["run_id"] for r in shown})
        return rep.artifact("WholeGraph Fig. 13: scalability across nodes", caption, table,
                            speedup_figure(lines, emulated), headline=headline(lines, emulated),
                            claims=claims, history=runs_table)


# ----------------------------------------------------------------------------- reading rows back

def collect(rows, prefer: str) -> list[dict]:
    """One record per trained point, keyed by its nodes and ranks per node too."""
    return kit.collect(rows, prefer, ("dataset", "model", "backend", "nodes", "ranks_per_node"),
                       defaults={"backend": "native"})


def at_paper_settings(rec: dict) -> bool:
    """Trained as the paper trains (``paper_setting``), the nodes being what this figure varies."""
    params = {k: v for k, v in rec["params"].items() if k not in ("nodes", "ranks_per_node")}
    return paper_setting({**rec, "params": params})


def topology(rec: dict) -> dict:
    return (rec["extra"].get("epoch_time") or {}).get("topology") or {}


def gpu_kind(rec: dict, labels: dict) -> str:
    """'H100', 'H200' or 'cpu': the device of a record's run, whatever share of the machine it used."""
    label = re.sub(r" #\d+$", "", labels.get(rec["run_id"], rec["run_id"]))
    return re.sub(r"^(\d+ of )?\d+x", "", label)


def shown_records(records: list[dict], labels: dict) -> tuple[list[dict], bool]:
    """Per device kind, dataset, model, nodes and ranks per node the newest record at the paper's
    settings (else the newest of all)."""
    at_paper = [r for r in records if at_paper_settings(r)]
    pick = at_paper or records
    kinds = {r["run_id"]: gpu_kind(r, labels) for r in pick}
    newest = newest_per_kind(pick, kinds, lambda r: (r["key"]["dataset"], r["key"]["model"], r["key"]["nodes"],
                                                     r["key"]["ranks_per_node"]), lambda r: r["run_id"])
    return list(newest.values()), bool(at_paper)


def setup_label(rec: dict, unit: str) -> str:
    topo = topology(rec)
    if topo.get("label"):
        return topo["label"]
    nodes, per = rec["key"]["nodes"], rec["key"]["ranks_per_node"]
    return f"{nodes} node{'s' if nodes > 1 else ''} x {per} {unit}"


def speedup_lines(records: list[dict], labels: dict) -> dict:
    """{(device kind, dataset, model, ranks per node): line}: the epoch time at every node count,
    the speedup over one node of as many ranks, and the one node holding as many ranks as N nodes."""
    by_setup = {(gpu_kind(r, labels), r["key"]["dataset"], r["key"]["model"], r["key"]["nodes"],
                 r["key"]["ranks_per_node"]): r for r in records}
    lines: dict = {}
    for (kind, ds, model, nodes, per), rec in sorted(by_setup.items(), key=lambda kv: (
            *cell_order(kv[0][1], kv[0][2]), kv[0][0], kv[0][4], kv[0][3])):
        base = by_setup.get((kind, ds, model, 1, per))
        if nodes > 1 and base is None:
            continue                          # N nodes of G without one node of G: no speedup to show
        unit = "CPU ranks" if rec.get("device") == "cpu" else "GPUs"
        same_gpus = by_setup.get((kind, ds, model, 1, nodes * per)) if nodes > 1 else None
        t = rec["metrics"]["epoch_time"]
        line = lines.setdefault((kind, ds, model, per), {"kind": kind, "dataset": ds, "model": model, "per": per,
                                                         "unit": unit, "points": []})
        line["points"].append({
            "nodes": nodes, "setup": setup_label(rec, unit), "epoch": t, "run_id": rec["run_id"],
            "emulated": bool(topology(rec).get("emulated")), "rec": rec, "base": base,
            "speedup": ratio(base["metrics"]["epoch_time"], t) if base else None,
            "vs_one_node": ratio(same_gpus["metrics"]["epoch_time"], t) if same_gpus else None,
            # the one node of as many GPUs over the baseline: where N nodes would be inside one
            "reference": ratio(base["metrics"]["epoch_time"], same_gpus["metrics"]["epoch_time"])
            if base and same_gpus else None})
    for line in lines.values():
        if all(p["nodes"] == 1 for p in line["points"]):      # a reference alone: no speedup of its own
            for p in line["points"]:
                p["speedup"] = None
    return lines


def linear_claims(lines: dict, intervals: Intervals) -> list[Claim]:
    """The paper's claim at every multi-node point: the speedup over one node of as many GPUs is close
    to linear (module doc), its interval from the two epoch times' (training_report.Intervals)."""
    out = []
    for line in lines.values():
        for p in line["points"]:
            n = p["nodes"]
            if n < 2 or p["base"] is None:
                continue
            band = Band.between(LINEAR_SHARE * n, n / LINEAR_SHARE,
                                f"close to linear: {LINEAR_SHARE:.0%}-{1 / LINEAR_SHARE:.0%} of N x at N nodes")
            what = (f"{line['kind']} {SHORT.get(line['dataset'], line['dataset'])} {MODEL_NAMES[line['model']]}: "
                    f"{p['setup']} over 1 node")
            claim = speedup_claim(what, p["base"], p["rec"], intervals, None, band=band)
            out.append(replace(claim, paper=f"close to linear ({n}x)"))
    return out


def table_rows(lines: dict) -> list[dict]:
    """Every line's points, and after the lines of a cell the paper's number where it has one."""
    out = []
    ordered = list(lines.values())
    for i, line in enumerate(ordered):
        cell = (line["dataset"], line["model"])
        for p in line["points"]:
            out.append({"Machine": line["kind"], "Dataset": SHORT.get(line["dataset"], line["dataset"]),
                        "Model": MODEL_NAMES[line["model"]], "Setup": p["setup"], "epoch s": p["epoch"],
                        "speedup over 1 node": p["speedup"],
                        "share of linear": p["speedup"] / p["nodes"] if p["speedup"] and p["nodes"] > 1 else None,
                        "vs 1 node of as many GPUs": p["vs_one_node"]})
        last = i + 1 == len(ordered) or (ordered[i + 1]["dataset"], ordered[i + 1]["model"]) != cell
        if last and cell == ("ogbn-papers100M", "sage"):
            out.append({"Machine": "paper (8x A100 per node)", "Dataset": SHORT[line["dataset"]],
                        "Model": MODEL_NAMES[line["model"]], "Setup": "8 nodes x 8 GPUs",
                        "epoch s": 66.0 / 80, "paper speedup": PAPER_8_NODES})
    return out


def history_row(rec: dict, label: str) -> dict:
    unit = "CPU ranks" if rec.get("device") == "cpu" else "GPUs"
    return {"Machine": label, "Dataset": SHORT.get(rec["key"]["dataset"], rec["key"]["dataset"]),
            "Model": MODEL_NAMES[rec["key"]["model"]], "Setup": setup_label(rec, unit),
            "Scale": rec["params"].get("scale"), "epoch s": rec["metrics"]["epoch_time"]}


# ----------------------------------------------------------------------------- figure and headline

def speedup_figure(lines: dict, emulated: bool):
    """A panel per dataset: speedup over one node against nodes, a line per model and GPUs per node
    (hollow markers at emulated nodes), the linear reference of the paper's claim and its one number."""
    import matplotlib.pyplot as plt

    drawn = {k: v for k, v in lines.items() if any(p["nodes"] > 1 for p in v["points"])}
    if not drawn:
        return None
    datasets = sorted({v["dataset"] for v in drawn.values()}, key=lambda d: cell_order(d, "")[:2])
    fig, axes = plt.subplots(1, len(datasets), figsize=(min(10.5, 3.5 * len(datasets) + 1.5), 4.2), squeeze=False)
    most = max(p["nodes"] for v in drawn.values() for p in v["points"])
    reach = max(most, 8 if "ogbn-papers100M" in datasets else most)
    ticks = [n for n in (1, 2, 4, 8) if n <= reach]
    for ax, ds in zip(axes[0], datasets):
        ax.plot(ticks, ticks, label="paper: close to linear", color="0.4", **PAPER_STYLE)
        for line in (v for v in drawn.values() if v["dataset"] == ds):
            marker, colour = MODEL_STYLE.get(line["model"], ("o", None))
            pts = sorted((p for p in line["points"] if finite(p["speedup"])), key=lambda p: p["nodes"])
            unit = line["unit"].removesuffix("s") if line["per"] == 1 else line["unit"]
            ax.plot([p["nodes"] for p in pts], [p["speedup"] for p in pts], color=colour, linewidth=1.4,
                    label=f"{MODEL_NAMES[line['model']]}, {line['per']} {unit} per node")
            for p in pts:
                ax.plot(p["nodes"], p["speedup"], marker=marker, color=colour, markersize=7,
                        markerfacecolor="none" if p["emulated"] else colour)
                if finite(p["reference"]):
                    ax.plot(p["nodes"], p["reference"], marker="x", color=colour, markersize=8, linestyle="none",
                            label=f"{MODEL_NAMES[line['model']]}, 1 node x {p['nodes'] * line['per']} {line['unit']}")
        if ds == "ogbn-papers100M":
            ax.plot(8, PAPER_8_NODES, marker="*", markersize=11, color=MODEL_STYLE["sage"][1], linestyle="none",
                    label="paper: GraphSAGE, 8 nodes", alpha=PAPER_STYLE["alpha"])
        ax.set_xscale("log", base=2)          # log-log: a linear speedup is the diagonal
        ax.set_yscale("log", base=2)
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.set_yticks(ticks, [str(n) for n in ticks])
        ax.minorticks_off()
        ax.set_xlabel("nodes" + (" (hollow: emulated, one host)" if emulated else ""))
        ax.set_title(SHORT.get(ds, ds), fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("speedup over one node")
    kinds = ", ".join(sorted({v["kind"] for v in drawn.values()}))
    header(fig, f"WholeGraph Fig. 13: speedup over one node, {kinds}" + (f"\nmulti-node points: {EMULATED}"
                                                                        if emulated else ""),
           lambda y: None, legend_rows=0)
    return fig


def headline(lines: dict, emulated: bool) -> str:
    parts = []
    for nodes in sorted({p["nodes"] for v in lines.values() for p in v["points"] if p["nodes"] > 1}):
        at = [(v, p) for v in lines.values() for p in v["points"] if p["nodes"] == nodes and finite(p["speedup"])]
        if not at:
            continue
        per = sorted({v["per"] for v, _ in at})
        how = f", {EMULATED}" if any(p["emulated"] for _, p in at) else ""
        parts.append(f"{nodes} nodes x {'/'.join(map(str, per))} {at[0][0]['unit']}{how}: "
                     f"{span([p['speedup'] for _, p in at], '.2f', 'x-')}x over one node in {len(at)} cells")
    if not parts:
        return ""
    return "; ".join(parts) + f" (paper: close to linear, {PAPER_8_NODES:.2f}x at 8 nodes for papers100M GraphSAGE)"
