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


# --- the whole check on synthetic round times -------------------------------------------------

class FakeSide:
    """A side whose rounds are synthetic: ``ROUNDS[label][name](round number)`` seconds."""

    log: list = []
    ROUNDS: dict = {}
    COLLECTED: dict = {}
    FAILING: dict = {}

    def __init__(self, label, tree, suite, work, *, marker, select, max_time):
        self.label, self.tree, self.marker = label, tree, marker
        self.ignore, self.times, self.failures = [], {}, []

    def check_imports(self, packages):
        pass

    def collect(self):
        return self.COLLECTED[self.label]

    def round(self, number):
        self.log.append((number, self.label))
        for name, times in self.ROUNDS[self.label].items():
            if name in self.FAILING.get(self.label, ()):
                self.failures = sorted(set(self.failures) | {name})
            elif not any(name.startswith(m.removesuffix(".py")) for m in self.ignore):
                self.times.setdefault(name, []).append(times(number))


def _steady(seconds, noise, seed):
    rng = np.random.default_rng(seed)
    draws = seconds * (1 + rng.exponential(noise, 64))
    return lambda number: float(draws[number])


@pytest.fixture
def fake(tmp_path):
    base_tree = tmp_path / "base"
    (base_tree / "tests" / "benchmarks").mkdir(parents=True)
    (base_tree / "tests" / "benchmarks" / "test_hot.py").write_text("")
    FakeSide.log = []
    FakeSide.FAILING = {}
    names = {"test_hot_gather": "test_hot.py", "test_hot_sampler": "test_hot.py"}
    FakeSide.COLLECTED = {"base": bench.Collected(dict(names)), "candidate": bench.Collected(dict(names))}

    def run(rounds=5, threshold=1.25):
        return bench.check_trees(base_tree, tmp_path / "cand", tmp_path / "suite", tmp_path, marker="not gpu",
                                 rounds=rounds, threshold=threshold, alpha=0.05, side=FakeSide)
    return run


def test_the_rounds_alternate_which_side_goes_first(fake):
    FakeSide.ROUNDS = {side: {"test_hot_gather": _steady(1e-3, 0.05, 1)} for side in ("base", "candidate")}
    fake(rounds=4)
    assert FakeSide.log == [(0, "base"), (0, "candidate"), (1, "candidate"), (1, "base"),
                            (2, "base"), (2, "candidate"), (3, "candidate"), (3, "base")]


@pytest.mark.parametrize("seed", range(20))
def test_a_steady_slowdown_of_one_benchmark_is_flagged_and_only_that(fake, seed):
    FakeSide.ROUNDS = {"base": {"test_hot_gather": _steady(1e-3, 0.08, seed), "test_hot_sampler": _steady(2e-3, 0.08, seed + 100)},
                       "candidate": {"test_hot_gather": _steady(1.5e-3, 0.08, seed + 200),
                                     "test_hot_sampler": _steady(2e-3, 0.08, seed + 300)}}
    result = fake()
    assert not result.passed
    assert result.lines[-1] == "1 regressions in 2 benchmarks: test_hot_gather", result.lines
    assert [c.name for c in result.changes if c.regressed] == ["test_hot_gather"]


@pytest.mark.parametrize("seed", range(20))
def test_unchanged_code_passes(fake, seed):
    FakeSide.ROUNDS = {side: {"test_hot_gather": _steady(1e-3, 0.08, seed + off)} for side, off in
                       (("base", 0), ("candidate", 50))}
    result = fake()
    assert result.passed and result.lines[-1] == "0 regressions in 1 benchmarks", result.lines


def test_a_10_percent_slowdown_fails_the_gpu_threshold_and_not_the_cpu_one(fake):
    FakeSide.ROUNDS = {"base": {"test_hot_gather": lambda n: 1e-3 * (1 + 0.001 * n)},
                       "candidate": {"test_hot_gather": lambda n: 1.1e-3 * (1 + 0.001 * n)}}
    assert not fake(threshold=bench.GATES["cuda"][1]).passed            # 10% or more: flagged
    assert fake(threshold=bench.GATES["cpu"][1]).passed


def test_a_benchmark_failing_on_this_tree_fails_the_check_and_one_failing_on_the_base_is_listed(fake):
    FakeSide.ROUNDS = {side: {"test_hot_gather": _steady(1e-3, 0.01, 3), "test_hot_sampler": _steady(1e-3, 0.01, 4)}
                       for side in ("base", "candidate")}
    FakeSide.FAILING = {"base": {"test_hot_sampler"}}
    result = fake()
    assert result.passed and "  not on the base (failing there): test_hot_sampler" in result.lines
    FakeSide.FAILING = {"candidate": {"test_hot_sampler"}}
    result = fake()
    assert not result.passed and "  FAILED on this tree: test_hot_sampler" in result.lines


