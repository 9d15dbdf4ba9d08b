"""WholeGraph Table I: UM vs GPUDirect P2P memory-access latency by pointer chasing.

Section III-A: one thread, a dependent chain of 100K reads over one large randomly
initialized allocation, the next address computed from the value just read and the
step id; latency = time / steps. UM: cudaMallocManaged, each GPU initializes an
equal partition. P2P: equal cudaMalloc parts on all GPUs, peer access enabled.
Chased from GPU 0. ``local`` and ``host_zero_copy`` are reference lines.
"""

from __future__ import annotations

from harness import registry
from harness.argtypes import float_list, positive_float, positive_int
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import (TOLERANCE, Band, Claim, Estimate, Report, figure, finish, finite, lines, machine_kind,
                               newest_rows, ratio, several_runs_per_kind)
from harness.worlds import Worlds

from . import PALETTE, PAPER_GPUS, PAPER_HARDWARE

GB = 1 << 30
PAPER_SIZES_GB = (8, 16, 32, 64, 128)
_TABLE_I = {8: (20.8, 1.35), 16: (29.6, 1.37), 32: (32.5, 1.43), 64: (35.3, 1.51), 128: (35.8, 1.56)}
_PAPER_RATIOS = (f"{min(u / p for u, p in _TABLE_I.values()):.1f}x-"
                 f"{max(u / p for u, p in _TABLE_I.values()):.1f}x")


def _paper_values():
    out = []
    for size, (um, p2p) in _TABLE_I.items():
        out.append(PaperValue("Table I", "um", {"paper_size_gb": size}, "latency", um, "us"))
        out.append(PaperValue("Table I", "p2p", {"paper_size_gb": size}, "latency", p2p, "us"))
    return tuple(out)


def cold_reads_caption(ok, size_column: str = "p_size_gb", unit: str = "GB") -> str:
    """What the probe rows say was cold: distinct lines per launch, reuse, the L2 flush (the rows'
    sizes in ``size_column``, in ``unit``)."""
    if "p_distinct_over_l2" not in ok or ok["p_distinct_over_l2"].isna().all():
        return ("Rows without line accounting: their chains may have re-read lines an earlier "
                "launch of the point had left in the L2.")
    measured = ok[ok["p_distinct_over_l2"].notna()]
    reused = measured[measured["p_lines_read_before"] > 0]
    um = measured["impl"].map(lambda impl: probe_has(impl, "managed")).astype(bool)

    def span(rows) -> str:
        lo, hi = rows["p_distinct_over_l2"].min(), rows["p_distinct_over_l2"].max()
        return f"{lo:.3g}x" if lo == hi else f"{lo:.3g}x to {hi:.3g}x"

    reads = span(measured[~um]) if (~um).any() else span(measured)
    if um.any() and (~um).any():
        reads += f" ({span(measured[um])} for UM's shorter chains)"
    text = (f"Cold reads: every step reads a 128-byte line no earlier step, warm-up or repeat of its "
            f"point read (a keyed permutation of the region's lines), a timed launch reads {reads} "
            f"the {measured['p_l2_mib'].max():g} MiB L2 in distinct lines, and the L2 of every GPU "
            f"holding the memory is overwritten ({measured['p_flush_mib'].max():g} MiB) before each launch.")
    if not reused.empty:
        sizes = ", ".join(f"{v:g}" for v in sorted(set(reused[size_column])))
        text += (f" At {sizes} {unit} the region holds fewer lines than the point's launches read, so up to "
                 f"{int(reused['p_lines_read_before'].max()):,} lines were read a second time.")
    return text


# the probes chase from GPU 0 over any number of GPUs; a CPU run has one host memory
PROBE_WORLDS = Worlds(cpu=Worlds(fixed=(1,)))


def selected_gpus(exp, cfg) -> list[int]:
    """GPUs 0..n-1 of the run (none on a CPU run)."""
    (world,) = exp.world_sizes(cfg)
    return list(range(world)) if cfg.device == "cuda" else []


