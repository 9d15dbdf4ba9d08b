"""MG-GCN Fig. 8: per-stage timeline of the staged SpMM, with and without overlap.

Sec. 6.4, Products on 4 GPUs: overlapping the broadcasts with the tile multiplies slows both
down (they share memory bandwidth) but still cuts the SpMM from 38 ms to 30 ms.  Every stage's
broadcast and multiply is bracketed by CUDA events on the stream it runs on (communication and
compute streams with overlap, one stream without; perf_counter and gloo's asynchronous
broadcast on CPU ranks, where a broadcast's end is when the rank saw it complete).  All ranks'
intervals are gathered to rank 0; each is stored as start and duration (median over epochs).
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.experiment import Measurement, PaperValue, Param, Point
from harness.ranks import all_gather
from harness.registry import register_experiment
from harness.reportkit import Report, figure
from harness.timing import Stats
from harness.worlds import Worlds

from . import PAPER_HARDWARE_V100
from .common import (MGGCNExperiment, mggcn_params, DATASETS, DGL_MODEL, build_trainer, common_parameters,
                     epoch_counts, graph_params, limit_threads, load_graph,
                     release, scale_note, time_epochs)


def _dataset(text: str) -> str:
    from .common import dataset_list

    return dataset_list(text)[0]


@register_experiment
class Fig8(MGGCNExperiment):
    title = "SpMM stage timeline with and without communication overlap (MG-GCN Fig. 8)"
    paper_hardware = PAPER_HARDWARE_V100
    warm_and_cold = ("Full batch: every epoch reads the same graph and features, as in the paper's "
                     "back-to-back epochs; untimed warm-up epochs first; graphs beyond the smallest are many "
                     "times the L2.")
    paper_values = (
        PaperValue("Sec. 6.4 (Fig. 8)", "mggcn", {"dataset": "products", "gpus": 4, "overlap": False},
                   "spmm_time", 38.0, "ms", "Products, 4 GPUs, permuted, no overlap"),
        PaperValue("Sec. 6.4 (Fig. 8)", "mggcn", {"dataset": "products", "gpus": 4, "overlap": True},
                   "spmm_time", 30.0, "ms", "Products, 4 GPUs, permuted, with overlap"),
    )
    parameters = {
        "dataset": Param("products", _dataset, "dataset (paper: products)"),
        "model": Param(DGL_MODEL, str, "LAYERSxHIDDEN"),
        **common_parameters(),
    }

    worlds = Worlds()                    # the run's GPUs (--param gpus for a ladder)

    def points(self, cfg):
        worlds = self.world_sizes(cfg)
        ds = self.param(cfg, "dataset")
        scale = self.scale(cfg, ds)
        for world in worlds:
            for overlap in (False, True):
                yield Point("mggcn", {"dataset": ds, "model": self.param(cfg, "model"), "scale": scale,
                                      "gpus": world, "overlap": overlap, **mggcn_params(self, cfg)}, world)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        import torch.distributed as dist

        limit_threads(ctx.rank)
        graph = load_graph(DATASETS[point.params["dataset"]], point.params["scale"], ctx)
        trainer = build_trainer(self, point, graph, ctx, overlap=point.params["overlap"])
        _, repeats = epoch_counts(ctx.cfg)
        epochs = []
        try:
            epoch_stats = time_epochs(trainer, ctx)     # timeline off: clean epoch times
            trainer.timeline.enabled = True
            for _ in range(repeats):
                if ctx.rank.world_size > 1:
                    dist.barrier()
                trainer.train_epoch()
                epochs.append([(i.spmm, i.stage, i.kind, i.start_s, i.end_s)
                               for i in trainer.collect_timeline()])
        finally:
            release(trainer)
        by_rank = all_gather(ctx.rank, epochs)           # [rank][epoch][interval]
        extra = graph_params(graph)
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

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ok = rep.ok.assign(kind_of_metric=rep.ok["metric"].str.split(".").str[0])
        labels = rep.labels
        records = []
        for (run_id, gpus), grp in ok.groupby(["run_id", "p_gpus"], sort=False):
            spmm = grp[grp["kind_of_metric"] == "spmm_time"]
            for tag in sorted(set(spmm["p_spmm"])):
                def value(overlap, tag=tag):
                    sel = grp[(grp["metric"] == f"spmm_time.{tag}") & (grp["p_overlap"] == overlap)]
                    return float(sel["value"].iloc[0]) if not sel.empty else None

                serial, overlapped = value(False), value(True)
                records.append({"run": rep.label(run_id), "#G": int(gpus), "SpMM": _describe(tag),
                                "no overlap (ms)": serial, "overlap (ms)": overlapped,
                                "gain": serial / overlapped if serial and overlapped else None})
            epoch_serial = grp[(grp["metric"] == "epoch_time") & (grp["p_overlap"] == False)]["value"]  # noqa: E712
            epoch_overlap = grp[(grp["metric"] == "epoch_time") & (grp["p_overlap"] == True)]["value"]  # noqa: E712
            if not epoch_serial.empty and not epoch_overlap.empty:
                a, b = 1e3 * float(epoch_serial.iloc[0]), 1e3 * float(epoch_overlap.iloc[0])
                records.append({"run": rep.label(run_id), "#G": int(gpus), "SpMM": "whole epoch",
                                "no overlap (ms)": a, "overlap (ms)": b, "gain": a / b})
        table = rep.table(records, single=(), drop_empty=False)
        rep.notes.append("Paper (Sec. 6.4, Products, 4 V100s, permuted): one SpMM 38 ms without overlap, 30 ms "
                         "with it (1.27x); overlapping slows both the broadcast and the multiply.")
        caption = rep.caption("Wall time of each staged SpMM of an epoch (slowest rank's first-start to last-end, "
                   "median over epochs) and of the epoch, without and with the broadcast of stage j+1 "
                   "overlapping the multiply of stage j. The figure shows, per rank, the heaviest SpMM's "
                   "stages: multiplies without overlap, multiplies with overlap, broadcasts with overlap "
                   f"(numbers = stage). Paper: {PAPER_HARDWARE_V100}. " + scale_note(rep.rows))
        return rep.artifact("MG-GCN Fig. 8: SpMM timeline with and without overlap", caption, table,
                            self._timeline_figure(ok, labels))

    def _timeline_figure(self, ok, labels):
        stages = ok[ok["kind_of_metric"].isin(["stage_start", "stage_duration"])]
        spmm = ok[(ok["kind_of_metric"] == "spmm_time") & (ok["p_overlap"] == False)]  # noqa: E712
        if stages.empty or spmm.empty:
            fig, ax = figure((6, 2))
            ax.text(0.5, 0.5, "no timeline recorded", ha="center", va="center")
            ax.axis("off")
            return fig
        first = spmm.sort_values("value").iloc[-1]           # the heaviest SpMM, first run
        run_id, gpus, tag = first["run_id"], first["p_gpus"], first["p_spmm"]
        mine = stages[(stages["run_id"] == run_id) & (stages["p_gpus"] == gpus) & (stages["p_spmm"] == tag)]
        lanes = [("compute", False, "compute, no overlap", "tab:blue"),
                 ("comm", False, "broadcast, no overlap", "gold"),
                 ("compute", True, "compute, overlap", "tab:blue"),
                 ("comm", True, "broadcast, overlap", "gold")]
        ranks = sorted(set(mine["p_rank"].astype(int)))
        fig, ax = figure((9, 0.9 + 1.1 * len(ranks)))
        yticks, ylabels = [], []
        for r in ranks:
            for k, (kind, overlap, lane, color) in enumerate(lanes):
                y = r * (len(lanes) + 1) + k
                sel = mine[(mine["p_rank"] == r) & (mine["p_kind"] == kind) & (mine["p_overlap"] == overlap)]
                starts = sel[sel["kind_of_metric"] == "stage_start"].set_index("p_stage")["value"]
                durations = sel[sel["kind_of_metric"] == "stage_duration"].set_index("p_stage")["value"]
                origin = mine[(mine["p_overlap"] == overlap) & (mine["kind_of_metric"] == "stage_start")
                              & (mine["p_rank"] == r)]["value"].min()
                for stage in starts.index:
                    left = starts[stage] - origin
                    ax.barh(y, durations.get(stage, 0.0), left=left, color=color, edgecolor="k", lw=0.4)
                    ax.text(left + durations.get(stage, 0.0) / 2, y, str(int(stage)), ha="center",
                            va="center", fontsize=6)
                yticks.append(y)
                ylabels.append(f"rank {r}: {lane}")
        ax.set_yticks(yticks)
        ax.set_yticklabels(ylabels, fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("ms from the SpMM's first event")
        ax.set_title(f"{labels.get(run_id, run_id)}: stages of SpMM {_describe(tag)} on {int(gpus)} ranks")
        fig.tight_layout()
        return fig


def _describe(tag: str) -> str:
    """'fwd1' -> 'forward, layer 1'."""
    if tag.startswith("fwd"):
        return f"forward, layer {tag[3:]}"
    if tag.startswith("bwd"):
        return f"backward, layer {tag[3:]}"
    return tag