def test_a_module_the_base_has_but_cannot_import_fails_the_check(fake):
    """A new benchmark importing a new name at module level made the base's collection fail, and
    the check passed with nothing compared (a committed 3x slowdown went through)."""
    FakeSide.COLLECTED["base"] = bench.Collected({}, {"test_hot.py": "ImportError: cannot import name 'new_fn'"})
    FakeSide.ROUNDS = {"base": {}, "candidate": {"test_hot_gather": _steady(3e-3, 0.01, 5)}}
    result = fake()
    assert not result.passed and FakeSide.log == []                    # refused before any round
    assert "  the base cannot import test_hot.py, which it has: ImportError: cannot import name 'new_fn'" in result.lines
    assert result.lines[-1].startswith("FAILED: the base cannot run test_hot.py")


def test_a_module_new_in_this_tree_is_left_out_on_the_base_and_the_rest_is_compared(fake):
    names = {"test_hot_gather": "test_hot.py", "test_new_kernel": "test_new.py"}
    FakeSide.COLLECTED = {"base": bench.Collected({"test_hot_gather": "test_hot.py"},
                                                  {"test_new.py": "ImportError: cannot import name 'kernel'"}),
                          "candidate": bench.Collected(names)}
    FakeSide.ROUNDS = {"base": {"test_hot_gather": _steady(1e-3, 0.05, 6), "test_new_kernel": _steady(1e-3, 0.05, 7)},
                       "candidate": {"test_hot_gather": _steady(3e-3, 0.05, 8), "test_new_kernel": _steady(1e-3, 0.05, 9)}}
    result = fake()
    assert not result.passed and result.lines[-1] == "1 regressions in 1 benchmarks: test_hot_gather"
    assert "  not on the base (its module test_new.py is new): test_new_kernel" in result.lines


def test_a_suite_that_selects_nothing_or_does_not_import_here_is_an_error(fake):
    FakeSide.COLLECTED["candidate"] = bench.Collected({})
    with pytest.raises(HarnessError, match="no benchmark selected"):
        fake()
    FakeSide.COLLECTED["candidate"] = bench.Collected({}, {"test_hot.py": "SyntaxError"})
    with pytest.raises(HarnessError, match="does not import: test_hot.py: SyntaxError"):
        fake()


def test_collection_output_is_read_into_names_and_import_errors():
    output = """test_b.py::test_y[1]
test_b.py::test_y[p2p_shared-chunked]

==================================== ERRORS ====================================
__________________________ ERROR collecting test_a.py __________________________
ImportError while importing test module '/tmp/suite/test_a.py'.
Traceback:
suite/test_a.py:1: in <module>
    from harness.timing import new_fn
E   ImportError: cannot import name 'new_fn' from 'harness.timing'
=========================== short test summary info ============================
ERROR suite/test_a.py
2 tests collected, 1 error in 3.79s
"""
    found = bench.parse_collection(output)
    assert found.names == {"test_y[1]": "test_b.py", "test_y[p2p_shared-chunked]": "test_b.py"}
    assert found.errors == {"test_a.py": "ImportError: cannot import name 'new_fn' from 'harness.timing'"}


# --- the whole check on a toy repository, timed by an injected clock ------------------------------

CLOCK = """_now = [0.0]


def now():                  # the benchmarks' timer: only work() moves it (and each reading, by 1 ns)
    _now[0] += 1e-9
    return _now[0]


def advance(seconds):
    _now[0] += seconds
"""
WORK = "from . import clock\n\n\ndef work():\n    clock.advance({seconds})\n    return 1\n\n\ndef other():\n" \
       "    clock.advance(2e-3)\n    return 2\n"
NEW_FN = "\n\ndef new_fn():\n    clock.advance(1e-3)       # every benchmarked function moves the clock\n    return 3\n"
CONFTEST = """import pytest

from harness import clock


@pytest.fixture
def benchmark(benchmark):
    benchmark._timer = clock.now            # an injected clock: round times follow the code, not the machine
    return benchmark
"""
BENCHES = """{imports}from harness import other, work


def test_work(benchmark):
    assert benchmark(work) == 1


def test_other(benchmark):
    assert benchmark(other) == 2
"""


@pytest.fixture
def toy_suite_repo(tmp_path):
    """A repository with a package ``harness`` and a benchmark suite under tests/benchmarks, on
    main; the test then branches and changes it."""
    repo = tmp_path / "toy"
    suite = repo / "tests" / "benchmarks"
    suite.mkdir(parents=True)
    (repo / "harness").mkdir()
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "harness" / "clock.py").write_text(CLOCK)
    (repo / "harness" / "__init__.py").write_text(WORK.format(seconds="1e-3"))
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_toy.py").write_text(BENCHES.format(imports=""))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "toy")
    _git(repo, "checkout", "-qb", "feature")
    return repo


