"""WholeGraph Table I: UM vs GPUDirect P2P memory-access latency by pointer chasing.

Section III-A: one thread, a dependent chain of 100K reads over one large randomly
initialized allocation, the next address computed from the value just read and the
step id; latency = time / steps. UM: cudaMallocManaged, each GPU initializes an
equal partition. P2P: equal cudaMalloc parts on all GPUs, peer access enabled.
Chased from GPU 0. ``local`` and ``host_zero_copy`` are reference lines.
"""

from __future__ import annotations

from harness import registry
from harness.errors import SkipPoint
from harness.experiment import (Experiment, Measurement, PaperValue, Param, Point, float_list,
                                positive_float, positive_int)
from harness.needs import detect
from harness.registry import register_experiment
from harness.report import ReportArtifact
from harness.tables import caption_hardware, expand_params, run_labels, skip_notes

from . import PAPER_HARDWARE

GB = 1 << 30
PAPER_SIZES_GB = (8, 16, 32, 64, 128)
_TABLE_I = {8: (20.8, 1.35), 16: (29.6, 1.37), 32: (32.5, 1.43), 64: (35.3, 1.51), 128: (35.8, 1.56)}
IMPL_LABELS = {"um": "UM", "p2p": "P2P", "um_remote": "UM remote", "p2p_remote": "P2P remote",
               "local": "local", "host_zero_copy": "host"}


def _paper_values():
    out = []
    for size, (um, p2p) in _TABLE_I.items():
        out.append(PaperValue("Table I", "um", {"paper_size_gb": size}, "latency", um, "us"))
        out.append(PaperValue("Table I", "p2p", {"paper_size_gb": size}, "latency", p2p, "us"))
    return tuple(out)


def selected_gpus(cfg) -> list[int]:
    if cfg.device != "cuda":
        return []
    count = detect().gpu_count
    return list(range(cfg.world_size or count))


