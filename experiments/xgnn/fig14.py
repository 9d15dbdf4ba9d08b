"""XGNN Fig. 14: original vs batched KHop sampling with the graph spread over 4 GPUs.

XGNN (section 5, Fig. 5 lines 9-18) replaces the reservoir KHop of its codebase (one thread
per target walking every neighbor position, each read its own request) with random positions
de-duplicated in a shared-memory set and read in batched, coalesced requests. Fig. 14 trains
GCN (3 hops, fanouts 15/10/5, batch 6000) on 4 GPUs over PA and UK and shows (a) the
average NVLink bytes received during the sampling kernel (Nsight Compute) and (b) the
sampling time per epoch, kernel part dark.

Here: the CSR is split by rows over the GPUs in symmetric memory (impls/sampling/csr.py,
``store="sharded"``) and each GPU samples its share of one epoch's training nodes with
`khop_batched` (variant ``original`` = the reservoir kernel, ``batched`` = XGNN's) plus
hash append-unique. (a) is counted by the kernels themselves: the 32-byte sectors their
requests touch in rows owned by other GPUs (a counting pass, separate from the timed ones);
(b) is timed per epoch, sampling kernels (CUDA events around each sampler call) and the
whole sampling step (kernels + offsets + append-unique). On CPU (or fewer GPUs) the same
kernels' request model is evaluated for rank 0 of a virtual 4-way partition.
"""

from __future__ import annotations

from harness.argtypes import dataset_names as name_list
from harness.argtypes import fanout_sets, positive_int
from harness.artifact import ReportArtifact
from harness.errors import HarnessError, SkipPoint
from harness.experiment import Experiment, Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, figure, finish, group, newest_per_kind
from harness.timing import Stats
from harness.worlds import Worlds, world_sizes

from . import PALETTE, PAPER_HARDWARE

VARIANTS = ("original", "batched")
# default stand-in scales: (cuda, cuda --quick, cpu)
SCALES = {"ogbn-papers100M": (0.25, 0.05, 0.0005), "uk-2006-05": (0.25, 0.05, 0.0005)}
SHORT = {"ogbn-papers100M": "PA", "uk-2006-05": "UK"}


class RowWalk:
    """A sampler seen through the rows its targets walk: per call (one sampling kernel), the sum of
    the targets' row lengths, of min(row length, fanout), and the longest row (host arithmetic on
    the CSR's offsets, in the untimed counting pass)."""

    def __init__(self, inner, indptr):
        import numpy as np

        self.inner, self.indptr = inner, np.asarray(indptr)
        self.positions = self.sampled = self.longest = self.longest_max = self.calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def sample(self, seeds, fanout, **kw):
        ids = seeds.detach().cpu().numpy() if hasattr(seeds, "detach") else seeds
        degree = self.indptr[ids + 1] - self.indptr[ids]
        self.calls += 1
        self.positions += int(degree.sum())
        self.sampled += int(degree.clip(max=int(fanout)).sum()) if int(fanout) > 0 else int(degree.sum())
        longest = int(degree.max()) if degree.size else 0
        self.longest += longest
        self.longest_max = max(self.longest_max, longest)
        return self.inner.sample(seeds, fanout, **kw)


