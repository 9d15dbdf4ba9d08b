"""ICS'22 Table 2: data preprocessing time of PaGraph, METIS and Algorithm 1 (four parts).

"The execution time of our algorithm include the execution time of Algorithm 1 and the time for
computing an estimation of sampling probability p" (Sec. 5.2): here the L-hop (L = 3) training-node
reach by sparse matrix-vector products plus Algorithm 1 on '4GPU' (alpha 0) with N/4 per GPU.
METIS: pymetis k-way into four parts on the (symmetric) CSR as stored. PaGraph: its quadratic
training-node partitioning into four parts, stopped at a time cap (a timeout row with the
projected total; the paper's PaGraph ran for 382 to 4753 s and never finished papers100M).
"""

from __future__ import annotations

import re

from harness import registry
from harness.argtypes import positive_float, positive_int, str_list
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, figure, finish, group
from harness.timing import measure
from harness.worlds import Worlds

from . import PAPER_HARDWARE
from .common import load_graph, policy_options, time_cap
from .paper import NUM_LAYERS
from .shown import SMOKE_NOTE, shown_rows

_TABLE2 = {"pagraph": {"reddit": 382, "yelp": 1976, "products": 4753},
           "metis": {"reddit": 17, "yelp": 15, "products": 83},
           "clique_opt": {"reddit": 0.49, "yelp": 0.76, "products": 3.6}}
PAPER_SOURCE = "paper (8x V100 workstation)"


