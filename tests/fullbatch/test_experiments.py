"""The MG-GCN artifacts: grids, transcribed paper numbers, reports, and one run over two ranks."""

from __future__ import annotations

import pandas as pd
import pytest

from harness import registry, runner
from harness.artifact import RunInfo
from harness.config import RunConfig
from harness.experiment import RunContext
from harness.launcher import RankContext
from harness.report import report_runs, write_artifact

from ..helpers import one_rank_rows

EXPERIMENTS = ("mggcn.table3", "mggcn.fig5", "mggcn.fig6", "mggcn.fig7", "mggcn.fig8", "mggcn.fig9", "mggcn.memory")
# small models and one small graph keep every artifact to a few seconds on one core
TINY = {
    "mggcn.table3": {"datasets": "products", "models": "paper,2x16"},
    "mggcn.fig5": {"datasets": "products", "model": "2x16"},
    "mggcn.fig6": {"model": "2x16"},
    "mggcn.fig7": {"datasets": "products", "model": "2x16"},
    "mggcn.fig8": {"model": "2x16"},
    "mggcn.fig9": {"factors": "1,2", "model": "2x16"},
    "mggcn.memory": {"datasets": "products", "models": "2x16"},
}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("mggcn-data")


def _cfg(exp_id, data_root, out=None, world=2):
    return RunConfig(device="cpu", world_size=world, quick=True, warmup=1, repeats=2,
                     params=dict(TINY[exp_id]), data_root=data_root, out_dir=out or data_root / "runs")


def test_grids_on_two_cpu_ranks(data_root):
    cfg = RunConfig(device="cpu", world_size=2, quick=True, data_root=data_root)
    points = {e: list(registry.get_experiment(e).points(cfg)) for e in EXPERIMENTS}
    table3 = points["mggcn.table3"]
    assert {(p.impl, p.world_size) for p in table3} == {("mggcn", 1), ("mggcn", 2), ("single_gpu", 1),
                                                        ("pyg", 1), ("dgl", 1)}
    models = {(p.params["dataset"], p.params["model"]) for p in table3}
    assert {("reddit", "2x16"), ("products", "3x256"), ("proteins", "3x256"), ("papers", "3x208"),
            ("reddit", "2x512")} <= models
    assert {p.world_size for p in points["mggcn.fig5"]} == {2}            # asked for, so honoured
    by_default = RunConfig(device="cpu", quick=True, data_root=data_root)
    fig5 = registry.get_experiment("mggcn.fig5").points(by_default)
    assert {p.world_size for p in fig5} == {1}                             # the paper profiles one GPU
    assert {p.world_size for p in points["mggcn.fig8"]} == {2}
    assert {p.params["overlap"] for p in points["mggcn.fig8"]} == {False, True}
    # Fig. 6: the paper's schedule in the input order, the paper's permutation and random parts
    assert {p.params["order"] for p in points["mggcn.fig6"]} == {"original", "random", "random_parts"}
    assert all(p.params["transport"] == "broadcast" and p.params["local_first"] is False
               and p.params["overlap"] is False and p.world_size == 2 for p in points["mggcn.fig6"])
    # an engine variant asked for is in the points' params; the defaults are not
    assert all("transport" not in p.params and "order" not in p.params for p in table3)
    variant = RunConfig(device="cpu", world_size=2, quick=True, data_root=data_root,
                        params={"transport": "broadcast", "order": "random"})
    assert all(p.params["transport"] == "broadcast" and p.params["order"] == "random"
               for p in registry.get_experiment("mggcn.table3").points(variant) if p.impl == "mggcn")
    assert {p.params["permute"] for p in points["mggcn.fig7"]} == {False, True}
    assert [p.params["factor"] for p in points["mggcn.fig9"] if p.world_size == 1] == [1, 4, 16]
    memory = registry.get_experiment("mggcn.memory")
    skipped = [p for p in points["mggcn.memory"] if memory.skip_reason(p, cfg)]
    assert skipped and all(p.params["measure"] == "device_peak" for p in skipped)
    assert "needs CUDA" in memory.skip_reason(skipped[0], cfg)


def test_paper_numbers_as_printed():
    table3 = {(v.params["dataset"], v.params["gpus"]): v.value
              for v in registry.get_experiment("mggcn.table3").paper_values if v.metric == "epoch_time"}
    assert table3 == {("reddit", 1): 0.033, ("reddit", 2): 0.017, ("reddit", 4): 0.012, ("reddit", 8): 0.012,
                      ("papers", 8): 2.89, ("products", 1): 0.355, ("products", 2): 0.202,
                      ("products", 4): 0.110, ("products", 8): 0.067, ("proteins", 1): 4.221,
                      ("proteins", 2): 2.272, ("proteins", 4): 1.191, ("proteins", 8): 0.641}
    fig8 = {v.params["overlap"]: v.value for v in registry.get_experiment("mggcn.fig8").paper_values}
    assert fig8 == {False: 38.0, True: 30.0}
    for exp_id in EXPERIMENTS:
        for value in registry.get_experiment(exp_id).paper_values:
            assert value.source and value.unit


