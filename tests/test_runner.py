"""The runner: grid expansion, skipped rows with reasons, error rows, manifest status."""

from __future__ import annotations

import json

import pytest

from harness import cli, runner
from harness.argtypes import positive_int
from harness.config import RunConfig, parse_param_assignments
from harness.errors import HarnessError, SkipPoint
from harness.experiment import Experiment, Measurement, Param, Point
from harness.needs import Needs
from harness.store import load_run
from harness.timing import Stats


class FakeExperiment(Experiment):
    id = "zzrun.fig1"
    paper = "zzrun"
    artifact = "fig1"
    title = "runner test"
    interface = "zztest"
    impls = ("fast", "gpuonly", "skipper", "broken", "nopkg", "empty")
    metric, unit = "time", "s"
    parameters = {"n": Param(2, positive_int, "points per impl")}

    def points(self, cfg):
        for impl in self.impls:
            for i in range(self.param(cfg, "n")):
                yield Point(impl, {"i": i})

    def run_point(self, point, ctx):
        if point.impl == "skipper":
            raise SkipPoint("too big for this machine")
        if point.impl == "broken":
            raise RuntimeError("kaput\nsecond line")
        if point.impl == "empty":
            return []
        stats = Stats.from_samples([1.0, 2.0, 3.0 + point.params["i"]])
        return [Measurement("time", "s", stats, extra={"variant": "a"}),
                Measurement("rate", "1/s", stats.rate(6.0), better="higher")]


@pytest.fixture
def fake(registry_sandbox):
    registry_sandbox.impl("zztest", "fast", needs=Needs())
    registry_sandbox.impl("zztest", "gpuonly", needs=Needs(devices=("cuda",)))
    registry_sandbox.impl("zztest", "skipper")
    registry_sandbox.impl("zztest", "broken")
    registry_sandbox.impl("zztest", "nopkg", needs=Needs(packages=("zz_no_such_package_xyz",)))
    registry_sandbox.impl("zztest", "empty")
    return registry_sandbox.experiment(FakeExperiment)


def _rows_by(rows, impl):
    return [r for r in rows if r["impl"] == impl]


def test_every_point_becomes_rows(fake, tmp_path):
    cfg = RunConfig(device="cpu", out_dir=tmp_path, label="t")
    outcome = runner.run(["zzrun.fig1"], cfg, ["harness", "run", "zzrun.fig1"])
    run = load_run(outcome.store.path)
    rows = run.rows
    fast = _rows_by(rows, "fast")
    assert len(fast) == 4                                   # 2 points x 2 measurements
    t0 = next(r for r in fast if r["metric"] == "time" and r["params"]["i"] == 0)
    assert t0["status"] == "ok" and t0["value"] == 2.0 and t0["stats"]["repeats"] == 3
    assert t0["params"] == {"i": 0}                          # the point's identity only
    assert t0["extra"] == {"variant": "a"}                   # what the measurement observed
    assert t0["better"] == "lower" and t0["device"] == "cpu" and t0["world_size"] == 1
    rate = next(r for r in fast if r["metric"] == "rate" and r["params"]["i"] == 1)
    assert rate["better"] == "higher" and rate["value"] == pytest.approx(3.0)

    for r in _rows_by(rows, "gpuonly"):
        assert r["status"] == "skipped" and "cuda" in r["reason"]
        assert r["metric"] == "time" and r["unit"] == "s" and r["value"] is None
    for r in _rows_by(rows, "skipper"):
        assert r["status"] == "skipped" and r["reason"] == "too big for this machine"
    for r in _rows_by(rows, "nopkg"):
        assert r["status"] == "skipped" and "zz_no_such_package_xyz" in r["reason"]
    for r in _rows_by(rows, "broken"):
        assert r["status"] == "error" and r["reason"] == "RuntimeError: kaput"
        assert "Traceback" in r["traceback"]
    for r in _rows_by(rows, "empty"):
        assert r["status"] == "error" and "no measurement" in r["reason"]
    assert len(rows) == 4 + 2 * 5
    assert (outcome.ok, outcome.skipped, outcome.errors) == (4, 6, 4)
    assert run.manifest["status"] == "complete"
    assert run.manifest["counts"] == {"ok": 4, "skipped": 6, "error": 4}
    assert run.manifest["command"] == "harness run zzrun.fig1"
    assert run.manifest["run_id"] == outcome.store.path.name == "0001_t"