@register_experiment
class Table1(Experiment):
    title = "UM vs GPUDirect P2P memory access latency (pointer chasing)"
    interface = "probes"
    impls = ("um", "p2p", "um_remote", "p2p_remote", "local", "host_zero_copy")
    metric, unit, better = "latency", "us", "lower"
    differs_from_paper = ("H200 machines of 1 to 4 GPUs (CUDA 13) instead of 8x A100 over NVSwitch (CUDA 11.4): with n "
                          "GPUs 1/n of the reads are local (paper: 1/8) and one GPU has no peer memory; the paper's "
                          "sizes and dependent chase (100K steps for UM, longer chains elsewhere so every read is cold), "
                          "plus local, host and remote-only placements the paper does not show.")
    warm_and_cold = "Warm: compiled kernels and, for UM, each part re-placed on its owner before every repeat."
    paper_values = _paper_values()
    worlds = PROBE_WORLDS
    parameters = {
        "sizes_gb": Param(PAPER_SIZES_GB, float_list, "paper memory sizes (GB), multiplied by --scale"),
        "steps": Param(None, positive_int, "dependent reads per timed chain (default: the paper's 100K, "
                                           "or 4x the chasing GPU's L2 in distinct lines if more)"),
        "um_steps": Param(100_000, positive_int, "steps for UM (each can cost tens of us; the paper's 100K)"),
        "verify_steps": Param(20_000, positive_int, "steps checked against the Python reference"),
        "host_max_gb": Param(32.0, positive_float, "largest pinned host allocation to probe"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        if cfg.device == "cuda":
            return 1 / 8 if cfg.quick else 1.0
        return 1 / 512 if cfg.quick else 1 / 64

    def points(self, cfg):
        gpus = selected_gpus(self, cfg)
        world = max(1, len(gpus))
        scale = self.scale(cfg)
        for size in self.param(cfg, "sizes_gb"):
            for impl in self.impls:
                yield Point(impl, {"paper_size_gb": size, "size_gb": round(size * scale, 6),
                                   "gpus": world}, world_size=world)

    def memory_need(self, point, cfg):
        """The chased region: in host memory on a CPU run; on GPUs, a part per owner GPU for the
        device allocations (managed memory may exceed a GPU, and host memory is capped by
        host_max_gb)."""
        from impls.probes import parts_for

        size = point.params["size_gb"] * GB
        if cfg.device != "cuda":
            return {"host": size}
        if registry.get_impl(self.interface, point.impl).has("device_memory"):
            return {"gpu": size / max(1, parts_for(point.impl, selected_gpus(self, cfg)))}
        return None

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        from impls.probes import chain, parts_for
        from ..kit.probes import Launches, chase_steps, time_chase

        cfg = ctx.cfg
        gpus = selected_gpus(self, cfg)
        spec = registry.get_impl(self.interface, point.impl)
        size_bytes = int(point.params["size_gb"] * GB)
        if size_bytes < 8 * 1024:
            raise SkipPoint(f"size {size_bytes} B is below the 8 KiB minimum")
        host_cap = int(self.param(cfg, "host_max_gb") * GB)
        probe = spec.factory(cfg.device, gpus, host_cap_bytes=host_cap)
        is_um = spec.has("managed")            # pages migrate: fewer steps, and a reset before each launch
        nparts = parts_for(point.impl, gpus) or 1
        warmup, repeats = cfg.warmup_or(1), cfg.repeats_or(3 if is_um else 5, 2)
        lines = chain.region_lines(nparts, size_bytes // 8 // nparts)
        verify = self.param(cfg, "verify_steps")
        steps = self.param(cfg, "um_steps") if is_um else (
            self.param(cfg, "steps") or chase_steps(probe.l2_bytes, lines, warmup + repeats, verify))
        if cfg.quick:
            steps = min(steps, 10_000)
        launches = Launches(min(verify, steps), steps, warmup, repeats)
        try:
            probe.allocate(size_bytes, salt=0x5EED + cfg.seed, nparts=nparts)
            stats, cache = time_chase(probe, cfg.device, launches, start=cfg.seed + 1, reset_each=is_um)
        finally:
            probe.close()
        where = getattr(probe, "placement", "host memory")
        return [Measurement("latency", "us", stats.scaled(1e6 / steps), better="lower",
                            extra={"steps": steps, "placement": where, **cache})]

    # --- report ------------------------------------------------------------------
    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        at_paper_scale = rep.ok["p_size_gb"] == rep.ok["p_paper_size_gb"]
        newest = newest_rows(rep.ok, rep.labels, by=["p_paper_size_gb"], prefer=at_paper_scale)
        shown_ids = set(newest["run_id"])
        shown = Report(self, rows[rows["run_id"].isin(shown_ids)], [r for r in runs if r.run_id in shown_ids])
        kinds = {run_id: machine_kind(label) for run_id, label in shown.labels.items()}
        table = latency_table(shown.rows, newest, kinds, self.impls)
        for machine in dict.fromkeys(kinds.values()):
            mine = table[table["Machine"] == machine]
            for col in [c for c in ("UM/P2P", "UM/P2P remote") if c in mine]:
                vals = [(s, r) for s, r in zip(mine["Memory size (GB)"], mine[col]) if finite(r) and r]
                if vals:
                    lo = min(vals, key=lambda x: x[1])
                    shown.notes.append(f"{machine}: {col} latency ratio {lo[1]:.1f}x at worst ({lo[0]} GB), "
                                       f"{max(v for _, v in vals):.1f}x at best; paper ({PAPER_GPUS}): {_PAPER_RATIOS}")
        srows, ok = shown.rows, newest
        scales = sorted({round(a / b, 6) for a, b in zip(srows["p_size_gb"], srows["p_paper_size_gb"])})
        scale_note = "" if scales == [1.0] else \
            f" Sizes measured at {', '.join(f'{s:g}' for s in scales)} x the paper's (--scale)."
        steps = sorted(set(ok["p_steps"].dropna().astype(int))) if "p_steps" in ok else []
        history = latency_table(rep.rows, rep.ok, rep.labels, self.impls) if several_runs_per_kind(rep.labels) \
            else None
        caption = shown.caption(f"Latency in microseconds per dependent 8-byte read: one GPU thread chases "
                                f"{'/'.join(f'{s:,}' for s in steps) or '100,000'} steps from GPU 0"
                                + ("; the newest run on each kind of machine (every run: table1.history.md)."
                                   if history is not None else "."),
                                cold_reads_caption(ok), CAPTION.format(hardware=PAPER_HARDWARE)) + scale_note
        shown.notes += shown.skip_notes() + ["Every measured chain was checked against the Python reference chain "
                                             "(same words read), so a probe that reads the wrong memory fails its "
                                             "point."]
        first = table[table["Memory size (GB)"] == "8"]
        headline = "; ".join(f"{m}: UM {u:.3g} us, P2P {p:.3g} us ({u / p:.1f}x)"
                             for m, u, p in zip(first["Machine"], first["UM"], first["P2P"]) if finite(u) and finite(p))
        gpus = {kinds[r]: int(g) for r, g in zip(newest["run_id"], newest["p_gpus"])} if "p_gpus" in newest else {}
        scale_of = {kinds[r]: round(a / b, 6) for r, a, b in zip(newest["run_id"], newest["p_size_gb"],
                                                                 newest["p_paper_size_gb"]) if round(a / b, 6) != 1}
        return shown.artifact("WholeGraph Table I: UM vs P2P access latency", caption, table,
                              latency_figure(table, gpus, scale_of),
                              headline=f"at 8 GB: {headline}" if headline else "",
                              claims=latency_claims(newest, kinds), skips=False,
                              history=history)


PAPER_ROW = f"{PAPER_GPUS} (paper)"


def table_i_probes() -> tuple[str, str]:
    """(UM, P2P): the probes WholeGraph's Table I compares, memory spread over every GPU, managed
    and cudaMalloc'd, by their registry traits."""
    (um,) = registry.names("probes", traits=("managed", "spread"), without=("remote",))
    (p2p,) = registry.names("probes", traits=("device_memory", "spread"), without=("remote",))
    return um, p2p


def probe_label(impl: str) -> str:
    spec = registry.lookup("probes", impl)
    return spec.title if spec is not None else impl


def probe_has(impl: str, trait: str) -> bool:
    spec = registry.lookup("probes", impl)
    return spec is not None and spec.has(trait)


def latency_claims(newest, kinds: dict) -> list[Claim]:
    """Per machine of several GPUs and paper size measured: UM latency / P2P latency against the
    paper's ratio at that size (its 8 GPUs read 7/8 remotely; one GPU reads everything locally)."""
    out = []
    for (run_id, size), mine in newest.groupby(["run_id", "p_paper_size_gb"], sort=True):
        if "p_gpus" in mine and int(mine["p_gpus"].iloc[0]) < 2 or int(size) not in _TABLE_I:
            continue
        um, p2p = (mine[mine["impl"] == impl] for impl in table_i_probes())
        if um.empty or p2p.empty:
            continue
        a, b = (Estimate.from_stats(x["stats"].iloc[0], "launches") for x in (um, p2p))
        paper = _TABLE_I[int(size)][0] / _TABLE_I[int(size)][1]
        out.append(Claim(f"{kinds[run_id]} at {size:g} GB: UM / P2P latency", a.ratio(b) if a and b else None,
                         Band.factor(paper, TOLERANCE), f"{paper:.1f}x", runs=(run_id,)))
    return out


def latency_table(rows, ok, machine_of: dict, impls):
    """Per paper size: the paper's UM and P2P, then each machine's probes (``machine_of``: run id ->
    the machine it is shown as) and their UM/P2P ratios."""
    import pandas as pd

    machines = list(dict.fromkeys(machine_of.values()))
    run_machine = ok["run_id"].map(machine_of)
    records = []
    for size in sorted(set(rows["p_paper_size_gb"])):
        um, p2p = _TABLE_I.get(int(size), (None, None))
        records.append({"Memory size (GB)": f"{size:g}", "Machine": PAPER_ROW, "UM": um, "P2P": p2p})
        for machine in machines:
            mine = ok[(run_machine == machine) & (ok["p_paper_size_gb"] == size)]
            rec = {"Memory size (GB)": f"{size:g}", "Machine": machine}
            for impl in impls:
                hit = mine[mine["impl"] == impl]["value"]
                rec[probe_label(impl)] = float(hit.iloc[0]) if not hit.empty else None
            if not mine.empty:               # a size the machine did not measure has no row
                records.append(rec)
    table = pd.DataFrame.from_records(records)
    for col in map(probe_label, impls):
        if col not in table:
            table[col] = None
    table.insert(4, "UM/P2P", [ratio(u, p) for u, p in zip(table["UM"], table["P2P"])])
    table.insert(7, "UM/P2P remote", [ratio(u, p) for u, p in zip(table["UM remote"], table["P2P remote"])])
    return table[[c for c in table.columns if table[c].notna().any() or c in ("UM", "P2P")]]


def _fraction(x: float) -> str:
    """0.015625 -> '1/64'."""
    return f"1/{1 / x:g}" if 0 < x < 1 and (1 / x).is_integer() else f"{x:g}"


# colour per access path (WholeGraph's palette), solid for a measured machine, dashed for the paper;
# remote-only placements dash-dotted in their path's colour
PATHS = {"UM": (PALETTE["UM"], "o", "-"), "P2P": (PALETTE["P2P"], "s", "-"), "UM remote": (PALETTE["UM"], "^", "-."),
         "P2P remote": (PALETTE["P2P"], "v", "-."), "local": (PALETTE["local"], "x", "-"),
         "host": (PALETTE["host"], "d", "-")}


def latency_figure(table, gpus: dict, scales: dict):
    """Table I as latency over memory size: a panel per machine shown, each beside the paper's UM and
    P2P (``gpus``: machine -> GPUs its probes spread the memory over; ``scales``: machine -> its sizes
    over the paper's, where not 1)."""
    from matplotlib.ticker import FuncFormatter

    machines = [m for m in dict.fromkeys(table["Machine"]) if m != PAPER_ROW]
    fig, axes = figure((min(10.5, 3.2 + 3.6 * max(len(machines), 1)), 5.4), ncols=max(len(machines), 1),
                       sharey=True, squeeze=False)
    paper = table[table["Machine"] == PAPER_ROW]
    sizes = table["Memory size (GB)"].astype(float)
    for ax, machine in zip(axes[0], machines or [None]):
        series = [(f"{col}, paper ({PAPER_GPUS})", paper["Memory size (GB)"].astype(float), paper[col],
                   {"color": PATHS[col][0], "marker": PATHS[col][1], "paper": True}) for col in ("UM", "P2P")]
        mine = table[table["Machine"] == machine]
        alone = " (1 GPU: all local)" if gpus.get(machine) == 1 else ""
        for col, (colour, marker, style) in PATHS.items():
            have = mine[mine[col].notna()] if col in mine else mine.iloc[0:0]
            if not have.empty:                   # the sizes measured, joined
                series.append((f"{col}, {machine}" + (alone if col == "UM" else ""),
                               have["Memory size (GB)"].astype(float), have[col],
                               {"color": colour, "marker": marker, "linestyle": style, "zorder": 3 if col == "UM" else 2}))
        lines(ax, series, legend_size=None, grid=False)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sorted(set(sizes)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("memory size (GB)" if machine not in scales else "paper's memory size (GB)")
        scaled = f" (sizes x {_fraction(scales[machine])})" if machine in scales else ""
        ax.set_title((machine or "no measured machine") + scaled)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=9, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    axes[0][0].set_ylabel("latency per access (us)")
    fig.suptitle("WholeGraph Table I: pointer-chasing latency, UM vs GPUDirect P2P")
    return finish(fig)

CAPTION = ("UM and P2P spread the memory evenly over all GPUs of the run, as the paper does (UM: cudaMallocManaged, "
           "each GPU initializes its partition; P2P: cudaMalloc on every GPU, peer access), so with n GPUs 1/n of the "
           "reads are local (paper: 8 GPUs, 7/8 remote). 'remote' columns place the memory on the other GPUs only: "
           "every read crosses NVLink (P2P) or faults (UM). 'local': all on GPU 0; 'host': pinned host memory read "
           "over PCIe. Paper: {hardware}.")
