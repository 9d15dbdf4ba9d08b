"""XGNN Table 4: one epoch's sampling (S), feature extraction (E), training (T) and end-to-end
(E2E) time of DGL, Quiver, DGL+C and XGNN, with the feature cache ratio R% and hit rate H%.

The paper trains GCN, GraphSAGE and PinSAGE on TW, PA, UK and CF on 8 V100s (16 GB): DGL and DGL+C
keep the whole topology on every GPU and run out of memory on UK and CF; Quiver keeps it in host
memory and samples slowly; XGNN spreads topology and features over the GPUs (GGMS) and is fastest
everywhere (1.3-2.8x over DGL+C, 2.3-7.9x over DGL, 3.3-15.7x over Quiver). Here DGL is real DGL 2.1
where it imports (its sampler and loader on the host: its PyPI builds cannot sample on GPUs), and
the paper's DGL configuration, Quiver and DGL+C are re-implementations of their policies on the
harness's stores and kernels (experiments/xgnn/training.py: dgl_gpu = DGL+C's placement without a
feature cache), labelled "(re-impl.)", on every GPU of the machine, on stand-ins, under the budget
rule of training.py (the V100 scaled like the graph: the same OOM cells follow). PinSAGE samples by random walks on
every system (4 walks of length 3 with restart, the top 5 visited nodes weighted by visit count,
impls/sampling/random_walk.py) over that system's store; Quiver has no PinSAGE (the paper's "x").
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from harness.artifact import ReportArtifact
from harness.experiment import PaperValue, Param
from harness.registry import register_experiment
from harness.reportkit import (Axis, Band, Claim, Estimate, FigureSpec, Legend, Panel, Rule, Series, draw, figure,
                               finite, group, ratio, span)

from . import PAPER_HARDWARE, PAPER_SOURCE
from .training import (DATASETS, MODEL_NAMES, MODEL_SHORT, MODELS, SHOWN, SHORT, SYSTEMS, TrainingReport, XGNNTraining,
                       budget_gib, cell, combo, common_parameters, extrapolated, fmt, model_list, name_list, percent,
                       speedup_claim, system_list)

TABLE4_SYSTEMS = ("dgl", "dgl_gpu", "quiver", "dgl_cache", "xgnn")
# not in the paper's table, run on request: DGL+C with the topology in host memory (DGL's UVA mode),
# what a DGL user does where the topology does not fit one GPU
EXTRA_SYSTEMS = ("dgl_cache_uva",)
ALL_SYSTEMS = TABLE4_SYSTEMS[:4] + EXTRA_SYSTEMS + TABLE4_SYSTEMS[4:]
OOM, NA = "OOM", "x"
# XGNN Table 4 (8x V100): {model: {dataset: {system: (S, E, T, E2E, R%, H%) | "OOM" | "x"}}}
TABLE4 = {
    "gcn": {
        "twitter-2010": {"dgl": (0.10, 1.14, 0.24, 1.48, None, None), "quiver": (2.16, 1.15, 0.36, 3.48, 55, 90),
                         "dgl_cache": (0.09, 0.29, 0.20, 0.52, 9, 72), "xgnn": (0.04, 0.05, 0.20, 0.25, 79, 99)},
        "ogbn-papers100M": {"dgl": (0.22, 2.22, 0.54, 2.99, None, None), "quiver": (3.99, 1.82, 0.58, 6.18, 44, 73),
                            "dgl_cache": (0.11, 0.99, 0.55, 1.73, 8, 44), "xgnn": (0.11, 0.08, 0.54, 0.62, 69, 100)},
        "uk-2006-05": {"dgl": OOM, "quiver": (3.39, 10.2, 0.57, 13.8, 20, 31), "dgl_cache": OOM,
                       "xgnn": (0.07, 0.47, 0.43, 0.88, 42, 70)},
        "com-friendster": {"dgl": OOM, "quiver": OOM, "dgl_cache": OOM, "xgnn": (0.24, 7.75, 1.14, 8.67, 10, 54)},
    },
    "sage": {
        "twitter-2010": {"dgl": (0.06, 0.50, 0.07, 0.63, None, None), "quiver": (0.33, 0.11, 0.09, 0.54, 99, 100),
                         "dgl_cache": (0.05, 0.11, 0.07, 0.17, 16, 79), "xgnn": (0.03, 0.02, 0.07, 0.08, 100, 100)},
        "ogbn-papers100M": {"dgl": (0.15, 1.08, 0.22, 1.45, None, None), "quiver": (0.70, 0.08, 0.15, 0.85, 64, 98),
                            "dgl_cache": (0.07, 0.42, 0.23, 0.67, 11, 56), "xgnn": (0.08, 0.06, 0.23, 0.26, 80, 100)},
        "uk-2006-05": {"dgl": OOM, "quiver": (0.72, 3.00, 0.20, 3.55, 42, 63), "dgl_cache": (0.07, 0.64, 0.22, 0.85, 1, 7),
                       "xgnn": (0.06, 0.19, 0.16, 0.33, 51, 79)},
        "com-friendster": {"dgl": OOM, "quiver": (0.78, 0.28, 0.16, 1.12, 100, 100), "dgl_cache": OOM,
                           "xgnn": (0.10, 0.13, 0.17, 0.33, 93, 100)},
    },
    "pinsage": {
        "twitter-2010": {"dgl": (0.13, 0.61, 0.37, 1.10, None, None), "quiver": NA,
                         "dgl_cache": (0.04, 0.14, 0.34, 0.47, 10, 76), "xgnn": (0.04, 0.03, 0.34, 0.36, 84, 99)},
        "ogbn-papers100M": {"dgl": (0.33, 0.83, 0.75, 1.91, None, None), "quiver": NA,
                            "dgl_cache": (0.10, 0.42, 0.78, 1.23, 8, 46), "xgnn": (0.11, 0.04, 0.81, 0.83, 71, 100)},
        "uk-2006-05": {"dgl": OOM, "quiver": NA, "dgl_cache": OOM, "xgnn": (0.10, 0.48, 0.90, 1.37, 35, 62)},
        "com-friendster": {"dgl": OOM, "quiver": NA, "dgl_cache": OOM, "xgnn": (0.17, 0.94, 1.43, 2.35, 28, 85)},
    },
}
METRICS = (("sample_time", "S"), ("gather_time", "E"), ("train_time", "T"), ("epoch_time", "E2E"))


def paper_values() -> tuple[PaperValue, ...]:
    out = []
    for model, per_ds in TABLE4.items():
        for ds, per_sys in per_ds.items():
            for system in ALL_SYSTEMS:
                cells = paper_cell(model, ds, system)
                params = {"system": system, "dataset": ds, "model": model}
                impl = SYSTEMS[system].impl
                if cells is None or isinstance(cells, str):     # OOM / x cells: kept in TABLE4, not numbers
                    continue
                for (metric, _), v in zip(METRICS, cells[:4]):
                    out.append(PaperValue("Table 4", impl, params, metric, v, "s"))
                if cells[4] is not None:
                    out.append(PaperValue("Table 4", impl, params, "feat_ratio", cells[4] / 100, ""))
                    out.append(PaperValue("Table 4", impl, params, "feature_hit_rate", cells[5] / 100, ""))
    return tuple(out)


def paper_cell(model, ds, system):
    """The paper's cell of ``system``'s column (a re-implementation of the paper's DGL reads DGL's; real
    DGL, which samples on the host where the paper's DGL sampled on the GPUs, reads none)."""
    column = (system if SYSTEMS[system].paper is None else SYSTEMS[system].paper) if system in SYSTEMS else system
    return TABLE4.get(model, {}).get(ds, {}).get(column) if column else None


@register_experiment
class Table4(XGNNTraining):
    title = "XGNN Table 4: epoch breakdown (S, E, T, E2E), cache ratio and hit rate of DGL, Quiver, DGL+C, XGNN"
    differs_from_paper = ("Every GPU of an H200 machine (4, all NVLink-connected) instead of a DGX-1's 8 V100s, "
                          "stand-ins of TW, PA, UK and CF at 2-4% scale under the V100's memory scaled like the graph; "
                          "the paper's DGL (GPU sampling), Quiver and DGL+C are re-implementations of their policies "
                          "(real DGL 2.1 samples on the host).")
    paper_values = paper_values()
    parameters = common_parameters(
        datasets=Param(DATASETS, name_list, "datasets: TW, PA, UK, CF stand-ins (CPU --quick: TW, CF)"),
        models=Param(MODELS, model_list, "models: gcn, sage, pinsage (CPU --quick: gcn, sage)"),
        systems=Param(TABLE4_SYSTEMS, system_list(*ALL_SYSTEMS), "systems: dgl (real DGL, host sampling), dgl_gpu "
                      "(the paper's DGL configuration, re-implemented), quiver, dgl_cache, xgnn; also dgl_cache_uva: "
                      "DGL+C with its topology in host memory (DGL's UVA mode)"),
    )

    def points(self, cfg):
        world = self.world(cfg)
        datasets = self.param(cfg, "datasets")
        models = self.param(cfg, "models")
        if cfg.device == "cpu" and cfg.quick:
            if "datasets" not in cfg.params:
                datasets = ("twitter-2010", "com-friendster")
            if "models" not in cfg.params:
                models = ("gcn", "sage")
        for model in models:
            for ds in datasets:
                for system in self.param(cfg, "systems"):
                    yield self.point(system, ds, model, world, cfg)

    def report(self, rows, runs) -> ReportArtifact:
        rep = TrainingReport(self, rows, runs)
        history, history_notes = history_table(rep)
        shown: dict = {}                # (machine kind, model, dataset) -> {system: the newest run's record}
        for (kind, model, ds, system), rec in rep.newest(
                lambda r: (r["params"]["model"], r["params"]["dataset"], r["params"]["system"])).items():
            shown.setdefault((kind, model, ds), {})[system] = rec
        kinds = sorted({k for k, _, _ in shown}, key=lambda k: -max(
            r["world"] for (kk, _, _), systems in shown.items() if kk == k for r in systems.values()))
        order = {name: i for i, name in enumerate((*MODELS, *DATASETS))}
        tally, out = Tally(), []
        for model, ds in sorted({(m, d) for _, m, d in shown}, key=lambda c: (order.get(c[0], 99), order.get(c[1], 99), c)):
            here = [(kind, shown[(kind, model, ds)]) for kind in kinds if (kind, model, ds) in shown]
            for system in (s for s in ALL_SYSTEMS if any(s in systems for _, systems in here)):
                for kind, systems in here:
                    if (rec := systems.get(system)) is not None:
                        xg_e2e = cell(systems.get("xgnn"), "epoch_time")
                        out.append({**HEAD(model, ds, system, kind), **measured_cells(rec, system, xg_e2e)})
                        tally.count(rec, model, ds, PAPER_BUDGET, system, xg_e2e, systems.get("xgnn"), kind)
                if isinstance(paper_cell(model, ds, system), (tuple, str)):
                    out.append({**HEAD(model, ds, system, PAPER_SOURCE), **paper_cells(model, ds, system)})
        table = rep.table(out, empty="no Table 4 rows at the paper's budget rule", single=())
        headline = tally.headline() if out else ""
        if headline:
            headline = f"{', '.join(kinds)}: {headline}"
        rep.notes += tally.notes() + history_notes
        if pinsage := pinsage_note(shown):
            rep.notes.append(pinsage)
        if tally.mismatches:
            rep.notes.append("OOM cells that differ from the paper: " + "; ".join(dict.fromkeys(tally.mismatches))
                             + ". " + OOM_NOTE)
        on_show = {system for systems in shown.values() for system in systems}
        rep.notes += [STAGES_NOTE, "Systems (training.py): "
                      + rep.systems_note(s for s in ALL_SYSTEMS if s in TABLE4_SYSTEMS or s in on_show) + ".", PAPER_NOTE]
        records = [rec for systems in shown.values() for rec in systems.values()]
        caption = rep.caption(
            "One epoch's sampling (S), feature extraction (E), training (T) and end-to-end (E2E) seconds, feature "
            "cache ratio R% and hit rate H%, and XGNN's E2E speedup over each system, per model, dataset and system, "
            f"data-parallel over every GPU of the machine; the paper's Table 4 in the rows '{PAPER_SOURCE}' "
            f"({PAPER_HARDWARE}, 8 GPUs). {SHOWN}", shown=records)
        return rep.artifact("XGNN Table 4: epoch breakdown, cache ratio and hit rate", caption, table,
                            speedup_figure(shown, kinds[0] if kinds else None), headline=headline,
                            claims=tally.claims(),
                            history=history, skips=rep.shown_rows(records))


def HEAD(model: str, ds: str, system: str, source: str) -> dict:
    return {"Model": MODEL_SHORT[model], "Dataset": SHORT.get(ds, ds), "System": SYSTEMS[system].label,
            "Source": source}


def measured_cells(rec, system: str, xg_e2e) -> dict:
    """A system's measured cells of a Table 4 row and XGNN's speedup over it."""
    row = {f"{col} s": fmt(cell(rec, metric)) for metric, col in METRICS}
    row.update({"R%": percent(cell(rec, "feat_ratio")), "H%": percent(cell(rec, "feature_hit_rate"))})
    if system != "xgnn":
        row["XGNN speedup"] = fmt(ratio(cell(rec, "epoch_time"), xg_e2e))
    return row


def paper_cells(model: str, ds: str, system: str) -> dict:
    """The paper's cells of the same row ("OOM" / "x" in each where it printed so)."""
    paper = paper_cell(model, ds, system)
    values = paper if isinstance(paper, tuple) else (paper,) * 6
    row = {f"{col} s": v for (_, col), v in zip(METRICS, values[:4])}
    row["R%"], row["H%"] = values[4:6] if isinstance(paper, tuple) else (None, None)
    if system != "xgnn":
        row["XGNN speedup"] = fmt(paper_speedup(model, ds, system))
    return row


def history_table(rep) -> tuple:
    """Every run's rows (cells skipped for a reason a newer run of the same cell no longer had are
    left out) and the notes on the runs under other budget rules than the paper's."""
    by_point = group(rep.records, lambda r: (rep.machine(r), r["world"], r["params"]["model"], r["params"]["dataset"],
                                             str(r["params"].get("budget", PAPER_BUDGET))),
                     lambda r: r["params"]["system"])
    newest: dict = {}               # (GPUs, model, dataset, budget, system) -> the newest run of that cell
    for (_, *point), systems in by_point.items():
        for system, rec in systems.items():
            newest[(*point, system)] = max(newest.get((*point, system), ""), rec["run_id"])
    tally, out, notes = Tally(), [], []
    for (machine, world, model, ds, rule), systems in by_point.items():
        xg_e2e = cell(systems.get("xgnn"), "epoch_time")
        if rule != PAPER_BUDGET:          # other budgets are listed, not compared with the paper
            notes.append(other_budget_note(machine, model, ds, rule, systems))
            tally.other_budget(model, ds, rule, systems, xg_e2e)
        for system in (s for s in ALL_SYSTEMS if s in systems):
            rec = systems[system]
            if rec["status"] == "skipped" and cell(rec, "epoch_time") != OOM and \
                    rec["run_id"] != newest[(world, model, ds, rule, system)]:
                continue
            out.append({"Machine": machine, "GPUs": world, "Model": MODEL_SHORT[model],
                        "Dataset": SHORT.get(ds, ds), "System": SYSTEMS[system].label, "Budget": rule,
                        **cells_of(rec, model, ds, system, xg_e2e)})
    table = rep.table(out, empty="no Table 4 rows", single=())
    return table, notes + tally.notes()         # the other budgets' notes: no paper-budget speedups here


def speedup_figure(shown: dict, kind: str | None):
    """XGNN's E2E speedup over each system on the machine kind with the most GPUs, ours beside the
    paper's, a panel per model, the datasets along x; OOM and "x" cells written where their bar
    would be."""
    cells = {(m, d): systems for (k, m, d), systems in shown.items() if k == kind}
    models = [m for m in MODELS if any(mm == m for mm, _ in cells)]
    if not models:
        return figure((10, 4.4), squeeze=False)[0]
    dgl_black = any("dgl_gpu" in c for c in cells.values())       # DGL on the CPU beside DGL on the GPU
    drawn, panels = {}, []
    for model in models:
        datasets = [d for d in DATASETS if (model, d) in cells]
        series = []
        for system in (s for s in ALL_SYSTEMS if s != "xgnn" and any(s in cells[(model, d)] for d in datasets)):
            label = SYSTEMS[system].label
            drawn[label] = "black" if system == "dgl" and dgl_black else None
            values, capped = [], []
            for d in datasets:
                rec, xg = cells[(model, d)].get(system), cells[(model, d)].get("xgnn")
                e2e, xg_e2e = cell(rec, "epoch_time"), cell(xg, "epoch_time")
                values.append(ratio(e2e, xg_e2e) or (e2e if isinstance(e2e, str) else
                                                     f"XGNN {xg_e2e}" if isinstance(xg_e2e, str) else ""))
                capped.append(extrapolated(rec) or extrapolated(xg))
            series.append(Series(label, values, colour=drawn[label], extrapolated=capped))
            if SYSTEMS[system].paper != "":
                series.append(Series(label, [paper_speedup(model, d, system) or paper_cell(model, d, system) or ""
                                             for d in datasets], colour=drawn[label], paper=True))
        panels.append(Panel(series, groups=[SHORT.get(d, d) for d in datasets], legend=False,
                            y=Axis("" if panels else "XGNN E2E speedup over the system (x)", log=True),
                            rules=[Rule(1.0)], title=f"{MODEL_NAMES[model]} ({kind})"))
    return draw(FigureSpec(panels, ncols=len(panels), size=(10, 4.4), sharey=True, legend=Legend(
        list(drawn), paper=PAPER_SOURCE, colours=drawn, room=(0, 0.09, 1, 1),
        where={"loc": "lower center", "frameon": False})))


PAPER_BUDGET = "v100"
SPEEDUP_ORDER = (("dgl_cache", "1.3-2.8x"), ("dgl", None), ("dgl_gpu", "2.3-7.9x"), ("quiver", "3.3-15.7x"),
                 ("dgl_cache_uva", None))


def cells_of(rec, model: str, ds: str, system: str, xg_e2e) -> dict:
    """A system's cells of a table row: ours, the paper's and XGNN's speedup over it in both."""
    paper = paper_cell(model, ds, system)
    row = {f"{col} s": fmt(cell(rec, metric)) for metric, col in METRICS}
    row.update({"R%": percent(cell(rec, "feat_ratio")), "H%": percent(cell(rec, "feature_hit_rate")),
                "budget GiB/GPU": fmt(budget_gib(rec)) if rec["status"] == "ok" else None})
    if isinstance(paper, tuple):
        row.update({f"paper {col}": v for (_, col), v in zip(METRICS, paper[:4])})
        row["paper R%"], row["paper H%"] = paper[4], paper[5]
    else:
        row.update({f"paper {col}": paper for _, col in METRICS})
        row["paper R%"] = row["paper H%"] = None
    if system != "xgnn":
        row["XGNN speedup"] = fmt(ratio(cell(rec, "epoch_time"), xg_e2e))
        row["paper XGNN speedup"] = fmt(paper_speedup(model, ds, system))
    return row


def paper_speedup(model: str, ds: str, system: str):
    paper = paper_cell(model, ds, system)
    return ratio(paper[3], paper_cell(model, ds, "xgnn")[3]) if isinstance(paper, tuple) else None


@dataclass
class Tally:
    """XGNN's speedups and the OOM cells compared with the paper's, over the rows of the table."""
    speed: dict = field(default_factory=lambda: {s: [] for s in ALL_SYSTEMS if s != "xgnn"})
    paper_speed: dict = field(default_factory=lambda: {s: [] for s in ALL_SYSTEMS if s != "xgnn"})
    oom_match: int = 0
    oom_total: int = 0
    mismatches: list = field(default_factory=list)
    over_runs: dict = field(default_factory=dict)    # (model, dataset, budget, system): XGNN speedups, one per run
    speedup_claims: list = field(default_factory=list)
    kinds: set = field(default_factory=set)
    runs: set = field(default_factory=set)

    def other_budget(self, model: str, ds: str, rule: str, systems: dict, xg_e2e) -> None:
        for system, rec in systems.items():
            if system != "xgnn" and (s := ratio(cell(rec, "epoch_time"), xg_e2e)) is not None:
                self.over_runs.setdefault((model, ds, rule, system), []).append(s)

    def count(self, rec, model: str, ds: str, rule: str, system: str, xg_e2e, xgnn=None, kind: str = "") -> None:
        """A row of the table under the paper's budget rule: XGNN's speedup (a claim where the paper
        printed the cell), OOM as the paper's."""
        if rule != PAPER_BUDGET:
            return
        if (s := ratio(cell(rec, "epoch_time"), xg_e2e) if system != "xgnn" else None) is not None:
            self.speed[system].append(s)
            if (p := paper_speedup(model, ds, system)) is not None:
                self.paper_speed[system].append(p)
                self.speedup_claims.append(speedup_claim(
                    f"{kind} {MODEL_SHORT[model]}+{SHORT.get(ds, ds)}: {SYSTEMS[system].label} / XGNN E2E", rec,
                    xgnn, "epoch_time", p))
        self.kinds.add(kind)
        self.runs.add(rec["run_id"])
        paper, ours_oom = paper_cell(model, ds, system), cell(rec, "epoch_time") == OOM
        # a cell skipped for another reason (not runnable in that run) neither fits nor OOMs
        if (rec["status"] == "ok" or ours_oom) and paper not in (None, NA) and \
                SYSTEMS[system].unavailable is None and SYSTEMS[system].judge_oom:
            self.oom_total += 1
            if ours_oom == (paper == OOM):
                self.oom_match += 1
            else:
                self.mismatches.append(f"{combo(model, ds)} {SYSTEMS[system].label}: {'OOM' if ours_oom else 'fits'} "
                                       f"here, {'OOM' if paper == OOM else 'fits'} in the paper")

    def headline(self) -> str:
        parts = [f"vs {SYSTEMS[system].label} {span(self.speed[system])}x "
                 + (f"(paper {paper_range})" if paper_range else
                    "(host sampling: no paper counterpart)" if system == "dgl" else "(not in the paper)")
                 for system, paper_range in SPEEDUP_ORDER if self.speed[system]]
        headline = "XGNN E2E speedup " + ", ".join(parts) if parts else ""
        if self.oom_total:
            headline += f"; OOM cells as the paper's in {self.oom_match}/{self.oom_total}"
        return headline

    def claims(self) -> list:
        """XGNN's E2E speedup in every cell the paper printed, and the OOM cells as the paper's."""
        out = list(self.speedup_claims)
        if self.oom_total:
            out.append(Claim(f"{', '.join(sorted(self.kinds))}: cells out of memory (or fitting) as in the paper",
                             Estimate.exact(self.oom_match / self.oom_total, f"exact: {self.oom_match} of "
                                            f"{self.oom_total} cells"),
                             Band.between(OOM_AGREEMENT, 1.0, f"at least {OOM_AGREEMENT:.0%} of the cells"),
                             "its OOM cells", null=None, runs=tuple(sorted(self.runs)), unit=""))
        return out

    def notes(self) -> list[str]:
        out = [f"XGNN's E2E speedup over {SYSTEMS[system].label}: ours {span(self.speed[system])}x over "
               f"{len(self.speed[system])} cells" + (f"; the paper's in the same cells {span(self.paper_speed[system])}x"
                                                     if self.paper_speed[system] else "")
               for system, _ in SPEEDUP_ORDER if self.speed[system]]
        return out + [f"{combo(model, ds)} under budget {rule}: XGNN's E2E speedup over {SYSTEMS[system].label} over "
                      f"{len(values)} runs: median {statistics.median(values):.2f}x ({span(values)}x)"
                      for (model, ds, rule, system), values in self.over_runs.items() if len(values) > 1]


OOM_AGREEMENT = 0.9      # the share of OOM / fits cells that must agree with the paper's


OOM_NOTE = ("The budget models the stores (topology replicated or partitioned, feature cache) and a per-model "
            "workspace; the paper's DGL also runs out of memory on UK with GraphSAGE (DGL's own larger footprint) and "
            "Quiver on CF with GCN (PyG layers and its spawned processes, about 0.8 GB per GPU).")
STAGES_NOTE = (
    "S, E, T: the synchronized epochs (the first synced_epochs measured ones, median), with the device synchronized "
    "between stages and no prefetching (each stage alone); E2E: the later epochs, sampling pipelined with training (a "
    "sampler thread one mini-batch ahead), as the paper's footnote 1. R%: feature rows on the GPUs (for Quiver per "
    "NVLink clique, for XGNN over all GPUs together); H%: feature reads served by GPU memory (local or a peer) over "
    "the epochs. The paper's XGNN topology ratio is 100%; ours is the largest that fits (100% on several GPUs).")
PAPER_NOTE = (
    "Paper: 8 V100s of a DGX-1 (hybrid cube-mesh: XGNN's solver places copies), 1M training nodes, batch 6000 per "
    "GPU, real graphs. Here: every GPU of the machine (the H200s are all connected), stand-ins with scale x 1M "
    "training nodes, the batch of the caption. Compare ratios, not seconds.")


def pinsage_note(shown: dict) -> str:
    """PinSAGE samples by the same random walks on every system, so XGNN's gain is its feature
    extraction: E and E2E of DGL+C and DGL over XGNN's per (machine kind, dataset), and the E time
    XGNN saves as a share of the other system's epoch, beside the paper's."""
    parts = []
    for (kind, model, ds), systems in shown.items():
        xg = systems.get("xgnn")
        paper_xg = paper_cell(model, ds, "xgnn")
        if model != "pinsage" or xg is None or xg["status"] != "ok":
            continue
        e = cell(xg, "gather_time")
        cells = []
        for system in ("dgl_cache", "dgl", "dgl_gpu"):
            rec, paper = systems.get(system), paper_cell(model, ds, system)
            if rec is None or rec["status"] != "ok" or not isinstance(paper, tuple) or not finite(e):
                continue
            e_sys, e2e_sys = cell(rec, "gather_time"), cell(rec, "epoch_time")
            saved = 100 * (e_sys - e) / e2e_sys
            paper_saved = 100 * (paper[1] - paper_xg[1]) / paper[3]
            cells.append(f"{SYSTEMS[system].label} E {ratio(e_sys, e):.1f}x (paper {paper[1] / paper_xg[1]:.1f}x), "
                         f"E2E {ratio(e2e_sys, cell(xg, 'epoch_time')):.2f}x (paper {paper[3] / paper_xg[3]:.2f}x), "
                         f"E saved = {saved:.0f}% of its E2E (paper {paper_saved:.0f}%)")
        if cells:
            parts.append(f"{kind} {SHORT.get(ds, ds)}: " + "; ".join(cells))
    if not parts:
        return ""
    return ("PinSAGE samples by the same random walks on every system (impls/sampling/random_walk.py: 4 walks of "
            "length 3 with restart 0.5, the top 5 visited nodes weighted by visit count), so XGNN's gain over DGL+C "
            "and DGL is the feature extraction time E it saves. Here E is a smaller part of the epoch than on the "
            "paper's V100s over PCIe 3 (H200s read host memory over PCIe 5), so the E2E gain is smaller: "
            + " | ".join(parts) + ".")


def other_budget_note(machine: str, model: str, ds: str, rule: str, systems: dict) -> str:
    """One line per (run, model, dataset) measured under a budget other than the paper's rule."""
    cells = []
    xg = cell(systems.get("xgnn"), "epoch_time")
    for system in ALL_SYSTEMS:
        rec = systems.get(system)
        if rec is None:
            continue
        e2e = cell(rec, "epoch_time")
        text = f"{SYSTEMS[system].label} {fmt(e2e)} s" if finite(e2e) else f"{SYSTEMS[system].label} {e2e}"
        s = ratio(e2e, xg) if system != "xgnn" else None
        cells.append(text + (f" (XGNN {s:.2f}x faster)" if s is not None else ""))
    return (f"{machine} {MODEL_SHORT[model]}+{SHORT.get(ds, ds)} under budget {rule} per GPU (not the paper's "
            f"rule, so left out of the paper comparisons): E2E " + "; ".join(cells))
