"""compare A B: ratio per matching point, regressions flagged beyond noise, exit code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import cli
from harness.compare import compare_sets, format_comparison, load_result_set, point_key
from harness.errors import HarnessError

from .conftest import REPO_ROOT
from .helpers import CPU_MANIFEST, row, write_run


def P(size):  # noqa: N802 - a point's params
    return {"paper_size_gb": float(size), "size_gb": float(size)}


def baseline_rows():
    return [
        row("local", 1.0, params=P(8), spread=0.05),
        row("local", 2.0, params=P(16), spread=0.05),
        row("gather", 100.0, params=P(8), metric="bandwidth", unit="GB/s", better="higher", spread=2.0),
        row("um", None, params=P(8), status="skipped", reason="needs CUDA"),
    ]


def _runs(tmp_path, a_rows, b_rows):
    a = write_run(tmp_path, "0001_a", CPU_MANIFEST, a_rows)
    b = write_run(tmp_path, "0002_b", CPU_MANIFEST, b_rows)
    return a, b


def _compare(a, b, threshold=0.10):
    return compare_sets(load_result_set(a), load_result_set(b), threshold)


def test_identical_sets_exit_zero(tmp_path, capsys):
    a, b = _runs(tmp_path, baseline_rows(), baseline_rows())
    c = _compare(a, b)
    assert not c.regressions and not c.improvements and not c.only_a and not c.only_b
    assert len(c.unchanged) == 3
    assert [k[1] for k, _ in c.not_comparable] == ["um"]     # skipped points are listed apart
    assert all(ch.worse_factor == 1.0 for ch in c.unchanged)
    assert cli.main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "0 regressions" in out and "REGRESSIONS" not in out


def test_a_2x_slower_point_with_separate_ranges_is_a_regression(tmp_path, capsys):
    b_rows = baseline_rows()
    b_rows[1] = row("local", 4.0, params=P(16), spread=0.05)   # 2.0 -> 4.0 us
    a, b = _runs(tmp_path, baseline_rows(), b_rows)
    c = _compare(a, b)
    assert len(c.regressions) == 1
    reg = c.regressions[0]
    assert reg.key[1] == "local" and '"paper_size_gb": 16.0' in reg.key[2]
    assert reg.worse_factor == pytest.approx(2.0) and reg.significant
    assert cli.main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSIONS (1)" in out and "2.000x" in out and "local" in out
    assert "1 regressions" in out


def test_compare_command_exits_1_and_names_the_regression(tmp_path, py_env):
    b_rows = baseline_rows()
    b_rows[0] = row("local", 2.0, params=P(8), spread=0.05)
    a, b = _runs(tmp_path, baseline_rows(), b_rows)
    proc = subprocess.run([sys.executable, "-m", "harness", "compare", str(a), str(b)],
                          cwd=REPO_ROOT, env=py_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    block = proc.stdout.split("REGRESSIONS (1):", 1)[1].split("\n\n")[0]
    assert "wholegraph.table1 local" in block and '"paper_size_gb": 8.0' in block and "latency" in block
    assert "1 -> 2 us" in block
    assert proc.stderr == ""


def test_a_2x_change_within_overlapping_ranges_is_not_a_regression(tmp_path):
    a_rows = [row("local", 1.0, params=P(8), spread=0.9)]        # p10-p90: 0.1 .. 1.9
    b_rows = [row("local", 2.0, params=P(8), spread=0.5)]        # p10-p90: 1.5 .. 2.5
    a, b = _runs(tmp_path, a_rows, b_rows)
    c = _compare(a, b)
    assert not c.regressions and len(c.unchanged) == 1
    ch = c.unchanged[0]
    assert ch.worse_factor == pytest.approx(2.0) and not ch.significant
    assert "within noise" in format_comparison(c)


def test_below_the_threshold_is_not_a_regression(tmp_path):
    a, b = _runs(tmp_path, [row("local", 1.0, params=P(8))], [row("local", 1.05, params=P(8))])
    assert not _compare(a, b, threshold=0.10).regressions       # 5% < 10%
    assert len(_compare(a, b, threshold=0.01).regressions) == 1  # 5% > 1%


def test_higher_is_better_metric_halving_is_a_regression(tmp_path):
    b_rows = baseline_rows()
    b_rows[2] = row("gather", 50.0, params=P(8), metric="bandwidth", unit="GB/s", better="higher",
                    spread=2.0)
    a, b = _runs(tmp_path, baseline_rows(), b_rows)
    c = _compare(a, b)
    assert [ch.key[1] for ch in c.regressions] == ["gather"]
    assert c.regressions[0].worse_factor == pytest.approx(2.0)


def test_higher_is_better_metric_doubling_is_an_improvement(tmp_path):
    b_rows = baseline_rows()
    b_rows[2] = row("gather", 200.0, params=P(8), metric="bandwidth", unit="GB/s", better="higher",
                    spread=2.0)
    b_rows[0] = row("local", 0.5, params=P(8), spread=0.05)    # faster latency: also better
    a, b = _runs(tmp_path, baseline_rows(), b_rows)
    c = _compare(a, b)
    assert not c.regressions
    assert sorted(ch.key[1] for ch in c.improvements) == ["gather", "local"]
    assert all(ch.worse_factor == pytest.approx(0.5) for ch in c.improvements)


def test_points_only_in_one_set_are_listed_and_a_lost_measurement_fails(tmp_path, capsys):
    a_rows = baseline_rows() + [row("local", 3.0, params=P(32))]
    b_rows = baseline_rows() + [row("local", 5.0, params=P(64))]
    a, b = _runs(tmp_path, a_rows, b_rows)
    c = _compare(a, b)
    assert [(k[2], why) for k, why in c.lost] == [(point_key(a_rows[-1])[2], "missing in B")]
    assert [k[2] for k in c.only_b] == [point_key(b_rows[-1])[2]]
    assert not c.only_a and not c.regressions
    assert cli.main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "LOST: measured in A, skipped, failed or missing in B (1)" in out and "only in B (1)" in out
    assert '"paper_size_gb": 32.0' in out and '"paper_size_gb": 64.0' in out
    assert "0 regressions, 1 lost" in out
    assert cli.main(["compare", str(a), str(b), "--allow-missing"]) == 0
    assert "1 lost points allowed (--allow-missing)" in capsys.readouterr().out


def test_a_candidate_that_skipped_or_failed_every_point_fails(tmp_path, capsys):
    skipped = [dict(r, status="skipped", value=None, stats=None, reason="needs CUDA") for r in baseline_rows()]
    skipped[1] = dict(skipped[1], status="error", reason="RuntimeError: boom")
    a, b = _runs(tmp_path, baseline_rows(), skipped)
    c = _compare(a, b)
    assert not c.regressions and not c.unchanged
    assert sorted(why for _, why in c.lost) == ["B error: RuntimeError: boom", "B skipped: needs CUDA",
                                                "B skipped: needs CUDA"]
    assert [k[1] for k, _ in c.not_comparable] == ["um"]        # skipped in both: not a loss
    assert cli.main(["compare", str(a), str(b)]) == 1
    assert "3 lost" in capsys.readouterr().out


def test_a_point_a_did_not_measure_is_not_lost(tmp_path):
    a_rows = [row("um", None, params=P(8), status="skipped", reason="needs CUDA"),
              row("p2p", None, params=P(8), status="error", reason="boom"), row("local", 1.0, params=P(8))]
    a, b = _runs(tmp_path, a_rows, [row("p2p", None, params=P(8), status="skipped", reason="x"),
                                    row("local", 1.0, params=P(8))])
    c = _compare(a, b)
    assert not c.lost and [k[1] for k in c.only_a] == ["um"]
    assert cli.main(["compare", str(a), str(b)]) == 0


def test_reference_without_a_run_of_this_hardware_has_its_own_exit_code(tmp_path, py_env):
    from .helpers import H200_MANIFEST

    root = tmp_path / "results"
    write_run(root, "0001_h200", H200_MANIFEST, baseline_rows())
    cand = write_run(tmp_path / "cand", "0001_cpu", CPU_MANIFEST, baseline_rows())
    proc = subprocess.run([sys.executable, "-m", "harness", "compare", "--reference", str(root), str(cand)],
                          cwd=REPO_ROOT, env=py_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: no reference run under")
    assert "hardware cpu" in proc.stderr
    write_run(root, "0002_cpu", CPU_MANIFEST, baseline_rows())
    assert cli.main(["compare", "--reference", str(root), str(cand)]) == 0
    from harness.store import withdraw_run

    withdraw_run(root / "0002_cpu", "its numbers were wrong")        # a withdrawn run is no reference
    assert cli.main(["compare", "--reference", str(root), str(cand)]) == 4


def test_compare_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    out = capsys.readouterr().out
    for code in ("0  no regression", "1  a regression", "2  bad input", "4  --reference found no complete run"):
        assert code in out


def test_world_size_and_device_are_part_of_the_point(tmp_path):
    a, b = _runs(tmp_path, [row("local", 1.0, params=P(8), world_size=1)],
                 [row("local", 9.0, params=P(8), world_size=2)])
    c = _compare(a, b)
    assert not c.regressions and len(c.lost) == 1 and len(c.only_b) == 1


def test_a_folder_of_runs_later_runs_win(tmp_path):
    folder = tmp_path / "set"
    write_run(folder, "0001_old", CPU_MANIFEST, [row("local", 9.0, params=P(8))])
    write_run(folder, "0002_new", CPU_MANIFEST, [row("local", 1.0, params=P(8))])
    (rows,) = load_result_set(folder).values()
    assert rows["value"] == 1.0
    with pytest.raises(HarnessError, match="no run directory"):
        load_result_set(tmp_path / "empty_or_missing")


def test_missing_stats_count_as_significant(tmp_path):
    a, b = _runs(tmp_path, [row("local", 1.0, params=P(8), stats={})],
                 [row("local", 2.0, params=P(8), stats={})])
    assert len(_compare(a, b).regressions) == 1


def test_negative_threshold_is_an_error(tmp_path, capsys):
    a, b = _runs(tmp_path, baseline_rows(), baseline_rows())
    code = cli.main(["compare", str(a), str(b), "--threshold", "-1"])
    _, err = capsys.readouterr()
    assert code != 0 and err.startswith("error: ") and "threshold" in err


# --- what a baseline must be ------------------------------------------------------------------

SETTINGS = {"hardware": "2xH200", "experiments": ["wholegraph.gather"],
            "config": {"impls": [], "params": {}, "scale": {"wholegraph.gather": 1.0}, "world_size": None,
                       "quick": False, "device": "cuda"}}


def _manifest(status="complete", **config):
    return {**CPU_MANIFEST, **SETTINGS, "status": status, "config": {**SETTINGS["config"], **config}}


def _refusal(capsys, a, b, *more) -> str:
    assert cli.main(["compare", str(a), str(b), *more]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and err.count("\n") == 1 and "REGRESSIONS" not in out
    return err


def test_a_baseline_that_measured_nothing_is_refused(tmp_path, capsys):
    """An empty run (crashed before its first point) would let any candidate pass."""
    a = write_run(tmp_path, "0001_empty", _manifest(), [])
    b = write_run(tmp_path, "0002_b", _manifest(), [row("local", 2.0, params=P(8))])
    assert "0001_empty) is no baseline: it measured nothing (0 rows, none ok)" in _refusal(capsys, a, b)
    skipped = write_run(tmp_path, "0003_skipped", _manifest(), [row("um", None, params=P(8), status="skipped",
                                                                     reason="needs CUDA")])
    assert "it measured nothing (1 rows, none ok)" in _refusal(capsys, skipped, b)


@pytest.mark.parametrize("status", ["failed", "interrupted", "running"])
def test_a_baseline_that_did_not_complete_is_refused(tmp_path, capsys, status):
    a = write_run(tmp_path, "0001_a", _manifest(status=status), baseline_rows())
    b = write_run(tmp_path, "0002_b", _manifest(), baseline_rows())
    want = "abandoned" if status == "running" else status      # a running run whose process is gone
    assert f"0001_a is {want}, not complete" in _refusal(capsys, a, b)


@pytest.mark.parametrize("field,change,named", [
    ("hardware", {"hardware": "cpu"}, "hardware: A 2xH200, B cpu"),
    ("experiments", {"experiments": ["wholegraph.gather", "wholegraph.fig8"]},
     "experiments: A [\"wholegraph.gather\"], B [\"wholegraph.fig8\", \"wholegraph.gather\"]"),
    ("impls", {"impls": ["p2p*"]}, "implementations: A all, B [\"p2p*\"]"),
    ("params", {"params": {"row_bytes": 512}}, "parameters: A none, B {\"row_bytes\": 512}"),
    ("scale", {"scale": {"wholegraph.gather": 0.5}},
     "scale: A {\"wholegraph.gather\": 1.0}, B {\"wholegraph.gather\": 0.5}"),
    ("world_size", {"world_size": 4}, "world size: A default, B 4"),
    ("quick", {"quick": True}, "quick: A False, B True"),
])
def test_a_baseline_of_other_settings_is_refused_naming_what_differs(tmp_path, capsys, field, change, named):
    top = {k: v for k, v in change.items() if k in ("hardware", "experiments")}
    b_manifest = {**_manifest(**{k: v for k, v in change.items() if k not in top}), **top}
    a = write_run(tmp_path, "0001_a", _manifest(), baseline_rows())
    b = write_run(tmp_path, "0002_b", b_manifest, baseline_rows())
    err = _refusal(capsys, a, b)
    assert named in err and "different settings" in err
    assert err.count(", B ") == 1                                  # only what differs is named
    assert cli.main(["compare", str(a), str(b), "--allow-mismatch"]) == 0
    assert f"settings differ (--allow-mismatch): {named}" in capsys.readouterr().out


def test_every_difference_is_named_at_once(tmp_path, capsys):
    a = write_run(tmp_path, "0001_a", _manifest(), baseline_rows())
    b = write_run(tmp_path, "0002_b", {**_manifest(quick=True, world_size=2), "hardware": "4xH200"}, baseline_rows())
    err = _refusal(capsys, a, b)
    assert "hardware: A 2xH200, B 4xH200" in err and "world size: A default, B 2" in err and "quick: A False" in err


@pytest.mark.parametrize("value", [0.0, -1.0])
@pytest.mark.parametrize("side", ["A", "B"])
def test_a_time_or_rate_of_zero_or_below_is_an_error(tmp_path, capsys, value, side):
    """18 rows set to 0 used to pass as 'not comparable'."""
    bad = baseline_rows()
    bad[0] = row("local", value, params=P(8), spread=0.0)                                 # a latency in us
    bad[2] = row("gather", value, params=P(8), metric="bandwidth", unit="GB/s", better="higher")
    a, b = _runs(tmp_path, bad if side == "A" else baseline_rows(), bad if side == "B" else baseline_rows())
    c = _compare(a, b)
    assert sorted(k[1] for k, _ in c.invalid) == ["gather", "local"] and c.failed
    assert all(why.startswith(f"{side} {value:g} ") and "must be > 0" in why for _, why in c.invalid)
    if side == "B":                                    # a baseline with a bad row is still a baseline
        assert cli.main(["compare", str(a), str(b)]) == 1
        out = capsys.readouterr().out
        assert "INVALID: an ok time or rate of 0 or below (2):" in out and "0 regressions, 0 lost, 2 invalid" in out


def test_a_zero_that_is_not_a_time_stays_not_comparable(tmp_path):
    a, b = _runs(tmp_path, [row("local", 0.0, params=P(8), metric="loss", unit="", better="lower"),
                            row("local", 1.0, params=P(16))],
                 [row("local", 0.0, params=P(8), metric="loss", unit="", better="lower"),
                  row("local", 1.0, params=P(16))])
    c = _compare(a, b)
    assert not c.invalid and [k[3] for k, _ in c.not_comparable] == ["loss"] and not c.failed


def _ref(root, name, manifest, rows):
    return write_run(root, name, manifest, rows)


def test_reference_is_the_newest_complete_run_of_the_same_settings(tmp_path, capsys):
    """The newest run of the hardware used to be chosen whatever its status, rows and settings."""
    root = tmp_path / "results"
    good = _ref(root, "0006_gather", _manifest(), baseline_rows())
    _ref(root, "0007_crashed", _manifest(status="failed"), [])                      # empty and failed
    _ref(root, "0008_empty", _manifest(), [row("um", None, params=P(8), status="skipped", reason="x")])
    _ref(root, "0089_other", _manifest(params={"row_bytes": 512}), baseline_rows())  # other settings
    _ref(root, "0090_quick", _manifest(quick=True), baseline_rows())
    slow = baseline_rows()
    slow[1] = row("local", 4.0, params=P(16), spread=0.05)                          # 2x slower
    cand = write_run(tmp_path / "ci", "0001_ci", _manifest(), slow)
    from harness.compare import find_reference

    assert find_reference(root, cand) == good
    assert cli.main(["compare", "--reference", str(root), str(cand)]) == 1         # the 2x regression is seen
    out = capsys.readouterr().out
    assert f"reference: {good}" in out and "REGRESSIONS (1)" in out
    copy = write_run(tmp_path / "copy", "0001_copy", _manifest(), baseline_rows())   # an identical copy passes
    assert cli.main(["compare", "--reference", str(root), str(copy)]) == 0


def test_no_complete_reference_of_the_settings_says_which_runs_were_passed_over(tmp_path, capsys):
    root = tmp_path / "results"
    _ref(root, "0007_crashed", _manifest(status="failed"), [])
    _ref(root, "0089_other", _manifest(params={"row_bytes": 512}), baseline_rows())
    cand = write_run(tmp_path / "ci", "0001_ci", _manifest(), baseline_rows())
    assert cli.main(["compare", "--reference", str(root), str(cand)]) == 4
    err = capsys.readouterr().err
    assert "passed over: 0089_other (parameters: A {\"row_bytes\": 512}, B none)" in err
    assert "0007_crashed (0007_crashed is failed, not complete; it measured nothing (0 rows, none ok))" in err