@register_experiment
class Fig14(Experiment):
    title = "KHop optimization: remote bytes and sampling time per epoch, original vs batched"
    differs_from_paper = ("4 NVLink-connected H200s instead of 4 V100s of a DGX-1, PA and UK stand-ins at 25% scale, "
                          "remote bytes counted by the kernels themselves (32-byte sectors) where the paper read "
                          "NVLink bytes from Nsight Compute.")
    interface = "sampling"
    impls = ("khop_batched",)
    metric, unit, better = "remote_bytes_per_kernel", "B", "lower"
    warm_and_cold = ("Each repeat samples the same epoch share with the same draws; an epoch reads many times "
                     "the L2 per rank, so a repeat is not served by the last one's lines; CSR shards and "
                     "kernels warm.")
    spawn_ranks = True
    paper_values = (
        PaperValue("Fig. 14(a), section 6.7 text", "khop_batched", {"variant": "batched"}, "remote_bytes_ratio",
                   0.5, "x", "the sampling optimization reduces roughly half of the transmitted data"),
    )
    parameters = {
        "datasets": Param(("ogbn-papers100M", "uk-2006-05"), name_list, "PA-like and UK-like stand-ins"),
        "fanouts": Param(((15, 10, 5),), fanout_sets, "GCN's fanouts (one set)"),
        "batch": Param(6000, positive_int, "seeds per GPU per mini-batch (XGNN: 6000)"),
        "gpus": Param(4, positive_int, "GPUs the graph is split over (Fig. 14: 4)"),
        "max_batches": Param(0, int, "cap on batches per epoch per GPU (0: the whole epoch)"),
    }

    def world_sizes(self, cfg) -> list[int]:
        """One rank per part over the sharded CSR (real NVLink reads) where the run has a GPU per
        part, else one rank that samples rank 0's share of the ``gpus``-way partition."""
        return world_sizes(cfg, Worlds(fixed=(1, self.param(cfg, "gpus"))), self.id)

    def default_scale(self, cfg, dataset=None) -> float:
        cuda, quick, cpu = SCALES.get(dataset, (0.25, 0.05, 0.0005))
        return (quick if cfg.quick else cuda) if cfg.device == "cuda" else cpu

    def points(self, cfg):
        parts = self.param(cfg, "gpus")
        (world,) = self.world_sizes(cfg)
        fanouts = list(self.param(cfg, "fanouts")[0])
        batch = self.param(cfg, "batch")
        if cfg.device == "cpu" and "batch" not in cfg.params:
            batch = 600
        for name in self.param(cfg, "datasets"):
            scale = self.scale(cfg, name)
            for variant in VARIANTS:
                yield Point("khop_batched", {"dataset": name, "scale": scale, "variant": variant,
                                             "fanouts": fanouts, "batch": batch, "parts": parts,
                                             "store": "sharded" if (cfg.device == "cuda" and world > 1) else "local"},
                            world)

    def run_point(self, point, ctx):
        cfg, rank = ctx.cfg, ctx.rank
        from harness import graphs
        from harness.timing import DeviceClock, Spans, measure_collective, timer_for
        from impls.sampling.minibatch import sample_blocks

        from ..kit.samplers import epoch_batches, implementation

        p = point.params
        graph = graphs.load(ctx, p["dataset"], p["scale"], "structure")
        device = rank.torch_device()
        parts = p["parts"]
        count_rank = rank.rank if rank.world_size == parts else 0
        if rank.world_size != parts and rank.world_size != 1:
            raise HarnessError("fig14 runs on one rank per part, or one rank modelling rank 0 of the parts")
        sampler = implementation(ctx, "sampling", "khop_batched", graph, variant=p["variant"], store=p["store"],
                                 count_remote=True, count_world=parts, count_rank=count_rank)
        unique = implementation(ctx, "unique", "hash_append", graph)
        share = 0 if rank.world_size == 1 else rank.rank
        world = parts if rank.world_size == 1 else rank.world_size
        batches = epoch_batches(graph, p["batch"], world, share, cfg.seed, device)
        total_batches = len(batches)
        cap = self.param(cfg, "max_batches")
        if cap > 0:
            batches = batches[:cap]
        if not batches:
            raise SkipPoint("no training nodes for this rank")
        fanouts = p["fanouts"]

        # (a) counting pass: the requests of every sampling kernel of the epoch, and the rows its
        # targets walk (the original KHop's thread walks every position of its target's row)
        sampler.count_remote = True
        sampler.reset_counters()
        rows = RowWalk(sampler, graph.indptr)
        for i, seeds in enumerate(batches):
            sample_blocks(rows, unique, seeds, fanouts, seed=cfg.seed * 1000 + i, check=False)
        stats = sampler.remote_stats()
        kernels = len(batches) * len(fanouts)
        sampler.count_remote = False

        # (b) timed epochs: kernel time (device marks around each sampler call) and the whole step
        spans = Spans(DeviceClock(device))

        class Timed:
            def __init__(self, inner):
                self.inner = inner

            def __getattr__(self, name):        # id_bound: append-unique sizes its table as in (a)
                return getattr(self.inner, name)

            def sample(self, *a, **k):
                with spans.span("sample"):
                    return self.inner.sample(*a, **k)

        timed_sampler = Timed(sampler)

        def epoch():
            for i, seeds in enumerate(batches):
                sample_blocks(timed_sampler, unique, seeds, fanouts, seed=cfg.seed * 1000 + i, check=False)

        def run_epoch_collect():
            epoch()
            epoch_kernel.append(spans.totals().get("sample", 0.0))

        epoch_kernel: list[float] = []
        warmup, repeats = cfg.warmup_or(1, 1), cfg.repeats_or(5, 2)
        step_stats, spread = measure_collective(run_epoch_collect, timer=timer_for(rank.device), warmup=warmup,
                                                repeats=repeats)
        kernel_stats = Stats.from_samples(epoch_kernel[warmup:])
        scale_up = total_batches / len(batches)          # whole-epoch estimate when capped
        extra = {"placement": sampler.describe(), "batches": len(batches), "epoch_batches": total_batches,
                 "kernels": kernels, "gpus_counted": parts, "count_rank": count_rank,
                 "remote_useful_bytes": stats["remote_useful_bytes"], "all_bytes": stats["all_bytes"],
                 "remote_sectors": stats["remote_sectors"]}
        per_kernel = stats["remote_bytes"] / kernels
        return [
            Measurement("remote_bytes_per_kernel", "B", value=per_kernel, extra=extra),
            Measurement("row_positions_per_epoch", "positions", value=rows.positions * scale_up,
                        extra={"what": "sum over the kernels' targets of their row lengths: the positions the "
                                       "original KHop's threads walk"}),
            Measurement("sampled_positions_per_epoch", "positions", value=rows.sampled * scale_up,
                        extra={"what": "sum of min(row length, fanout): the positions a sample keeps"}),
            Measurement("kernels_per_epoch", "", value=total_batches * len(fanouts)),
            Measurement("longest_row_per_kernel", "positions", value=rows.longest / max(1, rows.calls),
                        extra={"what": "mean over the kernels of the longest row among their targets: the "
                                       "original KHop's longest thread", "max": rows.longest_max}),
            Measurement("remote_bytes_per_epoch", "B", value=stats["remote_bytes"] * scale_up),
            Measurement("remote_useful_bytes_per_epoch", "B", value=stats["remote_useful_bytes"] * scale_up),
            Measurement("sampling_kernel_time_per_epoch", "ms", kernel_stats.scaled(1e3 * scale_up)),
            Measurement("sampling_time_per_epoch", "ms", step_stats.scaled(1e3 * scale_up),
                        extra={"rank_median_ms": [spread.min * 1e3, spread.avg * 1e3, spread.max * 1e3]}),
        ]

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        every = []
        for (run_id, ds, variant), grp in rep.ok.groupby(["run_id", "p_dataset", "p_variant"], sort=False):
            value = grp.drop_duplicates("metric").set_index("metric")["value"]
            every.append({"run_id": run_id, "Machine": rep.label(run_id), "GPUs": int(grp["world_size"].iloc[0]),
                          "Parts": int(grp["p_parts"].iloc[0]), "Dataset": SHORT.get(ds, ds), "KHop": variant,
                          **{col: float(value[m]) / div if m in value else None for m, (col, div) in COLUMNS.items()},
                          "rows": {m: float(value[m]) for m in ROW_METRICS if m in value}})
        # the newest run per machine kind of each dataset and variant, GPU runs over the partition first
        newest = newest_per_kind(every, rep.labels, lambda r: (r["Dataset"], r["KHop"]), lambda r: r["run_id"])
        records = [{**r, "Machine": kind} for (kind, *_), r in newest.items()]
        run_ids = {r["run_id"] for r in records}
        table = rep.table([{k: v for k, v in r.items() if k not in ("run_id", "rows")} for r in records],
                          empty="no successful measurements", single=("Machine",), drop_empty=False)
        for (machine, ds), grp in group(records, lambda r: (r["Machine"], r["Dataset"]), lambda r: r["KHop"]).items():
            if {"original", "batched"} <= set(grp):
                o, b = grp["original"], grp["batched"]
                rep.notes.append(
                    f"{machine}, {ds}: batched / original remote bytes = "
                    f"{b['remote KB / kernel'] / o['remote KB / kernel']:.2f} (paper: about 0.5); sampling kernel "
                    f"time {b['kernel ms / epoch'] / o['kernel ms / epoch']:.2f}x, whole sampling time "
                    f"{b['sampling ms / epoch'] / o['sampling ms / epoch']:.2f}x")
        walks = [n for n in (row_walk_note(grp) for grp in group(
            records, lambda r: (r["Machine"], r["Dataset"]), lambda r: r["KHop"]).values()) if n]
        rep.notes += walks + ([ROW_WALK_NOTE] if walks else [])
        if any(r["GPUs"] < r["Parts"] for r in records):
            rep.notes.append(
                "Rows with GPUs < Parts ran on fewer GPUs than the partition: one rank samples rank 0's share and "
                "its requests are counted against the virtual partition (same kernels and request model; no "
                "NVLink traffic, so its times are not Fig. 14(b)'s).")
        rep.notes.append(COUNTING_NOTE)
        mine = rep.ok[rep.ok["run_id"].isin(run_ids)]
        stand_ins = sorted({f"{SHORT.get(d, d)} at scale {s:g}"
                            for d, s in zip(mine.get("p_dataset", []), mine.get("p_scale", []))})
        caption = rep.caption(
            "XGNN Fig. 14 re-measured: GCN sampling (3 hops, fanouts 15/10/5, 6000 seeds per GPU per batch) over "
            "one epoch of training nodes, CSR split by rows over the GPUs; original = reservoir KHop, batched = "
            f"XGNN's. Paper: {PAPER_HARDWARE}, 4 GPUs, real PA and UK; here stand-ins {', '.join(stand_ins)}. Each "
            "cell is the newest run per machine kind; every run is in the history.", runs=run_ids)
        ratios = [n.split("remote bytes = ")[1].split(" ")[0] for n in rep.notes if "remote bytes = " in n]
        headline = (f"{', '.join(sorted({r['Machine'] for r in records}))}: batched / original remote bytes "
                    f"{', '.join(ratios)} (paper about 0.5)") if ratios else ""
        return rep.artifact("XGNN Fig. 14: KHop optimization", caption, table, khop_figure(records),
                            headline=headline, skips=rep.rows[rep.rows["run_id"].isin(run_ids)],
                            history=rep.table([{k: v for k, v in r.items() if k not in ("run_id", "rows")} for r in every],
                                              empty="no successful measurements", single=(), drop_empty=False))