def _toy_check(repo, **kw):
    return bench.check(repo, packages=("harness",), max_time=0.01, **kw)


def test_a_slowdown_committed_with_a_benchmark_the_base_cannot_import_fails(toy_suite_repo):
    """The reproducer: work() made 3x slower, and a new benchmark importing a new function at the
    top of the existing module (the base's collection fails). It used to pass, saying "nothing to
    compare"."""
    repo = toy_suite_repo
    (repo / "harness" / "__init__.py").write_text(WORK.format(seconds="3e-3") + NEW_FN)
    (repo / "tests" / "benchmarks" / "test_toy.py").write_text(
        BENCHES.format(imports="from harness import new_fn\n") + "\n\ndef test_new(benchmark):\n"
        "    assert benchmark(new_fn) == 3\n")
    _git(repo, "commit", "-qam", "slower, with a new benchmark")
    result = _toy_check(repo, rounds=3)
    assert not result.passed, result.lines
    assert any(ln.startswith("  the base cannot import test_toy.py, which it has: ImportError") for ln in result.lines)


@pytest.mark.slow
def test_the_check_flags_a_slower_function_and_measures_the_rest_beside_a_new_module(toy_suite_repo, tmp_path):
    """Against a copy of the base's files (--base-tree, as on a machine without git): work() 1.5x
    slower is flagged, other() is not, and a new module's benchmark is listed as new."""
    import shutil

    repo = toy_suite_repo
    base_copy = tmp_path / "base-copy"
    shutil.copytree(repo, base_copy, ignore=shutil.ignore_patterns(".git"))
    (repo / "harness" / "__init__.py").write_text(WORK.format(seconds="1.5e-3") + NEW_FN)
    (repo / "tests" / "benchmarks" / "test_new.py").write_text(
        "from harness import new_fn\n\n\ndef test_new(benchmark):\n    assert benchmark(new_fn) == 3\n")
    result = _toy_check(repo, base_tree=base_copy, rounds=3, alpha=0.1)   # 3 rounds a side: p reaches 1/20
    assert not result.passed, result.lines
    assert result.lines[0].startswith(f"bench check: base {base_copy} against this tree")
    assert result.lines[-1] == "1 regressions in 2 benchmarks: test_work", result.lines
    work = next(c for c in result.changes if c.name == "test_work")
    assert work.ratio == pytest.approx(1.5, rel=1e-3) and len(work.base) == len(work.cand) == 3
    assert "  not on the base (its module test_new.py is new): test_new" in result.lines


def test_the_gpu_gate_without_a_gpu_is_an_error_line(monkeypatch, capsys):
    import torch

    from harness import cli

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["bench", "check", "--device", "cuda", "--base-tree", str(REPO_ROOT)]) == 2
    assert capsys.readouterr().err == "error: bench check --device cuda needs a CUDA GPU (torch sees none)\n"
    with pytest.raises(HarnessError, match="not a copy of this repository"):
        bench.check(base_tree=REPO_ROOT / "docs")


def test_the_benchmark_suite_runs_as_a_suite_of_its_own(tmp_path):
    """bench check runs tests/benchmarks copied apart (bench.copy_suite): every module must import
    there and every fixture resolve, which a relative import or a fixture of tests/conftest.py does
    not; the CPU training step runs there once."""
    suite = bench.copy_suite(REPO_ROOT / "tests" / "benchmarks", tmp_path / "suite")
    side = bench.Side("this tree", REPO_ROOT, suite, tmp_path, marker=bench.GATES["cpu"][0],
                      select="fullbatch_gcn_epoch", max_time=0.1)
    found = side.collect()
    assert found.errors == {} and "test_fullbatch_gcn_epoch" in found.names
    proc = subprocess.run(side._pytest("--benchmark-disable"), cwd=tmp_path, env=side.env, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout[-2000:]


def test_a_suite_that_leans_on_its_package_does_not_run_apart(tmp_path):
    """The check above fails on a suite whose module imports relatively."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "test_x.py").write_text("from .helpers import thing\n\n\ndef test_fullbatch_gcn_epoch(benchmark):\n"
                                   "    assert benchmark(thing) == 1\n")
    (src / "helpers.py").write_text("def thing():\n    return 1\n")
    suite = bench.copy_suite(src, tmp_path / "suite")
    side = bench.Side("toy", REPO_ROOT, suite, tmp_path, marker=bench.GATES["cpu"][0], select=None, max_time=0.1)
    assert "test_x.py" in side.collect().errors

