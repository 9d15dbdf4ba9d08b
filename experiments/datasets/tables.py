"""The papers' dataset tables, reproduced from the dataset registry and checked on stand-ins.

One experiment per paper table (wholegraph.table2, xgnn.table3, mggcn.table1,
placement.table1) shares this base: the table as the paper prints it, the same cells
recomputed from the registry (with a match flag), and each dataset's stand-in generated
at a scale that fits the machine, with its node and edge counts against the target at
that scale and its degree distribution (max, mean, tail exponent) beside the real graph's.
"""

from __future__ import annotations

from harness.argtypes import positive_float
from harness.artifact import ReportArtifact
from harness.experiment import Experiment, Measurement, Param, Point
from harness.needs import Needs
from harness.registry import register_impl
from harness.reportkit import Band, Claim, Estimate, Report
from harness.worlds import Worlds

register_impl("datasets", "registry", needs=Needs(devices=("cpu", "cuda")),
              summary="harness.datasets registry: published statistics of every dataset")(lambda **_: None)


class DatasetTable(Experiment):
    interface = "datasets"
    impls = ("standin",)
    metric, unit, better = "nodes", "count", "higher"
    differs_from_paper = ("The paper's cells recomputed from the harness's dataset registry; beside them synthetic "
                          "stand-ins generated at the scale that fits the machine, not the real graphs.")
    worlds = Worlds(fixed=(1,))
    paper_hardware = ""          # a table of datasets: no machine of the paper's to compare with
    parameters = {
        "max_edges": Param(5e7, positive_float, "largest stand-in generated (stored edges); bigger graphs "
                                                 "are generated at the scale that fits"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        """The scale whose stand-in stores at most ``max_edges`` edges (2e6 with --quick)."""
        from harness import datasets

        cap = self.param(cfg, "max_edges") if not cfg.quick else 2e6
        spec = datasets.get(dataset)
        stored = spec.standin.stored_edges if spec.standin else spec.edges
        return float(f"{min(1.0, cap / max(stored, 1)):.2g}")

    def points(self, cfg):
        from harness import datasets

        (world,) = self.world_sizes(cfg)
        names = dict.fromkeys(row["dataset"] for row in datasets.paper_table(self.id))
        for name in names:
            yield Point("standin", {"dataset": name, "scale": self.scale(cfg, name)}, world)

    def run_point(self, point, ctx):
        from harness import datasets, graphs

        name, scale = point.params["dataset"], point.params["scale"]
        spec = datasets.get(name)
        graph = graphs.load(ctx, name, scale, standin=True)
        stats = datasets.degree_stats(graph)
        target_nodes = spec.nodes * scale
        stored = spec.standin.stored_edges if spec.standin else spec.edges
        target_edges = stored * scale
        extra = {"degree_max": stats["max"], "degree_mean": round(float(stats["mean"]), 3),
                 "tail_exponent": stats.get("tail_exponent"), "real_max_degree": spec.max_degree,
                 "target_nodes": round(target_nodes), "target_edges": round(target_edges)}
        return [Measurement("nodes", "count", value=graph.num_nodes, better="higher", extra=extra),
                Measurement("stored_edges", "count", value=graph.num_edges, better="higher"),
                Measurement("node_error", "%", value=100 * abs(graph.num_nodes - target_nodes) / target_nodes),
                Measurement("edge_error", "%", value=100 * abs(graph.num_edges - target_edges) / max(target_edges, 1))]

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        from harness import datasets

        rep = Report(self, rows, runs)
        paper = pd.DataFrame(datasets.paper_table(self.id))
        compare = datasets.compare_table(self.id)
        table = paper.drop(columns=["dataset"]).copy()
        table["registry"] = [registry_cells([c for c in compare if c["dataset"] == d]) for d in paper["dataset"]]
        shown = shown_standins(rep)
        columns = standin_columns(shown, paper["dataset"])
        for key in STANDIN_ORDER:
            if len(table.columns) < MAX_COLUMNS:
                table[key] = columns[key]
        rep.notes += [f"{c['row']} {c['column']}: paper prints {c['paper']}, registry gives {c['registry']}"
                      + (f" ({c['note']})" if c.get("note") else "") for c in compare if not c["matches"]]
        rep.notes += sorted({f"{c['row']}: {c['note']}" for c in compare if c.get("note") and c["matches"]})
        caption = rep.caption(
            f"{datasets.table_caption(self.id)} as the paper prints it; 'registry': the cells "
            "harness/datasets/catalog.toml recomputes otherwise (with its value), or 'as printed'. Stand-in columns: "
            "each dataset's synthetic stand-in generated at the scale shown (1.0 = full size) by the newest full run "
            "(not --quick), its node and edge count error against the target at that scale, and its degree "
            "statistics beside the real graph's maximum degree where known; every run's stand-ins: "
            f"{self.artifact}.history.md.", runs=shown["run_id"])
        agree = sum(1 for c in compare if c["matches"])
        compare = [c for c in compare if c["matches"] is not None] or compare
        errs = [v for k in ("stand-in nodes err %", "stand-in edges err %") for v in columns[k] if v is not None]
        machine = sorted(set(shown["machine"]))
        headline = (f"{agree} of {len(compare)} printed cells recomputed from the registry"
                    + (f"; stand-ins ({', '.join(machine)}) within {max(errs):.2g}% of their node and edge targets"
                       if errs else ""))
        return rep.artifact(f"{self.paper} {self.artifact}: datasets", caption, table, headline=headline,
                            claims=cell_claims(self.id, compare),
                            skips=rep.rows[rep.rows["run_id"].isin(set(shown["run_id"]))],
                            history=standin_history(rep))


def cell_claims(table_id: str, compare: list[dict]) -> list[Claim]:
    """A claim per printed cell the registry recomputes: its value written as the paper writes
    numbers (rounded, or truncated where the paper did) is exactly the cell."""
    from harness.datasets.registry import table_spec

    rules = " or ".join({"round": "rounded half up", "truncate": "truncated"}[r] for r in table_spec(table_id).printed)
    exact = Band.between(1, 1, f"the printed cell: the registry's value {rules} to its digits")
    return [Claim(f"{c['row']} {c['column']}", Estimate.exact(1.0 if c["matches"] else 0.0, "exact: published counts"),
                  exact, c["paper"], null=None, unit="", ours=f"registry {_number(c['registry_value'])} -> {c['registry']}")
            for c in compare if c["matches"] is not None]


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:.4g}"


MAX_COLUMNS = 12
# the stand-in columns in the order they make the table while it has room (all in the history)
STANDIN_ORDER = ("stand-in scale", "stand-in nodes err %", "stand-in edges err %", "stand-in max deg", "real max deg",
                 "stand-in mean deg", "stand-in tail exp")


def registry_cells(compared: list[dict]) -> str:
    """The cells of one printed row that the registry recomputes otherwise, with its values."""
    differ = [f"{c['column']} {c['registry']}" for c in compared if c["matches"] is False]
    return ", ".join(differ) if differ else "as printed"


def shown_standins(rep):
    """The stand-in rows shown: each dataset's newest on the machine of the newest full (not --quick)
    run, or of the newest run where every run was quick; with column ``machine``."""
    quick = {r.run_id for r in rep.runs if (r.manifest.get("config") or {}).get("quick")}
    ok = rep.ok
    if ok.empty:
        return ok.assign(machine=[])
    full = ok[~ok["run_id"].isin(quick)]
    pool = full if not full.empty else ok
    hardware = {r.run_id: r.hardware for r in rep.runs}
    kind = {run_id: hardware.get(run_id, "unknown") for run_id in pool["run_id"]}
    latest_kind = kind[max(kind)]
    pool = pool[pool["run_id"].map(kind) == latest_kind]
    newest_run = pool.groupby("p_dataset")["run_id"].transform("max")
    return pool[pool["run_id"] == newest_run].assign(machine=latest_kind)


def standin_history(rep):
    """Every run's stand-ins: one row per run and dataset."""
    import pandas as pd

    records = []
    for (run_id, name), sel in rep.ok.groupby(["run_id", "p_dataset"], sort=True):
        stats = standin_stats(sel)
        records.append({"run": run_id.split("_")[0], "machine": rep.label(run_id), "dataset": name,
                        **{k.removeprefix("stand-in "): v for k, v in stats.items()}})
    return pd.DataFrame.from_records(records)


def standin_stats(sel) -> dict:
    """One dataset's stand-in, from one run's rows of it."""
    from harness import datasets

    def get(metric):
        hit = sel[sel["metric"] == metric]["value"]
        return float(hit.iloc[0]) if not hit.empty else None

    first = sel[sel["metric"] == "nodes"]
    if first.empty:
        return {key: None for key in STANDIN_ORDER}
    row = first.iloc[0]
    tail = row["p_tail_exponent"]
    return {"stand-in scale": float(row["p_scale"]), "stand-in nodes err %": get("node_error"),
            "stand-in edges err %": get("edge_error"), "stand-in max deg": float(row["p_degree_max"]),
            "real max deg": datasets.get(row["p_dataset"]).max_degree, "stand-in mean deg": float(row["p_degree_mean"]),
            "stand-in tail exp": float(tail) if tail is not None and tail == tail else None}


def standin_columns(shown, names) -> dict[str, list]:
    """The shown stand-in columns, a value per dataset of the paper's table (the real graph's maximum
    degree from the registry where no stand-in was generated)."""
    from harness import datasets

    out = {key: [] for key in STANDIN_ORDER}
    for name in names:
        stats = standin_stats(shown[shown["p_dataset"] == name]) if not shown.empty else {}
        stats["real max deg"] = datasets.get(name).max_degree
        for key in STANDIN_ORDER:
            out[key].append(stats.get(key))
    return out
