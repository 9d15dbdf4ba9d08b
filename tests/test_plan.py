"""Run plans: estimates from stored runs, --dry-run, progress with time left, --time-budget."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from harness import cli, plan, runner
from harness.config import RunConfig
from harness.errors import HarnessError
from harness.estimate import Estimator, PointTime, fmt_duration, load_history, point_key, settings_key
from harness.argtypes import positive_int
from harness.experiment import Experiment, Measurement, Param, Point
from harness.progress import Eta
from harness.report import ReportArtifact
from harness.store import load_run, withdraw_run
from harness.timing import Stats

from .conftest import REPO_ROOT

FULL = settings_key(False, None, None)
ONE_REPEAT = settings_key(False, 1, None)


# ------------------------------------------------------------------------------ synthetic stores

def write_run(root, name, hardware, start, rows, repeats=None, quick=False):
    """A run directory as the runner leaves it; ``rows``: (experiment, impl, params, world, status,
    seconds after ``start``, extra fields)."""
    path = root / name
    path.mkdir(parents=True)
    t0 = 1_700_000_000
    stamp = lambda s: time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(t0 + s))  # noqa: E731
    (path / "manifest.json").write_text(json.dumps({
        "hardware": hardware, "start": stamp(start), "status": "complete",
        "config": {"quick": quick, "repeats": repeats, "warmup": None}}))
    lines = []
    for exp_id, impl, params, world, status, at, *extra in rows:
        row = {"experiment": exp_id, "impl": impl, "params": params, "world_size": world, "status": status,
               "metric": "t", "unit": "s", "value": 1.0 if status == "ok" else None, "stats": None,
               "device": "cuda", "time": stamp(at)}
        if status != "ok":
            row["reason"] = "why"
        row.update(extra[0] if extra else {})
        lines.append(json.dumps(row))
    (path / "rows.jsonl").write_text("\n".join(lines) + "\n")
    return path


def test_a_point_took_from_the_row_before_it_to_its_last_row(tmp_path):
    write_run(tmp_path, "0001_a", "1xH200", 0, [
        ("e.t", "skip", {"i": 0}, 1, "skipped", 1),      # written at once: a boundary, not a timing
        ("e.t", "x", {"i": 0}, 1, "ok", 11),
        ("e.t", "x", {"i": 0}, 1, "ok", 11),             # a second metric of the same point
        ("e.t", "x", {"i": 1}, 1, "ok", 41),
        ("e.t", "x", {"i": 2}, 1, "error", 50),          # not a timing, but a boundary
        ("e.t", "x", {"i": 3}, 1, "ok", 52),
    ])
    times = {(t.params["i"], t.key[1]): t.seconds for t in load_history([tmp_path])}
    assert times == {(0, "x"): 10, (1, "x"): 30, (3, "x"): 2}
    (t,) = [t for t in load_history([tmp_path]) if t.params["i"] == 1]
    assert t.kind == "1xH200" and t.key == point_key("e.t", "x", 1, FULL) and t.run_id == "0001_a"


def test_a_resumed_runs_first_point_of_a_sitting_counts_from_the_sittings_start(tmp_path):
    path = write_run(tmp_path, "0001_a", "1xH200", 0, [
        ("e.t", "x", {"i": 0}, 1, "ok", 10),
        ("e.t", "x", {"i": 1}, 1, "ok", 3600 + 25),      # the next sitting began at 3600
    ])
    manifest = json.loads((path / "manifest.json").read_text())
    stamp = lambda s: time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(1_700_000_000 + s))  # noqa: E731
    manifest["sittings"] = [{"start": stamp(0)}, {"start": stamp(3600)}]
    (path / "manifest.json").write_text(json.dumps(manifest))
    times = {t.params["i"]: t.seconds for t in load_history([tmp_path])}
    assert times == {0: 10, 1: 25}


def test_withdrawn_runs_do_not_feed_estimates(tmp_path):
    write_run(tmp_path, "0001_good", "1xH200", 0, [("e.t", "x", {"i": 0}, 1, "ok", 10)])
    bad = write_run(tmp_path, "0002_bad", "1xH200", 0, [("e.t", "x", {"i": 0}, 1, "ok", 1000),
                                                       ("e.t", "x", {"i": 9}, 1, "ok", 1010)])
    est = Estimator.from_roots("1xH200", [tmp_path])
    assert est.estimate("e.t", "x", {"i": 0}, 1, FULL).seconds == pytest.approx(505)
    withdraw_run(bad, "measured by a broken build")
    est = Estimator.from_roots("1xH200", [tmp_path])
    e = est.estimate("e.t", "x", {"i": 0}, 1, FULL)
    assert e.seconds == 10 and e.source == "1xH200 history (1 run)"
    assert not est.estimate("e.t", "x", {"i": 9}, 1, FULL).known      # only the withdrawn run had it


def times(*points):
    return [PointTime(kind, point_key("e.t", impl, world, settings), params, seconds, run)
            for kind, impl, params, world, settings, seconds, run in points]


def test_same_kind_first_then_the_nearest_kind_said_as_such():
    history = times(("4xH200", "x", {"i": 0}, 1, FULL, 40.0, "0002_b"),
                    ("2xH200", "x", {"i": 0}, 1, FULL, 20.0, "0003_c"),
                    ("2xH100", "x", {"i": 0}, 1, FULL, 99.0, "0004_d"),
                    ("1xH200", "x", {"i": 1}, 1, FULL, 3.0, "0001_a"),
                    ("1xH200", "x", {"i": 1}, 1, FULL, 5.0, "0005_e"),
                    ("1xH200", "x", {"i": 1}, 1, FULL, 100.0, "0006_f"))
    est = Estimator("1xH200", history)
    same = est.estimate("e.t", "x", {"i": 1}, 1, FULL)
    assert same.seconds == 5.0 and same.source == "1xH200 history (3 runs)"       # the median
    near = est.estimate("e.t", "x", {"i": 0}, 1, FULL)
    assert near.seconds == 20.0 and near.source.startswith("estimate from 2xH200 runs")   # same GPU, closest count
    assert Estimator("1xH100", history).estimate("e.t", "x", {"i": 0}, 1, FULL).seconds == 99.0
    assert not Estimator("cpu", history).estimate("e.t", "x", {"i": 0}, 1, FULL).known   # GPUs never estimate CPUs
    assert not est.estimate("e.t", "x", {"i": 0}, 1, ONE_REPEAT).known             # other run settings
    assert not est.estimate("e.t", "x", {"i": 0}, 2, FULL).known                   # other rank count
    assert est.estimate("e.t", "y", {"i": 0}, 1, FULL).source == "no history: unknown"


def test_the_size_model_scales_one_size_and_fits_several():
    one = Estimator("1xH200", times(("1xH200", "x", {"scale": 0.5, "m": "a"}, 1, FULL, 10.0, "0007_a")))
    e = one.estimate("e.t", "x", {"scale": 1.0, "m": "a"}, 1, FULL)
    assert e.seconds == pytest.approx(20.0) and e.source.startswith("scaled x2 from scale 0.5 -> 1")
    assert not one.estimate("e.t", "x", {"scale": 1.0, "m": "b"}, 1, FULL).known   # another family
    fit = Estimator("1xH200", times(("1xH200", "x", {"scale": 1.0}, 1, FULL, 15.0, "0001_a"),
                                    ("1xH200", "x", {"scale": 2.0}, 1, FULL, 20.0, "0002_b"),
                                    ("1xH200", "x", {"scale": 4.0}, 1, FULL, 30.0, "0003_c")))
    e = fit.estimate("e.t", "x", {"scale": 8.0}, 1, FULL)
    assert e.seconds == pytest.approx(50.0) and e.source.startswith("size model fitted to 3 1xH200 points")
    ranks = Estimator("1xH200", times(("4xH200", "x", {"scale": 1.0}, 4, FULL, 10.0, "0001_a")))
    assert not ranks.estimate("e.t", "x", {"scale": 1.0}, 1, FULL).known
    split = ranks.estimate("e.t", "x", {"scale": 1.0}, 1, FULL, per_rank=True, size=lambda p, w: p["scale"] / w)
    assert split.seconds == pytest.approx(40.0) and "4 -> 1 ranks" in split.source and "4xH200" in split.source


def test_durations_read_like_a_person_would_say_them():
    assert [fmt_duration(s) for s in (None, 0.25, 42, 125, 1800, 3725)] == \
        ["unknown", "0.2 s", "42 s", "2 min 05 s", "30 min", "1 h 02 min"]


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("20m", 1200), ("1.5h", 5400), ("1h30m", 5400),
                                          ("300", 300), (" 2 m ", 120)])
def test_budget_durations(text, seconds):
    assert plan.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "20x", "1h30", "-5m", "0s", "abc"])
def test_bad_budgets_are_one_error_line(text, capsys, tmp_path):
    with pytest.raises(HarnessError):
        plan.parse_duration(text)
    assert cli.main(["run", "table5", "--device", "cpu", f"--time-budget={text}", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --time-budget")


def test_a_negative_budget_as_its_own_argument_is_one_clear_error_line(capsys, tmp_path):
    """``--time-budget -5m``: argparse took '-5m' for an option ("expected one argument")."""
    assert cli.main(["run", "table5", "--device", "cpu", "--time-budget", "-5m", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --time-budget must be more than 0 s, not '-5m'"]


def test_time_left_uses_how_the_finished_points_compared_with_their_estimates():
    eta = Eta(4, {0: 10.0, 1: 10.0, 2: None})
    assert eta.left() == (20.0, 1)
    eta.finish(0, 20.0)                  # twice as slow as estimated
    assert eta.left() == (20.0 + 20.0, 0)   # 10 s x 2, and the unknown point at the mean point time
    eta.finish(3, None)                  # a skipped point: counted, not timed
    assert eta.done == 2 and "left" in eta.text()


# ------------------------------------------------------------------------------ levels and budgets

def entry(index, costs):
    e = plan.PlannedPoint(index, None, Point("x", {"i": index}), None)
    from harness.estimate import Estimate

    e.levels = [plan.Level(Point("x", {"i": index, "lv": k}), {}, f"level {k}" if k else "",
                           Estimate(c, "test") if c is not None else plan.UNKNOWN) for k, c in enumerate(costs)]
    return e


def test_the_plan_fills_every_cell_first_and_upgrades_the_cheapest_steps_while_they_fit():
    entries = [entry(0, [10, 4, 1]), entry(1, [3, 2]), entry(2, [50, 5]), entry(3, [2])]
    plan.choose_levels(entries, 9)          # cheapest 1+2+5+2 = 10 > 9: every point at its cheapest
    assert [e.level for e in entries] == [2, 1, 1, 0]
    plan.choose_levels(entries, 14)         # +1 (point 1 to full), +3 (point 0 to level 1)
    assert [e.level for e in entries] == [1, 0, 1, 0]
    plan.choose_levels(entries, 1000)
    assert [e.level for e in entries] == [0, 0, 0, 0]
    unknown = [entry(0, [None, 4])]         # a level of unknown cost is not planned
    plan.choose_levels(unknown, 1000)
    assert unknown[0].level == 1
    bounded = entry(0, [6, None, 1])        # unknown, but a cheaper level never takes longer than a finer one
    assert bounded.cost(1) == 6 and bounded.cost(2) == 1


def test_the_first_pass_runs_cheapest_first_keeping_experiments_together_within_a_cost_band():
    a, b = object(), object()
    entries = [entry(0, [100]), entry(1, [1]), entry(2, [None]), entry(3, [5]), entry(4, [2]), entry(5, [4.5])]
    for e, exp in zip(entries, (a, a, a, a, b, b)):
        e.exp = exp
    order = [e.index for e in plan.first_pass_order(entries)]
    # bands of x4: [1, 4) a:1, b:2; [4, 16) a's unknown (the median, 4.5) and a:5, then b:4.5; then a:100
    assert order == [1, 4, 2, 3, 5, 0]


class FakeClock:
    """A clock the test advances: budgets are tested on it, never on the wall clock."""

    def __init__(self, now: float = 1_000.0):
        self.now = now
        self.starts: list[tuple[str, float]] = []      # (point label, when it started)
        self.measured: list[tuple[str, int]] = []      # (point label, timed repeats)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    from harness import budget

    fake = FakeClock()
    monkeypatch.setattr(budget, "CLOCK", fake)
    return fake


class Sleepy(Experiment):
    """Points that take ``ms`` milliseconds per repeat on the test's clock: the default budget
    level is one repeat."""

    id = "zzbudget.table1"
    title = "budget test"
    interface = "zztest"
    impls = ("a", "b")
    metric, unit = "time", "s"
    parameters = {"n": Param(3, positive_int, "points per impl"),
                  "ms": Param(50, positive_int, "milliseconds per repeat")}

    def points(self, cfg):
        for impl in self.impls:
            for i in range(self.param(cfg, "n")):
                yield Point(impl, {"i": i})

    def run_point(self, point, ctx):
        from harness import budget

        repeats = ctx.cfg.repeats_or(3)
        budget.CLOCK.starts.append((f"{self.id} {point.label()}", budget.CLOCK()))
        budget.CLOCK.measured.append((f"{self.id} {point.label()}", repeats))
        budget.CLOCK.advance(self.param(ctx.cfg, "ms") / 1000 * repeats)
        return [Measurement("time", "s", Stats.from_samples([1.0 + point.params["i"]] * repeats))]

    def report(self, rows, runs):
        import pandas as pd

        ok = rows[rows["status"] == "ok"]
        table = pd.DataFrame({"impl": ok["impl"], "i": [p["i"] for p in ok["params"]], "value": ok["value"]})
        return ReportArtifact("table1", "budget test", "caption", table, headline="sleepy headline",
                              status="measured")


@pytest.fixture
def sleepy(registry_sandbox, clock):
    registry_sandbox.impl("zztest", "a")
    registry_sandbox.impl("zztest", "b")
    return registry_sandbox.experiment(Sleepy)


def test_dry_run_lists_points_needs_and_estimates_and_runs_nothing(sleepy, tmp_path, capsys):
    write_run(tmp_path, "0001_cpu_old", "cpu", 0, [("zzbudget.table1", "a", {"i": i}, 1, "ok", 10 * (i + 1))
                                                   for i in range(3)])
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli.main(["run", "zzbudget.table1", "--device", "cpu", "--out", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == before          # no run directory
    assert "zzbudget.table1: 6 points" in out and "cpu history (1 run)" in out and "no history" in out
    assert "1 CPU rank" in out
    assert "estimate: about 30 s plus 3 points of unknown length" in out
    assert "plan: 6 points on cpu" in out


def test_the_budget_counts_from_its_start_and_keeps_a_reserve_for_the_end_and_the_report(clock):
    from harness.budget import Budget, Stop, reserve_for

    assert reserve_for(120, 2) == pytest.approx(9.6 + 6)          # 8% of 2 min, and 3 s per artifact
    assert reserve_for(10, 1) == 5.0                               # never more than half the budget
    assert reserve_for(3600, 30) == 60 + 90                        # at most 60 s besides the report
    b = Budget.begin(100.0, artifacts=2)
    assert b.text == "1 min 40 s" and b.reserve_s == 14.0 and b.left() == 86.0
    clock.advance(78)
    assert b.left() == 8.0 and not b.ended() and b.took() == 78
    assert Stop(b).due(first=True) is False and Stop(b, until=clock() - 1).due(first=True) is False
    assert Stop(b, until=clock() - 1).due(first=False) is True     # a group's share is spent
    clock.advance(8)
    assert b.ended() and not b.over() and Stop(b).due(first=True)  # the points' time is over...
    clock.advance(14)
    assert b.over()                                                # ...and then the reserve too
    assert Budget.begin(100.0, start=clock() - 95).left() == 0.0   # a start before now counts


def test_time_left_says_when_the_budget_ends_before_the_points_could_all_run(clock):
    from harness.budget import Budget

    b = Budget.begin(63.0)                                         # 52 s for points, 11 s reserve
    eta = Eta(3, {0: 512.0, 1: 52.0}, budget=b)                    # as issue 38 saw: "about 9 min 24 s left;
    assert eta.text() == "budget ends in 52 s, before the points left could all run (about 9 min 24 s)"
    eta.finish(0, 512.0)                                           # budget ends in 52 s"
    assert eta.text() == "about 52 s left; budget ends in 52 s"
    clock.advance(30)
    assert eta.text() == "budget ends in 22 s, before the points left could all run (about 52 s)"


def test_a_budget_that_fits_ends_with_every_point_at_full_fidelity(sleepy, clock, tmp_path):
    cfg = RunConfig(device="cpu", out_dir=tmp_path, time_budget_s=10.0)     # 5 s for points, 5 s reserve
    outcome = runner.run(["zzbudget.table1"], cfg, ["x"])
    assert outcome.budget.took() < 10 - outcome.budget.reserve_s
    run = load_run(outcome.store.path)
    assert [(r["impl"], r["params"]["i"]) for r in run.rows] == [(i, n) for i in "ab" for n in range(3)]
    assert all(r["status"] == "ok" and "fidelity" not in r and r["stats"]["repeats"] == 3 for r in run.rows)
    budget = run.manifest["budget"]
    assert run.manifest["status"] == "complete" and not budget["ended"]
    assert [p["planned_level"] for p in budget["points"]] == [1] * 6       # no history: cheapest first
    assert [p["measured_level"] for p in budget["points"]] == [0] * 6      # then refined
    assert len(clock.starts) == 12                                         # each point twice, no more


def test_the_budget_stops_the_run_cleanly_and_names_the_points_it_did_not_reach(sleepy, clock, tmp_path):
    cfg = RunConfig(device="cpu", out_dir=tmp_path, time_budget_s=10.0, params={"ms": "1500"})
    outcome = runner.run(["zzbudget.table1"], cfg, ["x"])          # returns: the budget is not an error
    assert outcome.budget_ended
    points_end = outcome.budget.points_end
    assert [t for _, t in clock.starts] == [1000.0, 1001.5, 1003.0, 1004.5]   # none started after the points' time
    assert all(t < points_end for _, t in clock.starts)
    rows = load_run(outcome.store.path).rows
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 4 and all(r["fidelity"]["level"] == 1 and r["fidelity"]["note"] == "1 timed repeat" for r in ok)
    assert all(r["stats"]["repeats"] == 1 for r in ok)
    missing = [r for r in rows if r["status"] == "skipped"]
    assert len(missing) == 2 and all(r["reason"] == outcome.budget.unreached_reason for r in missing)
    assert all(r["skip_cause"] == "unreached" for r in missing)
    assert len(ok) + len(missing) == 6                            # every point has its row, once
    run = load_run(outcome.store.path)
    assert run.manifest["status"] == "interrupted" and run.manifest["budget"]["ended"]


def test_a_budgeted_cli_run_writes_its_report_and_says_where_everything_is(sleepy, clock, tmp_path, capsys):
    code = cli.main(["run", "zzbudget.table1", "--device", "cpu", "--out", str(tmp_path),
                     "--time-budget", "9s", "--param", "ms=400"])
    assert code == 0
    out, err = capsys.readouterr()
    (run_dir,) = list(tmp_path.iterdir())
    assert (run_dir / "report" / "zzbudget" / "table1.md").exists()
    report = (run_dir / "report" / "zzbudget" / "table1.md").read_text()
    assert "Reduced fidelity (time budget" in report and "1 timed repeat" in report
    lines = out.splitlines()
    assert f"rows: {run_dir / 'rows.jsonl'}" in "\n".join(lines)
    assert f"report: {run_dir / 'report'}" in lines
    assert any(ln.startswith("  zzbudget.table1: measured: sleepy headline") for ln in lines)
    assert "budget 9.0 s" in err and "the time budget of 9.0 s ended" in err
    assert "[1/6]" in err and "budget ends in" in err
    assert "time budget 9.0 s: took 5 s; it ended before every point was measured at full fidelity" in out


def test_a_budget_spent_before_the_report_leaves_it_unwritten_and_says_how_to_write_it(sleepy, clock, tmp_path,
                                                                                     capsys):
    """The one point that started ran past the whole budget (no alarm on an injected clock): the
    run ends there, its rows kept, and no artifact is written after the budget's end."""
    code = cli.main(["run", "zzbudget.table1", "--device", "cpu", "--out", str(tmp_path),
                     "--time-budget", "9s", "--param", "ms=10000"])
    out = capsys.readouterr().out
    (run_dir,) = list(tmp_path.iterdir())
    assert code == 0 and len(clock.measured) == 1
    assert not (run_dir / "report" / "zzbudget" / "table1.md").exists()
    assert f"  not written, the time budget having ended: zzbudget.table1 (`python -m harness report {run_dir}` " \
           "writes them)" in out


