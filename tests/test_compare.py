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
              row("p2p", None, params=P(8), status="error", reason="boom")]
    a, b = _runs(tmp_path, a_rows, [row("p2p", None, params=P(8), status="skipped", reason="x")])
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
    for code in ("0  no regression", "1  a regression", "2  bad input", "4  --reference found no run"):
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
