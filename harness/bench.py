"""CPU regression check: the base revision and this tree measured in one job, on one machine.

``python -m harness bench check`` checks the base revision out into a temporary git worktree
and runs this tree's benchmark suite (``tests/benchmarks``, pytest-benchmark) against the base's
code and against this tree's code in alternating rounds (A B, B A, A B, ...), so the machine's
speed and its drift during the job weigh on both alike; nothing is compared across machines.
A round's time of a benchmark is its fastest repeat in that round (load from other processes
only ever adds time). Over the rounds, a benchmark regresses when both

- the ratio of the median round times, this tree's over the base's, exceeds the threshold, and
- this tree's round times are larger by a one-sided Mann-Whitney U test at ``alpha`` (exact;
  with 5 rounds a side p can reach 1/252),

so a benchmark slower in (nearly) every round is flagged, and a noisy round is not. The threshold
(default 1.25) sits above the spread of unchanged trees on a loaded 2-core machine (round-time
ratios 0.89-1.11) and below the 1.5x slowdown the tests inject, which a 1.5x threshold would
catch only about half the time.

The base: ``--base`` (or ``$HARNESS_BENCH_BASE``), else the merge base of HEAD with main (or
origin/main); on main itself, HEAD when the tree has uncommitted changes, else main's first
parent, i.e. main before its latest commit (a merge's first parent is main before the merge).
Where there is nothing to compare with (no git checkout, no such revision, or no change to the
code since the base), the check says so and passes.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HarnessError

REPO = Path(__file__).resolve().parent.parent
SUITE = Path("tests") / "benchmarks"
DEFAULT_THRESHOLD = 1.25
DEFAULT_ALPHA = 0.05
DEFAULT_ROUNDS = 5
# Code whose change can change the suite's times; a change elsewhere (results, reports, docs) has
# nothing to check.
CODE_PATHS = ("harness", "impls", "experiments", "tests/benchmarks", "pyproject.toml")
# one thread everywhere: a multi-threaded op's time depends on how many cores happen to be free
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
              "OPENBLAS_NUM_THREADS": "1"}


# --- the decision -----------------------------------------------------------------------------

@dataclass
class BenchChange:
    name: str
    base: list[float]          # the fastest repeat of each round, seconds
    cand: list[float]
    threshold: float
    alpha: float
    ratio: float = field(init=False)        # > 1: the candidate is slower
    p_slower: float = field(init=False)     # one-sided: the candidate's rounds are slower

    def __post_init__(self):
        from scipy.stats import mannwhitneyu

        self.ratio = statistics.median(self.cand) / statistics.median(self.base)
        self.p_slower = float(mannwhitneyu(self.cand, self.base, alternative="greater").pvalue)

    @property
    def regressed(self) -> bool:
        return self.ratio > self.threshold and self.p_slower < self.alpha

    @property
    def improved(self) -> bool:
        from scipy.stats import mannwhitneyu

        faster = float(mannwhitneyu(self.cand, self.base, alternative="less").pvalue)
        return self.ratio < 1 / self.threshold and faster < self.alpha

    def describe(self) -> str:
        flag = "REGRESSION" if self.regressed else ("improved" if self.improved else "ok")
        a, b = statistics.median(self.base) * 1e3, statistics.median(self.cand) * 1e3
        return (f"  {flag:10} {self.ratio:5.2f}x  p={self.p_slower:.3f}  {self.name}  "
                f"({a:.3f} -> {b:.3f} ms, {len(self.base)}+{len(self.cand)} rounds)")


def judge(base: dict[str, list[float]], cand: dict[str, list[float]], threshold: float = DEFAULT_THRESHOLD,
          alpha: float = DEFAULT_ALPHA) -> list[BenchChange]:
    """Per benchmark measured on both sides: its change over the rounds."""
    if threshold <= 1:
        raise HarnessError("--threshold must be > 1 (a slowdown factor)")
    if not 0 < alpha < 1:
        raise HarnessError("--alpha must be between 0 and 1")
    return [BenchChange(name, base[name], cand[name], threshold, alpha)
            for name in sorted(set(base) & set(cand)) if len(base[name]) >= 2 and len(cand[name]) >= 2]


# --- the job ----------------------------------------------------------------------------------

def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=check)


def resolve_base(repo: Path, base: str | None) -> tuple[str | None, str]:
    """(commit, how it was chosen), or (None, why there is none)."""
    if shutil.which("git") is None or _git(repo, "rev-parse", "--git-dir", check=False).returncode:
        return None, f"{repo} is not a git checkout"
    if base:
        found = _git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}", check=False)
        if found.returncode:
            raise HarnessError(f"--base {base}: no such revision in {repo}")
        return found.stdout.strip(), f"--base {base}"
    head = _git(repo, "rev-parse", "HEAD", check=False).stdout.strip()
    for branch in ("main", "origin/main"):
        found = _git(repo, "merge-base", "HEAD", branch, check=False)
        if found.returncode:
            continue
        if found.stdout.strip() != head:
            return found.stdout.strip(), f"the merge base of HEAD with {branch}"
        if code_changed(repo, head):
            return head, f"HEAD, on {branch}: this tree's uncommitted changes"
        parent = _git(repo, "rev-parse", "--verify", "--quiet", "HEAD^1", check=False)
        if parent.returncode:
            return None, f"HEAD is on {branch} and has no parent here (its first commit, or a shallow clone)"
        return parent.stdout.strip(), f"HEAD is on {branch}: its first parent"
    return None, "neither main nor origin/main exists here to take a merge base with"


def code_changed(repo: Path, base: str) -> bool:
    """True when this tree's code (committed or not) differs from ``base``'s."""
    return _git(repo, "diff", "--quiet", base, "--", *CODE_PATHS, check=False).returncode != 0


class _Side:
    """One tree to measure: its code on PYTHONPATH, this tree's suite."""

    def __init__(self, label: str, tree: Path, suite: Path, work: Path, select: str | None,
                 max_time: float):
        self.label, self.tree, self.suite, self.work = label, tree, suite, work
        self.select, self.max_time = select, max_time
        self.times: dict[str, list[float]] = {}     # per benchmark, its fastest repeat in each round
        self.failures: list[str] = []
        self.env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(tree),
                    "HARNESS_DATA_ROOT": str(work / "data")}
        self.env.pop("PYTEST_ADDOPTS", None)

    def check_imports(self, packages: tuple[str, ...]) -> None:
        """The tree's own packages must be the ones imported, not an installed copy."""
        code = "import importlib, sys; print('\\n'.join(importlib.import_module(p).__file__ for p in sys.argv[1:]))"
        proc = subprocess.run([sys.executable, "-c", code, *packages], cwd=self.work, env=self.env,
                              capture_output=True, text=True)
        files = proc.stdout.split()
        if proc.returncode or any(not Path(f).resolve().is_relative_to(self.tree.resolve()) for f in files):
            raise HarnessError(f"{self.label}: {' '.join(packages)} do not import from {self.tree} "
                               f"({proc.stderr.strip().splitlines()[-1:] or files})")

    def round(self, number: int) -> None:
        out = self.work / f"{self.label}-{number}.json"
        cmd = [sys.executable, "-m", "pytest", str(self.suite), "-q", "-c", str(self.suite / "pytest.ini"),
               "--rootdir", str(self.suite), "-p", "no:cacheprovider", "--benchmark-only",
               "--benchmark-enable", f"--benchmark-json={out}", "--benchmark-min-rounds=5",
               f"--benchmark-max-time={self.max_time}", "--benchmark-warmup=on"]
        if self.select:
            cmd += ["-k", self.select]
        proc = subprocess.run(cmd, cwd=self.work, env=self.env, capture_output=True, text=True)
        if proc.returncode not in (0, 1) or not out.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise _SuiteFailed(self.label, f"{self.label}: the benchmark suite did not run "
                                           f"(pytest exit {proc.returncode}): " + " | ".join(tail))
        if proc.returncode == 1:
            failed = [ln.split(" ", 1)[1].split(" - ")[0] for ln in proc.stdout.splitlines()
                      if ln.startswith(("FAILED ", "ERROR "))]
            self.failures = sorted(set(self.failures) | set(failed))
        for bench in json.loads(out.read_text()).get("benchmarks", []):
            self.times.setdefault(bench["name"], []).append(float(bench["stats"]["min"]))