def test_refined_rows_replace_the_coarse_ones_in_the_plans_order(sleepy, tmp_path):
    write_run(tmp_path, "0001_cpu_old", "cpu", 0,
              [("zzbudget.table1", impl, {"i": i}, 1, "ok", 1) for impl in "ab" for i in range(3)], repeats=1)
    cfg = RunConfig(device="cpu", out_dir=tmp_path, time_budget_s=10.0)
    outcome = runner.run(["zzbudget.table1"], cfg, ["x"])
    run = load_run(outcome.store.path)
    assert [(r["impl"], r["params"]["i"], "fidelity" in r) for r in run.rows] == \
        [(i, n, False) for i in "ab" for n in range(3)]


def test_a_refinement_that_fails_keeps_the_coarse_measurement(registry_sandbox, clock, tmp_path):
    class Fragile(Sleepy):
        id = "zzfragile.table1"

        def run_point(self, point, ctx):
            if ctx.cfg.repeats is None and point.impl == "b":
                raise RuntimeError("out of memory at full fidelity")
            return super().run_point(point, ctx)

    registry_sandbox.impl("zztest", "a")
    registry_sandbox.impl("zztest", "b")
    registry_sandbox.experiment(Fragile)
    outcome = runner.run(["zzfragile.table1"], RunConfig(device="cpu", out_dir=tmp_path, time_budget_s=10.0), ["x"])
    run = load_run(outcome.store.path)
    assert [r["status"] for r in run.rows] == ["ok"] * 6
    assert [("fidelity" in r) for r in run.rows] == [False] * 3 + [True] * 3      # b stays at one repeat
    failed = run.manifest["budget"]["refinements_failed"]
    assert len(failed) == 3 and all("out of memory at full fidelity" in f for f in failed)


