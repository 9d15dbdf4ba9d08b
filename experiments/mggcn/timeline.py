"""The staged SpMM's timeline, shared by Figs. 6 and 8: measured (every transfer and multiply of
every SpMM on every rank, over a few epochs) and drawn (a lane per GPU and kind of interval).

Every interval is bracketed by CUDA events on the stream it runs on (communication and compute
streams with overlap, one stream without; the host clock on CPU ranks, where an asynchronous
broadcast ends when the rank saw it complete). All ranks' intervals are gathered to rank 0 and
each is stored as start and duration (median over epochs), its SpMM, rank, block and kind in the
metric's name: ``stage_start.fwd1.rank0.stage2.comm`` (stage j = the block rank j holds).
"""

from __future__ import annotations

from harness.experiment import Measurement
from harness.ranks import all_gather
from harness.timing import Stats

from . import PALETTE
from .common import build_trainer, engine_extra, epoch_counts, graph_params, release, time_epochs

LANES = ("compute", "comm")     # their colours are the paper's (MG-GCN's palette)
LANE_LABELS = {"compute": "multiply\n(compute)", "comm": "transfer\n(comm)"}


def measure_timeline(exp, point, graph, ctx, **options) -> list[Measurement]:
    """Epoch time (timeline off), then the stage timeline of as many epochs: per SpMM its span
    (the slowest rank's first start to last end) and every interval's start and duration."""
    import torch.distributed as dist

    trainer = build_trainer(exp, point, graph, ctx, **options)
    _, repeats = epoch_counts(ctx.cfg)
    epochs = []
    try:
        epoch_stats = time_epochs(trainer, ctx)     # timeline off: clean epoch times
        engine = engine_extra(trainer)
        trainer.timeline.enabled = True
        for _ in range(repeats):
            if ctx.rank.world_size > 1:
                dist.barrier()
            trainer.train_epoch()
            epochs.append([(i.spmm, i.stage, i.kind, i.start_s, i.end_s) for i in trainer.collect_timeline()])
    finally:
        release(trainer)
    by_rank = all_gather(ctx.rank, epochs)           # [rank][epoch][interval]
    extra = {**graph_params(graph), **engine}
    out = [Measurement("epoch_time", "s", epoch_stats, extra=extra)]
    spans: dict[str, list[float]] = {}
    intervals: dict[tuple, tuple[list[float], list[float]]] = {}
    for r, rank_epochs in enumerate(by_rank):
        for e, epoch in enumerate(rank_epochs):
            per_spmm: dict[str, list[float]] = {}
            for spmm, stage, kind, start, end in epoch:
                starts, durations = intervals.setdefault((r, spmm, stage, kind), ([], []))
                starts.append(1e3 * start)
                durations.append(1e3 * (end - start))
                lo_hi = per_spmm.setdefault(spmm, [start, end])
                lo_hi[0], lo_hi[1] = min(lo_hi[0], start), max(lo_hi[1], end)
            for spmm, (lo, hi) in per_spmm.items():
                samples = spans.setdefault(spmm, [0.0] * len(rank_epochs))
                samples[e] = max(samples[e], 1e3 * (hi - lo))    # the slowest rank's span
    # the metric names carry which SpMM / rank / stage: rows of one point must differ in metric
    for spmm, samples in spans.items():
        out.append(Measurement(f"spmm_time.{spmm}", "ms", Stats.from_samples(samples),
                               extra={**extra, "spmm": spmm}))
    for (r, spmm, stage, kind), (starts, durations) in sorted(intervals.items()):
        where = {**extra, "rank": r, "spmm": spmm, "stage": stage, "kind": kind}
        name = f"{spmm}.rank{r}.stage{stage}.{kind}"
        out.append(Measurement(f"stage_start.{name}", "ms", Stats.from_samples(starts), extra=where))
        out.append(Measurement(f"stage_duration.{name}", "ms", Stats.from_samples(durations), extra=where))
    return out


def stage_rows(point_rows, tag: str):
    """The stage_start / stage_duration rows of SpMM ``tag`` among one point's rows (p_ columns)."""
    kinds = point_rows["metric"].str.split(".").str[0]
    return point_rows[kinds.isin(["stage_start", "stage_duration"]) & (point_rows["p_spmm"] == tag)]


def draw_lanes(ax, stages, lanes: list[tuple], ranks: list[int], gap: float = 0.8) -> None:
    """Bars of every interval, one lane per (GPU, entry of ``lanes``): ``(select, kinds, label)``,
    ``select(rows) -> rows`` picking the lane's rows (e.g. one overlap setting), ``kinds`` the
    interval kinds drawn in it. Times count from the lane group's first start; numbers = block."""
    metric = stages["metric"].str.split(".").str[0]
    yticks, ylabels = [], []
    for r in ranks:
        for k, (select, kinds, label) in enumerate(lanes):
            y = r * (len(lanes) + gap) + k
            mine = select(stages[stages["p_rank"].astype(int) == r])
            kind_of = metric[mine.index]
            origin = mine[kind_of == "stage_start"]["value"].min()
            for lane_kind in kinds:
                sel = mine[mine["p_kind"] == lane_kind]
                starts = sel[metric[sel.index] == "stage_start"].set_index("p_stage")["value"]
                durations = sel[metric[sel.index] == "stage_duration"].set_index("p_stage")["value"]
                for stage in starts.index:
                    left, width = starts[stage] - origin, durations.get(stage, 0.0)
                    ax.barh(y, width, left=left, height=0.8, color=PALETTE[lane_kind], edgecolor="k", lw=0.4)
                    ax.text(left + width / 2, y, str(int(stage)), ha="center", va="center", fontsize=8)
            yticks.append(y)
            ylabels.append(f"GPU {r}: {label}")
    ax.set_yticks(yticks, ylabels, fontsize=9)
    ax.invert_yaxis()


def lane_legend(ax, loc: str = "center right") -> None:
    import matplotlib.pyplot as plt

    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=PALETTE[lane], ec="k", lw=0.4) for lane in LANES],
              labels=list(LANE_LABELS.values()), fontsize=9, loc=loc)


def describe_spmm(tag: str) -> str:
    """'fwd1' -> 'forward, layer 1'."""
    if tag.startswith("fwd"):
        return f"forward, layer {tag[3:]}"
    if tag.startswith("bwd"):
        return f"backward, layer {tag[3:]}"
    return tag