def khop_figure(records: list[dict]):
    """(a) remote KB per sampling kernel and (b) sampling time per epoch, the kernel's part dark
    inside the whole bar, original beside batched per dataset; the paper's 'about half' of the
    original's bytes drawn dashed over the batched bar."""
    fig, axes = figure((10, 4), ncols=2)
    kinds = sorted({r["Machine"] for r in records})
    cells = {(r["Machine"], r["Dataset"], r["KHop"]): r for r in records}
    groups = list(dict.fromkeys((r["Machine"], r["Dataset"]) for r in records))
    labels = [ds if len(kinds) == 1 else f"{ds} ({kind})" for kind, ds in groups]
    width = 0.38
    for i, variant in enumerate(VARIANTS):
        xs = [g + (i - 0.5) * width for g in range(len(groups))]
        get = lambda col: [(cells.get((*k, variant)) or {}).get(col) or 0 for k in groups]  # noqa: E731
        axes[0].bar(xs, get("remote KB / kernel"), width, color=PALETTE[f"{variant} KHop"], label=variant)
        axes[1].bar(xs, get("sampling ms / epoch"), width, color=PALETTE[f"{variant} KHop"],
                    label=f"{variant}: whole sampling")
        axes[1].bar(xs, get("kernel ms / epoch"), width * 0.6, color=PALETTE[f"{variant} KHop kernel"],
                    label=f"{variant}: sampling kernel (dark)")
    half = [0.5 * ((cells.get((*k, "original")) or {}).get("remote KB / kernel") or 0) for k in groups]
    for g, h in enumerate(half):
        if h:
            axes[0].plot([g + 0.5 * width - width / 2, g + 0.5 * width + width / 2], [h, h], color="0.2",
                         linestyle="--", label="paper (4x V100): about half of original" if g == 0 else None)
    for ax, title, ylabel, where in ((axes[0], "(a) remote data per sampling kernel", "remote KB per kernel (counted)",
                                      "upper right"),
                                     (axes[1], "(b) sampling time per epoch", "ms per epoch", "upper left")):
        ax.set_xticks(range(len(groups)), labels)
        ax.set(title=title + (f" ({kinds[0]})" if len(kinds) == 1 else ""), ylabel=ylabel)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=9, loc=where)
    return finish(fig)


