"""Gather bandwidth of every implementation, side by side with real WholeGraph (ours).

Not a paper table: the comparison WholeGraph section IV-C-4 argues, made for every
implementation here in one run: the one-kernel shared-memory gather (`p2p_shared`: chunked
over torch symmetric memory, CUDA IPC or our CUDA VMM range, and continuous over the VMM
range, one pointer for the whole table), the five-step NCCL alltoallv gather, the host
paths of PyG/DGL (`host_copy`, `host_uva`) and real pylibwholegraph in its three addressing
modes, with the link ceilings (one-way peer copy, raw alltoall) measured in the same run.
"""

from __future__ import annotations

import re

from harness.argtypes import choice, int_list, positive_float, positive_int
from harness.artifact import ReportArtifact
from harness.experiment import Experiment, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, bars, figure, finish

from impls.core.row_gather import DEFAULT_LAUNCH, launch_name, parse_launch

from . import PAPER_HARDWARE
from .gather_bench import measure_gather

# (impl, mode) in the order they appear in the table
VARIANTS = (("p2p_shared", "chunked"), ("p2p_shared", "chunked-ipc"), ("p2p_shared", "chunked-vmm"),
            ("p2p_shared", "continuous"), ("nccl_alltoallv", None), ("wholegraph_lib", "continuous"),
            ("wholegraph_lib", "chunked"), ("wholegraph_lib", "distributed"), ("host_uva", None),
            ("host_copy", None))
# variants that differ from another only in how GPU memory is shared: GPU runs only
GPU_ONLY = ("chunked-vmm",)


def variant_params(mode: str | None) -> dict:
    """'chunked-ipc' / 'chunked-vmm': the chunked store shared by legacy CUDA IPC, or mapped in
    our CUDA VMM range, instead of symmetric memory. Plain 'continuous' uses the VMM range."""
    if mode is None:
        return {}
    for backend in ("ipc", "vmm"):
        if mode.endswith(f"-{backend}"):
            return {"mode": mode[: -len(backend) - 1], "backend": backend}
    return {"mode": mode}


def variant_of(row) -> str | None:
    mode = row.get("p_mode")
    if not isinstance(mode, str):
        return None
    backend = row.get("p_backend")
    return f"{mode}-{backend}" if backend in ("ipc", "vmm") and mode == "chunked" else mode
HOST_IMPLS = ("host_copy", "host_uva")


# p2p_shared variants whose kernel geometry `p2p_launch` sweeps
LAUNCH_SWEPT = ("chunked", "continuous")


def launch_list(text: str) -> tuple[str, ...]:
    items = tuple(t.strip() for t in str(text).split(",") if t.strip())
    for item in items:
        parse_launch(item)                                   # a clear error before any rank starts
    return items


def algbw_of(frame, impl: str, size: int, variant: str | None) -> float | None:
    """AlgoBW of one implementation (and variant, when given) at one row size in ``frame``."""
    sel = frame[(frame["impl"] == impl) & (frame["p_row_bytes"] == size) & (frame["metric"] == "algbw")]
    if variant:
        sel = sel[sel["variant"] == variant]
    return float(sel["value"].iloc[0]) if not sel.empty else None


ID_ORDERS = ("owner_streams",)


def id_order_list(text: str) -> tuple[str, ...]:
    items = tuple(t.strip() for t in str(text).split(",") if t.strip() and t.strip() != "none")
    for item in items:
        if item not in ID_ORDERS:
            raise ValueError(f"id order '{item}' is not one of {', '.join(ID_ORDERS)}")
    return items


def id_order_notes(label: str, sweep, table_rows, ceiling: float | None) -> list[str]:
    """One note per id order and row size: p2p_shared with ids in that order beside random ids."""
    notes = []
    if sweep.empty:
        return notes
    for (size, mode, order), grp in sweep[sweep["metric"] == "algbw"].groupby(["p_row_bytes", "variant", "p_ids"]):
        base = algbw_of(table_rows, "p2p_shared", size, mode)
        value = float(grp["value"].iloc[0])
        share = f" = {100 * value / ceiling:.1f}% of the ceiling" if ceiling else ""
        random = f"; uniformly random ids {base:.3g}" if base is not None else ""
        notes.append(f"{label}, {int(size)} B rows, p2p_shared ({mode}) with ids in {order} order "
                     f"(each owner's rows read in sequence, owners interleaved): {value:.3g} GB/s{share}{random}")
    return notes