@register_experiment
class Table1(Experiment):
    id = "wholegraph.table1"
    paper = "wholegraph"
    artifact = "table1"
    title = "UM vs GPUDirect P2P memory access latency (pointer chasing)"
    interface = "probes"
    impls = ("um", "p2p", "um_remote", "p2p_remote", "local", "host_zero_copy")
    metric, unit, better = "latency", "us", "lower"
    paper_hardware = PAPER_HARDWARE
    paper_values = _paper_values()
    parameters = {
        "sizes_gb": Param(PAPER_SIZES_GB, float_list, "paper memory sizes (GB), multiplied by --scale"),
        "steps": Param(100_000, positive_int, "dependent reads per chain (paper: 100K)"),
        "um_steps": Param(100_000, positive_int, "steps for UM (each can cost tens of us)"),
        "verify_steps": Param(20_000, positive_int, "steps checked against the Python reference"),
        "host_max_gb": Param(32.0, positive_float, "largest pinned host allocation to probe"),
    }

    def default_scale(self, cfg) -> float:
        if cfg.device == "cuda":
            return 1 / 8 if cfg.quick else 1.0
        return 1 / 512 if cfg.quick else 1 / 64

    def points(self, cfg):
        gpus = selected_gpus(cfg)
        world = max(1, len(gpus))
        scale = self.scale(cfg)
        for size in self.param(cfg, "sizes_gb"):
            for impl in self.impls:
                yield Point(impl, {"paper_size_gb": size, "size_gb": round(size * scale, 6),
                                   "gpus": world}, world_size=world)

    def run_point(self, point: Point, cfg) -> list[Measurement]:
        from impls.probes import parts_for
        from impls.probes.bench import time_chase, verify_chain

        gpus = selected_gpus(cfg)
        spec = registry.get_impl(self.interface, point.impl)
        size_bytes = int(point.params["size_gb"] * GB)
        if size_bytes < 8 * 1024:
            raise SkipPoint(f"size {size_bytes} B is below the 8 KiB minimum")
        host_cap = int(self.param(cfg, "host_max_gb") * GB)
        probe = spec.factory(cfg.device, gpus, host_cap_bytes=host_cap)
        is_um = point.impl.startswith("um")
        steps = self.param(cfg, "um_steps" if is_um else "steps")
        if cfg.quick:
            steps = min(steps, 10_000)
        try:
            probe.allocate(size_bytes, salt=0x5EED + cfg.seed, nparts=parts_for(point.impl, gpus) or 1)
            verify_chain(probe, min(self.param(cfg, "verify_steps"), steps), start=cfg.seed + 1)
            stats = time_chase(probe, cfg.device, steps, start=cfg.seed + 2,
                               warmup=cfg.warmup_or(1), repeats=cfg.repeats_or(3 if is_um else 5, 2),
                               reset_each=is_um)
        finally:
            probe.close()
        where = getattr(probe, "placement", "host memory")
        return [Measurement("latency", "us", stats.scaled(1e6 / steps), better="lower",
                            extra={"steps": steps, "placement": where})]

    # --- report ------------------------------------------------------------------
    def report(self, rows, runs) -> ReportArtifact:
        import matplotlib.pyplot as plt
        import pandas as pd

        rows = expand_params(rows)
        labels = run_labels(rows, runs)
        ok = rows[rows["status"] == "ok"]
        sizes = sorted(set(rows["p_paper_size_gb"]))
        table = pd.DataFrame({"Memory size (GB)": [f"{s:g}" for s in sizes]})
        table["A100 UM (paper)"] = [_TABLE_I.get(int(s), (None, None))[0] for s in sizes]
        table["A100 P2P (paper)"] = [_TABLE_I.get(int(s), (None, None))[1] for s in sizes]
        ratio_notes = []
        for run_id, label in labels.items():
            mine = ok[ok["run_id"] == run_id]
            for impl in self.impls:
                col = f"{label} {IMPL_LABELS[impl]}"
                values = [mine[(mine["impl"] == impl) & (mine["p_paper_size_gb"] == s)]["value"]
                          for s in sizes]
                if all(v.empty for v in values):
                    continue
                table[col] = [float(v.iloc[0]) if not v.empty else None for v in values]
            for suffix in ("", " remote"):
                um, p2p = f"{label} UM{suffix}", f"{label} P2P{suffix}"
                if um not in table or p2p not in table:
                    continue
                ratio_col = f"{label} UM/P2P{suffix}"
                table[ratio_col] = [u / p if (u and p) else None for u, p in zip(table[um], table[p2p])]
                pairs = [(s, r) for s, r in zip(sizes, table[ratio_col]) if r]
                if pairs:
                    ratio_notes.append(f"{label}: UM/P2P{suffix} latency ratio "
                                       + ", ".join(f"{r:.1f}x at {s:g} GB" for s, r in pairs)
                                       + " (paper, A100: 15x-23x)")
        scales = sorted({round(a / b, 6) for a, b in zip(rows["p_size_gb"], rows["p_paper_size_gb"])})
        scale_note = "" if scales == [1.0] else \
            f" Sizes measured at {', '.join(f'{s:g}' for s in scales)} x the paper's (--scale)."
        steps = sorted(set(ok["p_steps"].dropna().astype(int))) if "p_steps" in ok else []
        caption = (f"Latency in microseconds per dependent 8-byte read, one GPU thread chasing "
                   f"{'/'.join(f'{s:,}' for s in steps) or '100,000'} steps from GPU 0 over memory spread "
                   f"evenly across all GPUs of the run, as the paper does (UM: each GPU initializes its "
                   f"partition; P2P: cudaMalloc on every GPU with peer access), so with n GPUs 1/n of "
                   f"the reads are local; the 'remote' columns put the memory on the other GPUs only "
                   f"(every read crosses NVLink or faults). Paper: {PAPER_HARDWARE}, 7/8 of reads remote. "
                   + caption_hardware(runs) + scale_note)
        notes = ratio_notes + skip_notes(rows, labels)
        notes.append("Every measured chain was checked against the Python reference chain "
                     "(same words read), so a probe that reads the wrong memory fails its point.")

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        ax.plot(sizes, table["A100 UM (paper)"], "k--o", label="A100 UM (paper)")
        ax.plot(sizes, table["A100 P2P (paper)"], "k:s", label="A100 P2P (paper)")
        for col in table.columns[3:]:
            if "UM/P2P" in col:
                continue
            ax.plot(sizes, table[col], marker="o", label=col)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("memory size (paper GB)")
        ax.set_ylabel("latency per access (us)")
        ax.set_title("Pointer-chasing latency (WholeGraph Table I)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        return ReportArtifact("table1", "WholeGraph Table I: UM vs P2P access latency", caption,
                              table, notes, fig)
