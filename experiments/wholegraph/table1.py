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
from harness.reportkit import Report, figure, finite, lines, ratio
from harness.worlds import Worlds

from . import PAPER_HARDWARE

GB = 1 << 30
PAPER_SIZES_GB = (8, 16, 32, 64, 128)
_TABLE_I = {8: (20.8, 1.35), 16: (29.6, 1.37), 32: (32.5, 1.43), 64: (35.3, 1.51), 128: (35.8, 1.56)}
_PAPER_RATIOS = (f"{min(u / p for u, p in _TABLE_I.values()):.1f}x-"
                 f"{max(u / p for u, p in _TABLE_I.values()):.1f}x")
IMPL_LABELS = {"um": "UM", "p2p": "P2P", "um_remote": "UM remote", "p2p_remote": "P2P remote",
               "local": "local", "host_zero_copy": "host"}


def _paper_values():
    out = []
    for size, (um, p2p) in _TABLE_I.items():
        out.append(PaperValue("Table I", "um", {"paper_size_gb": size}, "latency", um, "us"))
        out.append(PaperValue("Table I", "p2p", {"paper_size_gb": size}, "latency", p2p, "us"))
    return tuple(out)


def cold_reads_caption(ok) -> str:
    """What the probe rows say was cold: distinct lines per launch, reuse, the L2 flush."""
    if "p_distinct_over_l2" not in ok or ok["p_distinct_over_l2"].isna().all():
        return ("Rows without line accounting: their chains may have re-read lines an earlier "
                "launch of the point had left in the L2.")
    measured = ok[ok["p_distinct_over_l2"].notna()]
    reused = measured[measured["p_lines_read_before"] > 0]
    um = measured["impl"].str.startswith("um")

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
        sizes = ", ".join(f"{v:g}" for v in sorted(set(reused["p_size_gb"])))
        text += (f" At {sizes} GB the region holds fewer lines than the point's launches read, so up to "
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
    paper_hardware = PAPER_HARDWARE
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

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        from impls.probes import chain, parts_for
        from impls.probes.bench import Launches, chase_steps, time_chase

        cfg = ctx.cfg
        gpus = selected_gpus(self, cfg)
        spec = registry.get_impl(self.interface, point.impl)
        size_bytes = int(point.params["size_gb"] * GB)
        if size_bytes < 8 * 1024:
            raise SkipPoint(f"size {size_bytes} B is below the 8 KiB minimum")
        host_cap = int(self.param(cfg, "host_max_gb") * GB)
        probe = spec.factory(cfg.device, gpus, host_cap_bytes=host_cap)
        is_um = point.impl.startswith("um")
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
        table = latency_table(rep, self.impls)
        for label in rep.labels.values():
            mine = table[table["Machine"] == label]
            for col in [c for c in ("UM/P2P", "UM/P2P remote") if c in mine]:
                vals = [(s, r) for s, r in zip(mine["Memory size (GB)"], mine[col]) if finite(r) and r]
                if vals:
                    lo = min(vals, key=lambda x: x[1])
                    rep.notes.append(f"{label}: {col} latency ratio {lo[1]:.1f}x at worst ({lo[0]} GB), "
                                     f"{max(v for _, v in vals):.1f}x at best; paper (A100): {_PAPER_RATIOS}")
        rows, ok = rep.rows, rep.ok
        scales = sorted({round(a / b, 6) for a, b in zip(rows["p_size_gb"], rows["p_paper_size_gb"])})
        scale_note = "" if scales == [1.0] else \
            f" Sizes measured at {', '.join(f'{s:g}' for s in scales)} x the paper's (--scale)."
        steps = sorted(set(ok["p_steps"].dropna().astype(int))) if "p_steps" in ok else []
        caption = rep.caption(f"Latency in microseconds per dependent 8-byte read: one GPU thread chases "
                              f"{'/'.join(f'{s:,}' for s in steps) or '100,000'} steps from GPU 0.",
                              cold_reads_caption(ok), CAPTION.format(hardware=PAPER_HARDWARE)) + scale_note
        rep.notes += rep.skip_notes() + ["Every measured chain was checked against the Python reference chain "
                                         "(same words read), so a probe that reads the wrong memory fails its point."]
        at8 = table[(table["Memory size (GB)"].astype(float) >= 8) & (table["Machine"] != "A100 (paper)")]
        ratios = [r for r in at8["UM/P2P"] if finite(r)] if "UM/P2P" in at8 else []
        status = "reproduced" if ratios and min(ratios) >= 10 else ("not reproduced" if ratios else "measured")
        first = table[table["Memory size (GB)"] == "8"]
        headline = "; ".join(f"{m}: UM {u:.3g} us, P2P {p:.3g} us ({u / p:.1f}x)"
                             for m, u, p in zip(first["Machine"], first["UM"], first["P2P"]) if finite(u) and finite(p))
        return rep.artifact("WholeGraph Table I: UM vs P2P access latency", caption, table, latency_figure(table),
                            headline=f"at 8 GB: {headline}" if headline else "", status=status, skips=False)


def latency_table(rep, impls):
    """Per paper size: the paper's UM and P2P, then every run's probes and their UM/P2P ratios."""
    import pandas as pd

    records = []
    for size in sorted(set(rep.rows["p_paper_size_gb"])):
        um, p2p = _TABLE_I.get(int(size), (None, None))
        records.append({"Memory size (GB)": f"{size:g}", "Machine": "A100 (paper)", "UM": um, "P2P": p2p})
        for run_id, label in rep.labels.items():
            mine = rep.ok[(rep.ok["run_id"] == run_id) & (rep.ok["p_paper_size_gb"] == size)]
            rec = {"Memory size (GB)": f"{size:g}", "Machine": label}
            for impl in impls:
                hit = mine[mine["impl"] == impl]["value"]
                rec[IMPL_LABELS[impl]] = float(hit.iloc[0]) if not hit.empty else None
            records.append(rec)
    table = pd.DataFrame.from_records(records)
    for col in IMPL_LABELS.values():
        if col not in table:
            table[col] = None
    table.insert(4, "UM/P2P", [ratio(u, p) for u, p in zip(table["UM"], table["P2P"])])
    table.insert(7, "UM/P2P remote", [ratio(u, p) for u, p in zip(table["UM remote"], table["P2P remote"])])
    return table[[c for c in table.columns if table[c].notna().any() or c in ("UM", "P2P")]]


def latency_figure(table):
    fig, ax = figure((7, 4.4))
    styles = {"UM": "o", "P2P": "s", "UM remote": "^", "P2P remote": "v", "local": "x", "host": "d"}
    lines(ax, [(f"{machine} {col}", grp["Memory size (GB)"].astype(float), grp[col],
                {"marker": marker, "paper": machine.endswith("(paper)")})
               for machine, grp in table.groupby("Machine", sort=False)
               for col, marker in styles.items() if col in grp and grp[col].notna().any()], legend_size=None,
          grid=False)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("memory size (paper GB)")
    ax.set_ylabel("latency per access (us)")
    ax.set_title("Pointer-chasing latency (WholeGraph Table I)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=3)
    return fig


CAPTION = ("UM and P2P spread the memory evenly over all GPUs of the run, as the paper does (UM: cudaMallocManaged, "
           "each GPU initializes its partition; P2P: cudaMalloc on every GPU, peer access), so with n GPUs 1/n of the "
           "reads are local (paper: 8 GPUs, 7/8 remote). 'remote' columns place the memory on the other GPUs only: "
           "every read crosses NVLink (P2P) or faults (UM). 'local': all on GPU 0; 'host': pinned host memory read "
           "over PCIe. Paper: {hardware}.")
