"""The report of ICS'22's loading-time breakdowns (Figs. 4, 5, 6, 10, 11).

The figure keeps the paper's layout, one panel per GPU configuration with the buffer sizes along
x and one bar per policy, for the rows the report shows (experiments/placement/shown.py: the
newest run per machine kind at the paper's settings; one row of panels per machine kind). Bars
are loading times modelled with Eq. 3; a run that also gathered the same batches on real ranks
marks each measured time on its bar; a policy whose placement timed out is marked where its bar
would stand; where the paper printed a RAND / Our ratio, its range is drawn on Our's bar. The
headline table holds the shown rows beside the paper's printed numbers; every run's rows are in
the history.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.reportkit import PAPER_STYLE, Report, figure

from . import PALETTE, PAPER_HARDWARE
from .paper import PAPER_BATCH, PAPER_LAYER_NODES, POLICY_ORDER, policy_colour, policy_label
from .shown import SMOKE_NOTE, shown_rows

CELL = ["impl", "p_topology", "p_buffer", "p_las", "p_mode"]
PAPER_LABEL = "paper (8x V100)"

SIMULATION_CAPTION = (
    "each input node is read locally, from a peer GPU it has an NVLink to, or from the host (ICS'22 dev_num lookup), "
    "and Eq. 3 charges C_gpu and C_cpu per node (defaults: row bytes over 150 GB/s NVSwitch and 12 GB/s PCIe 3.0; "
    "--param c_gpu_us/c_cpu_us). 'Our' is Algorithm 1 per NVLink group with the paper's alpha, '+LAS' adds "
    "locality-aware sampling with s = MAXS = 8. The paper's bars are epoch times measured on GPUs; the "
    "loading-ratio statements need those.")
MEASURED_CAPTION = (
    "'Measured ms/batch' (the diamonds): the same batches gathered for real by one rank per GPU, barrier-bracketed, "
    "slowest GPU's mean per batch; on a GPU machine gathered {gathers} ('fused' = one kernel per launch reading each "
    "row where dev_num says, GPU buffers over NVLink and the pinned host table zero-copy, in one pointer table; "
    "'split' = a p2p_shared gather of the GPU rows, a zero-copy host gather and two scatters into batch order), on a "
    "CPU machine by CPU ranks in host shared memory (toy scale: not GPU numbers).")


def breakdown_report(exp, rows, runs) -> ReportArtifact:
    rep = Report(exp, rows, runs)
    shown = shown_rows(rep, CELL)
    frame = _with_kind(_metric_frame(shown.rows), shown)
    measured = _with_kind(_measured_frame(shown.rows), shown)
    timeouts = _timeouts(shown)
    order = {t: i for i, t in enumerate(exp.topologies)}
    records = [_record(exp, r, frame, measured) for _, r in frame.iterrows()] + \
        [{"Machine": kind, "Topology": top, "Buffer": buf, "Policy": pol, "Modeled ms/batch": "timed out"}
         for kind, top, buf, pol in timeouts]
    records.sort(key=lambda rec: (rec["Machine"], order.get(rec["Topology"], 99), exp.buffer_fraction(rec["Buffer"]),
                                  _policy_rank(rec["Policy"])))
    table = rep.table(records, empty="no simulated rows", single=("Machine",), drop_empty=False)
    headline = _notes_and_headline(exp, rep, frame, measured, shown)
    caption = _caption(exp, rep, shown, frame, measured)
    fig = _figure(exp, frame, measured, timeouts, _not_run(shown, frame, timeouts)) \
        if not frame.empty or timeouts else None
    claims = breakdown_claims(exp, frame)
    if orderings := ordering_text(claims):
        headline = f"{headline}; {orderings}" if headline else orderings
    return rep.artifact(exp.title, caption, table, fig, headline=headline, skips=shown.rows,
                        history=_history(exp, rep), claims=claims)


# --- claims ----------------------------------------------------------------------------------------------

MODELLED = "exact: modelled (Eq. 3) on the sampled batches"


def breakdown_claims(exp, frame) -> list:
    """The paper's claims on the modelled loading time of every shown configuration: the orderings it
    states (Our below METIS, below PaGraph: the slower policy's time over Our's above 1) and the
    RAND / Our ratios it prints. The measured diamonds are not judged: where they are overhead-bound
    they time fixed costs, not the placement."""
    from harness.reportkit import Band, Claim, Estimate

    out = []
    if frame.empty:
        return out
    for kind, mine in frame.groupby("kind", sort=True):
        runs = tuple(sorted(set(mine["run_id"])))
        for (topology, buffer), _ in sorted(mine.groupby(["p_topology", "p_buffer"]),
                                            key=lambda g: (exp.topologies.index(g[0][0]) if g[0][0] in exp.topologies
                                                           else 99, exp.buffer_fraction(g[0][1]))):
            for source, better, worse in exp.claims:
                a, b = _find(mine, worse, topology, buffer), _find(mine, better, topology, buffer)
                if a is None or b is None or not b["loading_time"]:
                    continue
                out.append(Claim(f"[{kind}] {topology} {buffer}: {policy_label(worse, False)} / "
                                 f"{policy_label(better, False)} loading",
                                 Estimate.exact(a["loading_time"] / b["loading_time"], MODELLED),
                                 Band.beyond(1.0, text=f"{policy_label(better, False)} faster ({source})"),
                                 f"{policy_label(better, False)} faster", runs=runs))
            for pv in exp.paper_values:
                if pv.metric != "speedup_vs_random" or not _applies(pv, pv.impl, topology, buffer, False):
                    continue
                r = _over(_find(mine, "random", topology, buffer), _find(mine, pv.impl, topology, buffer))
                if r is None:
                    continue
                upper = pv.params.get("upper")
                band = Band.between(pv.value, upper if upper else float("inf"),
                                    f"the paper's {pv.value:g}-{upper:g}x" if upper else f"above {pv.value:g}x")
                out.append(Claim(f"[{kind}] {topology} {buffer}: RAND / {policy_label(pv.impl, False)} loading",
                                 Estimate.exact(r, MODELLED), band, f"{pv.value:g}x" + (f"-{upper:g}x" if upper else "+"),
                                 runs=runs))
    return out


def ordering_text(claims) -> str:
    """'modelled: Our below METIS in 1 of 9 configurations, below PaGraph in 3 of 9'."""
    counts: dict = {}
    for c in claims:
        if " / RAND" in c.what or "RAND /" in c.what:
            continue
        pair = c.what.split(": ", 1)[1].removesuffix(" loading")
        held, total = counts.get(pair, (0, 0))
        counts[pair] = (held + (c.effect.value > 1), total + 1)
    parts = []
    for pair, (held, total) in counts.items():
        worse, better = pair.split(" / ")
        parts.append(f"{better} below {worse} in {held} of {total}")
    return ("modelled: " + ", ".join(parts) + " configurations (Sec. 5.2: always)") if parts else ""


# --- frames -----------------------------------------------------------------------------------------

def _metric_frame(rows):
    """Simulated ok rows (``rows`` with their parameters expanded), one line per point with one
    column per metric."""
    import pandas as pd

    if rows.empty:
        return pd.DataFrame()
    ok = rows[(rows["status"] == "ok") & (rows.get("p_mode", "simulated") == "simulated")]
    if ok.empty:
        return pd.DataFrame()
    keys = ["run_id", "impl", "p_topology", "p_buffer", "p_las"]
    wide = ok.pivot_table(index=keys, columns="metric", values="value", aggfunc="first").reset_index()
    extra = ok[ok["metric"] == "loading_time"][keys + [c for c in ("p_cache_ratio", "p_alpha", "p_batch_size",
                                                                    "p_layer_nodes", "p_scale") if c in ok]]
    return wide.merge(extra, on=keys, how="left")


def _measured_frame(rows):
    """Measured ok loading-time rows (of ``rows`` with their parameters expanded): run, impl,
    topology, buffer, value, where measured and how gathered (a row that names no gather was
    gathered split)."""
    import pandas as pd

    if "p_mode" not in rows:
        return pd.DataFrame()
    ok = rows[(rows["status"] == "ok") & (rows["p_mode"] == "measured") & (rows["metric"] == "loading_time")]
    if ok.empty:
        return pd.DataFrame()
    ok = ok.assign(p_las=False, loading_time=ok["value"])
    if "p_measured_on" not in ok:
        ok = ok.assign(p_measured_on="?")
    if "p_modeled_ms" not in ok:
        ok = ok.assign(p_modeled_ms=float("nan"))
    gather = ok["p_measured_gather"] if "p_measured_gather" in ok else None
    ok = ok.assign(p_measured_gather="split" if gather is None else gather.fillna("split"))
    stats = ok["stats"] if "stats" in ok else [None] * len(ok)
    ok = ok.assign(p10=[s.get("p10") if isinstance(s, dict) else None for s in stats],
                   p90=[s.get("p90") if isinstance(s, dict) else None for s in stats])
    for column in ("p_launch_floor_ms", "p_overhead_bound", "p_overhead_factor", "p_measured_repeats", "p_batches_per_region",
                   "p_rows_per_region", "p_host_pages_4k_per_batch", "p_host_regions_2m_per_batch",
                   "p_host_rows_per_batch"):
        if column not in ok:
            ok = ok.assign(**{column: None})
    return ok[["run_id", "impl", "p_topology", "p_buffer", "p_las", "loading_time", "p_measured_on",
               "p_modeled_ms", "p_measured_gather", "p10", "p90", "p_launch_floor_ms", "p_overhead_bound",
               "p_overhead_factor",
               "p_measured_repeats", "p_batches_per_region", "p_rows_per_region", "p_host_pages_4k_per_batch",
               "p_host_regions_2m_per_batch", "p_host_rows_per_batch"]]


def _with_kind(frame, shown):
    return frame.assign(kind=frame["run_id"].map(shown.kind)) if not frame.empty else frame


def _timeouts(shown) -> list[tuple]:
    """(machine kind, topology, buffer, policy) of the shown simulated points whose placement timed out."""
    rows = shown.rows
    if rows.empty or "reason" not in rows or "p_mode" not in rows:
        return []
    hit = rows[(rows["status"] == "skipped") & (rows["p_mode"] == "simulated")
               & rows["reason"].fillna("").str.startswith("timeout")]
    return sorted({(shown.kind(r.run_id), r.p_topology, r.p_buffer, policy_label(r.impl, bool(r.p_las)))
                   for r in hit.itertuples(index=False)})


def _not_run(shown, frame, timeouts) -> list[tuple[str, str]]:
    """(policy, why) of the policies no shown simulated point of which ran or timed out."""
    rows = shown.rows
    if rows.empty or "reason" not in rows or "p_mode" not in rows:
        return []
    drawn = {policy_label(r.impl, bool(r.p_las)) for r in frame.itertuples(index=False)} if not frame.empty else set()
    drawn |= {t[3] for t in timeouts}
    hit = rows[(rows["status"] != "ok") & (rows["p_mode"] == "simulated")]
    why = {policy_label(r.impl, bool(r.p_las)): str(r.reason) for r in hit.itertuples(index=False)}
    return sorted(((p, w) for p, w in why.items() if p not in drawn), key=lambda pw: _policy_rank(pw[0]))


def _legend_rank(key: str) -> tuple:
    """Policies in bar order, then their timeouts, the measured marks, the paper's, the policies not run."""
    policy = key.rsplit(" ", 2)[0] if key.endswith((" timed out", " not run")) else key
    group = 1 if key.endswith(" timed out") else 4 if key.endswith(" not run") else \
        2 if key.startswith("measured") or key == "launch floor" else 3 if key == PAPER_LABEL else 0
    return group, _policy_rank(policy), key


