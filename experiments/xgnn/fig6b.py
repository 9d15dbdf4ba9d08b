"""XGNN Fig. 6(b): pointer chase over VMM memory shared between processes, local vs remote vs size.

Section 4.1: XGNN found random reads of CUDA VMM memory exported to another process through a
shareable handle degrade past 256 MB, and chased pointers over it to find why: the driver maps
such memory with 1 MB pages, so the L2 TLB covers 256 MB, where ordinary device memory (32 MB
pages) is covered up to 8 GB. Here the chase runs over the harness's continuous store, the
``ShardedTable`` whose shards are mapped into one virtual range through the CUDA VMM API with
POSIX-fd shared handles (impls/storage/vmm.py; the store WholeGraph's continuous addressing uses),
on two ranks, one process per GPU: rank 0 chases through its own mapping over its own shard
(``vmm_local``) or rank 1's, imported from rank 1's process (``vmm_remote``), beside the same
chase over ordinary ``cudaMalloc`` memory (``local``, ``p2p_remote``: XGNN Fig. 6's chase).

Cold reads (docs/measurement.md): each step reads a 128-byte line no earlier launch of the point
read, every L2 holding the memory is overwritten before each launch, and before that a TLB flush
reads one byte per 64 KiB of a 16 GiB buffer on the chasing GPU (twice the paper's 8 GB TLB
reach), so no launch finds the translations an earlier one left: what a chain finds in the TLB is
what its own steps put there, which is the effect the figure measures.
"""

from __future__ import annotations

import math

from harness import registry
from harness.argtypes import float_list, nonneg_int, positive_int
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import (Band, Claim, Estimate, Report, figure, finite, lines, log_axis, machine_kind,
                               newest_rows)
from harness.worlds import Worlds

from ..wholegraph.table1 import cold_reads_caption
from . import PALETTE, PAPER_HARDWARE

MiB = 1 << 20
SIZES_MIB = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
IMPLS = ("local", "vmm_local", "p2p_remote", "vmm_remote")
SIDES = {"local": ("local", "vmm_local"), "remote": ("p2p_remote", "vmm_remote")}
LABELS = {"local": "cudaMalloc, local", "vmm_local": "VMM shared handle, local",
          "p2p_remote": "cudaMalloc, remote (P2P)", "vmm_remote": "VMM shared handle, remote"}
# each path in XGNN's palette colour; the VMM side of each pair (SIDES) marked apart
STYLE = {impl: {"color": PALETTE[impl], "marker": "s" if k else "o"} for pair in SIDES.values()
         for k, impl in enumerate(pair)}
VERIFY_STEPS = 2_000
# Section 4.1's TLB findings: the L2 TLB's reach (MB) and page size over each kind of memory
PAPER_REACH_MIB = {"VMM": 256, "cudaMalloc": 8192}
PAPER_LABEL = "paper (section 4.1)"
STEP = 1.10         # a series "steps up" at the first size 10% slower than its smallest size
# (CUDA, CPU) defaults of the TLB flush: the buffer read before each launch and its stride
TLB_FLUSH = {"cuda": (16384, 64), "cpu": (64, 4)}


def _paper_values() -> tuple[PaperValue, ...]:
    src = "Fig. 6(b), section 4.1 text"
    return (PaperValue(src, "vmm_local", {}, "l2_tlb_reach", PAPER_REACH_MIB["VMM"], "MiB",
                       "VMM exported to a shareable handle: 1 MB pages, the L2 TLB covers 256 MB"),
            PaperValue(src, "local", {}, "l2_tlb_reach", PAPER_REACH_MIB["cudaMalloc"], "MiB",
                       "ordinary device memory: 32 MB pages, the L2 TLB covers 8 GB"))


