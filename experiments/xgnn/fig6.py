"""XGNN Fig. 6: random-access bandwidth and pointer-chase latency vs data size.

(a) many threads issuing independent random 8-byte reads, for local device memory,
a peer GPU's memory read directly (UVA / P2P, what XGNN adopts), managed memory
(local and remote) and pinned host memory; (b) a one-thread pointer chase over
growing sizes, where latency steps up once the data outgrows the TLB's reach.
Same kernels as WholeGraph Table I (impls/probes). XGNN measured across processes;
this probe reads peers from one process with peer access, the same hardware path.
"""

from __future__ import annotations

from harness import registry
from harness.argtypes import float_list, positive_int
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, figure, lines, log_axis, machine_kind, newest_per_kind, pivot, span

from ..wholegraph.table1 import PROBE_WORLDS, cold_reads_caption, selected_gpus
from . import PALETTE, PAPER_HARDWARE, PAPER_SOURCE

GB = 1 << 30
BW_IMPLS = ("local", "p2p_remote", "um", "um_remote", "host_zero_copy")
CHASE_IMPLS = ("local", "p2p_remote")
LABELS = {"local": "local", "p2p_remote": "remote (P2P/UVA)", "um": "UM spread over all GPUs",
          "um_remote": "UM remote", "host_zero_copy": "host zero-copy"}