def launch_sweep_notes(label: str, sweep, table_rows, ceiling: float | None) -> list[str]:
    """One note per swept geometry and row size: its bandwidth beside the default launch's."""
    notes = []
    if sweep.empty:
        return notes
    default = launch_name(DEFAULT_LAUNCH)
    for (size, mode), grp in sweep[sweep["metric"] == "algbw"].groupby(["p_row_bytes", "variant"]):
        base = algbw_of(table_rows, "p2p_shared", size, mode)
        cells = [f"{default} (default) {base:.3g}"] if base is not None else []
        for _, r in grp.sort_values("value", ascending=False).iterrows():
            share = f" = {100 * r['value'] / ceiling:.1f}% of the ceiling" if ceiling else ""
            cells.append(f"{r['p_launch']} {r['value']:.3g}{share}")
        notes.append(f"{label}, {int(size)} B rows, p2p_shared ({mode}) kernel geometry, GB/s: " + "; ".join(cells))
    return notes


def link_notes(label: str, frame) -> list[str]:
    """NVML NVLink counters recorded with ``link_counters=on``: GPU 0's link bytes, payload vs raw."""
    notes = []
    for _, r in frame.iterrows():
        traffic = r["extra"].get("nvlink") if isinstance(r.get("extra"), dict) else None
        if not traffic:
            continue
        if "reason" in traffic:
            notes.append(f"{label}: NVLink counters not read: {traffic['reason']}")
            break
        what = ("one-way peer copy GPU 0 -> GPU 1" if r["impl"] == "ceiling_peer_copy" else
                f"{variant_label(r['impl'], r['variant'] if isinstance(r.get('variant'), str) else None)}, "
                f"{int(r['p_row_bytes'])} B rows"
                + (f", ids {r['p_ids']}" if isinstance(r.get("p_ids"), str) else ""))
        cells = []
        for side in ("tx", "rx"):
            data, raw = traffic.get(f"data_{side}_GBps"), traffic.get(f"raw_{side}_GBps")
            if data is not None and raw is not None:
                share = f" (payload {100 * data / raw:.0f}% of raw)" if raw else ""
                cells.append(f"{side.upper()} payload {data:.0f} / raw {raw:.0f} GB/s{share}")
        if "gpu1_data_rx_GBps" in traffic:
            cells.append(f"GPU 1 RX payload {traffic['gpu1_data_rx_GBps']:.0f} / raw "
                         f"{traffic.get('gpu1_raw_rx_GBps', 0):.0f} GB/s")
        per = traffic.get("data_rx_per_payload" if r["impl"] != "ceiling_peer_copy" else "data_tx_per_payload")
        if per is not None:
            cells.append(f"link payload per user byte {per:.2f}")
        notes.append(f"{label}, NVML NVLink counters of GPU 0 ({traffic.get('links')} links, "
                     f"{traffic.get('calls')} calls in {traffic.get('seconds')} s), {what}: " + "; ".join(cells))
        if r["impl"] != "ceiling_peer_copy":
            limit = read_limit_note(label, what, r, traffic, copy_traffic(frame))
            if limit:
                notes.append(limit)
    return notes


def copy_traffic(frame) -> dict | None:
    for _, r in frame[frame["impl"] == "ceiling_peer_copy"].iterrows():
        traffic = r["extra"].get("nvlink") if isinstance(r.get("extra"), dict) else None
        if traffic and "raw_tx_per_payload" in traffic:
            return traffic
    return None


