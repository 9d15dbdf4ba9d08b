"""WholeGraph Fig. 10: per-mini-batch feature gather, NCCL alltoallv vs shared memory.

Each rank samples mini-batches of 512 seeds over 3 hops with fanouts [30, 30, 30] on a
stand-in of each WholeGraph Table II dataset, de-duplicates the ids, and gathers their
feature rows (the dataset's feature width, float32) with the five-step NCCL alltoallv
gather and with the one-kernel shared-memory gather (and real WholeGraph where it
imports). Reported: time per mini-batch, bandwidth, and the speedup; the report's bandwidths
are over the whole gather, the interval its speedup times (the paper's NCCL bar counts only
the final alltoallv of the rows, step 4 of its Fig. 4, while its time is the whole gather:
that bandwidth is recorded too, ``alltoallv_bw``, and kept in the history). The ids are those a training pipeline gathers: the
input nodes of the batch's first block from ``impls/sampling`` (default ``path_doubling``,
WholeGraph's Algorithm 1, with hash append-unique), in append-unique order (seeds first, then
each hop's new nodes), not sorted: sorted ids would make every rank read the same owner's
range at the same moment, a hot spot no pipeline produces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist

from harness import registry
from harness.argtypes import int_list, positive_float, positive_int, str_list
from harness.artifact import ReportArtifact
from harness.errors import HarnessError
from harness.experiment import Experiment, Measurement, Param, Point
from harness.registry import register_experiment
from harness.reportkit import (PAPER_STYLE, Band, Claim, Estimate, Report, figure, finish, machine_kind, newest_rows,
                               ratio, series_rows, several_runs_per_kind, span)
from harness.timing import CpuTimer, RepeatBudget, TorchCudaTimer, measure_collective
from impls.core.layout import TableSpec, closed_form_rows
from impls.sampling.minibatch import sample_blocks

from . import PAPER_GPUS, PAPER_HARDWARE

DATASETS = ("ogbn-products", "ogbn-papers100M", "friendster", "uk-2007-05")


@dataclass(frozen=True)
class Role:
    """A series of Fig. 10, in the paper's words: its name in the table's columns, its bar's label,
    how its speedup line is drawn, and the traits that pick the implementation and variant filling
    it from the registry (the first that has them all and none of ``without``)."""

    name: str
    bar: str
    traits: tuple[str, ...]
    without: tuple[str, ...] = ()
    line: tuple[str, str] = ("o", "-")            # the speedup line's marker and style

    def series(self):
        found = registry.series("gather", traits=self.traits, without=self.without + ("ceiling",))
        if not found:
            raise HarnessError(f"wholegraph.fig10: no gather implementation has traits {', '.join(self.traits)}")
        return found[0]

    def bar_label(self) -> str:
        return self.bar or self.series().title


# the paper's baseline (rows moved by collectives), the shared-memory gather the paper argues for,
# and real WholeGraph's
BASELINE = Role("NCCL", "NCCL alltoallv (whole gather)", ("collective",), without=("library",))
SUBJECT = Role("shared", "ours: one-kernel shared gather", ("paper",))
LIBRARY = Role("WholeGraph", "", ("library", "peer_read"), line=("^", ":"))
ROLES = (BASELINE, SUBJECT, LIBRARY)


def speedup_column(role: Role) -> str:
    return f"speedup {BASELINE.name}/{role.name}"


def sampled_input_ids(sampler, unique, seeds: torch.Tensor, fanouts: tuple[int, ...]) -> torch.Tensor:
    """The ids a pipeline gathers for one mini-batch: the first block's source nodes."""
    blocks = sample_blocks(sampler, unique, seeds, fanouts, check=False)
    return blocks[0].src_ids


