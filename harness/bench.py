"""Regression check: the base revision and this tree measured in one job, on one machine.

``python -m harness bench check`` checks the base revision out into a temporary git worktree
(or takes a copy of it, ``--base-tree``) and runs this tree's benchmark suite
(``tests/benchmarks``, pytest-benchmark) against the base's code and against this tree's code in
alternating rounds (A B, B A, A B, ...), so the machine's speed and its drift during the job weigh
on both alike; nothing is compared across machines. A round's time of a benchmark is its fastest
repeat in that round (load from other processes only ever adds time). Over the rounds, a
benchmark regresses when both

- the ratio of the median round times, this tree's over the base's, reaches the threshold, and
- this tree's round times are larger by a one-sided Mann-Whitney U test at ``alpha`` (exact;
  with 5 rounds a side p can reach 1/252),

so a benchmark slower in (nearly) every round is flagged, and a noisy round is not.

Two gates share this machinery (``--device``):

- ``cpu`` (CI, ``.ci/run``): the benchmarks not marked ``gpu``, threshold 1.25. It sits above the
  spread of unchanged trees on a loaded 2-core machine (round-time ratios 0.89-1.11) and below
  the 1.5x slowdown the tests inject, which a 1.5x threshold would catch only about half the time.
- ``cuda`` (the GPU workflow, ``.github/workflows/gpu.yml``): the ``gpu``-marked benchmarks (the
  one-kernel gather, a sampler, append-unique, a training step), threshold 1.10: a GPU kernel's
  fastest repeat varies by a few percent between processes, far less than a loaded CPU's.

Both sides run the same suite, this tree's, so a benchmark is measured only where both can run
it. A benchmark module that the base cannot import although the base has it (a new benchmark
imports a new name at module level) fails the check: its other benchmarks would go unmeasured.
A module that is new in this tree is left out on the base, and its benchmarks are listed as new.

The base: ``--base`` (or ``$HARNESS_BENCH_BASE``), else the merge base of HEAD with main (or
origin/main); on main itself, HEAD when the tree has uncommitted changes, else main's first
parent, i.e. main before its latest commit (a merge's first parent is main before the merge).
Where there is nothing to compare with (no git checkout, no such revision, or no change to the
code since the base), the check says so and passes.
"""

from __future__ import annotations

import json
import os
import re
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
DEFAULT_ALPHA = 0.05
DEFAULT_ROUNDS = 5
# per device: the benchmarks it selects (pytest -m) and the slowdown it fails on
GATES = {"cpu": ("not gpu", 1.25), "cuda": ("gpu", 1.10)}
DEFAULT_THRESHOLD = GATES["cpu"][1]
# Code whose change can change the suite's times; a change elsewhere (results, reports, docs) has
# nothing to check.
CODE_PATHS = ("harness", "impls", "experiments", "tests/benchmarks", "pyproject.toml")
# one thread everywhere: a multi-threaded op's time depends on how many cores happen to be free
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
              "OPENBLAS_NUM_THREADS": "1"}
SUITE_INI = "[pytest]\naddopts = -p no:cacheprovider\nmarkers =\n    gpu: needs a CUDA GPU\n" \
            "    multigpu: needs two CUDA GPUs\n    slow: long\n"


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
        return round(self.ratio, 9) >= self.threshold and self.p_slower < self.alpha     # 1.1e-3 / 1e-3 is 1.0999...

    @property
    def improved(self) -> bool:
        from scipy.stats import mannwhitneyu

        faster = float(mannwhitneyu(self.cand, self.base, alternative="less").pvalue)
        return self.ratio <= 1 / self.threshold and faster < self.alpha

    def describe(self) -> str:
        flag = "REGRESSION" if self.regressed else ("improved" if self.improved else "ok")
        a, b = statistics.median(self.base) * 1e3, statistics.median(self.cand) * 1e3
        return (f"  {flag:10} {self.ratio:5.2f}x  p={self.p_slower:.3f}  {self.name}  "
                f"({a:.3f} -> {b:.3f} ms, {len(self.base)}+{len(self.cand)} rounds)")

    def to_dict(self) -> dict:
        return {"name": self.name, "base_s": self.base, "candidate_s": self.cand, "ratio": self.ratio,
                "p_slower": self.p_slower, "regressed": self.regressed, "improved": self.improved}


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


class SuiteFailed(HarnessError):
    """A side's run of the suite ended without results (pytest itself failed)."""


@dataclass
class Collected:
    """What a side's pytest collects of the suite: benchmark names by module, modules it cannot import."""

    names: dict[str, str] = field(default_factory=dict)       # benchmark name -> its module's file name
    errors: dict[str, str] = field(default_factory=dict)      # module file name -> the error