class Stubborn(Sleepy):
    """A second table whose points take 2 s and have no cheaper level (as XGNN Table 5's at two
    epochs)."""

    id = "zzbudget.table2"
    impls = ("a",)

    def cheaper(self, point, level, cfg):
        return None

    def run_point(self, point, ctx):
        return super().run_point(point, replace(ctx, cfg=replace(ctx.cfg, repeats=1, params={"ms": "2000"})))


def test_a_table_whose_points_were_underestimated_cannot_take_the_time_of_the_next(sleepy, registry_sandbox,
                                                                                    clock, tmp_path):
    """No estimates at all (as on a CPU without history): the first table's points take 8 s each, so
    measured one after the other they would use the whole 46 s and leave the second table none. Each
    table's group stops at its share of the time left, and a later round takes up what a share cut
    short: the second table fills, the first gets what remains, and no point starts after the time
    for points is over."""
    registry_sandbox.experiment(Stubborn)
    cfg = RunConfig(device="cpu", out_dir=tmp_path, time_budget_s=60.0, params={"ms": "8000"})
    outcome = runner.run(["zzbudget.table1", "zzbudget.table2"], cfg, ["x"])
    budget = outcome.budget
    assert budget.reserve_s == 14.0 and budget.points_end == 1046.0
    assert all(t < budget.points_end for _, t in clock.starts)
    run = load_run(outcome.store.path)
    ok = {(r["experiment"], r["impl"], r["params"]["i"]) for r in run.rows if r["status"] == "ok"}
    assert {(e, i) for e, _, i in ok if e == "zzbudget.table2"} == {("zzbudget.table2", i) for i in range(3)}
    assert len([p for p in ok if p[0] == "zzbudget.table1"]) >= 4
    assert len(run.rows) == 9 and len({(r["experiment"], r["impl"], r["params"]["i"]) for r in run.rows}) == 9
    assert outcome.budget_ended and run.manifest["status"] == "interrupted"