@register_experiment
class Fig10(Experiment):
    title = "Per-mini-batch feature gather: NCCL alltoallv vs shared-memory gather"
    interface = "gather"

    @property
    def impls(self):
        return tuple(role.series().impl for role in ROLES)

    metric, unit, better = "time_per_batch", "ms", "lower"
    differs_from_paper = ("4 H200s instead of 8x A100; stand-ins of the four graphs at the scale that stores at most "
                          "130M edges, closed-form features of each graph's width, and mini-batches of our sampler "
                          "gathered on their own rather than the gathers of a training run.")
    warm_and_cold = ("Warm: the store and compiled kernels. Each repeat gathers the same sampled mini-batches, "
                     "many times the L2 per rank, so no repeat is served by the last one's lines; hot nodes "
                     "shared within and across batches hit the L2 as in training.")
    spawn_ranks = True
    parameters = {
        "datasets": Param(DATASETS, str_list, "WholeGraph Table II datasets"),
        "fanouts": Param((30, 30, 30), int_list, "fanout per hop"),
        "batch_size": Param(512, positive_int, "seeds per mini-batch"),
        "batches": Param(8, positive_int, "mini-batches per rank"),
        "max_edges": Param(1.3e8, positive_float, "largest stand-in graph (stored edges)"),
        "sampler": Param(None, str, "impls/sampling sampler whose mini-batches give the ids (default: the paper's "
                                    "Algorithm 1, path_doubling, with the paper's append-unique)"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        """The scale whose stand-in stores at most ``max_edges`` edges (2e6 on CPU or --quick)."""
        from harness import datasets

        cap = 2e6 if (cfg.quick or cfg.device == "cpu") and "max_edges" not in cfg.params \
            else self.param(cfg, "max_edges")
        spec = datasets.get(dataset)
        stored = spec.standin.stored_edges if spec.standin else spec.edges
        return float(f"{min(1.0, cap / stored):.2g}")

    def points(self, cfg):
        from harness import datasets

        (world,) = self.world_sizes(cfg)
        for name in self.param(cfg, "datasets"):
            spec = datasets.get(name)
            scale = self.scale(cfg, spec.name)
            for role in ROLES:
                one = role.series()
                yield Point(one.impl, {"dataset": spec.name, "scale": scale, "feature_dim": spec.feature_dim,
                                       **one.options}, world)

    def run_point(self, point, ctx):
        from harness import datasets

        cfg, rank = ctx.cfg, ctx.rank
        p = point.params
        device = rank.torch_device()
        if rank.rank == 0:  # one rank builds the cache, the others read it
            datasets.prepare(p["dataset"], scale=p["scale"], seed=cfg.seed, data_root=cfg.data_root)
        dist.barrier()
        graph = datasets.load(p["dataset"], scale=p["scale"], seed=cfg.seed, data_root=cfg.data_root,
                              prefer_real=False).tensors()
        num_nodes = graph["indptr"].numel() - 1
        sampler_name = self.param(cfg, "sampler") or registry.names("sampling", traits=("paper",))[0]
        unique_name = registry.names("unique", traits=("paper",))[0]
        sampler = registry.get_impl("sampling", sampler_name).factory(
            rank, graph["indptr"], graph["indices"], store="local", seed=cfg.seed * 7919 + rank.rank + 1)
        unique = registry.get_impl("unique", unique_name).factory(rank)
        gen = torch.Generator().manual_seed(cfg.seed * 7919 + rank.rank)
        train = graph["train_idx"]
        batch = min(self.param(cfg, "batch_size"), train.numel())
        id_lists = []
        for _ in range(self.param(cfg, "batches")):
            seeds = train[torch.randperm(train.numel(), generator=gen)[:batch]]
            id_lists.append(sampled_input_ids(sampler, unique, seeds, self.param(cfg, "fanouts")).to(device))
        sampler.close()
        del sampler, unique, graph
        spec = TableSpec(num_nodes, p["feature_dim"], "float32")
        made = registry.get_impl("gather", point.impl)
        gatherer = made.factory(rank, spec, **made.variant_of(p).options)
        try:
            correct = all(torch.equal(gatherer.gather(ids), closed_form_rows(ids, spec.row_elems, spec.torch_dtype))
                          for ids in id_lists[:2])
            flag = torch.tensor([0 if correct else 1], device=device)
            dist.all_reduce(flag)
            if int(flag.item()):
                raise RuntimeError("gathered rows differ from the closed form")
            timer = TorchCudaTimer() if device.type == "cuda" else CpuTimer()

            def all_batches():
                for ids in id_lists:
                    gatherer.gather(ids, check=False)

            budget = RepeatBudget.for_run(cfg, warmup=(2, 1), repeats=(10, 3))
            stats, _ = measure_collective(all_batches, timer=timer, budget=budget)
            alltoall_ms = None
            if hasattr(gatherer, "profile"):
                gatherer.profile = True
                total = 0.0
                for ids in id_lists:
                    gatherer.gather(ids, check=False)
                    total += gatherer.step_ms["alltoallv_rows"]
                alltoall_ms = total / len(id_lists)
        finally:
            gatherer.close()
        n_batches = len(id_lists)
        rows_per_batch = sum(int(ids.numel()) for ids in id_lists) / n_batches
        nbytes = rows_per_batch * spec.row_bytes
        per_batch = stats.scaled(1e3 / n_batches)
        extra = {"ids_per_batch": round(rows_per_batch), "nodes": num_nodes, "sampler": f"{sampler_name} + {unique_name}",
                 **budget.extra()}
        out = [Measurement("time_per_batch", "ms", per_batch, extra=extra),
               Measurement("algbw", "GB/s", stats.rate(nbytes * n_batches / 1e9), better="higher")]
        if alltoall_ms:
            out.append(Measurement("alltoallv_bw", "GB/s", value=nbytes / (alltoall_ms / 1e3) / 1e9,
                                   better="higher"))
        return out

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ok = rep.ok
        newest = newest_rows(ok, rep.labels, by=["p_dataset"])
        shown_ids = set(newest["run_id"])
        shown = Report(self, rows[rows["run_id"].isin(shown_ids)], [r for r in runs if r.run_id in shown_ids])
        kinds = {run_id: machine_kind(label) for run_id, label in shown.labels.items()}
        records = [gather_row(kinds[run_id], ds, grp) for (run_id, ds), grp in ordered_groups(newest)]
        table = shown.table([{k: v for k, v in r.items() if k in HEADLINE_COLUMNS} for r in records],
                            empty="no successful measurements", keep=())
        history = shown.table([gather_row(rep.label(run_id), ds, grp) for (run_id, ds), grp in ordered_groups(ok)],
                              single=(), keep=()) if several_runs_per_kind(rep.labels) else None
        sources = "; ".join(f"{kinds[r]}: {', '.join(sorted(set(g['p_sampler'].dropna())))}"
                            for r, g in newest.groupby("run_id") if "p_sampler" in g)
        caption = shown.caption("Feature gather per mini-batch (512 seeds, fanouts 30,30,30; the ids are the "
                                "de-duplicated input nodes of each run's sampler, in append-unique order, or sorted "
                                "where the run used the simple 'uniform with replacement' sampler of the first "
                                f"sessions: {sources}), each rank gathering its own batches concurrently from features "
                                "spread over all ranks (closed-form float32 rows of the dataset's width over a "
                                "stand-in graph at the scale shown)"
                                + ("; the newest run per machine kind (every run, with AlgoBW: fig10.history.md)"
                                   if history is not None else "")
                                + ". Bandwidths are BusBW = AlgoBW x (n-1)/n, as the paper's, each over the same "
                                "interval as its speedup: the whole gather per mini-batch (the paper's NCCL bar counts "
                                "its final alltoallv alone; that figure is in the history as 'NCCL alltoallv-only "
                                f"BusBW'). Paper (WholeGraph Fig. 10, {PAPER_HARDWARE}): speedups above 2x on every "
                                "dataset.")
        subject = speedup_column(SUBJECT)
        speedups = {m: [r[subject] for r in records if r["Machine"] == m and r[subject]]
                    for m in dict.fromkeys(kinds.values())}
        headline = "; ".join(f"{m}: {subject} {span(v, '.2f', 'x-')}x" + library_span(records, m)
                             for m, v in speedups.items() if v)
        return shown.artifact("WholeGraph Fig. 10: NCCL vs shared-memory gather per mini-batch", caption, table,
                              gather_figure(records), headline=f"{headline} (paper: > 2x)" if headline else "",
                              claims=[c for (run_id, ds), grp in ordered_groups(newest)
                                      if (c := speedup_claim(kinds[run_id], ds, grp)) is not None], history=history)


ABOVE_2X = Band.between(2.0, math.inf, "above 2x (the paper: above 2x on every dataset)")


def speedup_claim(machine: str, ds: str, grp) -> Claim | None:
    """The baseline's gather time per mini-batch over the shared-memory gather's on one dataset."""
    def time(role):
        sel = series_rows(grp, role.series())
        sel = sel[sel["metric"] == "time_per_batch"]
        return Estimate.from_stats(sel["stats"].iloc[0], "repeats") if not sel.empty else None

    base, subject = time(BASELINE), time(SUBJECT)
    if base is None or subject is None or not (base.value > 0 and subject.value > 0):
        return None
    return Claim(f"{machine} {PAPER_NAMES.get(ds, ds)}: gather time {BASELINE.name} / {SUBJECT.name}",
                 base.ratio(subject), ABOVE_2X, "> 2x", runs=tuple(sorted(set(grp["run_id"]))))


def ordered_groups(ok):
    """(run id, dataset) groups of ``ok``, the datasets in the paper's order."""
    order = {d: i for i, d in enumerate(DATASETS)}
    groups = list(ok.groupby(["run_id", "p_dataset"]))
    return sorted(groups, key=lambda g: (g[0][0], order.get(g[0][1], len(order)), g[0][1]))


def library_span(records, machine: str) -> str:
    column = speedup_column(LIBRARY)
    values = [r[column] for r in records if r["Machine"] == machine and r[column]]
    return f", {column.removeprefix('speedup ')} {span(values, '.2f', 'x-')}x" if values else ""


HEADLINE_COLUMNS = (("Machine", "Dataset", "Scale", "ids / batch") + tuple(f"{r.name} ms" for r in ROLES)
                    + tuple(speedup_column(r) for r in ROLES[1:]) + tuple(f"{r.name} BusBW" for r in ROLES))


def gather_row(machine: str, ds: str, grp) -> dict:
    """One run's dataset: time per batch of each gather, their ratios, bandwidths (AlgoBW and BusBW)."""
    def val(role, metric):
        sel = series_rows(grp, role.series())
        sel = sel[sel["metric"] == metric]
        return float(sel["value"].iloc[0]) if not sel.empty else None

    world = int(grp["world_size"].max())
    bus = (lambda algbw: algbw * (world - 1) / world if algbw is not None and world > 1 else None)
    times = {role: val(role, "time_per_batch") for role in ROLES}
    rates = {role.name: val(role, "algbw") for role in ROLES}
    return {"Machine": machine, "Dataset": ds, "Scale": grp.iloc[0]["p_scale"],
            "ids / batch": int(grp["p_ids_per_batch"].dropna().iloc[0]) if "p_ids_per_batch" in grp else None,
            **{f"{role.name} ms": t for role, t in times.items()},
            **{speedup_column(role): ratio(times[BASELINE], times[role]) for role in ROLES[1:]},
            **{f"{name} GB/s": rate for name, rate in rates.items()},
            **{f"{name} BusBW": bus(rate) for name, rate in rates.items()},
            # the paper's NCCL bar: its final alltoallv alone
            f"{BASELINE.name} alltoallv-only BusBW": bus(val(BASELINE, "alltoallv_bw"))}



# the paper's names of its four graphs
PAPER_NAMES = {"ogbn-products": "ogbn-products", "ogbn-papers100M": "ogbn-papers100M", "friendster": "Friendster",
               "uk-2007-05": "UK_domain"}


def gather_figure(records):
    """Fig. 10's layout: BusBW bars per dataset (left axis) and the time speedups over NCCL as lines
    (right axis) beside the paper's 2x, a panel per machine."""
    import numpy as np

    machines = list(dict.fromkeys(r["Machine"] for r in records))
    fig, axes = figure((min(10.5, 1.5 + 5 * max(len(machines), 1)), 5.0), ncols=max(len(machines), 1),
                       squeeze=False)
    for ax, machine in zip(axes[0], machines or [None]):
        mine = [r for r in records if r["Machine"] == machine]
        xs = np.arange(len(mine))
        bars = [role for role in ROLES if any(r[f"{role.name} BusBW"] for r in mine)]
        width = 0.8 / max(len(bars), 1)
        for i, role in enumerate(bars):
            ax.bar(xs + (i - (len(bars) - 1) / 2) * width, [r[f"{role.name} BusBW"] or 0 for r in mine], width,
                   label=role.bar_label(), color=role.series().colour)
        ax.set_ylabel("BusBW (GB/s per rank)")
        ax.set_xticks(xs, [f"{PAPER_NAMES.get(r['Dataset'], r['Dataset'])}\n(x{r['Scale']:g})" for r in mine])
        ax.set_title(machine or "no measured machine")
        right = ax.twinx()
        top = 2.0
        # black lines over the bars, their markers in the system's colour
        for role in ROLES[1:]:
            values = [r[speedup_column(role)] for r in mine]
            one, (marker, style) = role.series(), role.line
            if any(values):
                right.plot(xs, [v if v else np.nan for v in values], marker=marker, markersize=8, color="black",
                           markerfacecolor=one.colour, linestyle=style, linewidth=1.8,
                           label=f"speedup {BASELINE.name} / {one.family}")
                top = max(top, *(v for v in values if v))
        right.axhline(2.0, **PAPER_STYLE, color="black", label=f"paper ({PAPER_GPUS}): speedup > 2x")
        right.set_ylim(0, top * 1.25)
        right.set_ylabel("speedup of the gather time (x)")
        handles = [h for a in (ax, right) for h in a.get_legend_handles_labels()[0]]
        ax.legend(handles=handles, fontsize=9, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig.suptitle("WholeGraph Fig. 10: feature gather per mini-batch, NCCL-based vs shared memory")
    return finish(fig)
