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
from harness.reportkit import Report
from harness.worlds import Worlds

register_impl("datasets", "registry", needs=Needs(devices=("cpu", "cuda")),
              summary="harness.datasets registry: published statistics of every dataset")(lambda **_: None)


class DatasetTable(Experiment):
    interface = "datasets"
    impls = ("standin",)
    metric, unit, better = "nodes", "count", "higher"
    worlds = Worlds(fixed=(1,))
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
        from harness import datasets

        cfg = ctx.cfg
        name, scale = point.params["dataset"], point.params["scale"]
        spec = datasets.get(name)
        graph = datasets.load(name, scale=scale, seed=cfg.seed, data_root=cfg.data_root, prefer_real=False,
                              device=cfg.device)
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
        table["registry matches"] = ["yes" if all(c["matches"] for c in compare if c["dataset"] == d) else "no"
                                     for d in paper["dataset"]]
        for run_id, label in rep.labels.items():
            for key, values in standin_columns(rep.ok[rep.ok["run_id"] == run_id], paper["dataset"]).items():
                table[f"{label} stand-in {key}"] = values
        table["real max deg"] = [datasets.get(d).max_degree for d in paper["dataset"]]
        rep.notes += [f"{c['row']} {c['column']}: paper prints {c['paper']}, registry gives {c['registry']}"
                      + (f" ({c['note']})" if c.get("note") else "") for c in compare if not c["matches"]]
        rep.notes += sorted({f"{c['row']}: {c['note']}" for c in compare if c.get("note") and c["matches"]})
        caption = rep.caption(f"{datasets.table_caption(self.id)} as the paper prints it; 'registry matches' says "
                              "whether every cell is recomputed identically from harness/datasets/catalog.toml. "
                              "Stand-in columns: each dataset's synthetic stand-in generated at the scale shown (scale "
                              "1.0 = full size), node/edge count error against the target at that scale, and its "
                              "degree statistics beside the real graph's maximum degree where known.")
        agree = sum(1 for c in compare if c["matches"])
        errs = [v for k in table.columns if k.endswith("err %") for v in table[k] if v is not None]
        headline = (f"{agree} of {len(compare)} printed cells recomputed from the registry"
                    + (f"; stand-in node/edge count error at most {max(errs):.2g}%" if errs else ""))
        return rep.artifact(f"{self.paper} {self.artifact}: datasets", caption, table, headline=headline,
                            status="reproduced" if agree == len(compare) else "partly")


def standin_columns(mine, names) -> dict[str, list]:
    """One run's stand-in columns, a value per dataset of the paper's table."""
    cols = {"scale": [], "nodes err %": [], "edges err %": [], "max deg": [], "mean deg": [], "tail exp": []}
    for name in names:
        sel = mine[mine["p_dataset"] == name]
        get = lambda m: (float(sel[sel["metric"] == m]["value"].iloc[0])  # noqa: E731
                         if not sel[sel["metric"] == m].empty else None)
        first = sel[sel["metric"] == "nodes"]
        cols["scale"].append(float(first["p_scale"].iloc[0]) if not first.empty else None)
        cols["nodes err %"].append(get("node_error"))
        cols["edges err %"].append(get("edge_error"))
        cols["max deg"].append(float(first["p_degree_max"].iloc[0]) if not first.empty else None)
        cols["mean deg"].append(float(first["p_degree_mean"].iloc[0]) if not first.empty else None)
        tail = first["p_tail_exponent"].iloc[0] if not first.empty else None
        cols["tail exp"].append(float(tail) if tail is not None else None)
    return cols