def test_a_campaign_reaches_a_complete_set_over_sittings_with_no_point_measured_twice(sleepy, clock, tmp_path,
                                                                                      capsys):
    """Sitting 1's budget ends with two points unreached; sitting 2 (--resume, a budget again)
    measures those first, then refines while its time lasts; sitting 3 (no budget) measures at
    full fidelity what is still reduced. No point is measured twice at one level."""
    cfg = RunConfig(device="cpu", out_dir=tmp_path, time_budget_s=10.0, params={"ms": "1500"})
    first = runner.run(["zzbudget.table1"], cfg, ["first"])
    run_dir = first.store.path
    unreached = {f"zzbudget.table1 {r['impl']} i={r['params']['i']}" for r in load_run(run_dir).rows
                 if r["status"] == "skipped"}
    assert len(unreached) == 2 and len(clock.measured) == 4
    assert cli.main(["run", "zzbudget.table1", "--device", "cpu", "--param", "ms=1500", "--out", str(tmp_path),
                     "--time-budget", "10s", "--resume", str(run_dir), "--dry-run"]) == 0
    assert (f"resuming {run_dir}: 0 points already measured, 2 to measure, 4 stored at reduced fidelity "
            "(refined while time remains)") in " ".join(capsys.readouterr().out.split())
    assert len(clock.measured) == 4                       # a dry run measures nothing

    clock.advance(3600)                                   # an hour later
    second = runner.run(["zzbudget.table1"], replace(cfg, started_at=None), ["second"], resume=run_dir)
    assert {label for label, _ in clock.measured[4:6]} == unreached               # what it lacked, first
    assert all(repeats == 1 for _, repeats in clock.measured[4:6])
    assert all(t < second.budget.points_end for _, t in clock.starts[4:])
    rows = load_run(run_dir).rows
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)

    runner.run(["zzbudget.table1"], replace(cfg, time_budget_s=None), ["third"], resume=run_dir)
    run = load_run(run_dir)
    assert len(run.rows) == 6 and all(r["status"] == "ok" and "fidelity" not in r for r in run.rows)
    assert len(clock.measured) == len(set(clock.measured))          # no point measured twice at one level
    assert {label for label, repeats in clock.measured if repeats == 3} == \
        {f"zzbudget.table1 {i} i={n}" for i in "ab" for n in range(3)}
    assert [s["status"] for s in run.manifest["sittings"]] == ["interrupted", "complete", "complete"]
    assert run.manifest["status"] == "complete"