def test_impl_filter_and_params(fake, tmp_path):
    cfg = RunConfig(device="cpu", out_dir=tmp_path, impl_patterns=("fa*",),
                    params=parse_param_assignments(["n=3"]))
    outcome = runner.run(["zzrun"], cfg, ["x"])
    rows = load_run(outcome.store.path).rows
    assert {r["impl"] for r in rows} == {"fast"}
    assert sorted({r["params"]["i"] for r in rows}) == [0, 1, 2]
    assert outcome.store.path.name == "0001_cpu_zzrun.fig1"   # default label: hardware + ids


def test_bad_param_value_is_rejected_before_anything_runs(fake, tmp_path):
    cfg = RunConfig(device="cpu", out_dir=tmp_path, params={"n": "0"})
    with pytest.raises(HarnessError, match="positive"):
        runner.run(["zzrun.fig1"], cfg, ["x"])
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_cli_exit_code_is_1_when_a_point_failed(fake, tmp_path, capsys):
    code = cli.main(["run", "zzrun.fig1", "--device", "cpu", "--out", str(tmp_path), "--no-report"])
    assert code == 1
    out, err = capsys.readouterr()
    assert "4 ok, 6 skipped, 4 errors" in out
    # the last line counts the skips by reason, most frequent first
    last = out.strip().splitlines()[-1]
    assert last.startswith("skipped 6 of 14 rows: 2 x ") and last.count(" x ") == 3
    assert "2 x too big for this machine" in last and "zz_no_such_package_xyz" in last
    assert "Traceback" not in err                 # the failure is a row, not a crash
    assert "RuntimeError: kaput" in err           # and the progress line says so
    code = cli.main(["run", "zzrun.fig1", "--device", "cpu", "--impl", "fast,skipper",
                     "--out", str(tmp_path), "--no-report"])
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0001_cpu_zzrun.fig1", "0002_cpu_zzrun.fig1"]


def test_a_harness_error_inside_a_point_stops_the_run_and_marks_it_failed(registry_sandbox, tmp_path):
    class Stopper(FakeExperiment):
        id, paper = "zzstop.fig1", "zzstop"
        impls = ("fast",)

        def run_point(self, point, ctx):
            raise HarnessError("dataset missing")

    registry_sandbox.impl("zztest", "fast")
    registry_sandbox.experiment(Stopper)
    cfg = RunConfig(device="cpu", out_dir=tmp_path)
    with pytest.raises(HarnessError, match="dataset missing"):
        runner.run(["zzstop.fig1"], cfg, ["x"])
    (run_dir,) = list(tmp_path.iterdir())
    assert load_run(run_dir).manifest["status"] == "failed"