def _find(frame, impl, topology, buffer, las=False):
    hit = frame[(frame["impl"] == impl) & (frame["p_topology"] == topology) & (frame["p_buffer"] == buffer)
                & (frame["p_las"] == las)]
    return None if hit.empty else hit.iloc[0]


def _policy_rank(label: str) -> int:
    return POLICY_ORDER.index(label) if label in POLICY_ORDER else len(POLICY_ORDER)


# --- tables -----------------------------------------------------------------------------------------

def _record(exp, r, frame, measured) -> dict:
    """The headline table's row of a shown simulated point, its measured twin (the same machine
    kind) beside it, and what the paper printed for it."""
    mine = frame[frame["kind"] == r["kind"]]
    base = _find(mine, "random", r["p_topology"], r["p_buffer"])
    record = {"Machine": r["kind"], "Topology": r["p_topology"], "Buffer": r["p_buffer"],
              "Policy": policy_label(r["impl"], bool(r["p_las"])), "Reads local/peer/host %": _reads(r),
              "Modeled ms/batch": r.get("loading_time"),
              "RAND / this (modeled)": _over(base, r), "Measured ms/batch": None, "Repeats p10-p90": None,
              "Launch floor ms/batch": None, "RAND / this (measured)": None}
    scope = measured[measured["kind"] == r["kind"]] if not measured.empty else measured
    hit = _find(scope, r["impl"], r["p_topology"], r["p_buffer"]) if not scope.empty and not r["p_las"] else None
    if hit is not None:
        record["Measured ms/batch"] = hit["loading_time"]
        record["Repeats p10-p90"] = _spread(hit)
        record["Launch floor ms/batch"] = _number(hit["p_launch_floor_ms"])
        ratio = _over(_find(scope, "random", r["p_topology"], r["p_buffer"]), hit)
        record["RAND / this (measured)"] = f"{ratio:.3g} (overhead-bound)" if ratio is not None and \
            _bound(hit) else ratio
    record["Paper"] = paper_text(exp, r["impl"], r["p_topology"], r["p_buffer"], bool(r["p_las"]))
    return record