# ------------------------------------------------------------------------------ the experiments' levels

def test_wholegraph_training_levels_cap_host_epochs_then_every_epoch():
    from harness import datasets, registry

    exp = registry.get_experiment("wholegraph.table5")
    cfg = RunConfig(device="cuda")
    params = {"dataset": "ogbn-products", "scale": 1.0, "model": "gcn", "backend": "pyg", "layers": 3,
              "hidden": 256, "fanouts": [30, 30, 30], "batch_size": 512, "epochs": 2}
    host, ours = Point("pyg_host", params, 1), Point("wholegraph", {**params, "backend": "native"}, 1)
    one = exp.cheaper(host, 1, cfg)
    assert one.point.params == {**params, "epochs": 1, "max_batches": 16}
    assert one.cfg == {"params": {"eval_nodes": "2048"}} and "2048 labelled nodes" in one.note
    assert "params" not in exp.cheaper(host, 1, RunConfig(device="cuda", params={"eval_nodes": "1000"})).cfg
    assert exp.cheaper(ours, 1, cfg).point.params == {**ours.params, "epochs": 1}
    assert exp.cheaper(ours, 2, cfg).point.params == {**ours.params, "epochs": 1, "max_batches": 20}
    assert exp.cheaper(host, 2, cfg).point.params["max_batches"] == 8
    assert exp.cheaper(host, 3, cfg) is None
    full = datasets.epoch_batches("ogbn-products", 1.0, 512, 1)
    assert full == math.ceil(196615 / 512)
    assert exp.cost_size(host, cfg) == 2 * full and exp.cost_size(one.point, cfg) == 16
    assert exp.cost_size(Point("wholegraph", ours.params, 4), cfg) == 2 * math.ceil(196615 / 4 / 512)
    assert exp.memory_need(ours, cfg)["gpu"] == pytest.approx(datasets.stored_bytes("ogbn-products", 1.0))
    assert "host" in exp.memory_need(host, cfg)


def test_xgnn_training_keeps_the_synced_epochs_and_one_free_one():
    from harness import registry

    exp = registry.get_experiment("xgnn.table5")
    cfg = RunConfig(device="cuda")              # the timed-epoch rule's epochs, some of them synced
    point = exp.point("xgnn", "twitter-2010", "gcn", 1, cfg)
    synced = point.params["synced_epochs"]
    assert point.params["epochs"] > synced + 1
    assert exp.cheaper(point, 1, cfg).point.params == {**point.params, "epochs": synced + 1}
    assert exp.cheaper(point, 2, cfg) is None
    assert exp.cheaper(Point(point.impl, {**point.params, "epochs": synced + 1}, 1), 1, cfg) is None


def test_table5_dry_run_lists_every_point_and_the_estimate(py_env):
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "table5", "--device", "cpu", "--dry-run"],
                          cwd=REPO_ROOT, env=py_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "plan: 54 points on cpu" in proc.stdout and "estimate:" in proc.stdout
