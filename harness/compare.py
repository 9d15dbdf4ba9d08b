"""Compare two result sets point by point and flag regressions.

A point is the tuple (experiment, impl, params, metric, world_size, device). For each
point present in both sets, the change is oriented so that > 1 means worse (a longer
time or a lower bandwidth). It is a regression when it exceeds the threshold AND the
two runs' p10-p90 ranges do not overlap, so noise within the repeats never fails a
comparison. A point measured in A (status ok) that B skipped, failed or lacks is lost: a
failure of its own, since a candidate that measures nothing must not pass. Points only B
has, and points A did not measure either, are listed apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HarnessError
from .store import load_run

NO_REFERENCE_EXIT = 4


class NoReference(HarnessError):
    """``compare --reference`` found no run of the candidate's hardware to compare with."""

    exit_code = NO_REFERENCE_EXIT


# Keys that runs stored before measurement extras moved out of ``params`` carried inside it.
_LEGACY_EXTRA_KEYS = {"placement", "rank_median_ms", "steps_ms", "steps", "threads", "reads_per_thread"}


def point_key(row: dict) -> tuple:
    params = {k: v for k, v in row["params"].items() if k not in _LEGACY_EXTRA_KEYS}
    return (row["experiment"], row["impl"], json.dumps(params, sort_keys=True),
            row["metric"], row.get("world_size"), row.get("device"))


def load_result_set(path: str | Path) -> dict[tuple, dict]:
    """Rows of a run directory, or of every run directory below ``path`` (later runs win)."""
    path = Path(path)
    if (path / "rows.jsonl").exists():
        dirs = [path]
    elif path.is_dir():
        dirs = sorted(p for p in path.iterdir() if (p / "rows.jsonl").exists())
    else:
        dirs = []
    if not dirs:
        raise HarnessError(f"no run directory at {path}")
    rows: dict[tuple, dict] = {}
    for d in dirs:
        for row in load_run(d).rows:
            rows[point_key(row)] = row
    return rows


def find_reference(root: str | Path, candidate: str | Path) -> Path:
    """The newest run under ``root`` measured on the same hardware, with the same experiments
    and the same quick flag as ``candidate``, and not withdrawn: the baseline a GPU runner
    compares against."""
    from .store import _RUN_DIR, withdrawn_reason

    cand = load_run(candidate if (Path(candidate) / "rows.jsonl").exists() else _only_run(candidate))
    want = (cand.manifest.get("hardware"), sorted(cand.manifest.get("experiments", [])),
            bool(cand.manifest.get("config", {}).get("quick")))
    matches = []
    for path in sorted(Path(root).iterdir()) if Path(root).is_dir() else []:
        if not (_RUN_DIR.match(path.name) and (path / "manifest.json").exists()) or withdrawn_reason(path):
            continue
        m = json.loads((path / "manifest.json").read_text())
        if (m.get("hardware"), sorted(m.get("experiments", [])), bool(m.get("config", {}).get("quick"))) == want:
            matches.append(path)
    if not matches:
        raise NoReference(f"no reference run under {root} for hardware {want[0]} (experiments "
                          f"{', '.join(want[1])}, quick={want[2]}): nothing to compare with; commit a "
                          f"run of this hardware as the reference")
    return matches[-1]


def _only_run(path: str | Path) -> Path:
    runs = [p for p in sorted(Path(path).iterdir()) if (p / "rows.jsonl").exists()] if Path(path).is_dir() else []
    if len(runs) != 1:
        raise HarnessError(f"{path} must be one run directory (or hold exactly one)")
    return runs[0]


@dataclass
class PointChange:
    key: tuple
    a: dict
    b: dict
    worse_factor: float      # > 1: B is worse than A
    significant: bool

    def describe(self) -> str:
        exp, impl, params, metric, world, device = self.key
        return f"{exp} {impl} {params} {metric} (ws={world}, {device})"


@dataclass
class Comparison:
    threshold: float
    regressions: list[PointChange] = field(default_factory=list)
    improvements: list[PointChange] = field(default_factory=list)
    unchanged: list[PointChange] = field(default_factory=list)
    lost: list[tuple[tuple, str]] = field(default_factory=list)     # ok in A; B skipped, failed or lacks it
    only_a: list[tuple] = field(default_factory=list)
    only_b: list[tuple] = field(default_factory=list)
    not_comparable: list[tuple[tuple, str]] = field(default_factory=list)