def _reads(r) -> str:
    shares = [r.get(m, float("nan")) for m in ("local_fraction", "peer_fraction", "host_fraction")]
    return "/".join("-" if v != v else f"{100 * v:.0f}" for v in shares)


def _number(value):
    return None if value is None or value != value else float(value)


def _spread(hit) -> str | None:
    lo, hi = _number(hit.get("p10")), _number(hit.get("p90"))
    repeats = _number(hit.get("p_measured_repeats"))
    if lo is None or hi is None or not repeats:
        return None                      # one pass over the batches (older runs): no spread between repeats
    return f"{lo:.3g}-{hi:.3g} (n={repeats:.0f})"


def _bound(hit) -> bool:
    """Whether a measured point is overhead-bound: as its run judged it against the launch floor it
    measured (rows since the floor), else by the old rule (the modelled transfer under a fifth of
    the measured time)."""
    flag = hit.get("p_overhead_bound")
    if flag is not None and flag == flag:
        return bool(flag)
    modeled = _number(hit.get("p_modeled_ms"))
    return modeled is not None and hit["loading_time"] > 0 and modeled < OVERHEAD_BOUND * hit["loading_time"]


def _over(base, row):
    """RAND's loading time over ``row``'s, or None."""
    if base is None or row is None or not row.get("loading_time"):
        return None
    return base["loading_time"] / row["loading_time"]


def _history(exp, rep):
    """Every run's simulated points, with their measured twins of the same run."""
    frame, measured = _metric_frame(rep.rows), _measured_frame(rep.rows)
    order = {t: i for i, t in enumerate(exp.topologies)}
    records = []
    for _, r in frame.iterrows():
        base = _find(frame[frame["run_id"] == r["run_id"]], "random", r["p_topology"], r["p_buffer"])
        records.append({"Run": rep.label(r["run_id"]), "Topology": r["p_topology"], "Buffer": r["p_buffer"],
                        "Policy": policy_label(r["impl"], bool(r["p_las"])),
                        **{f"{name} %": 100 * r.get(metric, float("nan")) for name, metric in
                           (("Local", "local_fraction"), ("Peer", "peer_fraction"), ("Host", "host_fraction"),
                            ("On GPUs", "p_cache_ratio"))},
                        "Scale": r.get("p_scale"), "Batch": r.get("p_batch_size"),
                        "Modeled ms/batch": r.get("loading_time"), "Modeled s/epoch": r.get("epoch_loading_time"),
                        "RAND / this (modeled)": _over(base, r), **_measured_cells(measured, r)})
    records.sort(key=lambda rec: (rec["Run"], order.get(rec["Topology"], 99), exp.buffer_fraction(rec["Buffer"]),
                                  _policy_rank(rec["Policy"])))
    return rep.table(records, empty="no simulated rows", single=(), drop_empty=False)


def _measured_cells(measured, r) -> dict:
    """Measured loading time of a simulated row's point in the same run, its RAND ratio and where it ran."""
    if measured.empty or r.get("p_las"):
        return {}
    scope = measured[measured["run_id"] == r["run_id"]]
    hit = _find(scope, r["impl"], r["p_topology"], r["p_buffer"])
    if hit is None:
        return {}
    return {"Measured ms/batch": hit["loading_time"], "Repeats p10-p90": _spread(hit),
            "Launch floor ms/batch": _number(hit["p_launch_floor_ms"]), "Overhead-bound": _bound(hit),
            "RAND / this (measured)": _over(_find(scope, "random", r["p_topology"], r["p_buffer"]), hit),
            "Measured on": hit["p_measured_on"],
            "Gather": hit["p_measured_gather"] if hit["p_measured_on"] == "cuda" else "split"}


