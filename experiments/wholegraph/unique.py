"""WholeGraph's append-unique (section III-C), every implementation: not a paper table.

Append-unique of real frontiers (hop h of a [30,30,30] mini-batch of 512 seeds): WholeGraph's hash
table and a direct-mapped id table (ours), torch.unique (sort) and real WholeGraph, each checked
against the sort reference before it is timed.
"""

from __future__ import annotations

import itertools

from harness.argtypes import dataset_names as name_list
from harness.argtypes import fanout_sets, int_list, positive_int
from harness.artifact import ReportArtifact
from harness.errors import HarnessError
from harness.experiment import Experiment, Measurement, Param, Point
from harness import registry
from harness.registry import register_experiment
from harness.reportkit import Report, figure, finish, machine_kind, newest_rows, several_runs_per_kind
from harness.timing import CacheFlush, RepeatBudget
from harness.worlds import Worlds

from . import PAPER_HARDWARE
from .sampled_graphs import default_scale, short_name



def uniques():
    """Every append-unique, in the registry's order: the table's columns and the figure's bars."""
    return registry.series("unique")


def role(trait: str):
    """The append-unique that has ``trait`` (the paper's, the reference)."""
    return registry.series("unique", traits=(trait,))[0]


def frontier(graph, ctx, batch: int, fanouts, hop: int):
    """(targets, neighbors) of hop ``hop`` (1-based) of one mini-batch of the paper's sampler
    (path_doubling), de-duplicated between hops by the reference."""
    from ..kit.samplers import implementation, seed_batches

    cfg = ctx.cfg
    paper = registry.names("sampling", traits=("paper",))[0]
    sampler = implementation(ctx, "sampling", paper, graph, store="local")
    unique = implementation(ctx, "unique", role("reference").impl, graph)
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

    @property
    def impls(self):
        return tuple(u.impl for u in uniques())

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
                for impl in self.impls:
                    yield Point(impl, {"dataset": name, "scale": self.scale(cfg, name), "batch": batch,
                                       "fanouts": list(fanouts), "hop": hop}, world)

    def run_point(self, point, ctx):
        from ..kit.samplers import implementation, load_graph, timed

        cfg, rank = ctx.cfg, ctx.rank
        p = point.params
        graph = load_graph(ctx, p["dataset"], p["scale"])
        device = rank.torch_device()
        targets, neighbors = frontier(graph, ctx, p["batch"], p["fanouts"], p["hop"])
        library = registry.get_impl("unique", point.impl).has("library")
        unique = implementation(ctx, "unique", point.impl, graph, **({"dup_count": False} if library else {}))
        id_bound = len(graph.indptr) - 1          # as sample_blocks passes it: the graph's node count
        out = unique.append_unique(targets, neighbors, id_bound=id_bound)
        check_unique(out, targets, neighbors)
        n_unique = int(out[0].numel())
        if library:                              # time the library's own call alone
            call = unique.library_call(targets, neighbors)
            fn = lambda _: call()  # noqa: E731
        else:
            fn = lambda _: unique.append_unique(targets, neighbors, check=False, id_bound=id_bound)  # noqa: E731
        flush = CacheFlush([device] if device.type == "cuda" else ())

        def flush_and_read_inputs():
            # the tables start cold; the inputs are warm, as a sampler that just wrote them leaves them
            flush()
            targets.max(), neighbors.max()

        budget = RepeatBudget.for_run(cfg, warmup=(5, 2), repeats=(30, 5))
        stats, _, _, _ = timed(fn, itertools.repeat(None), rank, budget, flush=flush_and_read_inputs)
        extra = {"placement": unique.describe(), "targets": int(targets.numel()),
                 "neighbors": int(neighbors.numel()), "unique": n_unique, **flush.extra(), **budget.extra()}
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
    """Per machine and dataset, the reference (torch.unique) over the paper's append-unique
    (hash_append) at the deepest hop, where the work dominates, then at hop 1, where a call's fixed
    cost does (torch.unique takes about as long at 8K keys as at 11K there)."""
    reference, paper = role("reference"), role("paper")
    column = ratio_column(reference, paper)
    if column not in table:
        return ""
    parts = []
    for (machine, ds), mine in table.groupby(["Machine", "Dataset"], sort=False):
        mine = mine[mine[column].notna()].sort_values("Hop")
        if mine.empty:
            continue
        deep, first = mine.iloc[-1], mine.iloc[0]
        text = (f"{machine}, {ds} hop {int(deep['Hop'])} ({count(int(deep['Targets']))} + "
                f"{count(int(deep['Neighbors']))} keys): {reference.spec.label_for('short')} / {paper.impl} "
                f"{deep[column]:.2f}x")
        if int(first["Hop"]) != int(deep["Hop"]):
            text += (f"; hop {int(first['Hop'])} ({count(int(first['Targets']))} + {count(int(first['Neighbors']))}, "
                     f"fixed costs dominate) {first[column]:.2f}x")
        parts.append(text)
    return " | ".join(parts) + " (the paper times none)" if parts else ""


def ratio_column(reference, one) -> str:
    """The table's column of ``one``'s time over the reference's: ``sort / hash``."""
    return f"{reference.impl} / {one.spec.label_for('short')}"


def unique_row(machine: str, cell: tuple, grp, notes: list) -> dict:
    """A row of the table (every implementation's time on one run's frontier, the ratios to sort);
    adds the hop-1 note of the issue's target to ``notes``."""
    _, ds, hop = cell
    first = grp.iloc[0]
    rec = {"Machine": machine, "Dataset": short_name(ds), "Hop": int(hop), "Targets": int(first["p_targets"]),
           "Neighbors": int(first["p_neighbors"]), "Unique": int(first["p_unique"])}
    vals = {}
    for one in uniques():
        sel = grp[grp["impl"] == one.impl]
        vals[one.impl] = rec[f"{one.impl} us"] = float(sel["value"].iloc[0]) if not sel.empty else None
    reference, paper = role("reference"), role("paper")
    for ours in registry.series("unique", family=paper.family):       # each of ours over the reference
        if not (vals[ours.impl] and vals[reference.impl]):
            continue
        column = ratio_column(reference, ours)
        rec[column] = vals[reference.impl] / vals[ours.impl]
        if ours.impl == paper.impl and hop == 1:
            line = (f"{rec['Machine']}, {rec['Dataset']} hop 1 ({rec['Targets']} targets, {rec['Neighbors']} "
                    f"neighbors): {paper.impl} {vals[paper.impl]:.1f} us, {reference.spec.label_for('short')} "
                    f"{vals[reference.impl]:.1f} us = {rec[column]:.2f}x")
            if first["device"] == "cuda":
                line += f" (issue target >= 2x: {'met' if rec[column] >= 2 else 'NOT met'})"
            notes.append(line)
    return rec


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
        bars = [(f"{u.impl} us", u.label, u.colour) for u in uniques()]
        bars = [b for b in bars if b[0] in mine and mine[b[0]].notna().any()]
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