def _worse_factor(a: dict, b: dict) -> float:
    va, vb = float(a["value"]), float(b["value"])
    if va <= 0 or vb <= 0:
        raise ValueError("non-positive value")
    return vb / va if a.get("better", "lower") == "lower" else va / vb


def _ranges_separate(a: dict, b: dict) -> bool:
    """True when the p10-p90 ranges of A and B do not overlap (or no spread is stored)."""
    sa, sb = a.get("stats"), b.get("stats")
    if not sa or not sb or sa.get("repeats", 1) < 2 or sb.get("repeats", 1) < 2:
        return True
    return sb["p10"] > sa["p90"] or sa["p10"] > sb["p90"]


def compare_sets(a_rows: dict[tuple, dict], b_rows: dict[tuple, dict], threshold: float) -> Comparison:
    if threshold < 0:
        raise HarnessError("--threshold must be >= 0")
    result = Comparison(threshold=threshold)
    for key in sorted(set(a_rows) | set(b_rows), key=str):
        a, b = a_rows.get(key), b_rows.get(key)
        if a is None:
            result.only_b.append(key)
            continue
        if b is None:
            if a["status"] == "ok":
                result.lost.append((key, "missing in B"))
            else:
                result.only_a.append(key)
            continue
        if a["status"] == "ok" and b["status"] != "ok":
            result.lost.append((key, f"B {b['status']}: {b.get('reason', '')}"))
            continue
        if a["status"] != "ok" or b["status"] != "ok":
            why = f"A {a['status']}, B {b['status']}"
            result.not_comparable.append((key, why))
            continue
        try:
            factor = _worse_factor(a, b)
        except (ValueError, TypeError):
            result.not_comparable.append((key, "non-positive or missing value"))
            continue
        significant = _ranges_separate(a, b)
        change = PointChange(key, a, b, factor, significant)
        if factor > 1 + threshold and significant:
            result.regressions.append(change)
        elif factor < 1 / (1 + threshold) and significant:
            result.improvements.append(change)
        else:
            result.unchanged.append(change)
    return result


def format_comparison(c: Comparison) -> str:
    lines = [f"threshold: {c.threshold:.0%} worse, with non-overlapping p10-p90 ranges"]

    def block(title, changes):
        if not changes:
            return
        lines.append(f"\n{title} ({len(changes)}):")
        for ch in changes:
            lines.append(f"  {ch.worse_factor:6.3f}x  {ch.describe()}: "
                         f"{ch.a['value']:.4g} -> {ch.b['value']:.4g} {ch.a['unit']}"
                         + ("" if ch.significant else "  (within noise)"))

    block("REGRESSIONS", c.regressions)
    if c.lost:
        lines.append(f"\nLOST: measured in A, skipped, failed or missing in B ({len(c.lost)}):")
        lines += [f"  {k[0]} {k[1]} {k[2]} {k[3]}: {why}" for k, why in c.lost]
    block("improvements", c.improvements)
    block("unchanged", c.unchanged)
    if c.only_a:
        lines.append(f"\nonly in A ({len(c.only_a)}):")
        lines += [f"  {k[0]} {k[1]} {k[2]} {k[3]}" for k in c.only_a]
    if c.only_b:
        lines.append(f"\nonly in B ({len(c.only_b)}):")
        lines += [f"  {k[0]} {k[1]} {k[2]} {k[3]}" for k in c.only_b]
    if c.not_comparable:
        lines.append(f"\nnot comparable ({len(c.not_comparable)}):")
        lines += [f"  {k[0]} {k[1]} {k[2]} {k[3]}: {why}" for k, why in c.not_comparable]
    lines.append(f"\n{len(c.regressions)} regressions, {len(c.lost)} lost, {len(c.improvements)} improvements, "
                 f"{len(c.unchanged)} unchanged, {len(c.only_a)} only in A, {len(c.only_b)} only in B")
    return "\n".join(lines)