def _applies(pv, impl, topology, buffer, las) -> bool:
    """Whether a transcribed paper value speaks of this point."""
    prm = pv.params
    return (pv.impl == impl and bool(prm.get("las", False)) == las
            and prm.get("topology", topology) == topology and topology in prm.get("topologies", (topology,))
            and prm.get("buffer", buffer) == buffer and buffer in prm.get("buffers", (buffer,)))


def paper_text(exp, impl, topology, buffer, las) -> str:
    """What the paper printed about one point, in short."""
    parts = []
    for pv in exp.paper_values:
        if not _applies(pv, impl, topology, buffer, las):
            continue
        if pv.metric.endswith("_fraction"):
            parts.append(f"{pv.metric.split('_')[0]} {pv.value:.0%}")
        elif pv.metric in ("local_gain", "host_drop"):
            sign, what = ("+", "local") if pv.metric == "local_gain" else ("-", "host")
            parts.append(f"{what} {sign}{pv.value:.0%} vs {policy_label(pv.params['baseline'])}")
        elif pv.metric == "speedup_vs_random":
            upper = pv.params.get("upper")
            parts.append(f"RAND / this {pv.value:g}-{upper:g}x" if upper else f"RAND / this > {pv.value:g}x")
        elif pv.metric == "loading_ratio":
            parts.append(f"loading {pv.value:.0%} of epoch")
    return ", ".join(parts)


# --- notes and headline --------------------------------------------------------------------------------

OVERHEAD_BOUND = 0.2      # rows without a launch floor: modeled transfer under this share of the measured time


def overhead_bound_text(mine) -> str | None:
    """Which of a run's measured points are overhead-bound, or None when transfers dominate."""
    if mine.empty or mine["loading_time"].min() <= 0:
        return None
    floors = mine["p_launch_floor_ms"].dropna() if "p_launch_floor_ms" in mine else []
    if len(floors):
        bound = [_bound(r) for _, r in mine.iterrows()]
        if not any(bound):
            return None
        factor = mine["p_overhead_factor"].dropna().max() if "p_overhead_factor" in mine else 2.0
        return (f"{sum(bound)} of {len(bound)} measured points overhead-bound (within {factor:g}x of the "
                f"launch floor, {floors.min():.3g}-{floors.max():.3g} ms per batch in the same launch, or a modelled "
                "transfer below it): their ratios reflect launches, not the placement")
    modeled = mine["p_modeled_ms"].dropna()
    if modeled.empty or modeled.max() >= OVERHEAD_BOUND * mine["loading_time"].min():
        return None
    return (f"overhead-bound: the modeled transfer is {modeled.min() * 1e3:.3g}-{modeled.max() * 1e3:.3g} us "
            f"per batch against measured {mine['loading_time'].min():.3g}-{mine['loading_time'].max():.3g} ms, "
            "so these ratios reflect per-step fixed costs and the slowest rank, not the placement "
            "(measured before the launch floor was: one batch of 10-20 us of transfer per timed step)")


def _ratios(frame, impl: str = "clique_opt", las: bool = False, topologies=None, buffers=None) -> list[tuple]:
    """(RAND / impl loading time, topology, buffer) over every configuration of ``frame``."""
    out = []
    for (topology, buffer), _ in frame.groupby(["p_topology", "p_buffer"]):
        if (topologies and topology not in topologies) or (buffers and buffer not in buffers):
            continue
        ratio = _over(_find(frame, "random", topology, buffer), _find(frame, impl, topology, buffer, las))
        if ratio is not None:
            out.append((ratio, topology, buffer))
    return out


def _span(ratios) -> str:
    lo, hi = min(ratios), max(ratios)
    return f"{lo[0]:.2f}x ({lo[1]} {lo[2]})" + (f" to {hi[0]:.2f}x ({hi[1]} {hi[2]})" if hi != lo else "")


def measured_speedups(measured, run_id=None, impl: str = "clique_opt") -> str | None:
    """'RAND / impl' measured loading time over every measured configuration (of one run, where
    named) whose two points are both transfer-bound; the overhead-bound ones are counted apart."""
    mine = measured[measured["run_id"] == run_id] if run_id is not None else measured
    if mine.empty:
        return None
    bound = {(r["p_topology"], r["p_buffer"]) for _, r in mine.iterrows() if _bound(r) and r["impl"] in (impl, "random")}
    ratios = _ratios(mine, impl)
    if not ratios:
        return None
    free = [r for r in ratios if (r[1], r[2]) not in bound]
    on = "GPU" if set(mine["p_measured_on"]) == {"cuda"} else "CPU ranks (toy scale, not GPU)"
    if on == "GPU":
        gathers = sorted(set(mine["p_measured_gather"])) if "p_measured_gather" in mine else ["split"]
        on += f", {'/'.join(gathers)} gather"
    text = f"measured on {on}: " + (f"{policy_label(impl, False)} loads {_span(free)} faster than RAND"
                                    if free else "no configuration is transfer-bound")
    if len(free) < len(ratios):
        text += f" ({len(ratios) - len(free)} of {len(ratios)} configurations left out as overhead-bound)"
    text += _spread_text(mine, impl)
    note = overhead_bound_text(mine)
    return text + (f"; {note}" if note else "")