@register_experiment
class Fig6(Experiment):
    title = "Random-access bandwidth and pointer-chase latency, local vs remote vs size"
    differs_from_paper = ("One H200 (no peer GPU yet: the remote rows await a multi-GPU run) probed from one process "
                          "with peer access, where the paper probed V100s of a DGX-1 across processes, VMM included "
                          "(not probed here).")
    interface = "probes"
    impls = ("local", "p2p_remote", "um", "um_remote", "host_zero_copy")
    metric, unit, better = "random_read_bw", "GB/s", "higher"
    worlds = PROBE_WORLDS
    warm_and_cold = "Warm: compiled kernels and, for UM, each part re-placed on its owner before every repeat."
    paper_values = (
        PaperValue("Fig. 6(a) text", "p2p_remote", {}, "random_read_bw", 4.0, "GB/s",
                   "random remote access bandwidth limited to about 4 GB/s"),
    )
    parameters = {
        "bw_sizes_gb": Param((0.25, 1, 4, 16, 64), float_list, "sizes for random-read bandwidth (GB)"),
        "chase_sizes_gb": Param((0.0625, 0.25, 1, 4, 16, 64), float_list, "sizes for the chase (GB)"),
        "reads_per_thread": Param(64, positive_int, "independent reads per thread"),
        "um_max_gb": Param(16.0, float, "largest managed allocation probed (page migration is slow)"),
        "host_max_gb": Param(16.0, float, "largest pinned host allocation probed"),
        "steps": Param(None, positive_int, "pointer-chase steps per timed chain (default: 100K, or 4x "
                                           "the GPU's L2 in distinct lines if more)"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        return (1 / 16 if cfg.quick else 1.0) if cfg.device == "cuda" else 1 / 64

    def points(self, cfg):
        gpus = selected_gpus(self, cfg)
        world = max(1, len(gpus))
        scale = self.scale(cfg)
        for size in self.param(cfg, "bw_sizes_gb"):
            for impl in BW_IMPLS:
                yield Point(impl, {"probe": "random_read", "paper_size_gb": size,
                                   "size_gb": round(size * scale, 6), "gpus": world}, world)
        for size in self.param(cfg, "chase_sizes_gb"):
            for impl in CHASE_IMPLS:
                yield Point(impl, {"probe": "chase", "paper_size_gb": size,
                                   "size_gb": round(size * scale, 6), "gpus": world}, world)

    def skip_reason(self, point, cfg):
        if point.params["probe"] == "random_read" and cfg.device != "cuda":
            return "random-read bandwidth is a GPU probe (the CPU path runs the chase only)"
        if point.impl.startswith("um") and point.params["size_gb"] > self.param(cfg, "um_max_gb"):
            return f"managed allocations capped at {self.param(cfg, 'um_max_gb'):g} GB (--param um_max_gb)"
        return None

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        from impls.probes import chain, parts_for
        from ..kit.probes import Launches, chase_steps, time_chase, time_random_reads, verify_chain

        cfg = ctx.cfg
        gpus = selected_gpus(self, cfg)
        spec = registry.get_impl(self.interface, point.impl)
        size_bytes = int(point.params["size_gb"] * GB)
        if size_bytes < 64 * 1024:
            raise SkipPoint("size below 64 KiB")
        probe = spec.factory(cfg.device, gpus, host_cap_bytes=int(self.param(cfg, "host_max_gb") * GB))
        is_um = point.impl.startswith("um")
        nparts = parts_for(point.impl, gpus) or 1
        salt = 0xF16 + cfg.seed
        try:
            probe.allocate(size_bytes, salt=salt, nparts=nparts)
            if point.params["probe"] == "chase":
                warmup, repeats = cfg.warmup_or(1), cfg.repeats_or(5, 2)
                lines = chain.region_lines(nparts, probe.part_elems)
                steps = self.param(cfg, "steps") or chase_steps(probe.l2_bytes, lines, warmup + repeats, 2_000)
                if cfg.quick:
                    steps = min(steps, 10_000)
                stats, cache = time_chase(probe, cfg.device, Launches(2_000, steps, warmup, repeats),
                                          start=cfg.seed + 1, reset_each=is_um)
                return [Measurement("latency", "us", stats.scaled(1e6 / steps), better="lower",
                                    extra={"steps": steps, "placement": probe.placement, **cache})]
            import cupy as cp

            threads = cp.cuda.Device(probe.chaser).attributes["MultiProcessorCount"] * 2048
            reads = self.param(cfg, "reads_per_thread")
            warmup, repeats = cfg.warmup_or(2, 1), cfg.repeats_or(3 if is_um else 10, 2)
            # the layout check reads lines past those the timed launches will read
            verify_chain(probe, 2_000, cfg.seed + 1, first_step=(warmup + repeats) * threads * reads)
            stats, cache = time_random_reads(probe, threads, reads, warmup, repeats, reset_each=is_um, salt=salt)
            useful = threads * reads * 8
            return [Measurement("random_read_bw", "GB/s", stats.rate(useful / 1e9), better="higher",
                                extra={"threads": threads, "reads_per_thread": reads,
                                       "placement": probe.placement, **cache})]
        finally:
            probe.close()

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        rep = Report(self, rows, runs)
        long = pd.DataFrame.from_records([
            {"run_id": run_id, "run": rep.label(run_id), "kind": machine_kind(rep.label(run_id)), "probe": probe,
             "impl": impl, "size_gb": size, "value": float(grp["value"].iloc[0]), "unit": grp["unit"].iloc[0]}
            for (run_id, probe, impl, size), grp in rep.ok.groupby(["run_id", "p_probe", "impl", "p_size_gb"])])
        shown = pd.DataFrame.from_records(list(newest_per_kind(
            long.to_dict("records"), rep.labels, lambda r: (r["probe"], r["impl"], r["size_gb"]),
            lambda r: r["run_id"]).values())) if not long.empty else long
        kinds = sorted(set(shown["kind"])) if not shown.empty else []
        run_ids = set(shown["run_id"]) if not shown.empty else set()
        caption = rep.caption("XGNN Fig. 6 re-measured: (a) random independent 8-byte reads by all threads of GPU 0 "
                              "(useful bytes / time), (b) one-thread dependent chase.",
                              cold_reads_caption(rep.ok[rep.ok["run_id"].isin(run_ids)]),
                              "(a) reads one word of each line, a line no other read of the launch reads unless the "
                              f"region has fewer lines than the launch's reads. Paper: {PAPER_HARDWARE}; its Fig. 6 "
                              "values are plotted only in the paper: its stated limits are drawn dashed (notes). Each "
                              "point is the newest run per machine kind; every run is in the history.", runs=run_ids)
        rep.notes += NOTES
        return rep.artifact("XGNN Fig. 6: random access and pointer chase vs data size", caption,
                            wide(shown, "kind", len(kinds) > 1), probe_figure(shown, kinds), headline=headline(shown),
                            skips=rep.rows[rep.rows["run_id"].isin(run_ids)],
                            history=wide(long, "run", True))


def wide(long, by: str, named: bool):
    """One row per probe and size, a column per implementation (and machine, ``named``) with its unit."""
    import pandas as pd

    if long.empty:
        return pd.DataFrame({"note": ["no successful measurements"]})
    long = long.assign(column=(long[by] + " " if named else "") + long["impl"].map(lambda i: LABELS.get(i, i))
                       + " (" + long["unit"] + ")")
    table = pivot(long, ["probe", "size_gb"], "column").reset_index()
    table.columns.name = None
    return table.rename(columns={"size_gb": "size (GB)"})


def headline(shown) -> str:
    """Each machine kind's span of every probe (GB/s, us)."""
    parts = []
    for (kind, probe, impl), g in (shown.groupby(["kind", "probe", "impl"]) if not shown.empty else []):
        what = "chase" if probe == "chase" else "random reads"
        parts.append(f"{kind} {LABELS.get(impl, impl)} {what} {span(g['value'], '.3g')} {g['unit'].iloc[0]}")
    return "; ".join(parts) + ("; paper: remote random reads <= 4 GB/s, local ones degrade past the 8 GB TLB reach"
                               if parts else "")


def probe_figure(shown, kinds: list[str]):
    """(a) random-read bandwidth and (b) chase latency against the data size, a line per
    implementation (and machine kind, where several); the paper's stated limits dashed in (a)."""
    named = len(kinds) > 1
    from matplotlib.ticker import FuncFormatter

    fig, axes = figure((10, 4.5), ncols=2)
    for probe, ax, ylabel in (("random_read", axes[0], "random 8-byte read bandwidth (GB/s)"),
                              ("chase", axes[1], "pointer-chase latency (us)")):
        part = shown[shown["probe"] == probe] if not shown.empty else shown
        series = []
        for (kind, impl), g in (part.groupby(["kind", "impl"]) if not part.empty else []):
            g = g.sort_values("size_gb")
            series.append((LABELS.get(impl, impl) + (f" ({kind})" if named else ""), g["size_gb"], g["value"],
                           path_style(impl)))
        if probe == "random_read" and series:
            sizes = sorted(set(part["size_gb"]))
            series += [(f"{PAPER_SOURCE}: remote <= 4 GB/s", [sizes[0], sizes[-1]], [4.0, 4.0],
                        {"color": "0.3", "paper": True}),
                       (f"{PAPER_SOURCE}: TLB reach 8 GB", [8.0, 8.0], [part["value"].min(), part["value"].max()],
                        {"color": "0.5", "paper": True, "linestyle": ":"})]
        lines(ax, series, xlabel="data size (GB)", ylabel=ylabel, legend_size=None)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        if probe == "random_read":
            log_axis(ax, "y")
        else:
            ax.set_ylim(0, max(part["value"].max() * 1.2, 1e-9) if not part.empty else 1)
    where = "" if named or not kinds else f" ({kinds[0]})"
    axes[0].set_title(f"(a) random access bandwidth{where}")
    axes[1].set_title(f"(b) pointer chase{where}")
    legend = {}                          # one entry per series of either panel, below both
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    if legend:
        fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05 + 0.05 * (len(legend) // 3), 1, 1))
    return fig


IMPL_STYLE = {"local": {"marker": "o"}, "p2p_remote": {"marker": "s"}, "um": {"marker": "^", "linestyle": "--"},
              "um_remote": {"marker": "v", "linestyle": "--"}, "host_zero_copy": {"marker": "D"}}


def path_style(impl: str) -> dict:
    """An access path's line: its marker and its colour in XGNN's palette (matplotlib's next for
    a path the figure does not know)."""
    if impl not in IMPL_STYLE:
        return {}
    return {"color": PALETTE[impl], **IMPL_STYLE[impl]}


NOTES = [
    "Paper findings: local random access is alike for UM and UVA and degrades past the TLB coverage (~8 GB on "
    "V100); remote random access is capped near 4 GB/s by the link; inter-process VMM handles degrade past 256 MB "
    "(1 MB L2-TLB pages).",
    "VMM (cuMemCreate with exported shareable handles) is not probed here: no row is reported for it.",
    "UM rows re-place every partition on its owner before each repeat, so each repeat pays the page faults again; "
    "their bandwidth is page-migration throughput, falling as the data outgrows what one launch can touch.",
]