def test_an_interrupted_run_keeps_its_rows_and_names_the_points_it_never_measured(registry_sandbox,
                                                                                   tmp_path):
    class Interrupted(FakeExperiment):
        id, paper = "zzint.fig1", "zzint"
        impls = ("fast",)
        parameters = {"n": Param(3, positive_int, "points")}

        def run_point(self, point, ctx):
            if point.params["i"] == 1:
                raise KeyboardInterrupt          # what `timeout --signal=INT` delivers
            return super().run_point(point, ctx)

    registry_sandbox.impl("zztest", "fast")
    registry_sandbox.experiment(Interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run(["zzint.fig1"], RunConfig(device="cpu", out_dir=tmp_path), ["x"])
    (run_dir,) = list(tmp_path.iterdir())
    run = load_run(run_dir)
    assert run.manifest["status"] == "interrupted"
    assert run.manifest["counts"] == {"ok": 2, "skipped": 2, "error": 0}
    done = [r for r in run.rows if r["status"] == "ok"]
    assert {r["params"]["i"] for r in done} == {0}
    missing = sorted(r["params"]["i"] for r in run.rows if r["status"] == "skipped")
    assert missing == [1, 2]
    assert all(r["reason"] == runner.INTERRUPTED_REASON for r in run.rows if r["status"] == "skipped")


def test_make_row_for_a_skip_uses_the_experiment_metric(fake):
    cfg = RunConfig(device="cpu")
    r = runner.make_row(fake, Point("gpuonly", {"i": 0}, world_size=2), cfg, None, "skipped", "why")
    assert (r["metric"], r["unit"], r["status"], r["reason"], r["world_size"]) == \
        ("time", "s", "skipped", "why", 2)


def test_runconfig_validation():
    for kwargs in ({"device": "tpu"}, {"world_size": 0}, {"scale": 0.0}, {"scale": 2000.0},
                   {"repeats": 0}, {"warmup": -1}):
        with pytest.raises(HarnessError):
            RunConfig(**kwargs)
    cfg = RunConfig(quick=True)
    assert cfg.repeats_or(5, 2) == 2 and cfg.warmup_or(3, 1) == 1
    assert RunConfig(repeats=7, quick=True).repeats_or(5, 2) == 7
    assert RunConfig().wants_impl("anything")
    assert RunConfig(impl_patterns=("p2p*",)).wants_impl("p2p_remote")
    assert not RunConfig(impl_patterns=("p2p",)).wants_impl("p2p_remote")


@pytest.mark.parametrize("per_point", [False, True])
def test_launch_per_point_gives_every_point_fresh_ranks(tmp_path, monkeypatch, per_point):
    launched = []

    def fake_launch(fn, args, *, world_size, device, timeout_s, env=None, **_):
        launched.append([job.point.params["system"] for job in args[2]])

    monkeypatch.setattr(runner, "launch", fake_launch)
    cfg = RunConfig(device="cpu", world_size=2, quick=True, out_dir=tmp_path, launch_per_point=per_point,
                    params={"combos": "sage:UK", "steps": "oga,psa"})
    outcome = runner.run(["xgnn.fig10"], cfg, ["test"])
    assert launched == ([["oga"], ["psa"]] if per_point else [["oga", "psa"]])
    assert load_run(outcome.store.path).manifest["config"]["launch_per_point"] is per_point


def test_points_whose_ranks_need_another_environment_launch_apart(tmp_path, monkeypatch):
    """XGNN Fig. 16's PCIe points need NCCL_P2P_DISABLE=1 before NCCL starts: a launch of their own."""
    launched = []

    def fake_launch(fn, args, *, world_size, device, timeout_s, env=None, **_):
        launched.append((tuple(job.point.params["platform"] for job in args[2]), env))

    monkeypatch.setattr(runner, "launch", fake_launch)
    cfg = RunConfig(device="cpu", world_size=2, quick=True, out_dir=tmp_path,
                    params={"datasets": "TW", "systems": "xgnn,quiver"})
    runner.run(["xgnn.fig16"], cfg, ["test"])
    assert sorted(launched, key=lambda x: x[0]) == [(("nvlink", "nvlink"), {}),
                                                    (("pcie", "pcie"), {"NCCL_P2P_DISABLE": "1"})]


def test_ranks_that_exist_already_refuse_a_point_whose_environment_they_lack(monkeypatch):
    monkeypatch.delenv("NCCL_P2P_DISABLE", raising=False)
    assert "NCCL_P2P_DISABLE=1" in runner.env_refusal({"NCCL_P2P_DISABLE": "1"})
    assert runner.env_refusal({}) is None
    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    assert runner.env_refusal({"NCCL_P2P_DISABLE": "1"}) is None


def test_the_manifest_records_each_datasets_scale(registry_sandbox, tmp_path):
    class PerDataset(FakeExperiment):
        id = "zzscale.fig1"
        impls = ("fast",)

        def default_scale(self, cfg, dataset=None):
            return {"small": 1.0, "big": 0.01}[dataset]

        def points(self, cfg):
            return [Point("fast", {"dataset": d, "scale": self.scale(cfg, d), "i": 0}) for d in ("small", "big")]

    registry_sandbox.impl("zztest", "fast")
    registry_sandbox.experiment(PerDataset)
    outcome = runner.run(["zzscale.fig1"], RunConfig(device="cpu", out_dir=tmp_path), ["x"])
    assert load_run(outcome.store.path).manifest["config"]["scale"] == {"zzscale.fig1": {"big": 0.01, "small": 1.0}}
    outcome = runner.run(["zzscale.fig1"], RunConfig(device="cpu", scale=0.5, out_dir=tmp_path), ["x"])
    assert load_run(outcome.store.path).manifest["config"]["scale"] == {"zzscale.fig1": {"big": 0.5, "small": 0.5}}


def test_skip_summary_groups_and_counts_reasons_on_one_line():
    rows = [{"status": "skipped", "reason": f"reason {i}"} for i in range(6) for _ in range(6 - i)]
    rows += [{"status": "ok"}, {"status": "error", "reason": "boom"}]
    line = runner.skip_summary(rows, most=3)
    assert line == "skipped 21 of 23 rows: 6 x reason 0; 5 x reason 1; 4 x reason 2; 3 more reasons"
    assert runner.skip_summary([{"status": "ok"}]) is None


# ------------------------------------------------------------------------------ a full disk

def _disk(monkeypatch, *, full_from: int, until_reserve_freed: bool = False, manifest_too: bool = False):
    """Writes of rows fail with ENOSPC from the ``full_from``-th on (each writing half its bytes
    first); with ``until_reserve_freed`` only while the run still holds its reserved space (a disk
    that the run's own reserve frees enough of); with ``manifest_too`` the manifest's as well."""
    import errno
    import os

    from harness import store as store_mod

    real = store_mod._write_all
    seen = {"rows": 0}

    def write_all(path, fd, data):
        if path.name.startswith("rows.jsonl"):
            seen["rows"] += 1
        full = seen["rows"] >= full_from and (path.name.startswith("rows.jsonl") or manifest_too)
        if full and until_reserve_freed and not (path.parent / store_mod.SPACE_RESERVE).exists():
            full = False
        if full:
            os.write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, fd, data)

    monkeypatch.setattr(store_mod, "_write_all", write_all)