def _spread_text(mine, impl: str) -> str:
    """How many of RAND / impl's measured ratios lie outside the repeats' spread (their p10-p90
    ranges apart), where the rows carry repeats."""
    if "p_measured_repeats" not in mine or mine["p_measured_repeats"].isna().all():
        return ""                        # one pass (older runs): their p10-p90 spans batches, not repeats
    apart, total = 0, 0
    for (topology, buffer), _ in mine.groupby(["p_topology", "p_buffer"]):
        a, b = _find(mine, impl, topology, buffer), _find(mine, "random", topology, buffer)
        if a is None or b is None or not _number(a["p_measured_repeats"]) or not _number(b["p_measured_repeats"]):
            continue
        total += 1
        apart += a["p90"] < b["p10"] or b["p90"] < a["p10"]
    return f"; {apart} of {total} with p10-p90 ranges apart over the repeats" if total else ""


def compare_paper(exp, frame, run_id=None) -> list[str]:
    """One line per transcribed paper value, with what the rows show for the same thing."""
    lines = []
    if run_id is not None and not frame.empty:
        frame = frame[frame["run_id"] == run_id]
    for pv in exp.paper_values:
        prm = pv.params
        mine = "not simulated in the runs shown"
        if pv.metric in ("local_fraction", "peer_fraction", "host_fraction"):
            hit = _find(frame, pv.impl, prm.get("topology"), prm.get("buffer"), prm.get("las", False)) \
                if not frame.empty else None
            if hit is not None and pv.metric in hit:
                mine = f"{hit[pv.metric]:.0%}"
            shown = f"{pv.value:.0%}"
        elif pv.metric in ("local_gain", "host_drop"):
            base_impl = prm["baseline"]
            ours = _find(frame, pv.impl, prm.get("topology"), prm.get("buffer")) if not frame.empty else None
            base = _find(frame, base_impl, prm.get("topology"), prm.get("buffer")) if not frame.empty else None
            if ours is not None and base is not None:
                if pv.metric == "local_gain":
                    value = ours["local_fraction"] / max(base["local_fraction"], 1e-12) - 1
                else:
                    value = 1 - ours["host_fraction"] / max(base["host_fraction"], 1e-12)
                mine = f"{value:+.0%}" if pv.metric == "local_gain" else f"{-value:+.0%}"
            shown = f"{pv.value:+.0%}" if pv.metric == "local_gain" else f"{-pv.value:+.0%}"
        elif pv.metric == "speedup_vs_random":
            shown = f"{pv.value:g}x"
            ratios = _ratios(frame, pv.impl, prm.get("las", False), prm.get("topologies"), prm.get("buffers")) \
                if not frame.empty else []
            if ratios:
                lo, hi = min(ratios), max(ratios)
                mine = f"{lo[0]:.1f}x ({lo[1]} {lo[2]}) to {hi[0]:.1f}x ({hi[1]} {hi[2]})"
        else:
            shown = f"{pv.value:g} {pv.unit}".strip()
            mine = "needs measured epoch times (a GPU run): the simulator models loading only"
        lines.append(f"{pv.source}: {policy_label(pv.impl, prm.get('las', False))} "
                     f"{prm.get('topology', '')} {prm.get('buffer', '')} {pv.metric} = {shown}"
                     f"{' (' + pv.note + ')' if pv.note else ''}; here: {mine}")
    return lines


def check_claims(exp, frame, run_id=None) -> list[str]:
    """'Our < METIS'-style orderings the paper states without numbers, over every configuration
    (of one run, where named)."""
    lines = []
    mine = frame[frame["run_id"] == run_id] if run_id is not None else frame
    for source, better, worse in exp.claims:
        held, total, misses = 0, 0, []
        for (topology, buffer), _ in mine.groupby(["p_topology", "p_buffer"]):
            a, b = _find(mine, better, topology, buffer), _find(mine, worse, topology, buffer)
            if a is None or b is None:
                continue
            total += 1
            if a["loading_time"] < b["loading_time"]:
                held += 1
            else:
                misses.append(f"{topology} {buffer}")
        if total == 0:
            continue                     # one of the two policies did not run (or was skipped) here
        lines.append(f"{source}: {policy_label(better, False)} loads faster than {policy_label(worse, False)}; "
                     f"here in {held} of {total} simulated configurations"
                     + (f" (not on {', '.join(misses)})" if misses else ""))
    return lines


def _size_text(frame) -> str:
    """'stand-in x0.5, paper batches' of one machine kind's shown rows."""
    scales = ", ".join(f"{s:g}" for s in sorted(set(frame["p_scale"].dropna()))) if "p_scale" in frame else "?"
    paper = "p_layer_nodes" in frame and set(frame["p_layer_nodes"].dropna()) == {PAPER_LAYER_NODES}
    return f"stand-in x{scales}, {'paper' if paper else 'scaled'} batches"


def _notes_and_headline(exp, rep, frame, measured, shown) -> str:
    """The paper comparisons of each shown machine kind as notes; the headline: what the kind with
    the newest GPU measurement (else the newest run) shows, beside the paper's ratio where printed."""
    if frame.empty:
        rep.notes += compare_paper(exp, frame)
        return ""
    newest = {kind: max(group["run_id"]) for kind, group in frame.groupby("kind")}
    gpu = set(measured[measured["p_measured_on"] == "cuda"]["kind"]) if not measured.empty else set()
    lead = max(newest, key=lambda kind: (kind in gpu, newest[kind]))
    headline = ""
    for kind in sorted(newest):
        mine = frame[frame["kind"] == kind]
        rep.notes += [f"[{kind}] {line}" for line in compare_paper(exp, mine) + check_claims(exp, mine)]
        meas = measured[measured["kind"] == kind] if not measured.empty else measured
        line = measured_speedups(meas) if not meas.empty else None
        if line:
            rep.notes.append(f"[{kind}] {line}")
        if kind == lead:
            modeled = _ratios(mine)
            parts = ([line] if line and kind in gpu else []) + \
                ([f"modelled (Eq. 3): RAND / Our {_span(modeled)}"] if modeled else [])
            paper = [pv for pv in exp.paper_values if pv.metric == "speedup_vs_random"]
            parts += [f"{PAPER_LABEL}: {pv.note}" for pv in paper]
            headline = f"[{kind}, {_size_text(mine)}] " + "; ".join(parts)
    if shown.smoke:
        rep.notes.append(SMOKE_NOTE)
    if trend := scale_trend_text(exp, _metric_frame(rep.rows)):
        rep.notes.append(f"{trend} (every committed run with the paper's batch sizes; see the history)")
    return headline


