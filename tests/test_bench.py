"""The CPU regression check (harness/bench.py): its decision rule, its choice of base, and the
whole check on the real benchmark suite with a slowdown injected into a benchmarked function."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness import bench
from harness.errors import HarnessError

from .conftest import REPO_ROOT


def _rounds(rng, median_s: float, noise: float, n: int = 5) -> list[float]:
    """Round times as a loaded machine gives them: the true time plus a positive, skewed delay."""
    return list(median_s * (1 + rng.exponential(noise, n)))


def test_a_steady_slowdown_of_1_5x_is_flagged_and_unchanged_code_is_not():
    rng = np.random.default_rng(0)
    flagged_slow = flagged_same = 0
    trials = 300
    for _ in range(trials):
        base = _rounds(rng, 1e-3, 0.08)
        slow = _rounds(rng, 1.5e-3, 0.08)
        same = _rounds(rng, 1e-3, 0.08)
        flagged_slow += bench.judge({"b": base}, {"b": slow})[0].regressed
        flagged_same += bench.judge({"b": base}, {"b": same})[0].regressed
    assert flagged_slow == trials
    assert flagged_same == 0


def test_both_the_ratio_and_the_significance_are_needed():
    base = [1.0, 1.0, 1.0, 1.0, 1.0]
    (small,) = bench.judge({"b": base}, {"b": [1.1] * 5})             # significant, but 1.1x
    assert small.p_slower < 0.05 and not small.regressed
    (noisy,) = bench.judge({"b": base}, {"b": [0.9, 1.0, 3.0, 3.0, 0.95]})   # 3x twice, not steady
    assert noisy.ratio < 1.25 or noisy.p_slower >= 0.05
    assert not noisy.regressed
    (faster,) = bench.judge({"b": base}, {"b": [0.5] * 5})
    assert faster.improved and not faster.regressed and "improved" in faster.describe()
    assert bench.judge({"only_base": base}, {"b": base}) == []        # compared where both ran


def test_bad_threshold_or_alpha_is_an_error():
    with pytest.raises(HarnessError, match="threshold"):
        bench.judge({}, {}, threshold=1.0)
    with pytest.raises(HarnessError, match="alpha"):
        bench.judge({}, {}, alpha=1.5)


def _benchmark_results_unasserted(path: Path) -> list[str]:
    """Benchmarks in ``path`` whose measured call's result no assert reads: under
    --benchmark-disable (how the suite runs them) such a benchmark checks nothing."""
    import ast

    unasserted = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")
                and "benchmark" in [a.arg for a in fn.args.args]):
            continue
        bound = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = ast.unparse(node.value.func)
                if callee in ("benchmark", "benchmark.pedantic"):
                    bound |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        asserted = {n.id for node in ast.walk(fn) if isinstance(node, ast.Assert)
                    for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        if not bound & asserted:
            unasserted.append(fn.name)
    return unasserted


def test_every_benchmark_asserts_what_its_measured_call_returned():
    files = sorted((REPO_ROOT / "tests" / "benchmarks").glob("test_*.py"))
    assert files
    assert {f.name: _benchmark_results_unasserted(f) for f in files} == {f.name: [] for f in files}


def test_the_assert_rule_catches_a_benchmark_that_only_runs(tmp_path):
    bench_file = tmp_path / "test_x.py"
    bench_file.write_text("def test_runs(benchmark):\n    benchmark(len, [1])\n\n"
                          "def test_unread(benchmark):\n    n = benchmark(len, [1])\n    assert True\n\n"
                          "def test_checked(benchmark):\n    n = benchmark.pedantic(len, args=([1],))\n    assert n == 1\n")
    assert _benchmark_results_unasserted(bench_file) == ["test_runs", "test_unread"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def toy_repo(tmp_path):
    repo = tmp_path / "toy"
    (repo / "harness").mkdir(parents=True)
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "harness" / "a.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    (repo / "harness" / "a.py").write_text("x = 2\n")
    _git(repo, "commit", "-qam", "two")
    return repo


def test_the_base_is_the_merge_base_or_on_main_its_first_parent(toy_repo):
    one, two = _git(toy_repo, "rev-parse", "HEAD^1"), _git(toy_repo, "rev-parse", "HEAD")
    assert bench.resolve_base(toy_repo, None) == (one, "HEAD is on main: its first parent")
    (toy_repo / "harness" / "a.py").write_text("x = 3\n")                      # uncommitted code
    assert bench.resolve_base(toy_repo, None) == (two, "HEAD, on main: this tree's uncommitted changes")
    _git(toy_repo, "checkout", "-qb", "feature")
    _git(toy_repo, "commit", "-qam", "three")
    assert bench.resolve_base(toy_repo, None) == (two, "the merge base of HEAD with main")
    assert bench.resolve_base(toy_repo, "HEAD~2")[0] == one
    with pytest.raises(HarnessError, match="no such revision"):
        bench.resolve_base(toy_repo, "nope")


def test_nothing_to_compare_with_passes_and_says_why(toy_repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = bench.check(plain)
    assert result.passed and "is not a git checkout" in result.lines[0]
    (toy_repo / "README").write_text("docs only\n")
    _git(toy_repo, "add", "README")
    _git(toy_repo, "commit", "-qm", "docs")
    result = bench.check(toy_repo)                 # main's latest commit changed no code
    assert result.passed and "the code is unchanged since" in result.lines[0]


SLOW_BY = '''

def _slow_by(factor, fn):
    """``fn`` made ``factor`` times slower: it spins for (factor - 1) x its own time."""
    import functools
    import time

    @functools.wraps(fn)
    def slower(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        end = time.perf_counter() + (factor - 1) * (time.perf_counter() - start)
        while time.perf_counter() < end:
            pass
        return out
    return slower


Stats.from_samples = classmethod(_slow_by({factor}, Stats.from_samples.__func__))
'''


@pytest.fixture
def candidate(tmp_path):
    """A worktree of this repository's HEAD to change; the check compares it with HEAD."""
    tree = tmp_path / "candidate"
    _git(REPO_ROOT, "worktree", "add", "--detach", "--quiet", str(tree), "HEAD")
    yield tree
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


SELECT = "test_timing_stats or test_placement_algorithm1"


@pytest.mark.slow
def test_the_check_flags_a_1_5x_slowdown_of_a_benchmarked_function_and_only_that(candidate):
    timing = candidate / "harness" / "timing.py"
    timing.write_text(timing.read_text() + SLOW_BY.format(factor=1.5))
    result = bench.check(candidate, "HEAD", select=SELECT)
    report = "\n".join(result.lines)
    assert not result.passed, report
    assert result.lines[-1] == "1 regressions in 2 benchmarks: test_timing_stats", report   # not placement
    line = next(ln for ln in result.lines if "test_timing_stats" in ln)
    assert "REGRESSION" in line and float(line.split()[1].rstrip("x")) > 1.3, line


@pytest.mark.slow
def test_a_change_that_does_not_touch_speed_passes(candidate):
    timing = candidate / "harness" / "timing.py"
    timing.write_text(timing.read_text() + "\n# a comment: the code differs, its speed does not\n")
    result = bench.check(candidate, "HEAD", select=SELECT, rounds=4)
    assert result.passed, "\n".join(result.lines)
    assert result.lines[-1] == "0 regressions in 2 benchmarks"