def read_limit_note(label: str, what: str, r, traffic: dict, copy: dict | None) -> str | None:
    """What the link counters imply for a gather: the links run at the raw byte rate the copy
    engine reaches, so the payload it can deliver is the copy engine's scaled by the ratio of
    protocol overheads (copy-engine writes vs this pattern's reads)."""
    need = ("raw_rx_per_payload", "raw_rx_GBps", "calls", "seconds")
    if copy is None or any(k not in traffic for k in need) or not traffic["seconds"]:
        return None
    world = int(r["world_size"])
    nbytes = float(r["p_ids_per_rank"]) * float(r["p_row_bytes"])
    back_to_back = nbytes * traffic["calls"] / traffic["seconds"] / 1e9           # AlgoBW, no barriers
    copy_payload, copy_raw = copy["data_tx_GBps"], copy["raw_tx_GBps"]
    ceiling = copy_payload * world / (world - 1)                                # same back-to-back method
    limit = copy["raw_tx_per_payload"] / traffic["raw_rx_per_payload"]
    return (f"{label}, {what}: links at {100 * traffic['raw_rx_GBps'] / copy_raw:.0f}% of the raw byte rate the "
            f"peer copy reaches ({traffic['raw_rx_GBps']:.0f} of {copy_raw:.0f} GB/s); each payload byte costs "
            f"{traffic['raw_rx_per_payload']:.3f} raw bytes here against {copy['raw_tx_per_payload']:.3f} for the "
            f"copy engine's writes, so at equal link rate this pattern delivers at most {100 * limit:.0f}% of the "
            f"ceiling; back to back (no per-call barrier) it reaches {back_to_back:.0f} GB/s = "
            f"{100 * back_to_back / ceiling:.0f}% of the ceiling measured the same way "
            f"(n/(n-1) x {copy_payload:.0f} GB/s)")


def variant_label(impl: str, mode: str | None) -> str:
    return f"{impl} ({mode})" if mode else impl