def scale_trend_text(exp, frame) -> str | None:
    """RAND / Our (modeled) at the smallest buffer per stand-in scale, over the runs that kept the
    paper's batch sizes (the latest run per scale): how the gain moves toward the real graph's size."""
    if frame.empty or "p_scale" not in frame or "p_layer_nodes" not in frame:
        return None
    paper = frame[frame["p_layer_nodes"] == PAPER_LAYER_NODES]
    if paper.empty:
        return None
    buffer = min(set(paper["p_buffer"]), key=exp.buffer_fraction)
    cells: dict[float, dict[str, float]] = {}
    for scale in sorted(set(paper["p_scale"].dropna())):
        at = paper[(paper["p_scale"] == scale) & (paper["p_buffer"] == buffer)]
        best = None                       # the run with the most topologies, then the latest
        for run_id in sorted(set(at["run_id"])):
            mine = at[at["run_id"] == run_id]
            gains = {}
            for topology in [t for t in exp.topologies if t in set(mine["p_topology"])]:
                rand = _find(mine, "random", topology, buffer)
                ours = _find(mine, "clique_opt", topology, buffer)
                if rand is not None and ours is not None and ours["loading_time"]:
                    gains[topology] = rand["loading_time"] / ours["loading_time"]
            if gains and (best is None or len(gains) >= len(best)):
                best = gains
        if best:
            cells[scale] = best
    if len(cells) < 2:
        return None
    parts = [f"{scale:g}: " + ", ".join(f"{t} {g:.2f}x" for t, g in gains.items()) for scale, gains in cells.items()]
    return (f"RAND / Our (modeled) at {buffer} with the paper's batch sizes, by stand-in scale (1 = the real "
            f"graph's size): " + "; ".join(parts))


# --- caption and figure ---------------------------------------------------------------------------------

def _caption(exp, rep, shown, frame, measured) -> str:
    sizes = "; ".join(f"{kind}: {_batch_text(group)}" for kind, group in frame.groupby("kind")) \
        if not frame.empty else "none"
    parts = [f"{exp.figure_caption} Bars: loading time per mini-batch modelled with Eq. 3 (not timed): every GPU "
             f"replays sampled mini-batches of ICS'22's layer-wise sampler (3 layers; paper: {PAPER_LAYER_NODES} "
             f"nodes per layer, batch {PAPER_BATCH.get(exp.dataset, 512)}; here {sizes}) on a {exp.dataset} "
             f"stand-in; " + SIMULATION_CAPTION]
    if not measured.empty:
        gathers = sorted(set(measured[measured["p_measured_on"] == "cuda"]["p_measured_gather"])) or ["split"]
        parts.append(MEASURED_CAPTION.format(gathers="/".join(gathers)))
        parts.append(measured_regime_text(measured))
        if text := naive_random_text(measured, frame):
            parts.append(text)
    if any(pv.metric == "speedup_vs_random" for pv in exp.paper_values):
        parts.append(f"Dashed on Our's bars: where the paper's RAND / Our ratio would put them ({PAPER_LABEL}).")
    parts.append(f"Shown: the newest run per machine kind at the paper's settings (one row of panels per kind); "
                 f"every run is in {exp.artifact}.history.md." + (f" Note: {SMOKE_NOTE}." if shown.smoke else ""))
    return " ".join(parts) + f" Paper: {PAPER_HARDWARE}. " + shown.caption_hardware(rep.runs)


def measured_regime_text(measured) -> str:
    """The measured points' regime: warm or cold, rows per timed launch, repeats, the floor."""
    regions = measured["p_batches_per_region"].dropna()
    if regions.empty:
        return ("Measured regime (runs before issue 34's fix): warm (untimed warm-up batches, then one L2 flush), one "
                "pass over the batches, one batch per timed launch, no launch floor: error bars and the "
                "overhead-bound test need a newer run.")
    rows = measured["p_rows_per_region"].dropna()
    repeats = measured["p_measured_repeats"].dropna()
    floors = measured["p_launch_floor_ms"].dropna()
    return (f"Measured regime: warm (3 untimed warm-up launches: kernels compiled, host pages locked), the L2 flushed "
            f"before every timed pass; {_range(regions, '{:.0f}')} consecutive replayed batches per timed launch "
            f"({_range(rows, '{:,.0f}')} rows, as many as one of the paper's mini-batches of batch + 3 x "
            f"{PAPER_LAYER_NODES} nodes reads), time per batch = launch time / batches; "
            f"{_range(repeats, '{:.0f}')} passes, the median of the slowest GPU shown, whiskers p10-p90 over the passes; "
            f"launch floor (the same launches reading one row per tier, in the same launch) "
            f"{_range(floors, '{:.3g}')} ms per batch: a point within 2x of it, or modelled below it, is "
            "overhead-bound (hollow diamond) and left out of the measured ratios.")