@register_experiment
class Fig6b(Experiment):
    title = "XGNN Fig. 6(b): pointer chase over VMM memory shared between processes, local vs remote vs size"
    differs_from_paper = ("The harness's continuous store (CUDA VMM range, POSIX-fd shared handles, one process per "
                          "GPU) on 2 GPUs of the lent machine instead of XGNN's own VMM micro-benchmark on a DGX-1's "
                          "V100s; cudaMalloc chases beside it.")
    interface = "probes"
    impls = IMPLS
    metric, unit, better = "latency", "us", "lower"
    spawn_ranks = True
    worlds = Worlds(fixed=(2,))          # rank 0 chases, rank 1 owns the remote shard
    warm_and_cold = ("Warm: compiled kernels and the mapped store. Cold: every step reads a line no earlier launch "
                     "read, the L2s holding the memory are overwritten and the chasing GPU's TLB flushed (a "
                     "buffer read page by page) before each launch.")
    paper_values = _paper_values()
    parameters = {
        "sizes_mib": Param(SIZES_MIB, float_list, "region sizes (MiB; x --scale), one shard each"),
        "steps": Param(None, positive_int, "dependent reads per timed chain (default: the paper's 100K, or 4x the "
                                           "chasing GPU's L2 in distinct lines if more, as the region allows)"),
        "max_steps": Param(None, positive_int, "cap on the default steps (a shorter chain, every line still fresh; "
                                               "the rows' distinct_over_l2 says how many L2s a chain reads)"),
        "tlb_flush_mib": Param(None, nonneg_int, "buffer read page by page before every launch to evict the TLB "
                                                 "(CUDA 16384 MiB, twice the paper's 8 GB reach; CPU 64; 0: none)"),
        "tlb_stride_kib": Param(None, positive_int, "bytes between two reads of the TLB flush (CUDA 64 KiB, the "
                                                    "smallest GPU page; CPU 4)"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        return (1 / 16 if cfg.quick else 1.0) if cfg.device == "cuda" else 1 / 256

    def points(self, cfg):
        (world,) = self.world_sizes(cfg)
        scale = self.scale(cfg)
        for size in self.param(cfg, "sizes_mib"):
            for impl in self.impls:
                yield Point(impl, {"paper_size_mib": size, "size_mib": round(size * scale, 6)}, world)

    def tlb_settings(self, cfg) -> tuple[int, int]:
        """(bytes the TLB flush reads through, bytes between its reads); 0 bytes: no flush."""
        span, stride = TLB_FLUSH["cuda" if cfg.device == "cuda" else "cpu"]
        given = self.param(cfg, "tlb_flush_mib")
        return int((span if given is None else given) * MiB), int((self.param(cfg, "tlb_stride_kib") or stride) * 1024)

    def tlb_flush(self, cfg, chaser: int):
        """The TLB flush of this run on the chasing GPU (the host on CPU ranks), or None."""
        from harness.timing import TlbFlush

        span, stride = self.tlb_settings(cfg)
        if not span:
            return None
        return TlbFlush([f"cuda:{chaser}"] if cfg.device == "cuda" else [], span_bytes=span, stride_bytes=stride)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        from harness.ranks import host_group, prepare_on_rank0

        cfg, rank = ctx.cfg, ctx.rank
        size_bytes = int(point.params["size_mib"] * MiB)
        if size_bytes < 64 * 1024:
            raise SkipPoint("size below 64 KiB")
        group = host_group(rank, ctx)          # the ranks that wait do so on the host, their GPUs idle
        spec = registry.get_impl(self.interface, point.impl)
        gpus = list(range(rank.world_size)) if cfg.device == "cuda" else []
        salt = 0xF6B + cfg.seed
        if not spec.has("shared_handle"):     # cudaMalloc probes run in rank 0's process alone
            def baseline():
                probe = spec.factory(cfg.device, gpus)
                try:
                    probe.allocate(size_bytes, salt=salt, nparts=1)
                    return self.chase(probe, cfg)
                finally:
                    probe.close()

            return prepare_on_rank0(rank, baseline, group)
        region = spec.factory(cfg.device, gpus, rank=rank)
        try:
            region.allocate(size_bytes, salt, chaser_reserve_bytes=self.tlb_settings(cfg)[0])
            return prepare_on_rank0(rank, lambda: self.chase(region.probe, cfg), group)
        finally:
            region.close()

    def chase(self, probe, cfg) -> list[Measurement]:
        """The timed chains over ``probe``'s region (on rank 0): verified, then cold launches."""
        from experiments.kit.probes import Launches, chase_steps, time_chase
        from impls.probes import chain

        warmup, repeats = cfg.warmup_or(1), cfg.repeats_or(3, 2)
        lines = chain.region_lines(probe.nparts_used, probe.part_elems)
        steps = self.param(cfg, "steps") or min(chase_steps(probe.l2_bytes, lines, warmup + repeats, VERIFY_STEPS),
                                                 self.param(cfg, "max_steps") or float("inf"))
        if cfg.quick:
            steps = min(steps, 10_000)
        flush = self.tlb_flush(cfg, getattr(probe, "chaser", 0))
        try:
            stats, cache = time_chase(probe, cfg.device, Launches(min(VERIFY_STEPS, steps), steps, warmup, repeats),
                                      start=cfg.seed + 1, reset_each=False, tlb_flush=flush)
        finally:
            if flush is not None:
                flush.close()
        return [Measurement("latency", "us", stats.scaled(1e6 / steps), better="lower",
                            extra={"steps": steps, "placement": probe.placement, **cache})]

    # --- report ------------------------------------------------------------------
    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ok = newest_rows(rep.ok, rep.labels, by=["p_size_mib", "impl"])
        kinds = {run_id: machine_kind(rep.label(run_id)) for run_id in ok["run_id"].unique()} if not ok.empty else {}
        series = latency_series(ok, kinds)
        table = latency_table(series, rep)
        steps = step_sizes(series)
        claims = tlb_claims(ok, kinds)
        rep.notes += [f"{kind}: {LABELS[impl]} " + (f"steps up {100 * (rise - 1):.0f}% at {size:g} MiB (first size "
                                                    f"{100 * (STEP - 1):.0f}% slower than its smallest)" if size else
                                                    f"flat (within {100 * (STEP - 1):.0f}%) up to the largest size")
                      for (kind, impl), (size, rise) in steps.items()]
        rep.notes += NOTES
        cpu_only = bool(kinds) and set(device_of(ok, kinds).values()) == {"cpu"}
        caption = rep.caption(
            "XGNN Fig. 6(b) re-measured: latency of one GPU thread's dependent 8-byte reads (microseconds per step) "
            "against the region's size, over the continuous store's CUDA VMM range (shards exported as POSIX-fd "
            "shared handles and mapped by every rank's process; rank 0 reads its own shard, local, or rank 1's, "
            "remote) and over cudaMalloc memory (remote: peer access).", cold_reads_caption(ok, "p_size_mib", "MiB"),
            tlb_caption(ok),
            "The paper prints no latencies for Fig. 6(b) and its figure is not available here as an image, so none "
            "could be read off it: the paper's series are the TLB reaches its text states (VMM with a shared handle "
            "256 MB, 1 MB pages; ordinary memory 8 GB, 32 MB pages), drawn dashed at those sizes. Paper: "
            f"{PAPER_HARDWARE}." + (" CPU ranks: a toy-scale stand-in in host shared memory, no verdict."
                                    if cpu_only else ""), runs=set(ok["run_id"]) if not ok.empty else set())
        return rep.artifact("XGNN Fig. 6(b): pointer chase over VMM shared-handle memory", caption, table,
                            chase_figure(series), headline=headline(steps), claims=claims,
                            skips=rep.rows[rep.rows["run_id"].isin(set(ok["run_id"]))] if not ok.empty else True)


def device_of(ok, kinds: dict) -> dict[str, str]:
    """Machine kind -> the device its rows ran on (cuda or cpu)."""
    return {kinds[r]: d for r, d in zip(ok["run_id"], ok["device"])} if not ok.empty else {}


def latency_series(ok, kinds: dict) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """{(machine kind, impl): [(size MiB, latency us), ...] by size}."""
    out: dict = {}
    for (run_id, impl), g in (ok.groupby(["run_id", "impl"]) if not ok.empty else []):
        points = sorted(zip(g["p_size_mib"].astype(float), g["value"].astype(float)))
        out.setdefault((kinds[run_id], impl), []).extend(points)
    return {k: sorted(v) for k, v in out.items()}


def step_sizes(series: dict) -> dict[tuple[str, str], tuple[float | None, float]]:
    """{(kind, impl): (the first size whose latency is STEP x its smallest size's or more, or None;
    that latency over the smallest's, or the largest's over it)}: where translations stop fitting."""
    out = {}
    for key, points in series.items():
        if len(points) < 2:
            continue
        floor = points[0][1]
        hit = next(((s, v / floor) for s, v in points[1:] if v >= STEP * floor), None)
        out[key] = hit if hit else (None, points[-1][1] / floor)
    return out


def tlb_claims(ok, kinds: dict) -> list[Claim]:
    """Section 4.1's findings as claims (harness/verdicts.py), per GPU machine kind and side (local,
    remote), from the rows' repeats: (a) the VMM chase is slower past the paper's 256 MB reach than
    below it (the measured sizes next to half and twice 256 MiB), by STEP at least; (b) more so than
    the cudaMalloc chase across the same sizes; (c) the cudaMalloc chase stays within STEP of its
    smallest size up to 8 GB (the reach the paper gives ordinary memory)."""
    reach, plain_reach = PAPER_REACH_MIB["VMM"], PAPER_REACH_MIB["cudaMalloc"]
    out = []
    for kind in sorted(set(kinds.values())):
        mine = ok[ok["run_id"].map(kinds) == kind]
        if mine.empty or set(mine["device"]) != {"cuda"}:
            continue
        for side, (plain, vmm) in SIDES.items():
            at = {impl: {float(s): r for s, r in zip(g["p_size_mib"], g.to_dict("records"))}
                  for impl, g in mine[mine["impl"].isin((plain, vmm))].groupby("impl")}
            sizes = sorted(at.get(vmm, {}))
            below = max((x for x in sizes if x <= reach / 2), default=None)
            above = min((x for x in sizes if x >= 2 * reach), default=None)
            rise = {impl: across(at.get(impl, {}), below, above) for impl in (plain, vmm)}
            runs = tuple(sorted(set(mine["run_id"])))
            where = f"{above:g} over {below:g} MiB" if below and above else f"across {reach} MiB (not measured)"
            out.append(Claim(f"{kind} {side}: VMM (shared handle) latency, {where}", rise[vmm],
                             Band.between(STEP, math.inf, f"at least {100 * (STEP - 1):.0f}% slower past the "
                                                          "paper's 256 MB VMM reach (it prints no latency)"),
                             "a step at 256 MB (1 MB pages)", runs=runs))
            out.append(Claim(f"{kind} {side}: VMM's rise {where} over cudaMalloc's",
                             rise[vmm].ratio(rise[plain]) if rise[vmm] and rise[plain] else None,
                             Band.beyond(1.0, text="VMM degrades first (any margin)"), "256 MB vs 8 GB", runs=runs))
            plain_sizes = sorted(at.get(plain, {}))
            last = max((x for x in plain_sizes if x <= plain_reach), default=None)
            flat = across(at.get(plain, {}), plain_sizes[0], last) if plain_sizes and last != plain_sizes[0] else None
            out.append(Claim(f"{kind} {side}: cudaMalloc latency, {last:g} over {plain_sizes[0]:g} MiB"
                             if flat else f"{kind} {side}: cudaMalloc latency up to 8 GB (not measured)", flat,
                             Band.between(1 / STEP, STEP, f"within {100 * (STEP - 1):.0f}% (ordinary memory: 32 MB "
                                                          "pages, the L2 TLB covers 8 GB)"),
                             "flat up to 8 GB", null=None, runs=runs))
    return out


def across(rows_by_size: dict, lo, hi) -> "Estimate | None":
    """The latency at size ``hi`` over that at ``lo`` with its interval (each the mean of its
    repeats, Student's t), or None where either is missing."""
    if lo is None or hi is None or lo not in rows_by_size or hi not in rows_by_size:
        return None
    a, b = (Estimate.from_stats(rows_by_size[x].get("stats")) for x in (hi, lo))
    return a.ratio(b) if a is not None and b is not None and a.value > 0 and b.value > 0 else None


def latency_table(series: dict, rep):
    """A row per machine kind and size: each chase's latency, VMM / cudaMalloc per side, the paper's
    stated reaches at their sizes."""
    kinds = sorted({k for k, _ in series})
    records = []
    for kind in kinds:
        sizes = sorted({s for (k, _), pts in series.items() if k == kind for s, _ in pts})
        at = {impl: dict(pts) for (k, impl), pts in series.items() if k == kind}
        for size in sizes:
            row = {"Machine": kind, "size (MiB)": int(size) if float(size).is_integer() else size}
            for impl in IMPLS:
                row[f"{LABELS[impl]} (us)"] = _round(at.get(impl, {}).get(size))
            for side, (plain, vmm) in SIDES.items():
                a, b = at.get(vmm, {}).get(size), at.get(plain, {}).get(size)
                row[f"VMM / cudaMalloc {side}"] = _round(a / b) if finite(a) and finite(b) and b > 0 else None
            row["paper (section 4.1)"] = paper_mark(size)
            records.append(row)
    return rep.table(records, empty="no successful measurements")


def paper_mark(size: float) -> str | None:
    """The paper's statement that falls on ``size`` (MiB), or None."""
    marks = {PAPER_REACH_MIB["VMM"]: "VMM L2 TLB reach (1 MB pages)",
             PAPER_REACH_MIB["cudaMalloc"]: "cudaMalloc L2 TLB reach (32 MB pages)"}
    return marks.get(size)


def _round(x):
    return float(f"{x:.3g}") if finite(x) else None


def tlb_caption(ok) -> str:
    if ok.empty or "p_tlb_flush_mib" not in ok or ok["p_tlb_flush_mib"].isna().all():
        return "No TLB flush: a launch may find translations an earlier launch of its point left."
    span, stride = ok["p_tlb_flush_mib"].max(), ok["p_tlb_flush_stride_kib"].max()
    return (f"Cold translations: before each launch (and before the L2 overwrite) the chasing GPU reads one byte "
            f"per {stride:g} KiB of a {span:g} MiB buffer ({int(span * 1024 // stride):,} pages), so no launch "
            "finds a translation an earlier launch left unless the TLB reaches further than that buffer.")


def headlined(impl: str) -> bool:
    """The headline's series: the chases over shared-handle memory and the local cudaMalloc baseline."""
    spec = registry.lookup("probes", impl)
    return spec is not None and (spec.has("shared_handle") or not spec.has("remote"))


def headline(steps: dict) -> str:
    parts = [f"{kind} {LABELS[impl]}: " + (f"steps up at {at:g} MiB" if at else "flat")
             for (kind, impl), (at, _) in sorted(steps.items()) if headlined(impl)]
    text = "; ".join(parts)
    return text + ("; paper: VMM L2 TLB reach 256 MB vs 8 GB" if text else "")


def chase_figure(series: dict):
    """(a) local and (b) remote: latency against size, a line per memory kind (and machine kind), the
    paper's stated reaches as dashed vertical series."""
    from matplotlib.ticker import FuncFormatter

    kinds = sorted({k for k, _ in series})
    fig, axes = figure((10, 4.4), ncols=2)
    for ax, (side, impls), letter in zip(axes, SIDES.items(), "ab"):
        drawn = [(f"{LABELS[impl]}" + (f" ({kind})" if len(kinds) > 1 else ""), [s for s, _ in pts],
                  [v for _, v in pts], dict(STYLE[impl], linestyle="-" if i == 0 else ":"))
                 for i, kind in enumerate(kinds) for impl in impls if (pts := series.get((kind, impl)))]
        values = [v for _, _, ys, _ in drawn for v in ys]
        top = max(values) * 1.15 if values else 1.0
        log = bool(values) and max(values) / min(values) > 100     # a chase that faults: a log axis
        bottom = min(values) / 1.5 if log else 0.0
        if drawn:
            for name, reach in PAPER_REACH_MIB.items():
                drawn.append((f"{PAPER_LABEL}: {name} L2 TLB reach {reach:g} MiB", [reach, reach], [bottom, top],
                              {"color": PALETTE["paper: VMM reach" if name == "VMM" else "paper: reach"], "paper": True}))
        lines(ax, drawn, xlabel="region size (MiB)", ylabel="latency per dependent read (us)", legend_size=8)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        if log:
            log_axis(ax, "y")
        ax.set_ylim(bottom, top)
        ax.set_title(f"({letter}) {side}" + (f" ({kinds[0]})" if len(kinds) == 1 else ""))
    fig.tight_layout()
    return fig


NOTES = [
    "Paper (section 4.1): random reads of VMM memory exported to a shareable handle degrade past 256 MB locally and "
    "1 GB remotely; an intra-process VMM mapping does not; the pointer chase of Fig. 6(b) attributes it to 1 MB "
    "pages (L2 TLB reach 256 MB) against 32 MB pages (8 GB) for ordinary memory. XGNN therefore uses UVA pointers "
    "(one per peer), which the harness's tiered stores do too.",
    "Every measured chain was first checked against the Python reference chain (the same words read), so a chase "
    "over the wrong memory fails its point.",
    "The waiting rank waits on the host (a gloo collective), so no kernel runs on the owner GPU while rank 0 reads "
    "its memory.",
]
