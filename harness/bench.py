"""CPU regression benchmarks for CI: run the pytest-benchmark suite, compare with a baseline.

The rule is built for noisy 2-core machines. Each benchmark's median is divided by the
median of ``test_calibration`` from the same run (a workload independent of this project),
so a uniformly slower or faster machine cancels out. A benchmark regresses when its
normalized median grows by more than ``threshold`` (default 1.5x: repeated runs of the
unchanged tree stayed within 1.3x, a real 2x slowdown exceeds it) AND its interquartile
range no longer overlaps the baseline's. ``.ci/run`` re-runs flagged benchmarks once and
fails only if the regression reproduces.

Refresh the baseline on purpose (after an intended change, on the CI machine kind):
``python -m harness bench update`` and commit tests/benchmarks/baseline.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import HarnessError

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "tests" / "benchmarks"
BASELINE = SUITE / "baseline.json"
CALIBRATION = "test_calibration"
DEFAULT_THRESHOLD = 1.5


def run_suite(out: Path, select: list[str] | None = None, min_rounds: int = 7) -> Path:
    """Run the benchmark suite into a pytest-benchmark JSON file."""
    cmd = [sys.executable, "-m", "pytest", str(SUITE), "-q", "-p", "no:cacheprovider", "--benchmark-only",
           "--benchmark-enable", f"--benchmark-json={out}", f"--benchmark-min-rounds={min_rounds}",
           "--benchmark-warmup=on", "--benchmark-max-time=2.0"]
    if select:
        cmd += ["-k", " or ".join(sorted(set(select) | {CALIBRATION}))]
    # one thread everywhere: a multi-threaded op's time depends on how many cores happen to be
    # free, which the calibration cannot normalize away on a 2-core machine
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=REPO, env=env)
    if proc.returncode != 0 or not out.exists():
        raise HarnessError(f"benchmark suite failed (pytest exit {proc.returncode})")
    return out


def load(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise HarnessError(f"cannot read benchmark results {path}: {exc}") from None
    return {b["name"]: b["stats"] for b in data.get("benchmarks", [])}


@dataclass
class BenchChange:
    name: str
    ratio: float            # normalized median ratio current / baseline (> 1: slower)
    separated: bool         # interquartile ranges do not overlap (after normalization)
    base_ms: float
    cur_ms: float

    def regressed(self, threshold: float) -> bool:
        return self.ratio > threshold and self.separated


def compare(base: dict[str, dict], cur: dict[str, dict]) -> tuple[list[BenchChange], list[str], list[str]]:
    """Per benchmark in both: the normalized change. Also names only in base / only in current."""
    if CALIBRATION not in base or CALIBRATION not in cur:
        raise HarnessError(f"both result sets need the {CALIBRATION} benchmark")
    scale = cur[CALIBRATION]["median"] / base[CALIBRATION]["median"]
    changes = []
    for name in sorted(set(base) & set(cur)):
        if name == CALIBRATION:
            continue
        b, c = base[name], cur[name]
        ratio = (c["median"] / scale) / b["median"]
        separated = c["q1"] / scale > b["q3"] or c["q3"] / scale < b["q1"]
        changes.append(BenchChange(name, ratio, separated, b["median"] * 1e3, c["median"] * 1e3))
    return changes, sorted(set(base) - set(cur)), sorted(set(cur) - set(base))


def format_report(changes, only_base, only_cur, threshold: float, scale_note: str = "") -> str:
    lines = [f"benchmark rule: normalized median > {threshold:g}x baseline with separated IQRs {scale_note}"]
    for ch in changes:
        flag = "REGRESSION" if ch.regressed(threshold) else ("improved" if ch.ratio < 1 / threshold and ch.separated
                                                             else "ok")
        lines.append(f"  {flag:10} {ch.ratio:5.2f}x  {ch.name}  ({ch.base_ms:.3f} -> {ch.cur_ms:.3f} ms raw)")
    for name in only_base:
        lines.append(f"  only in baseline: {name}")
    for name in only_cur:
        lines.append(f"  only in current:  {name} (not judged; refresh the baseline to include it)")
    return "\n".join(lines)