def naive_random_text(measured, frame) -> str | None:
    """What the measured NAIVE and RAND points show where they read the same tiers in the same
    shares: the difference, the repeats' spread, the host rows' pages, the ranks' spread."""
    pairs = []
    group = "kind" if "kind" in measured else "run_id"          # the shown cells of one machine kind
    for (key, topology, buffer), _ in measured.groupby([group, "p_topology", "p_buffer"]):
        mine = measured[measured[group] == key]
        a, b = _find(mine, "naive", topology, buffer), _find(mine, "random", topology, buffer)
        if a is not None and b is not None:
            pairs.append((a, b))
    if not pairs:
        return None
    diffs = [abs(a["loading_time"] / b["loading_time"] - 1) for a, b in pairs]
    shares = []
    for a, _ in pairs:
        mine = frame[frame[group] == a[group]] if not frame.empty and group in frame else frame
        x, y = (_find(mine, impl, a["p_topology"], a["p_buffer"]) if not mine.empty else None
                for impl in ("naive", "random"))
        if x is not None and y is not None:
            shares.append(max(abs(x.get(m, 0) - y.get(m, 0)) for m in ("local_fraction", "peer_fraction",
                                                                       "host_fraction")))
    repeated = [(a, b) for a, b in pairs if _number(a["p_measured_repeats"]) and _number(b["p_measured_repeats"])]
    apart = [a for a, b in repeated if a["p90"] < b["p10"] or b["p90"] < a["p10"]]
    pages = [(a["p_host_pages_4k_per_batch"], b["p_host_pages_4k_per_batch"], a["p_host_regions_2m_per_batch"],
              b["p_host_regions_2m_per_batch"]) for a, b in pairs
             if _number(a["p_host_pages_4k_per_batch"]) and _number(b["p_host_pages_4k_per_batch"])
             and _number(a["p_host_regions_2m_per_batch"]) and _number(b["p_host_regions_2m_per_batch"])]
    same = f"local/peer/host shares within {100 * max(shares):.1f} points of each other" if shares else \
        "the same tiers"
    text = (f"NAIVE vs RAND: the simulator gives both {same}, and they measure "
            f"{100 * min(diffs):.0f}-{100 * max(diffs):.0f}% apart over {len(pairs)} configurations")
    if pages:
        small = [a / b for a, b, _, _ in pages]
        large = [c / d for _, _, c, d in pages]
        text += (f"; NAIVE's host rows (contiguous id ranges around its buffered blocks) touch {_range(small, '{:.2f}')} "
                 f"times RAND's 4 KiB pages and {_range(large, '{:.2f}')} times its 2 MiB regions per batch")
    if repeated:
        text += (f"; {len(apart)} of {len(repeated)} differences lie outside the repeats' p10-p90 ranges, the rest "
                 "is noise between passes")
    else:
        text += ("; in these runs each point is one pass of one-batch launches whose per-GPU means differ up to 2-3x "
                 "between ranks reading the same amounts, also where no row comes from the host (0.1-0.4 ms against "
                 "a modelled 0.016 ms): the split gather's host-side launches inside each timed window and the "
                 "slowest rank, not the placement")
    return text + "."


def _range(values, fmt: str) -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


def _batch_text(frame) -> str:
    pairs = sorted({(int(b), int(n)) for b, n in zip(frame.get("p_batch_size", []), frame.get("p_layer_nodes", []))
                    if b == b and n == n})
    return f"{_size_text(frame)}: " + ", ".join(f"batch {b} x {n} nodes per layer" for b, n in pairs)


def _figure(exp, frame, measured, timeouts, not_run):
    from matplotlib.patches import Patch

    kinds = {t[0] for t in timeouts} | (set(frame["kind"]) if not frame.empty else set())
    gpu = set(measured[measured["p_measured_on"] == "cuda"]["kind"]) if not measured.empty else set()
    kinds = sorted(kinds, key=lambda kind: (kind not in gpu, kind))         # GPU-measured kinds on top
    present = (set(frame["p_topology"]) if not frame.empty else set()) | {t[1] for t in timeouts}
    tops = [t for t in exp.topologies if t in present]
    ncols, nrows = len(tops), len(kinds)
    width, height = (10.5 if ncols >= 4 else max(5.5, 1.2 + 2.4 * ncols)), min(6.0, 1.6 + 2.2 * nrows)
    fig, axes = figure((width, height), ncols=ncols, nrows=nrows, squeeze=False)
    handles: dict = {}
    for i, kind in enumerate(kinds):
        mine = frame[frame["kind"] == kind] if not frame.empty else frame
        meas = measured[measured["kind"] == kind] if not measured.empty else measured
        values, drawn = [], []
        for j, topology in enumerate(tops):
            values += _panel(exp, axes[i][j], mine, meas, [t[2:] for t in timeouts if t[:2] == (kind, topology)],
                             kind, topology, handles)
            axes[i][j].set_title(topology, fontsize=10)
            if axes[i][j].axison:
                drawn.append(axes[i][j])
        _share_value_axis(drawn, values)
        if drawn:
            scale = _size_text(mine).split(",")[0] if not mine.empty else ""
            drawn[0].set_ylabel(f"{kind} run, {scale}\nloading (ms / batch)", fontsize=9)
    for policy, reason in not_run:
        handles[f"{policy} not run"] = Patch(facecolor="none", edgecolor="none", label=f"{policy}: not run ({reason})")
    keys = sorted(handles, key=_legend_rank)
    bars_key = [handles[k] for k in keys if _legend_rank(k)[0] <= 1]
    lines = [line for line in (bars_key, [handles[k] for k in keys if _legend_rank(k)[0] > 1]) if line]
    for n, line in enumerate(lines):             # the bars' key on one line, the marks' on the next
        fig.legend(line, [h.get_label() for h in line], loc="lower center", ncol=len(line), fontsize=9,
                   frameon=False, bbox_to_anchor=(0.5, 0.3 * (len(lines) - 1 - n) / height))
    fig.suptitle(f"ICS'22 {exp.artifact.replace('fig', 'Fig. ')}: feature loading on {exp.dataset} (stand-in)\n"
                 "bars modelled (Eq. 3)" + ("; diamonds measured" if not measured.empty else ""), fontsize=11)
    fig.tight_layout(rect=(0, (0.1 + 0.3 * len(lines)) / height, 1, 1 - 0.3 / height))
    return fig


