"""Time and peak memory to generate and cache a stand-in (issue 3 targets).

Each point runs ``python -m harness.datasets.benchmark`` in a fresh process, so the peak
resident set is that job's alone. Targets: the products stand-in at scale 1.0 in under
60 s and 6 GiB on 2 CPU cores; the papers100M stand-in at scale 1.0 in under 3 minutes
on one H200 (features streamed to /dev/null where the disk cannot hold 57 GB).
"""

from __future__ import annotations

import json
import subprocess
import sys

from harness.argtypes import str_list
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, Param, Point
from harness.needs import Needs
from harness.registry import register_experiment, register_impl
from harness.reportkit import Report, newest_per_kind
from harness.worlds import Worlds

register_impl("datasets", "standin", needs=Needs(devices=("cpu", "cuda")),
              summary="harness.datasets stand-in generator (Chung-Lu with planted communities)")(
    lambda **_: None)

TARGETS = {("ogbn-products", "cpu"): (60.0, 6.0), ("ogbn-papers100M", "cuda"): (180.0, None)}


@register_experiment
class Generation(Experiment):
    title = "Stand-in generation: seconds and peak memory to generate and cache"
    differs_from_paper = ("No paper counterpart: the harness's own targets for making a stand-in (products at full "
                          "size in under 60 s and 6 GiB on 2 CPU cores, papers100M in under 3 minutes on one H200).")
    interface = "datasets"
    impls = ("standin",)
    metric, unit, better = "seconds", "s", "lower"
    worlds = Worlds(fixed=(1,))
    warm_and_cold = ("Cold: one generation per point, in a fresh process, from nothing cached (the "
                     "time a user waits the first time).")
    parameters = {
        "names": Param(("ogbn-products", "ogbn-papers100M"), str_list, "datasets to generate"),
        "feature_sink": Param("auto", str, "cache | null | auto (null for papers100M on GPUs)"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        return 0.01 if cfg.quick else 1.0

    def points(self, cfg):
        (world,) = self.world_sizes(cfg)
        for name in self.param(cfg, "names"):
            yield Point("standin", {"dataset": name, "scale": self.scale(cfg, name), "backend": cfg.device}, world)

    def skip_reason(self, point, cfg):
        if point.params["dataset"] == "ogbn-papers100M" and cfg.device != "cuda" and point.params["scale"] > 0.05:
            return "the papers100M target is for one H200; on CPU use --scale <= 0.05"
        return None

    def run_point(self, point, ctx):
        cfg = ctx.cfg
        p = point.params
        sink = self.param(cfg, "feature_sink")
        if sink == "auto":
            sink = "null" if p["dataset"] == "ogbn-papers100M" and p["scale"] >= 0.5 else "cache"
        cmd = [sys.executable, "-m", "harness.datasets.benchmark", p["dataset"], "--scale", str(p["scale"]),
               "--seed", str(cfg.seed), "--device", p["backend"], "--feature-sink", sink]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=cfg.timeout_s)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"benchmark failed: {tail[:200]}")
        result = json.loads(proc.stdout[proc.stdout.index("{"):])
        extra = {"nodes": result["nodes"], "stored_edges": result["stored_edges"],
                 "target_edges": result["target_edges"], "features": result["features"],
                 "degree_max": result["degree"]["max"], "tail_exponent": result["degree"]["tail_exponent"],
                 "stage_seconds": result["stage_seconds"], "generator_backend": result["backend"]}
        out = [Measurement("seconds", "s", value=result["generate_and_cache_seconds"], extra=extra),
               Measurement("peak_rss", "GiB", value=result["peak_rss_gib"])]
        if "gpu_peak_memory_gib" in result:
            out.append(Measurement("gpu_peak_memory", "GiB", value=result["gpu_peak_memory_gib"]))
        if result["nodes"] <= 0:
            raise SkipPoint("empty graph")
        return out

    def report(self, rows, runs) -> ReportArtifact:
        import pandas as pd

        rep = Report(self, rows, runs)
        cell = ["p_dataset", "p_scale", "p_backend"]
        points = dict(iter(rep.ok.groupby(["run_id", *cell]))) if not rep.ok.empty else {}
        history = pd.DataFrame.from_records(
            {"run": run_id.split("_")[0], **generation_row(rep.label(run_id), name, scale, grp)}
            for (run_id, name, scale, _), grp in points.items())
        latest = newest_per_kind(points, {r.run_id: r.hardware for r in rep.runs}, cell=lambda key: key[1:],
                                 run_of=lambda key: key[0])
        records = [generation_row(kind, key[1], key[2], points[key]) for (kind, *_), key in sorted(latest.items())]
        parts = []
        for rec in records:
            target = TARGETS.get((rec["Dataset"], rec["Backend"]))
            if target and rec["Scale"] == 1.0:
                rss = rec["Peak RSS (GiB)"] or 0
                met = rec["Seconds"] < target[0] and (target[1] is None or rss < target[1])
                parts.append(f"{rec['Machine']}: {rec['Dataset']} x1.0 on {rec['Backend']} {rec['Seconds']:.1f} s, "
                             f"{rec['Peak RSS (GiB)']:.2f} GiB RSS (target {rec['Target']}: "
                             f"{'met' if met else 'missed'})")
        shown = {run_id for run_id, *_ in latest.values()}
        caption = rep.caption("Wall seconds to generate a stand-in and write its cache (CSR, labels, splits, "
                              "features), in a fresh process; peak resident memory of that process; each machine's "
                              "newest run per dataset, scale and backend (every run: generation.history.md). The "
                              "targets are the harness's own, not a paper's: no verdict.",
                              runs=shown)
        return rep.artifact("Stand-in generation benchmark", caption, pd.DataFrame.from_records(records),
                            headline="; ".join(parts),
                            skips=rep.rows[rep.rows["run_id"].isin(shown)], history=history)


def generation_row(machine: str, name: str, scale: float, grp) -> dict:
    by = {m: float(v) for m, v in zip(grp["metric"], grp["value"])}
    first = grp[grp["metric"] == "seconds"].iloc[0]
    target = TARGETS.get((name, first["p_backend"]))
    return {"Machine": machine, "Dataset": name, "Scale": scale, "Backend": first["p_backend"],
            "Nodes": int(first["p_nodes"]), "Edges (stored)": int(first["p_stored_edges"]),
            "Edges (target)": int(first["p_target_edges"]), "Seconds": by.get("seconds"),
            "Peak RSS (GiB)": by.get("peak_rss"), "GPU peak (GiB)": by.get("gpu_peak_memory"),
            "Target": (f"< {target[0]:.0f} s" + (f", < {target[1]:.0f} GiB" if target[1] else ""))
            if (target and scale == 1.0) else "-",
            "Features": first["p_features"]}