def _run_fast(tmp_path, capsys, n=4):
    code = cli.main(["run", "zzrun.fig1", "--device", "cpu", "--impl", "fast", "--param", f"n={n}",
                     "--out", str(tmp_path), "--no-report"])
    err = capsys.readouterr().err
    (run_dir,) = list(tmp_path.iterdir())
    return code, err, run_dir


def _one_line_error(err: str) -> str:
    assert "Traceback" not in err and "During handling" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ")
    return last


def test_a_disk_that_fills_mid_run_ends_it_failed_and_names_the_points_it_lost(fake, tmp_path, monkeypatch, capsys):
    _disk(monkeypatch, full_from=3)                   # point 0's two rows fit, point 1's first does not
    code, err, run_dir = _run_fast(tmp_path, capsys)
    line = _one_line_error(err)
    assert code == 2 and "No space left on device" in line
    assert "3 points could not be recorded (zzrun.fig1 fast i=1, zzrun.fig1 fast i=2, zzrun.fig1 fast i=3)" in line
    run = load_run(run_dir)                           # no torn line: no warning, the rows before the failure
    assert [(r["params"]["i"], r["status"]) for r in run.rows] == [(0, "ok"), (0, "ok")]
    assert run.manifest["status"] == "failed" and "end" in run.manifest
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "rows.jsonl"]     # no .tmp, no reserve


def test_the_runs_reserved_space_lets_it_record_the_points_it_never_measured(fake, tmp_path, monkeypatch, capsys):
    _disk(monkeypatch, full_from=3, until_reserve_freed=True)
    code, err, run_dir = _run_fast(tmp_path, capsys)
    line = _one_line_error(err)
    assert code == 2 and "the points it did not measure are skipped rows" in line
    run = load_run(run_dir)
    by_point = {}
    for r in run.rows:
        by_point.setdefault(r["params"]["i"], set()).add(r["status"])
    assert by_point == {0: {"ok"}, 1: {"ok"}, 2: {"skipped"}, 3: {"skipped"}}   # point 1's refused rows, rewritten
    unreached = [r for r in run.rows if r["status"] == "skipped"]
    assert all(r["skip_cause"] == "unreached" and "could not write its rows" in r["reason"] for r in unreached)
    assert run.manifest["status"] == "failed" and run.manifest["counts"] == {"ok": 4, "skipped": 2, "error": 0}
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "rows.jsonl"]