def test_bad_parameters_are_one_line_errors(data_root):
    from harness.errors import HarnessError

    exp = registry.get_experiment("mggcn.table3")
    for params in ({"datasets": "nosuch"}, {"models": "3by256"}, {"scales": "products"}, {"gpus": "3"}):
        cfg = RunConfig(device="cpu", world_size=2, params=params, data_root=data_root)
        with pytest.raises(HarnessError):
            exp.validate_params(cfg)
            list(exp.points(cfg))


def test_reports_from_measured_rows(data_root, tmp_path):
    """Measure every artifact's one-rank points in this process, mirror them as a 2-rank run, report."""
    ctx = RankContext(rank=0, world_size=1, local_rank=0, device="cpu", backend="gloo")
    info = RunInfo("0001_cpu_test", "cpu", {"host": {"cpu_model": "test", "cpu_count": 2}})
    for exp_id in EXPERIMENTS:
        exp = registry.get_experiment(exp_id)
        # figs. 5, 6 and 8 run the run's count alone: one rank here
        cfg = _cfg(exp_id, data_root, world=1 if exp_id in ("mggcn.fig8", "mggcn.fig5", "mggcn.fig6") else 2)
        rows = one_rank_rows(exp, cfg, ctx)
        # the same measurements as if taken on two ranks, half as long
        rows += [{**r, "world_size": 2, "params": {**r["params"], "gpus": 2},
                  "value": r["value"] / 2 if r["value"] else r["value"]}
                 for r in rows if r["status"] == "ok" and r["params"].get("gpus") == 1
                 and r["impl"] == "mggcn"]
        frame = pd.DataFrame.from_records(rows).assign(run_id=info.run_id, hardware=info.hardware)
        artifact = exp.report(frame, [info])
        assert not artifact.table.empty, exp_id
        assert artifact.caption and artifact.figure is not None
        written = write_artifact(artifact, tmp_path / exp.paper, f"tab:{exp_id}")
        assert {p.suffix for p in written} == {".md", ".csv", ".tex", ".png", ".svg"}


def test_fig8_end_to_end_on_two_ranks(data_root, tmp_path):
    cfg = _cfg("mggcn.fig8", data_root, out=tmp_path / "runs")
    outcome = runner.run(["mggcn.fig8"], cfg, ["test"])
    assert outcome.errors == 0 and outcome.ok > 0
    rows = [r for r in _rows(outcome.store.path)]
    stages = [r for r in rows if r["metric"].startswith("stage_duration.")]
    # both ranks' intervals reached rank 0's rows: 2 ranks x 2 stages x {comm, compute} x SpMMs x modes
    where = [{**r["params"], **r.get("extra", {})} for r in stages]
    assert {w["rank"] for w in where} == {0, 1} and {w["stage"] for w in where} == {0, 1}
    assert {w["kind"] for w in where} == {"comm", "compute"}
    # every row of a point is its own point for `harness compare`
    from harness.compare import point_key

    assert len({point_key(r) for r in rows}) == len(rows)
    written = report_runs([outcome.store.path], tmp_path / "reports")
    text = next(p for p in written if p.suffix == ".md").read_text()
    assert "whole epoch" in text


def _rows(path):
    import json

    return [json.loads(line) for line in (path / "rows.jsonl").read_text().splitlines() if line.strip()]


def test_an_implementation_that_cannot_run_here_is_a_skipped_row(data_root, monkeypatch):
    """A factory that raises SkipPoint (a CPU build of DGL asked for a GPU, say) makes the point a
    skipped row with its reason, on every rank alike, not an error row."""
    from harness.errors import SkipPoint
    from impls.fullbatch import single_gpu

    def refuse(self, *a, **k):
        raise SkipPoint("this build cannot run here")

    monkeypatch.setattr(single_gpu.SingleDeviceGCN, "__init__", refuse)
    ctx = RankContext(rank=0, world_size=1, local_rank=0, device="cpu", backend="gloo")
    exp = registry.get_experiment("mggcn.table3")
    cfg = _cfg("mggcn.table3", data_root, world=1)
    point = next(p for p in exp.points(cfg) if p.impl == "single_gpu" and p.world_size == 1)
    rows = runner.run_one_point(exp, point, RunContext(cfg, ctx))
    assert [(r["status"], r["reason"]) for r in rows] == [("skipped", "this build cannot run here")]