def row_walk_note(variants: dict) -> str:
    """What the counting pass measured of the rows the original KHop walks, beside its kernel time
    (ROW_WALK_NOTE says how to read it)."""
    o, b = variants.get("original"), variants.get("batched")
    if not o or not b or not {"row_positions_per_epoch", "longest_row_per_kernel"} <= set(o["rows"]):
        return ""
    walked, kept = o["rows"]["row_positions_per_epoch"], o["rows"].get("sampled_positions_per_epoch")
    longest, kernels = o["rows"]["longest_row_per_kernel"], o["rows"].get("kernels_per_epoch")
    text = (f"{o['Machine']}, {o['Dataset']}, original KHop: its threads walk {walked / 1e6:.3g}M row positions per "
            "epoch" + (f" to keep {kept / 1e6:.3g}M ({walked / kept:.1f}x)" if kept else "")
            + f"; the longest row of a kernel averages {longest:,.0f} positions")
    ms = o.get("kernel ms / epoch")
    if ms and kernels:
        text += (f"; kernel time {ms * 1e6 / walked:.2g} ns per position walked, {ms * 1e6 / (longest * kernels):.3g} ns "
                 "per position of the kernels' longest rows")
    if b.get("kernel ms / epoch") and ms:
        text += (f"; kernel time original / batched {ms / b['kernel ms / epoch']:.1f}x, remote bytes "
                 f"{o['remote KB / kernel'] / b['remote KB / kernel']:.1f}x")
    return text + "."


