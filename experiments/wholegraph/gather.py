"""Gather bandwidth of every implementation, side by side with real WholeGraph (ours).

Not a paper table: the comparison WholeGraph section IV-C-4 argues, made for every
implementation here in one run: the one-kernel shared-memory gather (`p2p_shared`: chunked
over torch symmetric memory, CUDA IPC or our CUDA VMM range, and continuous over the VMM
range, one pointer for the whole table; chunked with its reads issued with the L2::256B
prefetch hint or as bulk-copy loads of whole rows), the gather pushed by the rows' owners
(`p2p_push`: NVLink stores by SMs, or bulk-copy stores), the five-step NCCL alltoallv gather,
the host paths of PyG/DGL (`host_copy`, `host_uva`) and real pylibwholegraph in its three
addressing modes, with the link ceilings (one-way peer copy, raw alltoall, the copy engines
all-to-all both ways) measured in the same run.
"""

from __future__ import annotations

import math
import re

from harness import registry
from harness.argtypes import choice, int_list, positive_float, positive_int
from harness.artifact import ReportArtifact
from harness.experiment import Experiment, Param, Point
from harness.registry import register_experiment
from harness.reportkit import (Band, Claim, Estimate, Report, figure, machine_kind, newest_rows, series_rows,
                               several_runs_per_kind, variant_names)
from harness.timing import RepeatBudget

from impls.core.row_gather import DEFAULT_LAUNCH, launch_name, parse_launch

from . import PAPER_HARDWARE
from .gather_bench import measure_gather

# the metrics of the one-way peer copy (the ceiling of '% ceiling') and the copy engines all-to-all
ONE_WAY, COPY_ALL = "peer_copy_bw", "copy_all_bw"


def gathers(device: str | None = None):
    """The gathers (every registered implementation and variant but the ceilings), in the table's
    and figure's order."""
    return registry.series("gather", device=device, without=("ceiling",))


def measured_order(series):
    """The order points run in: the variants that issue bulk-copy instructions after the others,
    so that a fault in one costs no other's row, and the slow host paths last."""
    return sorted(series, key=lambda s: (s.has("host"), s.has("bulk_copy")))


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
    """One note per id order and row size: a gather with ids in that order beside random ids."""
    notes = []
    if sweep.empty:
        return notes
    algbw = sweep[sweep["metric"] == "algbw"]
    for (size, impl, mode, order), grp in algbw.groupby(["p_row_bytes", "impl", "variant", "p_ids"]):
        base = algbw_of(table_rows, impl, size, mode)
        value = float(grp["value"].iloc[0])
        share = f" = {100 * value / ceiling:.1f}% of the ceiling" if ceiling else ""
        random = f"; uniformly random ids {base:.3g}" if base is not None else ""
        notes.append(f"{label}, {int(size)} B rows, {impl} ({mode}) with ids in {order} order "
                     f"(each owner's rows read in sequence, owners interleaved): {value:.3g} GB/s{share}{random}")
    return notes