def parse_collection(output: str) -> Collected:
    """``pytest --collect-only -q --continue-on-collection-errors`` output, read."""
    found = Collected()
    lines = output.splitlines()
    for i, line in enumerate(lines):
        node = re.match(r"([^\s:]+\.py)::(.+)$", line.strip())
        if node:
            found.names[node.group(2)] = Path(node.group(1)).name
        header = re.match(r"_+ ERROR collecting (\S+) _+$", line)
        if header:
            detail = next((ln[1:].strip() for ln in lines[i + 1:] if ln.startswith("E ")), "import failed")
            found.errors[Path(header.group(1)).name] = detail
    return found


def copy_suite(suite: Path, to: Path) -> Path:
    """The benchmark suite as both sides run it: a folder of its own (no package, its own pytest.ini),
    so its modules import as top-level ones and see only its own conftest."""
    shutil.copytree(suite, to, ignore=shutil.ignore_patterns("__pycache__", "__init__.py", "*.json"))
    (to / "pytest.ini").write_text(SUITE_INI)
    return to


class Side:
    """One tree to measure: its code on PYTHONPATH, the shared suite."""

    def __init__(self, label: str, tree: Path, suite: Path, work: Path, *, marker: str, select: str | None,
                 max_time: float):
        self.label, self.tree, self.suite, self.work = label, tree, suite, work
        self.marker, self.select, self.max_time = marker, select, max_time
        self.ignore: list[str] = []                 # modules of the suite left out on this side
        self.times: dict[str, list[float]] = {}     # per benchmark, its fastest repeat in each round
        self.failures: list[str] = []
        # only pytest-benchmark among pytest's plugins: the others cost seconds a process and add work
        self.env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(tree), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
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

    def _pytest(self, *args: str) -> list[str]:
        cmd = [sys.executable, "-m", "pytest", str(self.suite), "-q", "-c", str(self.suite / "pytest.ini"),
               "--rootdir", str(self.suite), "-p", "no:cacheprovider", "-p", "pytest_benchmark.plugin",
               "-m", self.marker, *args]
        cmd += [f"--ignore={self.suite / module}" for module in self.ignore]
        return cmd + (["-k", self.select] if self.select else [])

    def collect(self) -> Collected:
        proc = subprocess.run(self._pytest("--collect-only", "--continue-on-collection-errors"), cwd=self.work,
                              env=self.env, capture_output=True, text=True)
        found = parse_collection(proc.stdout)
        if proc.returncode not in (0, 1, 5) or (proc.returncode == 1 and not found.errors):
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise SuiteFailed(f"{self.label}: pytest cannot collect the benchmark suite (exit {proc.returncode}): "
                              + " | ".join(tail))
        return found

    def round(self, number: int) -> None:
        out = self.work / f"{self.label}-{number}.json"
        proc = subprocess.run(self._pytest("--benchmark-only", "--benchmark-enable", f"--benchmark-json={out}",
                                           "--benchmark-min-rounds=5", f"--benchmark-max-time={self.max_time}",
                                           "--benchmark-warmup=on"),
                              cwd=self.work, env=self.env, capture_output=True, text=True)
        if proc.returncode not in (0, 1) or not out.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise SuiteFailed(f"{self.label}: the benchmark suite did not run (pytest exit {proc.returncode}): "
                              + " | ".join(tail))
        if proc.returncode == 1:
            failed = [ln.split(" ", 1)[1].split(" - ")[0] for ln in proc.stdout.splitlines()
                      if ln.startswith(("FAILED ", "ERROR "))]
            self.failures = sorted(set(self.failures) | {f.split("::", 1)[-1] for f in failed})
        for bench in json.loads(out.read_text()).get("benchmarks", []):
            self.times.setdefault(bench["name"], []).append(float(bench["stats"]["min"]))


@dataclass
class CheckResult:
    passed: bool
    lines: list[str]
    changes: list[BenchChange] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"passed": self.passed, "lines": self.lines, "benchmarks": [c.to_dict() for c in self.changes]}


def interleave(sides: list, rounds: int, progress=lambda line: None) -> None:
    """Rounds A B, B A, A B, ...: each side measured as often, first and second in turn."""
    for number in range(rounds):
        for side in (sides if number % 2 == 0 else sides[::-1]):
            side.round(number)
        progress(f"round {number + 1}/{rounds} done")