def test_when_not_even_the_manifest_can_be_written_the_message_says_so(fake, tmp_path, monkeypatch, capsys):
    _disk(monkeypatch, full_from=3, manifest_too=True)
    code, err, run_dir = _run_fast(tmp_path, capsys)
    line = _one_line_error(err)
    assert code == 2 and "its manifest could not be updated either (it still says running)" in line
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "rows.jsonl"]


def test_rank_0_stops_its_launch_at_the_first_row_it_cannot_write(fake, tmp_path, monkeypatch):
    """What rank 0 does inside a launch (world of one, no group needed): it stops the ranks before
    the next point and tells the runner which rows it wrote and why it stopped."""
    from harness.budget import Stop
    from harness.launcher import RankContext
    from harness.store import RunStore

    store = RunStore.create(tmp_path, "ranks", {})
    _disk(monkeypatch, full_from=2)
    jobs = [runner.Job(i, 0, Point("fast", {"i": i})) for i in range(3)]
    result = runner._rank_entry(RankContext(0, 1, 0, "cpu", "gloo"), "zzrun.fig1", RunConfig(device="cpu"),
                                jobs, store, None, Stop())
    assert "No space left on device" in result["store_error"]
    assert [(index, len(rows), written) for index, _, rows, _, written in result["done"]] == [(0, 2, 1)]
    assert len(load_run(store.path).rows) == 1


# ------------------------------------------------------------------------------ resumed campaigns

class Campaign(FakeExperiment):
    """Points whose every measurement is counted: ``flaky`` fails the first time and works the
    next, ``fast i=1`` is interrupted the first time (Ctrl-C), ``later`` cannot run in the first
    sitting (the test says so), ``nopkg`` never can, ``skipper`` skips itself."""

    id, paper = "zzcamp.fig1", "zzcamp"
    impls = ("flaky", "skipper", "later", "fast", "nopkg")
    calls: dict = {}

    def run_point(self, point, ctx):
        key = (point.impl, point.params["i"])
        n = self.calls[key] = self.calls.get(key, 0) + 1
        if point.impl == "flaky" and n == 1:
            raise RuntimeError("lost a peer")
        if key == ("fast", 1) and n == 1:
            raise KeyboardInterrupt
        if point.impl == "skipper":
            raise SkipPoint("too big for this machine")
        return super().run_point(Point("fast", point.params), ctx)[:1]

    def report(self, rows, runs):
        import pandas as pd

        from harness.artifact import ReportArtifact

        return ReportArtifact("fig1", self.title, "caption", pd.DataFrame({"impl": rows["impl"]}))


@pytest.fixture
def campaign(registry_sandbox, monkeypatch):
    for name in ("flaky", "skipper", "later", "fast"):
        registry_sandbox.impl("zztest", name)
    registry_sandbox.impl("zztest", "nopkg", needs=Needs(packages=("zz_no_such_package_xyz",)))
    Campaign.calls = {}
    monkeypatch.setenv("HARNESS_GIT_DIRTY", "0")
    return registry_sandbox.experiment(Campaign)