def _share_value_axis(axes, values) -> None:
    """One value axis for a row of panels (log where the values span over 100x), labelled on its
    first panel only."""
    positive = [v for v in values if v > 0]
    if not axes or not positive:
        return
    log = max(positive) / min(positive) > 100
    for n, ax in enumerate(axes):
        if log:
            ax.set_yscale("log")
            ax.set_ylim(min(positive) / 1.5, max(positive) * 1.5)
        else:
            ax.set_ylim(0, max(positive) * 1.08)
        if n:
            ax.tick_params(labelleft=False)


def _panel(exp, ax, frame, measured, timeouts, kind, topology, handles) -> list[float]:
    """One configuration's bars (modelled), diamonds (measured), timeout marks and the paper's
    ratio; returns the values drawn."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    sub = frame[frame["p_topology"] == topology] if not frame.empty else frame
    labelled = {(r["p_buffer"], policy_label(r["impl"], bool(r["p_las"]))): r for _, r in sub.iterrows()}
    out = {(buf, pol) for buf, pol in timeouts}
    if not labelled and not out:
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"no {kind} run\nof {topology}", ha="center", va="center", transform=ax.transAxes, fontsize=9)
        return []
    buffers = sorted({buf for buf, _ in labelled} | {buf for buf, _ in out}, key=exp.buffer_fraction)
    policies = sorted({pol for _, pol in labelled} | {pol for _, pol in out}, key=_policy_rank)
    width = 0.84 / len(policies)
    values = []
    for b, buffer in enumerate(buffers):
        for p, policy in enumerate(policies):
            x = b - 0.42 + width * (p + 0.5)
            colour = policy_colour(policy, PALETTE["another policy"])
            row = labelled.get((buffer, policy))
            if row is not None:
                ax.bar(x, row["loading_time"], width, color=colour, edgecolor="white", linewidth=0.5)
                handles.setdefault(policy, Patch(facecolor=colour, label=policy))
                values.append(row["loading_time"])
                hit = _find(measured, row["impl"], topology, buffer) if not measured.empty and not row["p_las"] \
                    else None
                if hit is not None:
                    values += _measured_mark(ax, x, width, hit, handles)
            elif (buffer, policy) in out:
                ax.scatter([x], [0.04], marker="x", s=40, color=colour, transform=ax.get_xaxis_transform(),
                           clip_on=False)
                handles.setdefault(f"{policy} timed out", Line2D([], [], marker="x", linestyle="none", color=colour,
                                                                 label=f"{policy}: timed out"))
        values += _paper_ratio(exp, ax, labelled, topology, buffer, policies, width, b, handles)
    ax.set_xticks(range(len(buffers)), buffers)
    ax.set_xlim(-0.5, len(buffers) - 0.5)
    ax.grid(True, axis="y", alpha=0.3)
    return values


def _measured_mark(ax, x, width, hit, handles) -> list[float]:
    """One measured point on its bar: a diamond (filled: GPU, transfer-bound; hollow: overhead-bound or
    CPU ranks), whiskers over the repeats' p10-p90, a dash at the launch floor; the values drawn."""
    from matplotlib.lines import Line2D

    on_gpu = hit["p_measured_on"] == "cuda"
    bound = _bound(hit)
    name = ("measured on GPU" if on_gpu else "measured on CPU ranks") + (", overhead-bound" if bound else "")
    filled = on_gpu and not bound
    style = {"marker": "D", "markersize": 6, "linestyle": "none", "color": "black",
             "markerfacecolor": "black" if filled else "white", "markeredgecolor": "black"}
    y = hit["loading_time"]
    lo, hi = _number(hit.get("p10")), _number(hit.get("p90"))
    drawn = [y]
    if lo is not None and hi is not None and _number(hit.get("p_measured_repeats")):
        ax.errorbar([x], [y], yerr=[[max(0.0, y - lo)], [max(0.0, hi - y)]], fmt="none", ecolor="black",
                    elinewidth=1, capsize=2)
        drawn += [lo, hi]
        name += " (p10-p90)"
    ax.plot([x], [y], **style)
    handles.setdefault(name, Line2D([], [], **style, label=name))
    floor = _number(hit.get("p_launch_floor_ms"))
    if floor:
        dash = {"color": PALETTE["launch floor"], "linewidth": 1.5}
        ax.plot([x - width / 2, x + width / 2], [floor, floor], **dash)
        handles.setdefault("launch floor", Line2D([], [], **dash, label="measured launch floor"))
        drawn.append(floor)
    return drawn


def _paper_ratio(exp, ax, labelled, topology, buffer, policies, width, b, handles) -> list[float]:
    """Where the paper's printed RAND / Our ratio puts Our's bar, drawn over it (dashed)."""
    from matplotlib.lines import Line2D

    rand = labelled.get((buffer, "RAND"))
    if rand is None or "Our" not in policies:
        return []
    drawn = []
    for pv in exp.paper_values:
        if pv.metric != "speedup_vs_random" or not _applies(pv, "clique_opt", topology, buffer, False):
            continue
        x = b - 0.42 + width * (policies.index("Our") + 0.5)
        left, right = x - width / 2, x + width / 2
        low, high = rand["loading_time"] / pv.params.get("upper", pv.value), rand["loading_time"] / pv.value
        style = {**PAPER_STYLE, "color": "black", "linewidth": 1.2}
        if low < high:
            ax.plot([left, right, right, left, left], [low, low, high, high, low], **style)
            label = f"{PAPER_LABEL}: Our at RAND / {pv.value:g}-{pv.params['upper']:g}"
        else:
            ax.plot([left, right], [high, high], **style)
            label = f"{PAPER_LABEL}: Our below RAND / {pv.value:g}"
        handles.setdefault(PAPER_LABEL, Line2D([], [], **style, label=label))
        drawn += [low, high]
    return drawn