def check_trees(base_tree: Path, cand_tree: Path, suite: Path, work: Path, *, marker: str, rounds: int,
                threshold: float, alpha: float, select: str | None = None, max_time: float = 0.25,
                packages: tuple[str, ...] = ("harness", "impls"), suite_path: Path = SUITE, header: str = "",
                side=Side, progress=lambda line: None) -> CheckResult:
    """Measure the suite ``suite`` (the candidate's, copied) against ``base_tree``'s and
    ``cand_tree``'s code in interleaved rounds and judge every benchmark both sides have;
    ``suite_path`` is where a tree keeps its own suite."""
    sides = [side("base", base_tree, suite, work, marker=marker, select=select, max_time=max_time),
             side("candidate", cand_tree, suite, work, marker=marker, select=select, max_time=max_time)]
    base, cand = sides
    for s in sides:
        s.check_imports(packages)
    lines = [line for line in [header] if line]
    wanted = cand.collect()
    if wanted.errors:
        raise HarnessError("this tree's benchmark suite does not import: "
                           + "; ".join(f"{m}: {e}" for m, e in sorted(wanted.errors.items())))
    if not wanted.names:
        raise HarnessError(f"no benchmark selected (-m {marker!r}" + (f", -k {select!r})" if select else ")"))
    there = base.collect()
    had = {m: e for m, e in there.errors.items() if (base_tree / suite_path / m).is_file()}
    if had:
        lines += [f"  the base cannot import {m}, which it has: {e}" for m, e in sorted(had.items())]
        lines.append(f"FAILED: the base cannot run {', '.join(sorted(had))}, so its benchmarks would go unmeasured "
                     "on both sides; import what the base lacks inside the benchmark that needs it (the base then "
                     "runs the others and lists that one as failing there)")
        return CheckResult(False, lines)
    base.ignore = sorted(there.errors)          # modules new in this tree
    interleave(sides, rounds, progress)
    changes = judge(base.times, cand.times, threshold, alpha)
    lines += [c.describe() for c in changes]
    for name in sorted(set(cand.times) - set(base.times)):
        why = ("failing there" if name in base.failures else
               f"its module {wanted.names.get(name)} is new" if wanted.names.get(name) in there.errors else "new")
        lines.append(f"  not on the base ({why}): {name}")
    lines += [f"  FAILED on this tree: {name}" for name in cand.failures]
    regressed = [c.name for c in changes if c.regressed]
    lines.append(f"{len(regressed)} regressions in {len(changes)} benchmarks"
                 + (f": {', '.join(regressed)}" if regressed else ""))
    return CheckResult(not regressed and not cand.failures, lines, changes)


def check(repo: Path = REPO, base: str | None = None, *, base_tree: Path | None = None, device: str = "cpu",
          suite: Path = SUITE, rounds: int = DEFAULT_ROUNDS, threshold: float | None = None,
          alpha: float = DEFAULT_ALPHA, select: str | None = None, max_time: float = 0.25,
          packages: tuple[str, ...] = ("harness", "impls"), progress=lambda line: None) -> CheckResult:
    """Measure ``base`` (a revision of ``repo``, or the tree ``base_tree``) and this tree
    (``repo``'s working tree, uncommitted changes included) in interleaved rounds and judge every
    benchmark of ``device``'s gate; see the module doc."""
    repo = Path(repo)
    if device not in GATES:
        raise HarnessError(f"--device must be one of {', '.join(GATES)}")
    marker, default_threshold = GATES[device]
    threshold = threshold or default_threshold
    if rounds < 2:
        raise HarnessError("--rounds must be >= 2")
    judge({}, {}, threshold, alpha)                      # argument checks before the long part
    commit = how = None
    if base_tree is not None:
        base_tree = Path(base_tree).resolve()
        if not (base_tree / "harness").is_dir():
            raise HarnessError(f"--base-tree {base_tree}: not a copy of this repository (no harness/)")
    else:
        commit, how = resolve_base(repo, base)
        if commit is None:
            return CheckResult(True, [f"bench check: nothing to compare with ({how}); passing"])
        if not code_changed(repo, commit):
            return CheckResult(True, [f"bench check: the code is unchanged since {commit[:10]} ({how}); "
                                      "nothing to compare; passing"])
    if not (repo / suite).is_dir():
        raise HarnessError(f"no benchmark suite at {repo / suite}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise HarnessError("bench check --device cuda needs a CUDA GPU (torch sees none)")
    rule = (f"{rounds} interleaved rounds of the {device} benchmarks (-m {marker!r}); regression: median "
            f"ratio >= {threshold:g}x and one-sided Mann-Whitney p < {alpha:g}")
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        tmp = Path(tmp)
        suite_copy = copy_suite(repo / suite, tmp / "suite")
        run = dict(marker=marker, rounds=rounds, threshold=threshold, alpha=alpha, select=select,
                   max_time=max_time, packages=packages, suite_path=Path(suite), progress=progress)
        if base_tree is not None:
            return check_trees(base_tree, repo, suite_copy, tmp, header=f"bench check: base {base_tree} against "
                               f"this tree, {rule}", **run)
        worktree = tmp / "base"
        _git(repo, "worktree", "add", "--detach", "--quiet", str(worktree), commit)
        try:
            return check_trees(worktree, repo, suite_copy, tmp, header=f"bench check: base {commit[:10]} ({how}) "
                               f"against this tree, {rule}", **run)
        finally:
            _git(repo, "worktree", "remove", "--force", str(worktree), check=False)
            _git(repo, "worktree", "prune", check=False)