@register_experiment
class GatherTable(Experiment):
    title = "Feature gather bandwidth: every implementation and real WholeGraph, same run"
    interface = "gather"
    impls = ("p2p_shared", "nccl_alltoallv", "wholegraph_lib", "host_uva", "host_copy",
             "ceiling_peer_copy", "ceiling_alltoall")
    metric, unit, better = "algbw", "GB/s", "higher"
    paper_hardware = PAPER_HARDWARE
    warm_and_cold = ("Warm: the store, pointer tables and compiled kernels. Cold: each repeat gathers the same "
                     "ids, at least 4x the L2 per rank at the default sizes, and an L2 flush runs before each "
                     "repeat that reads less (rows: gathered_over_l2, flush_mib), so no repeat is served by "
                     "the last one's lines.")
    spawn_ranks = True
    parameters = {
        "row_bytes": Param((128, 512, 2048), int_list, "row sizes in bytes (float32 rows)"),
        "ids_per_rank": Param(2_000_000, positive_int, "random ids each rank gathers per call"),
        "table_gb_per_gpu": Param(4.0, positive_float, "table size per rank (GB)"),
        "host_repeats": Param(5, positive_int, "repeats for the slow host paths"),
        "p2p_launch": Param((), launch_list, "extra p2p_shared kernel geometries to time, e.g. 16x256u8,4x512u4 "
                                             "(blocks per SM x threads, u = loads in flight per thread; the "
                                             f"default is {launch_name(DEFAULT_LAUNCH)}); "
                                             "listed apart from the table"),
        "id_orders": Param((), id_order_list, "extra id orders for p2p_shared besides uniformly random ids: "
                                              "owner_streams (every owner's rows in sequence, owners "
                                              "interleaved: the kernel's streaming read ceiling); listed apart"),
        "link_counters": Param("off", choice("off", "on"),
                               "on: after timing, repeat each GPU point for half a second with NVML's NVLink "
                               "payload and raw (payload + protocol) byte counters read around it"),
    }

    def points(self, cfg):
        (world,) = self.world_sizes(cfg)
        quick_cpu = cfg.device == "cpu" or cfg.quick
        ids = self.param(cfg, "ids_per_rank") if "ids_per_rank" in cfg.params or not quick_cpu else 20_000
        table_gb = self.param(cfg, "table_gb_per_gpu") if "table_gb_per_gpu" in cfg.params or not quick_cpu \
            else 0.05
        yield Point("ceiling_peer_copy", {"copy_bytes": 1 << 30}, world)
        yield Point("ceiling_alltoall", {"alltoall_bytes": (256 << 20) if not quick_cpu else (8 << 20)}, world)
        for row_bytes in self.param(cfg, "row_bytes"):
            num_rows = int(table_gb * 1e9 * world) // row_bytes
            for impl, mode in VARIANTS:
                if mode in GPU_ONLY and cfg.device != "cuda":
                    continue
                params = {"row_bytes": row_bytes, "row_elems": row_bytes // 4, "dtype": "float32",
                          "num_rows": num_rows, "ids_per_rank": ids, **variant_params(mode)}
                yield Point(impl, params, world)
                if impl == "p2p_shared" and mode in LAUNCH_SWEPT and cfg.device == "cuda":   # GPU kernel only
                    for launch in self.param(cfg, "p2p_launch"):
                        yield Point(impl, {**params, "launch": launch}, world)
                if impl == "p2p_shared":                   # every way of sharing the memory
                    for order in self.param(cfg, "id_orders"):
                        yield Point(impl, {**params, "ids": order}, world)

    def run_point(self, point, ctx):
        cfg, rank = ctx.cfg, ctx.rank
        host = point.impl in HOST_IMPLS
        repeats = self.param(cfg, "host_repeats") if host else cfg.repeats_or(20, 5)
        return measure_gather(point, cfg, rank, warmup=cfg.warmup_or(1 if host else 3, 1),
                              repeats=cfg.repeats if cfg.repeats else repeats,
                              link_counters=self.param(cfg, "link_counters") == "on" and not host)

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        rep = Report(self, rows, runs)
        everything = rep.rows.assign(variant=[variant_of(r) for _, r in rep.rows.iterrows()])
        swept = everything["p_launch"].notna() if "p_launch" in everything else pd.Series(False, index=everything.index)
        ordered = everything["p_ids"].notna() if "p_ids" in everything else pd.Series(False, index=everything.index)
        good = everything["status"] == "ok"
        sweep, orders, rows = everything[swept & good], everything[ordered & good], everything[~swept & ~ordered]
        ok = rows[rows["status"] == "ok"]
        records = []
        for run_id, label in rep.labels.items():
            mine = ok[ok["run_id"] == run_id]
            ceiling = run_rows(label, mine, records, rep.notes)
            rep.notes += launch_sweep_notes(label, sweep[sweep["run_id"] == run_id], mine, ceiling)
            rep.notes += id_order_notes(label, orders[orders["run_id"] == run_id], mine, ceiling)
            rep.notes += link_notes(label, everything[(everything["run_id"] == run_id) & good
                                                      & everything["metric"].isin(["time", "peer_copy_bw"])])
        table = pd.DataFrame.from_records(records)
        table = table[[c for c in table.columns if c in ("Machine", "Implementation") or table[c].notna().any()]]
        ids = sorted(set(ok["p_ids_per_rank"].dropna().astype(int))) if "p_ids_per_rank" in ok else []
        caption = rep.caption(f"Gather bandwidth per rank (AlgoBW = gathered bytes / time of the slowest rank), every "
                              f"rank gathering {', '.join(f'{i:,}' for i in ids)} uniformly random ids from a float32 "
                              "table spread evenly over all ranks; rows checked against their closed form before "
                              "timing. '% ceiling' is against n/(n-1) x the one-way peer-copy bandwidth measured in the "
                              f"same run. Paper's claim (WholeGraph IV-C-4, {PAPER_HARDWARE}): the one-kernel gather "
                              "is more than 2x faster than NCCL alltoallv.")
        rep.notes += rep.skip_notes(rows)
        fig, ax = figure((8, 4.2))
        bw_cols = [c for c in table.columns if c.endswith("GB/s")]
        if bw_cols:
            bars(ax, table.set_index(["Machine", "Implementation"])[bw_cols], horizontal=True, xlabel="GB/s per rank")
            ax.invert_yaxis()
        ratio_notes = [n for n in rep.notes if "p2p_shared / nccl_alltoallv" in n]
        ratios = [float(x) for n in ratio_notes for x in re.findall(r"nccl_alltoallv = ([0-9.]+)x", n)]
        status = ("reproduced" if ratios and min(ratios) >= 2 else "partly" if ratios and max(ratios) >= 2
                  else "not reproduced" if ratios else "measured")
        headline = next((n for n in reversed(ratio_notes) if ", 512 B rows" in n),      # the latest run's
                        ratio_notes[-1] if ratio_notes else "")
        return rep.artifact("Feature gather: every implementation, same run", caption, table,
                            finish(fig, ax, "Gather bandwidth per implementation"), headline=headline, status=status,
                            skips=False)