def test_a_resumed_run_measures_only_what_it_lacks_and_keeps_each_rows_commit(campaign, tmp_path, monkeypatch):
    real_skip = runner.impl_skip_reason
    monkeypatch.setattr(runner, "impl_skip_reason", lambda exp, point, cfg: "package 'zz_later' is not installed"
                        if point.impl == "later" else real_skip(exp, point, cfg))
    monkeypatch.setenv("HARNESS_GIT_COMMIT", "aaaa1111")
    cfg = RunConfig(device="cpu", out_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        runner.run(["zzcamp.fig1"], cfg, ["first"])
    (run_dir,) = list(tmp_path.iterdir())
    first = load_run(run_dir)
    assert first.manifest["status"] == "interrupted"
    assert {(r["impl"], r["params"]["i"]): r.get("skip_cause") for r in first.rows if r["status"] == "skipped"} == {
        ("skipper", 0): None, ("skipper", 1): None, ("later", 0): "plan", ("later", 1): "plan",
        ("nopkg", 0): "plan", ("nopkg", 1): "plan", ("fast", 1): "unreached"}

    monkeypatch.setattr(runner, "impl_skip_reason", real_skip)          # 'later' can run now
    monkeypatch.setenv("HARNESS_GIT_COMMIT", "bbbb2222")
    calls_before = dict(Campaign.calls)
    outcome = runner.run(["zzcamp.fig1"], cfg, ["second"], resume=run_dir)
    assert outcome.store.path == run_dir and len(list(tmp_path.iterdir())) == 1
    measured_now = {k: Campaign.calls[k] - calls_before.get(k, 0) for k in Campaign.calls
                    if Campaign.calls[k] > calls_before.get(k, 0)}
    assert measured_now == {("flaky", 0): 1, ("flaky", 1): 1, ("later", 0): 1, ("later", 1): 1, ("fast", 1): 1}
    run = load_run(run_dir)
    final = {(r["impl"], r["params"]["i"]): (r["status"], r["commit"]) for r in run.rows}
    assert len(run.rows) == len(final) == 10                             # one row per point
    assert final == {("flaky", 0): ("ok", "bbbb2222"), ("flaky", 1): ("ok", "bbbb2222"),
                     ("skipper", 0): ("skipped", "aaaa1111"), ("skipper", 1): ("skipped", "aaaa1111"),
                     ("later", 0): ("ok", "bbbb2222"), ("later", 1): ("ok", "bbbb2222"),
                     ("fast", 0): ("ok", "aaaa1111"), ("fast", 1): ("ok", "bbbb2222"),
                     ("nopkg", 0): ("skipped", "bbbb2222"), ("nopkg", 1): ("skipped", "bbbb2222")}
    m = run.manifest
    assert m["status"] == "complete" and m["git"]["commits"] == ["aaaa1111", "bbbb2222"] and m["git"]["dirty"] is False
    assert [s["command"] for s in m["sittings"]] == ["first", "second"]
    assert [s["status"] for s in m["sittings"]] == ["interrupted", "complete"] and m["sittings"][1]["measured"] == 5

    from harness.report import report_runs

    artifacts: dict = {}
    report_runs([run_dir], tmp_path / "rep", artifacts=artifacts)
    assert "Run 0001 mixes commits (resumed): aaaa1111 (1 rows), bbbb2222 (5 rows)" in artifacts["zzcamp.fig1"][0].notes

    calls_before = dict(Campaign.calls)                                 # a complete run: nothing left to measure
    runner.run(["zzcamp.fig1"], cfg, ["third"], resume=run_dir)
    assert Campaign.calls == calls_before and len(load_run(run_dir).rows) == 10


def test_a_run_is_resumed_only_on_its_hardware_with_its_settings(fake, tmp_path, capsys):
    cfg = RunConfig(device="cpu", out_dir=tmp_path, impl_patterns=("fast",), params={"n": "2"})
    outcome = runner.run(["zzrun.fig1"], cfg, ["x"])
    run_dir = outcome.store.path
    capsys.readouterr()
    code = cli.main(["run", "zzrun.fig1", "--device", "cpu", "--impl", "fast", "--param", "n=3", "--out",
                     str(tmp_path), "--resume", str(run_dir)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"error: cannot resume {run_dir.name} here: params {{n=2}} there, {{n=3}} here"]

    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "hardware": "4xH200"}))
    code = cli.main(["run", "zzrun.fig1", "--device", "cpu", "--impl", "fast", "--param", "n=2", "--out",
                     str(tmp_path), "--resume", str(run_dir)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"error: cannot resume {run_dir.name} here: hardware 4xH200 there, cpu here"]
    assert len(load_run(run_dir).rows) == 4 and json.loads((run_dir / "manifest.json").read_text())["status"] == \
        "complete"                                                     # refused before anything changed