@register_experiment
class Table2(Experiment):
    title = "ICS'22 Table 2: data preprocessing time (s) of the partitioning methods"
    interface = "placement"
    impls = ("pagraph", "metis", "clique_opt")
    metric, unit, better = "preprocess_time", "s", "lower"
    worlds = Worlds(fixed=(1,))
    warm_and_cold = ("Partitioning time on the CPU after one untimed warm-up run (compilation); the same graph "
                     "each repeat, far larger than the CPU's caches.")
    paper_values = tuple(PaperValue("Table 2", impl, {"dataset": ds}, "preprocess_time", float(v), "s")
                         for impl, row in _TABLE2.items() for ds, v in row.items())
    method_params = ("parts",)      # a run at the paper's settings keeps these (experiments/placement/shown.py)
    differs_from_paper = ("Partitioning times on a 2-core CPU of stand-in graphs (at most the real graphs' sizes), "
                          "with pymetis for METIS and a re-implementation of PaGraph's partitioning stopped at a time "
                          "cap, not the paper's 2x Xeon Gold 6248 with the original codes.")
    parameters = {
        "datasets": Param(("reddit", "yelp", "products"), str_list, "datasets (stand-ins unless real at scale 1)"),
        "parts": Param(4, positive_int, "GPUs / partitions (paper: four)"),
        "pagraph_cap_s": Param(300.0, positive_float, "PaGraph time cap (s); a timeout row beyond it"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        return 0.01 if cfg.quick else 0.1

    def points(self, cfg):
        scale = self.scale(cfg)
        for dataset in self.param(cfg, "datasets"):
            for impl in self.impls:
                yield Point(impl, {"dataset": dataset, "scale": scale, "parts": self.param(cfg, "parts")})

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        from impls.placement.pagraph import PlacementTimeout

        cfg = ctx.cfg
        prm = point.params
        graph = load_graph(ctx, prm["dataset"], prm["scale"])
        extra = {"nodes": graph.num_nodes, "edges": int(len(graph.indices)), "standin": graph.is_standin}
        spec = registry.get_impl(self.interface, point.impl)
        policy = spec.factory(**policy_options(point.impl, time_cap_s=time_cap(self, cfg)))
        step = policy.preprocessing(graph.indptr, graph.indices, graph.train_idx, prm["parts"], NUM_LAYERS,
                                    seed=cfg.seed, symmetric=graph.symmetric)
        if spec.has("time_capped"):       # one run under the cap, timed by the partitioner itself
            try:
                result = step()
            except PlacementTimeout as exc:
                raise SkipPoint(f"timeout: {exc}") from None
            return [Measurement("preprocess_time", "s", value=result.elapsed_s, extra={**extra, "repeats": 1})]
        # a partitioner takes seconds, ICS'22's reach estimate and Algorithm 1 a fraction of one
        repeats = cfg.repeats_or(3, 1) if spec.has("partitioning") else cfg.repeats_or(5, 3)
        stats = measure(step, warmup=cfg.warmup_or(1, 1), repeats=repeats)
        return [Measurement("preprocess_time", "s", stats, extra={**extra, "repeats": stats.repeats})]

    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        shown = shown_rows(rep, ["impl", "p_dataset"])
        datasets = [ds for ds in ("reddit", "yelp", "products") if ds in set(rep.rows["p_dataset"])] + \
            sorted(set(rep.rows["p_dataset"]) - {"reddit", "yelp", "products"})
        table = rep.table(self._records(shown.rows, shown.kind, "Machine", datasets), single=(), drop_empty=False)
        history = rep.table(self._records(rep.rows, rep.label, "Run", datasets), single=(), drop_empty=False)
        ok = shown.rows[shown.rows["status"] == "ok"]
        mine = {(shown.kind(r.run_id), r.impl, r.p_dataset): r.value for r in ok.itertuples(index=False)}
        (our,) = registry.names(self.interface, traits=("ics22",))
        speedups = []
        for kind, impl, ds in sorted((k for k in mine if k[1] != our), key=lambda k: datasets.index(k[2])):
            if (kind, our, ds) in mine:
                ours = mine[(kind, impl, ds)] / mine[(kind, our, ds)]
                paper = _TABLE2[impl][ds] / _TABLE2[our][ds] if ds in _TABLE2[impl] else None
                speedups.append((kind, impl, ds, ours, paper))
                rep.notes.append(f"{kind} {ds}: Our is {ours:.0f}x faster than {method_label(impl)}"
                                 + (f" (paper {paper:.0f}x)" if paper else ""))
        if shown.smoke:
            rep.notes.append(SMOKE_NOTE)
        scales = ", ".join(f"{s:g}" for s in sorted(set(shown.rows["p_scale"])))
        headline = ""
        if speedups:
            kind = speedups[0][0]
            headline = f"[{kind}, stand-ins at scale {scales}] Our is " + ", ".join(
                f"{ours:.0f}x faster than {method_label(impl)} on {ds}" + (f" (paper {paper:.0f}x)" if paper else "")
                for k, impl, ds, ours, paper in speedups if k == kind)
            time_capped = registry.names(self.interface, traits=("time_capped",))
            capped = [(r.impl, ds, _cell([r])) for r in shown.rows.itertuples(index=False)
                      if shown.kind(r.run_id) == kind and r.impl in time_capped and r.status != "ok"]
            headline += "".join(f"; {method_label(impl, 'paper')} {text} s on {ds} "
                                f"(paper {_fmt(_TABLE2[impl].get(ds))} s)" for impl, ds, text in capped)
        sizes = "; ".join(f"{ds}: {int(n):,} nodes, {int(e):,} stored edges" for ds, n, e in ok.drop_duplicates(
            "p_dataset")[["p_dataset", "p_nodes", "p_edges"]].itertuples(index=False)) if "p_nodes" in ok else ""
        caption = (
            f"Seconds to divide each graph into {int(rep.rows['p_parts'].iloc[0])} parts (median of repeats). 'Our' = "
            "ICS'22 L-hop reach estimate of p (3 sparse matrix-vector products) + Algorithm 1; METIS = pymetis k-way "
            "(given the CSR in its index type, converted before the timing); PaGraph = its O(N^2) training-node "
            "partitioning under a time cap ('>' marks a timeout, with the projected total: hatched bar at the cap, "
            "hollow marker at the projection); '-': not run at the scale shown. Graphs: stand-ins at scale "
            f"{scales} of the paper's ({sizes}). Shown: the newest run per machine kind at the paper's settings (per "
            "cell, from runs of one scale); every run is in table2.history.md."
            + (f" Note: {SMOKE_NOTE}." if shown.smoke else "") + f" Paper: {PAPER_HARDWARE}. "
            + shown.caption_hardware(rep.runs))
        fig = self._figure(table, datasets)
        return rep.artifact(self.title, caption, table, fig, headline=headline, skips=shown.rows, history=history)

    def _records(self, rows, label, column: str, datasets) -> list[dict]:
        """The paper's row and one row per run (or machine kind) of each method, in the paper's layout."""
        cells = group(rows.itertuples(index=False), lambda r: (label(r.run_id), r.impl, r.p_dataset))
        sources = list(dict.fromkeys(label(run_id) for run_id in sorted(set(rows["run_id"]))))
        records = []
        for impl in self.impls:
            records.append({"Method": method_label(impl, "paper"), column: PAPER_SOURCE,
                            **{ds: _fmt(_TABLE2[impl].get(ds)) for ds in datasets}})
            records += [{"Method": method_label(impl), column: source,
                         **{ds: _fmt(_cell(cells.get((source, impl, ds), []))) for ds in datasets}}
                        for source in sources]
        return records

    def _figure(self, table, datasets):
        """Grouped bars on a log axis: per dataset, each method's paper time (light, dashed) beside ours
        (solid); a timed-out cell as a hatched bar up to its cap and a hollow marker at its projection."""
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        sources = list(dict.fromkeys(table.iloc[:, 1]))
        slots = [(impl, source) for impl in self.impls for source in sources]
        width = 0.84 / len(slots)
        fig, ax = figure((9.5, 4.2))
        handles, missing = {}, {}
        for d, ds in enumerate(datasets):
            for k, (impl, source) in enumerate(slots):
                method = method_label(impl, "paper") if source == PAPER_SOURCE else method_label(impl)
                text = table[(table["Method"] == method) & (table.iloc[:, 1] == source)][ds]
                text = text.iloc[0] if not text.empty else None
                value, projected = _number(text), _projected(text)
                if value is None:
                    missing.setdefault((impl, source), []).append(ds)
                    continue
                x, colour = d - 0.42 + width * (k + 0.5), registry.get_impl(self.interface, impl).plot_colour()
                paper, capped = source == PAPER_SOURCE, isinstance(text, str) and text.startswith(">")
                ax.bar(x, value, width, color="white" if capped else colour, alpha=0.45 if paper else 1.0,
                       edgecolor=colour, linestyle="--" if paper else "-", hatch="//" if capped else None)
                handles.setdefault(impl, Patch(facecolor=colour, label=method_label(impl)))
                if capped:
                    handles.setdefault("capped", Patch(facecolor="white", edgecolor="black", hatch="//",
                                                       label="timed out: bar at the time cap"))
                if projected:
                    ax.plot([x], [projected], marker="o", markerfacecolor="white", markeredgecolor=colour,
                            linestyle="none")
                    handles.setdefault("projected", Line2D([], [], marker="o", markerfacecolor="white",
                                                           markeredgecolor="black", linestyle="none",
                                                           label="projected total (extrapolated)"))
        handles["paper"] = Patch(facecolor="grey", alpha=0.45, edgecolor="grey", linestyle="--", label=PAPER_SOURCE)
        for source in sources:
            if source != PAPER_SOURCE:
                handles[source] = Patch(facecolor="grey", edgecolor="grey", label=f"measured on {source}")
        for (impl, source), names in missing.items():
            handles[f"{impl} missing"] = Patch(facecolor="none", edgecolor="none",
                                               label=f"{method_label(impl)}: not run on {', '.join(names)}")
        order = [*self.impls, "paper", *sources, "capped", "projected", *(f"{impl} missing" for impl in self.impls)]
        legend = [handles[key] for key in sorted(handles, key=order.index)]
        ax.set_yscale("log")
        ax.set_xticks(range(len(datasets)), datasets)
        ax.set_ylabel("preprocessing time (s)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(handles=legend, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        return finish(fig, ax, "ICS'22 Table 2: time to partition into four parts")


def method_label(impl: str, use: str = "table") -> str:
    """Table 2's name of a policy ('PaGraph (re-impl.)'; ``use="paper"``: the paper's, 'PaGraph')."""
    spec = registry.lookup("placement", impl)
    return spec.label_for(use) if spec is not None else impl


def _cell(rows: list):
    """A run's cell: the first of its rows, its seconds or why it has none."""
    if not rows:
        return None
    row = rows[0]
    if row.status == "ok":
        return float(row.value)
    reason = str(getattr(row, "reason", None) or "")
    cap = re.search(r"time cap of ([0-9.]+) s", reason)
    projected = re.search(r"projected total ([0-9,]+) s", reason)
    if cap:
        return f"> {cap.group(1)}" + (f" (~{projected.group(1)})" if projected else "")
    return row.status


def _fmt(value):
    """Cells as text: the paper's numbers as printed, measured ones to 3 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _number(value):
    if isinstance(value, (int, float)) and value == value:
        return float(value)
    if isinstance(value, str):
        match = re.match(r">?\s*([0-9.,]+)", value)
        return float(match.group(1).replace(",", "")) if match else None
    return None


def _projected(value):
    """The projected total of a timed-out cell ('> 120 (~56,522)'), or None."""
    match = re.search(r"~([0-9,.]+)", value) if isinstance(value, str) else None
    return float(match.group(1).replace(",", "")) if match else None