def launch_sweep_notes(label: str, sweep, table_rows, ceiling: float | None) -> list[str]:
    """One note per swept geometry and row size: its bandwidth beside the default launch's."""
    notes = []
    if sweep.empty:
        return notes
    default = launch_name(DEFAULT_LAUNCH)
    for (size, impl, mode), grp in sweep[sweep["metric"] == "algbw"].groupby(["p_row_bytes", "impl", "variant"]):
        base = algbw_of(table_rows, impl, size, mode)
        cells = [f"{default} (default) {base:.3g}"] if base is not None else []
        for _, r in grp.sort_values("value", ascending=False).iterrows():
            share = f" = {100 * r['value'] / ceiling:.1f}% of the ceiling" if ceiling else ""
            cells.append(f"{r['p_launch']} {r['value']:.3g}{share}")
        notes.append(f"{label}, {int(size)} B rows, {impl} ({mode}) kernel geometry, GB/s: " + "; ".join(cells))
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
        ceiling = is_ceiling(r["impl"])
        what = link_subject(r) if ceiling else (
            f"{variant_label(r['impl'], r['variant'] if isinstance(r.get('variant'), str) else None)}, "
            f"{int(r['p_row_bytes'])} B rows" + (f", ids {r['p_ids']}" if isinstance(r.get("p_ids"), str) else ""))
        cells = []
        for side in ("tx", "rx"):
            data, raw = traffic.get(f"data_{side}_GBps"), traffic.get(f"raw_{side}_GBps")
            if data is not None and raw is not None:
                share = f" (payload {100 * data / raw:.0f}% of raw)" if raw else ""
                cells.append(f"{side.upper()} payload {data:.0f} / raw {raw:.0f} GB/s{share}")
        if "gpu1_data_rx_GBps" in traffic:
            cells.append(f"GPU 1 RX payload {traffic['gpu1_data_rx_GBps']:.0f} / raw "
                         f"{traffic.get('gpu1_raw_rx_GBps', 0):.0f} GB/s")
        per = traffic.get("data_tx_per_payload" if r["metric"] == ONE_WAY else "data_rx_per_payload")
        if per is not None:
            cells.append(f"link payload per user byte {per:.2f}")
        notes.append(f"{label}, NVML NVLink counters of GPU 0 ({traffic.get('links')} links, "
                     f"{traffic.get('calls')} calls in {traffic.get('seconds')} s), {what}: " + "; ".join(cells))
        if not ceiling:
            limit = read_limit_note(label, what, r, traffic, copy_traffic(frame))
            if limit:
                notes.append(limit)
    return notes


def is_ceiling(impl: str) -> bool:
    spec = registry.lookup("gather", impl)
    return spec is not None and spec.has("ceiling")


def link_subject(r) -> str:
    """What a ceiling's row with link counters measured: the ceiling, and who copies where."""
    direction = r.get("p_direction")
    return registry.get_impl("gather", r["impl"]).title + (
        f" ({direction}: every rank copying {'to' if direction == 'push' else 'from'} every peer)"
        if isinstance(direction, str) else "")