class _SuiteFailed(Exception):
    def __init__(self, side: str, message: str):
        super().__init__(message)
        self.side = side


@dataclass
class CheckResult:
    passed: bool
    lines: list[str]


def check(repo: Path = REPO, base: str | None = None, *, suite: Path = SUITE, rounds: int = DEFAULT_ROUNDS,
          threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA, select: str | None = None,
          max_time: float = 0.25, packages: tuple[str, ...] = ("harness", "impls"),
          progress=lambda line: None) -> CheckResult:
    """Measure ``base`` and this tree (``repo``'s working tree, uncommitted changes included) in
    interleaved rounds and judge every benchmark; see the module doc."""
    repo = Path(repo)
    if rounds < 2:
        raise HarnessError("--rounds must be >= 2")
    judge({}, {}, threshold, alpha)                      # argument checks before the long part
    commit, how = resolve_base(repo, base)
    if commit is None:
        return CheckResult(True, [f"bench check: nothing to compare with ({how}); passing"])
    if not code_changed(repo, commit):
        return CheckResult(True, [f"bench check: the code is unchanged since {commit[:10]} ({how}); "
                                  "nothing to compare; passing"])
    if not (repo / suite).is_dir():
        raise HarnessError(f"no benchmark suite at {repo / suite}")
    lines = [f"bench check: base {commit[:10]} ({how}) against this tree, {rounds} interleaved rounds; "
             f"regression: median ratio > {threshold:g}x and one-sided Mann-Whitney p < {alpha:g}"]
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        tmp = Path(tmp)
        base_tree = tmp / "base"
        _git(repo, "worktree", "add", "--detach", "--quiet", str(base_tree), commit)
        try:
            suite_copy = tmp / "suite"
            shutil.copytree(repo / suite, suite_copy, ignore=shutil.ignore_patterns("__pycache__", "__init__.py",
                                                                                    "*.json"))
            (suite_copy / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
            sides = [_Side("base", base_tree, suite_copy, tmp, select, max_time),
                     _Side("candidate", repo, suite_copy, tmp, select, max_time)]
            for side in sides:
                side.check_imports(packages)
            try:
                for number in range(rounds):
                    for side in (sides if number % 2 == 0 else sides[::-1]):     # A B, B A, ...
                        side.round(number)
                    progress(f"round {number + 1}/{rounds} done")
            except _SuiteFailed as exc:
                if exc.side == "base":
                    return CheckResult(True, lines + [f"the base cannot run this tree's suite ({exc}); "
                                                      "nothing to compare; passing"])
                raise HarnessError(str(exc)) from None
        finally:
            _git(repo, "worktree", "remove", "--force", str(base_tree), check=False)
            _git(repo, "worktree", "prune", check=False)
    base_side, cand_side = sides
    changes = judge(base_side.times, cand_side.times, threshold, alpha)
    lines += [c.describe() for c in changes]
    new = sorted(set(cand_side.times) - set(base_side.times))
    lines += [f"  not on the base (new, or failing there): {name}" for name in new]
    lines += [f"  FAILED on this tree: {name}" for name in cand_side.failures]
    regressed = [c.name for c in changes if c.regressed]
    lines.append(f"{len(regressed)} regressions in {len(changes)} benchmarks"
                 + (f": {', '.join(regressed)}" if regressed else ""))
    return CheckResult(not regressed and not cand_side.failures, lines)