def run_rows(label: str, mine, records: list, notes: list) -> float | None:
    """One run's table rows (bandwidth and share of the ceiling per row size) and its notes (the
    ceilings, the gathers' ratios); returns its remote-gather ceiling."""
    world = int(mine["world_size"].max()) if not mine.empty else 1
    peer = mine[(mine["impl"] == "ceiling_peer_copy") & (mine["metric"] == "peer_copy_bw")]["value"]
    peer_bw = float(peer.iloc[0]) if not peer.empty else None
    ceiling = peer_bw * world / (world - 1) if (peer_bw and world > 1) else None
    a2a = mine[(mine["impl"] == "ceiling_alltoall") & (mine["metric"] == "algbw")]["value"]
    if peer_bw:
        notes.append(f"{label}: one-way peer copy {peer_bw:.0f} GB/s -> remote-gather ceiling "
                     f"n/(n-1) x copy = {ceiling:.0f} GB/s per rank")
    if not a2a.empty:
        notes.append(f"{label}: raw all_to_all_single (NCCL on GPUs, gloo on CPU) {float(a2a.iloc[0]):.3g} GB/s "
                     "algbw per rank")
    sizes = sorted(set(mine["p_row_bytes"].dropna().astype(int))) if "p_row_bytes" in mine else []
    for impl, mode in VARIANTS:
        rec = {"Machine": label, "Implementation": variant_label(impl, mode)}
        for size in sizes:
            value = rec[f"{size} B GB/s"] = algbw_of(mine, impl, size, mode)
            if ceiling and value and impl not in HOST_IMPLS:
                rec[f"{size} B % ceiling"] = 100 * value / ceiling
        if mode not in GPU_ONLY or any(rec.get(f"{size} B GB/s") for size in sizes):
            records.append(rec)    # a GPU-only variant without a value was not measured in this run
    for size in sizes:
        bw = {(impl, mode): algbw_of(mine, impl, size, mode) for pair in RATIOS for impl, mode in pair[:2]}
        parts = [f"{name} = {bw[a] / bw[b]:.2f}x" + (" (paper: > 2x)" if b == ("nccl_alltoallv", None) and
                                                      a == ("p2p_shared", "chunked") else "")
                 for a, b, name in RATIOS if bw[a] and bw[b]]
        if parts:
            notes.append(f"{label}, {size} B rows: " + "; ".join(parts))
    return ceiling


# the ratios the notes give per row size: (numerator, denominator) as (impl, variant), and its name
RATIOS = ((("p2p_shared", "chunked"), ("nccl_alltoallv", None), "p2p_shared / nccl_alltoallv"),
          (("p2p_shared", "chunked"), ("wholegraph_lib", "continuous"), "p2p_shared / WholeGraph continuous"),
          (("p2p_shared", "continuous"), ("wholegraph_lib", "continuous"),
           "p2p_shared continuous (CUDA VMM) / WholeGraph continuous"),
          (("nccl_alltoallv", None), ("wholegraph_lib", "distributed"), "nccl_alltoallv / WholeGraph distributed"))