def copy_traffic(frame) -> dict | None:
    for _, r in frame[frame["metric"] == ONE_WAY].iterrows():
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

    @property
    def impls(self):
        return registry.names("gather")

    metric, unit, better = "algbw", "GB/s", "higher"
    differs_from_paper = ("Not a paper figure: the comparison of section IV-C-4 for every gather implementation here and "
                          "today's real WholeGraph, on 2 or 4 H200s instead of 8x A100, with 2M uniformly random ids per "
                          "rank from a 4 GB-per-rank table rather than a training run's mini-batches (Fig. 10 has those).")
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
        "p2p_launch": Param((), launch_list, "extra kernel geometries to time for the variants that take launch= "
                                             "(p2p_shared, p2p_push), e.g. 16x256u8,4x512u4 "
                                             "(blocks per SM x threads, u = loads in flight per thread; the "
                                             f"default is {launch_name(DEFAULT_LAUNCH)}); "
                                             "listed apart from the table"),
        "id_orders": Param((), id_order_list, "extra id orders for the gathers that read rows in place (p2p_shared) "
                                              "besides uniformly random ids: "
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
        for ceiling in registry.series("gather", device=cfg.device, traits=("ceiling",)):
            measures = ceiling.spec.factory()
            yield Point(ceiling.impl, {measures.size_param: measures.default_bytes(quick_cpu), **ceiling.options}, world)
        ordered = measured_order(gathers(cfg.device))
        for row_bytes in self.param(cfg, "row_bytes"):
            num_rows = int(table_gb * 1e9 * world) // row_bytes
            for one in ordered:
                params = {"row_bytes": row_bytes, "row_elems": row_bytes // 4, "dtype": "float32",
                          "num_rows": num_rows, "ids_per_rank": ids, **one.options}
                if one.has("capacity"):                    # its output buffers hold a call's rows
                    params["capacity"] = ids
                yield Point(one.impl, params, world)
                if one.has("launch") and cfg.device == "cuda":      # GPU kernel only
                    for launch in self.param(cfg, "p2p_launch"):
                        yield Point(one.impl, {**params, "launch": launch}, world)
                if one.has("id_orders"):
                    for order in self.param(cfg, "id_orders"):
                        yield Point(one.impl, {**params, "ids": order}, world)

    def run_point(self, point, ctx):
        cfg, rank = ctx.cfg, ctx.rank
        host = registry.get_impl("gather", point.impl).has("host")
        repeats = (self.param(cfg, "host_repeats"),) * 2 if host else (20, 5)
        budget = RepeatBudget.for_run(cfg, warmup=(1 if host else 3, 1), repeats=repeats)
        return measure_gather(point, cfg, rank, budget,
                              link_counters=self.param(cfg, "link_counters") == "on" and not host)

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        rep = Report(self, rows, runs)
        everything = rep.rows.assign(variant=variant_names(rep.rows, "gather"))
        none = pd.Series(False, index=everything.index)
        swept = everything["p_launch"].notna() if "p_launch" in everything else none
        ordered = everything["p_ids"].notna() if "p_ids" in everything else none
        good = everything["status"] == "ok"
        counted = good & everything["metric"].isin(["time", "peer_copy_bw", "copy_all_bw"])
        linked = counted & everything.get("extra", none).map(lambda e: isinstance(e, dict) and "nvlink" in e)
        sweep, orders, plain = everything[swept & good], everything[ordered & good], everything[~swept & ~ordered]
        ok = plain[plain["status"] == "ok"]
        newest = newest_rows(ok, rep.labels, by=["impl", "variant", "p_row_bytes"])
        # the sweeps, id orders and link counters of the newest run per machine kind that has them
        extras = [newest_rows(frame, rep.labels) for frame in (sweep, orders, everything[linked])]
        shown_ids = set(newest["run_id"]).union(*(set(f["run_id"]) for f in extras))
        shown = Report(self, rows[rows["run_id"].isin(shown_ids)], [r for r in runs if r.run_id in shown_ids])
        kinds = {run_id: machine_kind(label) for run_id, label in shown.labels.items()}
        ceilings = run_ceilings(ok)
        shown.notes += machine_notes(newest, kinds)
        for run_id in sorted(set().union(*(set(f["run_id"]) for f in extras))):
            label, mine = shown.label(run_id), ok[ok["run_id"] == run_id]
            shown.notes += launch_sweep_notes(label, extras[0][extras[0]["run_id"] == run_id], mine, ceilings.get(run_id))
            shown.notes += id_order_notes(label, extras[1][extras[1]["run_id"] == run_id], mine, ceilings.get(run_id))
            shown.notes += link_notes(label, everything[(everything["run_id"] == run_id) & counted])
        table = gather_table(table_records(newest, kinds, ceilings, measured_only=True))
        history = gather_table(table_records(ok, rep.labels, ceilings)) if several_runs_per_kind(rep.labels) \
            else None
        ids = sorted(set(newest["p_ids_per_rank"].dropna().astype(int))) if "p_ids_per_rank" in newest else []
        caption = shown.caption(f"Gather bandwidth per rank (AlgoBW = gathered bytes / time of the slowest rank), every "
                                f"rank gathering {', '.join(f'{i:,}' for i in ids)} uniformly random ids from a float32 "
                                "table spread evenly over all ranks; rows checked against their closed form before "
                                "timing. '% ceiling' is against n/(n-1) x the one-way peer-copy bandwidth measured in the "
                                "same run"
                                + ("; each cell from the newest run on its kind of machine (every run: "
                                   "gather.history.md)" if history is not None else "")
                                + f". Paper's claim (WholeGraph IV-C-4, {PAPER_HARDWARE}): the one-kernel gather "
                                "is more than 2x faster than NCCL alltoallv.")
        shown.notes += shown.skip_notes(plain[plain["run_id"].isin(shown_ids)])
        claimed = "{} / {}".format(*(one.impl for one in claim_pair()))
        ratio_notes = [n for n in shown.notes if claimed in n]
        at512 = [m for n in ratio_notes if (m := re.match(rf"(.*), 512 B rows: {re.escape(claimed)} = ([0-9.]+)x", n))]
        headline = (f"{claimed} at 512 B rows: " + ", ".join(f"{m.group(1)} {m.group(2)}x" for m in at512)
                    + " (paper: > 2x)" if at512 else ratio_notes[0] if ratio_notes else "")
        return shown.artifact("Feature gather: every implementation, same run", caption, table,
                              gather_figure(table, machine_ceilings(newest, kinds, ceilings)),
                              headline=headline, claims=gather_claims(newest, kinds), skips=False, history=history)


ABOVE_2X = Band.between(2.0, math.inf, "above 2x (the paper: more than 2x)")


def claim_pair():
    """The paper's claim (IV-C-4): its one-kernel gather (ours, the paper's design) against the
    gather through collectives (NCCL alltoallv)."""
    return (registry.series("gather", traits=("paper",))[0],
            registry.series("gather", traits=("collective",), without=("library", "ceiling"))[0])


def gather_claims(newest, kinds: dict) -> list[Claim]:
    """Per machine and row size: the one-kernel gather's bandwidth over NCCL alltoallv's (the paper,
    IV-C-4: more than 2x faster)."""
    def algbw(frame, one, size):
        sel = series_rows(frame, one)
        sel = sel[(sel["p_row_bytes"] == size) & (sel["metric"] == "algbw")]
        return (Estimate.from_stats(sel["stats"].iloc[0], "repeats"), sel["run_id"].iloc[0]) if not sel.empty \
            else (None, None)

    paper, baseline = claim_pair()
    out = []
    machine = newest["run_id"].map(kinds)
    for name in dict.fromkeys(kinds.values()):
        mine = newest[machine == name]
        for size in sorted(set(mine["p_row_bytes"].dropna().astype(int))) if "p_row_bytes" in mine else []:
            (ours, run_a), (theirs, run_b) = algbw(mine, paper, size), algbw(mine, baseline, size)
            if ours is not None and theirs is not None and ours.value > 0 and theirs.value > 0:
                out.append(Claim(f"{name}, {size} B rows: {paper.impl} / {baseline.impl} bandwidth",
                                 ours.ratio(theirs), ABOVE_2X, "> 2x", runs=tuple(sorted({run_a, run_b}))))
    return out


def run_ceilings(ok) -> dict:
    """run id -> its remote-gather ceiling, n/(n-1) x the one-way peer copy it measured."""
    out = {}
    peer = ok[ok["metric"] == ONE_WAY]
    for _, r in peer.iterrows():
        if int(r["world_size"]) > 1 and r["value"]:
            out[r["run_id"]] = float(r["value"]) * int(r["world_size"]) / (int(r["world_size"]) - 1)
    return out


def machine_ceilings(ok, machine_of: dict, ceilings: dict) -> dict:
    """machine -> the ceiling of its newest run that measured one."""
    return {machine_of[run]: ceilings[run] for run in sorted(set(ok["run_id"])) if run in ceilings}


def table_records(ok, machine_of: dict, ceilings: dict, measured_only: bool = False) -> list[dict]:
    """One record per (machine, implementation): bandwidth per row size and its share of the
    ceiling of the run that measured it (``machine_of``: run id -> the machine it is shown as;
    ``measured_only``: no record for an implementation without a value)."""
    records = []
    machine = ok["run_id"].map(machine_of)
    for name in dict.fromkeys(machine_of.values()):
        mine = ok[machine == name]
        if mine.empty:
            continue
        sizes = sorted(set(mine["p_row_bytes"].dropna().astype(int))) if "p_row_bytes" in mine else []
        for one in gathers():
            impl, mode = one.impl, one.variant.name or None
            rec = {"Machine": name, "Implementation": one.key}
            for size in sizes:
                sel = mine[(mine["impl"] == impl) & (mine["p_row_bytes"] == size) & (mine["metric"] == "algbw")]
                sel = sel[sel["variant"] == mode] if mode else sel
                value = rec[f"{size} B GB/s"] = float(sel["value"].iloc[0]) if not sel.empty else None
                ceiling = ceilings.get(sel["run_id"].iloc[0]) if not sel.empty else None
                if ceiling and value and not one.has("host"):
                    rec[f"{size} B % ceiling"] = 100 * value / ceiling
            if (one.runs_on("cpu") and not measured_only) or any(rec.get(f"{size} B GB/s") for size in sizes):
                records.append(rec)    # a GPU-only variant without a value was not measured in this run
    return records


def gather_table(records):
    import pandas as pd

    table = pd.DataFrame.from_records(records)
    if table.empty:
        return pd.DataFrame({"note": ["no successful measurements"]})
    return table[[c for c in table.columns if c in ("Machine", "Implementation") or table[c].notna().any()]]


def machine_notes(ok, machine_of: dict) -> list[str]:
    """Per machine: its ceilings, and the gathers' ratios per row size."""
    notes = []
    machine = ok["run_id"].map(machine_of)
    for name in dict.fromkeys(machine_of.values()):
        mine = ok[machine == name]
        world = int(mine["world_size"].max()) if not mine.empty else 1
        peer = mine[mine["metric"] == ONE_WAY]["value"]
        if not peer.empty and world > 1:
            peer_bw = float(peer.iloc[0])
            notes.append(f"{name}: one-way peer copy {peer_bw:.0f} GB/s -> remote-gather ceiling "
                         f"n/(n-1) x copy = {peer_bw * world / (world - 1):.0f} GB/s per rank")
        for spec, bw in ceiling_algbw(mine):
            notes.append(f"{name}: {spec.title} {bw:.3g} GB/s algbw per rank")
        ceiling = peer_bw * world / (world - 1) if not peer.empty and world > 1 else None
        notes += copy_all_notes(name, mine, world, ceiling)
        for size in sorted(set(mine["p_row_bytes"].dropna().astype(int))) if "p_row_bytes" in mine else []:
            bw = {(impl, mode): algbw_of(mine, impl, size, mode) for pair in RATIOS for impl, mode in pair[:2]}
            claimed = tuple((one.impl, one.variant.name or None) for one in claim_pair())
            parts = [f"{label} = {bw[a] / bw[b]:.2f}x" + (" (paper: > 2x)" if (a, b) == claimed else "")
                     for a, b, label in RATIOS if bw[a] and bw[b]]
            if parts:
                notes.append(f"{name}, {size} B rows: " + "; ".join(parts))
            target = fastest_note(name, mine, size, ceiling)
            if target:
                notes.append(target)
    return notes


def ceiling_algbw(mine) -> list[tuple]:
    """(ceiling, its AlgoBW) of every ceiling that measured one (the raw alltoall)."""
    out = []
    for spec in registry.impl_specs("gather"):
        sel = mine[(mine["impl"] == spec.name) & (mine["metric"] == "algbw")]["value"] if spec.has("ceiling") else ()
        if len(sel):
            out.append((spec, float(sel.iloc[0])))
    return out


def copy_all_notes(name: str, mine, world: int, ceiling: float | None) -> list[str]:
    """The copy engines all-to-all: bytes received per rank, and the gather it would allow (its
    remote share moving at that rate: x n/(n-1))."""
    notes = []
    rows = mine[mine["metric"] == COPY_ALL]
    if rows.empty:
        return notes
    for _, r in rows.sort_values("p_direction", ascending=False).iterrows():
        equiv = float(r["value"]) * world / (world - 1)
        share = f" = {100 * equiv / ceiling:.0f}% of the ceiling" if ceiling else ""
        notes.append(f"{name}: copy engines all-to-all ({r['p_direction']}, every rank copying "
                     f"{'to' if r['p_direction'] == 'push' else 'from'} every peer at once) {float(r['value']):.0f} GB/s "
                     f"received per rank -> a gather moved at that rate: {equiv:.0f} GB/s per rank{share}")
    return notes


def fastest_note(name: str, mine, size: int, ceiling: float | None) -> str | None:
    """The fastest of our gathers beside real WholeGraph's fastest mapped mode at one row size, both
    from the newest run that measured the two (a ratio across runs would mix their machines' days)."""
    sel = mine[(mine["p_row_bytes"] == size) & (mine["metric"] == "algbw") & (mine["variant"] != "distributed")]
    for column in ("p_launch", "p_ids"):
        if column in sel:
            sel = sel[sel[column].isna()]
    ours = sel[sel["impl"].isin(registry.names("gather", family="ours", without=("ceiling",)))]
    theirs = sel[sel["impl"].isin(registry.names("gather", traits=("library", "peer_read")))]
    runs = sorted(set(ours["run_id"]) & set(theirs["run_id"]))
    if not runs:
        return None
    best = [frame[frame["run_id"] == runs[-1]].sort_values("value").iloc[-1] for frame in (ours, theirs)]
    (a, b) = (float(r["value"]) for r in best)
    label = [variant_label(r["impl"], r["variant"] if isinstance(r["variant"], str) else None) for r in best]
    share = f", {100 * a / ceiling:.0f}% of the ceiling" if ceiling else ""
    return (f"{name}, {size} B rows: fastest of ours {label[0]} {a:.0f} GB/s = {a / b:.2f}x real WholeGraph's "
            f"fastest mapped mode in the same run ({label[1]}, {b:.0f} GB/s){share}")


SIZE_MARKERS = ("o", "s", "D", "^", "v")


def gather_figure(table, ceilings: dict):
    """Bandwidth per implementation (a row each, coloured by system) and row size (a marker each),
    a panel per machine, on a log axis with the machine's remote-gather ceiling."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    machines = list(dict.fromkeys(table["Machine"])) if "Machine" in table else []
    sizes = [c for c in table.columns if c.endswith(" B GB/s")]
    variants = [one for one in gathers() if "Implementation" in table and (table["Implementation"] == one.key).any()]
    # rows tighten past 12 variants so the figure stays within a 1600 x 900 slide
    fig, axes = figure((10.5, min(5.9, 1.6 + 0.36 * max(len(variants), 3))), ncols=max(len(machines), 1), sharey=True,
                       sharex=True, squeeze=False)
    for ax, machine in zip(axes[0], machines or [None]):
        mine = table[table["Machine"] == machine].set_index("Implementation") if machine else None
        for i, (size, marker) in enumerate(zip(sizes, SIZE_MARKERS)):
            xs, ys, colours = [], [], []
            offset = (i - (len(sizes) - 1) / 2) * 0.22           # row sizes side by side within a row
            for y, one in enumerate(variants):
                value = mine[size].get(one.key) if mine is not None and one.key in mine.index else None
                if value is not None and value == value:
                    xs.append(value), ys.append(y + offset), colours.append(one.colour)
            ax.scatter(xs, ys, c=colours, marker=marker, s=34, zorder=3, edgecolors="black", linewidths=0.4)
        if machine in ceilings:
            ax.axvline(ceilings[machine], linestyle=":", color="gray")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("GB/s per rank (log)")
        ax.set_title(machine or "no measured machine")
        ax.grid(True, which="both", axis="x", alpha=0.3)
    # the legend's markers say the row size (white: every system draws them)
    handles = [Line2D([], [], marker=marker, linestyle="", markerfacecolor="white", markeredgecolor="black",
                      label=size.replace(" GB/s", " rows")) for size, marker in zip(sizes, SIZE_MARKERS)]
    if ceilings:
        handles.append(Line2D([], [], linestyle=":", color="gray", label="remote-gather ceiling"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles) or 1, fontsize=9, frameon=False)
    axes[0][0].set_yticks(range(len(variants)), [one.label for one in variants])
    for tick, one in zip(axes[0][0].get_yticklabels(), variants):
        tick.set_color(one.colour)
    axes[0][0].set_ylim(len(variants) - 0.5, -0.5)
    fig.suptitle("Feature gather bandwidth per implementation (colour: system; marker: row size)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# the ratios the notes give per row size: (numerator, denominator) as (impl, variant), and its name: the
# comparisons section IV-C-4 argues and their like-for-like counterparts (an implementation added later
# is in the table and figure without a ratio here)
RATIOS = ((("p2p_shared", "chunked"), ("nccl_alltoallv", None), "p2p_shared / nccl_alltoallv"),
          (("p2p_shared", "chunked"), ("wholegraph_lib", "continuous"), "p2p_shared / WholeGraph continuous"),
          (("p2p_push", "sm"), ("p2p_shared", "chunked"), "p2p_push (NVLink stores) / p2p_shared"),
          (("p2p_push", "tma"), ("p2p_shared", "chunked"), "p2p_push (bulk-copy stores) / p2p_shared"),
          (("p2p_shared", "continuous"), ("wholegraph_lib", "continuous"),
           "p2p_shared continuous (CUDA VMM) / WholeGraph continuous"),
          (("nccl_alltoallv", None), ("wholegraph_lib", "distributed"), "nccl_alltoallv / WholeGraph distributed"))
