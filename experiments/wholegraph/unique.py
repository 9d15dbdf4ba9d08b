"""WholeGraph's append-unique (section III-C), every implementation: not a paper table.

Append-unique of real frontiers (hop h of a [30,30,30] mini-batch of 512 seeds): WholeGraph's hash
table and a direct-mapped id table (ours), torch.unique (sort) and real WholeGraph, each checked
against the sort reference before it is timed.
"""

from __future__ import annotations

from harness.argtypes import dataset_names as name_list
from harness.argtypes import fanout_sets, int_list, positive_int
from harness.artifact import ReportArtifact
from harness.errors import HarnessError
from harness.experiment import Experiment, Measurement, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, colour, figure, finish, machine_kind, newest_rows, several_runs_per_kind
from harness.timing import CacheFlush
from harness.worlds import Worlds

from . import PAPER_HARDWARE
from .sampled_graphs import default_scale, short_name

UNIQUE_IMPLS = ("hash_append", "dense_append", "sort", "wholegraph_lib")


def frontier(graph, ctx, batch: int, fanouts, hop: int):
    """(targets, neighbors) of hop ``hop`` (1-based) of one path_doubling mini-batch."""
    from impls.sampling.bench import implementation, seed_batches

    cfg = ctx.cfg
    sampler = implementation(ctx, "sampling", "path_doubling", graph, store="local")
    unique = implementation(ctx, "unique", "sort", graph)
    device = ctx.rank.torch_device()
    targets = seed_batches(graph, batch, 1, cfg.seed, 0, device)[0]
    for h in range(hop):
        _, neighbors = sampler.sample(targets, fanouts[h], seed=cfg.seed * 31 + h, check=False)
        if h == hop - 1:
            return targets, neighbors
        targets = unique.append_unique(targets, neighbors, check=False)[0]
    raise HarnessError("hop must be >= 1")


def check_unique(out, targets, neighbors) -> None:
    """Targets first in order, every neighbor once, local ids reconstruct the neighbors."""
    import torch

    uniq, local, dup = out
    nt = targets.numel()
    ok = torch.equal(uniq[:nt], targets) and torch.equal(uniq[local], neighbors)
    ok = ok and torch.unique(uniq).numel() == uniq.numel()
    ok = ok and torch.equal(torch.unique(uniq), torch.unique(torch.cat([targets, neighbors])))
    if dup is not None:
        ok = ok and torch.equal(dup.to(torch.int64), torch.bincount(local, minlength=uniq.numel()))
    if not ok:
        raise RuntimeError("append-unique output differs from the sort reference")