ROW_WALK_NOTE = (
    "The original KHop gives each target one thread, which walks every position of the target's row (a random draw "
    "per position, a read only when the draw lands in the reservoir), so a kernel lasts at least as long as the walk "
    "of its longest row, and its remote bytes count the ids read (about fanout x ln(row / fanout) per row), not the "
    "positions walked. Where the time per position of the longest rows is alike across datasets and the time per "
    "position walked is not, the longest rows (the stand-ins' hubs) set the original kernel's time: a gain in time "
    "far above the gain in bytes. The batched KHop draws about fanout positions per row whatever its length.")


ROW_METRICS = ("row_positions_per_epoch", "sampled_positions_per_epoch", "longest_row_per_kernel",
               "kernels_per_epoch")


COLUMNS = {"remote_bytes_per_kernel": ("remote KB / kernel", 1e3), "remote_bytes_per_epoch": ("remote MB / epoch", 1e6),
           "remote_useful_bytes_per_epoch": ("remote id MB / epoch", 1e6),
           "sampling_kernel_time_per_epoch": ("kernel ms / epoch", 1),
           "sampling_time_per_epoch": ("sampling ms / epoch", 1)}
COUNTING_NOTE = (
    "Remote bytes are counted by the kernels: per warp-wide request, the distinct 32-byte sectors of rows owned by "
    "another GPU (the original KHop's thread-serial reads are one request each); row lookups (indptr) included. "
    "'remote id MB' counts only the ids read. XGNN measured NVLink bytes with Nsight Compute, which adds protocol "
    "overhead.")