@register_experiment
class UniqueTable(Experiment):
    title = "Append-unique: hash table, direct-mapped table, sort (torch.unique) and real WholeGraph"
    interface = "unique"
    impls = UNIQUE_IMPLS
    metric, unit, better = "time", "us", "lower"
    differs_from_paper = ("Not a paper table (WholeGraph describes its hash append-unique without timing it): our "
                          "implementations, torch.unique and today's real WholeGraph on one H200, on the frontiers of "
                          "30-30-30 mini-batches over products and papers100M stand-ins.")
    warm_and_cold = ("Warm: the inputs, as a sampler that just wrote them leaves them, and compiled kernels. "
                     "Cold: the hash and id tables and all else: the L2 is flushed before each call (rows: "
                     "flush_mib).")
    spawn_ranks = True
    worlds = Worlds(fixed=(1,))
    parameters = {
        "datasets": Param(("ogbn-products", "ogbn-papers100M"), name_list, "stand-ins whose frontiers are used"),
        "batch": Param(512, positive_int, "seeds of the mini-batch"),
        "fanouts": Param(((30, 30, 30),), fanout_sets, "the mini-batch's fanouts (one set)"),
        "hops": Param((1, 2), int_list, "frontiers: hop h's targets and sampled neighbors"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        return default_scale(dataset, cfg)

    def points(self, cfg):
        (world,) = self.world_sizes(cfg)
        fanouts = self.param(cfg, "fanouts")[0]
        batch = self.param(cfg, "batch") if (cfg.device == "cuda" or "batch" in cfg.params) else 64
        for name in self.param(cfg, "datasets"):
            for hop in self.param(cfg, "hops"):
                if hop < 1 or hop > len(fanouts):
                    raise HarnessError(f"hops must lie in 1..{len(fanouts)}")
                for impl in UNIQUE_IMPLS:
                    yield Point(impl, {"dataset": name, "scale": self.scale(cfg, name), "batch": batch,
                                       "fanouts": list(fanouts), "hop": hop}, world)

    def run_point(self, point, ctx):
        from harness import graphs
        from impls.sampling.bench import implementation, timed

        cfg, rank = ctx.cfg, ctx.rank
        p = point.params
        graph = graphs.load(ctx, p["dataset"], p["scale"], "structure")
        device = rank.torch_device()
        targets, neighbors = frontier(graph, ctx, p["batch"], p["fanouts"], p["hop"])
        options = {"dup_count": False} if point.impl == "wholegraph_lib" else {}
        unique = implementation(ctx, "unique", point.impl, graph, **options)
        id_bound = len(graph.indptr) - 1          # as sample_blocks passes it: the graph's node count
        out = unique.append_unique(targets, neighbors, id_bound=id_bound)
        check_unique(out, targets, neighbors)
        n_unique = int(out[0].numel())
        if point.impl == "wholegraph_lib":       # time the library call alone
            from pylibwholegraph.torch.graph_ops import append_unique

            fn = lambda _: append_unique(targets, neighbors, need_neighbor_raw_to_unique=True)  # noqa: E731
        else:
            fn = lambda _: unique.append_unique(targets, neighbors, check=False, id_bound=id_bound)  # noqa: E731
        flush = CacheFlush([device] if device.type == "cuda" else ())

        def flush_and_read_inputs():
            # the tables start cold; the inputs are warm, as a sampler that just wrote them leaves them
            flush()
            targets.max(), neighbors.max()

        stats, _, _ = timed(fn, [None], rank, cfg.warmup_or(5, 2), cfg.repeats_or(30, 5),
                            flush=flush_and_read_inputs)
        extra = {"placement": unique.describe(), "targets": int(targets.numel()),
                 "neighbors": int(neighbors.numel()), "unique": n_unique, **flush.extra()}
        return [Measurement("time", "us", stats.scaled(1e6), extra=extra)]

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        newest = newest_rows(rep.ok, rep.labels, by=["p_dataset", "p_hop"])
        shown_ids = set(newest["run_id"])
        shown = Report(self, rows[rows["run_id"].isin(shown_ids)], [r for r in runs if r.run_id in shown_ids])
        kinds = {run_id: machine_kind(label) for run_id, label in shown.labels.items()}
        table = shown.table([unique_row(kinds[run_id], cell, grp, shown.notes) for cell, grp in
                             newest.groupby(["run_id", "p_dataset", "p_hop"], sort=False)
                             for run_id in [cell[0]]], empty="no rows", single=(), keep=())
        history = rep.table([unique_row(rep.label(cell[0]), cell, grp, []) for cell, grp in
                             rep.ok.groupby(["run_id", "p_dataset", "p_hop"], sort=False)], single=(), keep=()) \
            if several_runs_per_kind(rep.labels) else None
        shown.notes.append("Every implementation's output is checked against the sort reference before timing (targets "
                           "first in order, each node once, local ids reconstruct the neighbors). Ours get the graph's "
                           "node count as id_bound, as in a mini-batch. WholeGraph is timed without duplicate counts "
                           "(its API has none); ours computes them.")
        caption = shown.caption("Append-unique of real frontiers: hop h of a path_doubling mini-batch (targets = the "
                                "hop's input nodes, neighbors = its samples), one GPU, median of repeats"
                                + ("; the newest run per machine kind (every run: unique.history.md)"
                                   if history is not None else "")
                                + f". WholeGraph (SC'22, {PAPER_HARDWARE}) describes the hash method without timing it.")
        return shown.artifact("Append-unique: hash table, direct-mapped table, sort and WholeGraph", caption, table,
                              unique_figure(table), headline=unique_headline(table), history=history)


def unique_headline(table) -> str:
    """Per machine and dataset, torch.unique / hash_append at the deepest hop, where the work dominates,
    then at hop 1, where a call's fixed cost does (torch.unique takes about as long at 8K keys as at
    11K there)."""
    if "sort / hash" not in table:
        return ""
    parts = []
    for (machine, ds), mine in table.groupby(["Machine", "Dataset"], sort=False):
        mine = mine[mine["sort / hash"].notna()].sort_values("Hop")
        if mine.empty:
            continue
        deep, first = mine.iloc[-1], mine.iloc[0]
        text = (f"{machine}, {ds} hop {int(deep['Hop'])} ({count(int(deep['Targets']))} + "
                f"{count(int(deep['Neighbors']))} keys): torch.unique / hash_append {deep['sort / hash']:.2f}x")
        if int(first["Hop"]) != int(deep["Hop"]):
            text += (f"; hop {int(first['Hop'])} ({count(int(first['Targets']))} + {count(int(first['Neighbors']))}, "
                     f"fixed costs dominate) {first['sort / hash']:.2f}x")
        parts.append(text)
    return " | ".join(parts) + " (the paper times none)" if parts else ""


def unique_row(machine: str, cell: tuple, grp, notes: list) -> dict:
    """A row of the table (every implementation's time on one run's frontier, the ratios to sort);
    adds the hop-1 note of the issue's target to ``notes``."""
    _, ds, hop = cell
    first = grp.iloc[0]
    rec = {"Machine": machine, "Dataset": short_name(ds), "Hop": int(hop), "Targets": int(first["p_targets"]),
           "Neighbors": int(first["p_neighbors"]), "Unique": int(first["p_unique"])}
    vals = {}
    for impl in UNIQUE_IMPLS:
        sel = grp[grp["impl"] == impl]
        vals[impl] = rec[f"{impl} us"] = float(sel["value"].iloc[0]) if not sel.empty else None
    if vals["hash_append"] and vals["sort"]:
        rec["sort / hash"] = vals["sort"] / vals["hash_append"]
        if hop == 1:
            line = (f"{rec['Machine']}, {rec['Dataset']} hop 1 ({rec['Targets']} targets, {rec['Neighbors']} "
                    f"neighbors): hash_append {vals['hash_append']:.1f} us, torch.unique {vals['sort']:.1f} us = "
                    f"{rec['sort / hash']:.2f}x")
            if first["device"] == "cuda":
                line += f" (issue target >= 2x: {'met' if rec['sort / hash'] >= 2 else 'NOT met'})"
            notes.append(line)
    if vals["dense_append"] and vals["sort"]:
        rec["sort / dense"] = vals["sort"] / vals["dense_append"]
    return rec


# ours in the palette's colour (the direct-mapped table a lighter shade of it), torch.unique in grey
OURS_LIGHT = "#9ecae1"
UNIQUE_BARS = (("hash_append us", "ours: hash_append", colour("ours")),
               ("dense_append us", "ours: dense_append", OURS_LIGHT),
               ("sort us", "torch.unique (sort)", "#595959"),
               ("wholegraph_lib us", "WholeGraph append_unique", colour("WholeGraph")))


def count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}K" if n >= 1e3 else str(n)


def unique_figure(table):
    """Time per call by hop (a group each: targets + neighbors in), a bar per implementation, a panel
    per machine and dataset."""
    import numpy as np

    if "Hop" not in table:
        return None
    panels = list(dict.fromkeys(zip(table["Machine"], table["Dataset"])))
    machines = {m for m, _ in panels}
    fig, axes = figure((min(10.5, 1.0 + 4.2 * len(panels)), 4.8), ncols=len(panels), sharey=True, squeeze=False)
    for ax, (machine, ds) in zip(axes[0], panels):
        mine = table[(table["Machine"] == machine) & (table["Dataset"] == ds)].sort_values("Hop")
        xs = np.arange(len(mine))
        bars = [b for b in UNIQUE_BARS if b[0] in mine and mine[b[0]].notna().any()]
        width = 0.8 / max(len(bars), 1)
        for i, (col, label, face) in enumerate(bars):
            ax.bar(xs + (i - (len(bars) - 1) / 2) * width, mine[col].fillna(0), width, label=label, color=face)
        ax.set_xticks(xs, [f"hop {h}\n{count(t)} + {count(n)}" for h, t, n in
                           zip(mine["Hop"], mine["Targets"], mine["Neighbors"])])
        ax.set_title(ds if len(machines) == 1 else f"{machine}, {ds}")
        ax.set_xlabel("frontier: targets + sampled neighbors")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("us per call")
    axes[0][0].legend(fontsize=9, loc="upper left")
    fig.suptitle("Append-unique per hop of a 30-30-30 mini-batch of 512 seeds"
                 + (f" ({next(iter(machines))})" if len(machines) == 1 else ""))
    return finish(fig)
