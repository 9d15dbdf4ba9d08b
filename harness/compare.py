"""Compare two result sets point by point and flag regressions.

A point is the tuple (experiment, impl, params, metric, world_size, device). For each
point present in both sets, the change is oriented so that > 1 means worse (a longer
time or a lower bandwidth). It is a regression when it exceeds the threshold AND the
two runs' p10-p90 ranges do not overlap, so noise within the repeats never fails a
comparison. A point measured in A (status ok) that B skipped, failed or lacks is lost: a
failure of its own, since a candidate that measures nothing must not pass. A measured time
(or rate) of 0 or below on either side is invalid, a failure too: no time is free. Points only
B has, and points A did not measure either, are listed apart.

A baseline must be one: ``check_baseline`` refuses an A that measured nothing, that did not
complete, or whose settings (hardware, experiments, implementations, parameters, scale, world
size, quick) differ from B's, naming each difference; ``find_reference`` picks only such runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HarnessError
from .store import StoredRun, load_run, run_status

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


def load_runs(path: str | Path) -> list[StoredRun]:
    """A run directory, or every run directory below ``path`` in order."""
    path = Path(path)
    if (path / "rows.jsonl").exists():
        dirs = [path]
    elif path.is_dir():
        dirs = sorted(p for p in path.iterdir() if (p / "rows.jsonl").exists())
    else:
        dirs = []
    if not dirs:
        raise HarnessError(f"no run directory at {path}")
    return [load_run(d) for d in dirs]


def rows_by_point(runs: list[StoredRun]) -> dict[tuple, dict]:
    """Rows of the runs keyed by point (later runs win)."""
    rows: dict[tuple, dict] = {}
    for run in runs:
        for row in run.rows:
            rows[point_key(row)] = row
    return rows


def load_result_set(path: str | Path) -> dict[tuple, dict]:
    """Rows of a run directory, or of every run directory below ``path`` (later runs win)."""
    return rows_by_point(load_runs(path))


# What must be equal for two runs to measure the same thing, as a reader names it.
SETTINGS = ("hardware", "experiments", "implementations", "parameters", "scale", "world size", "quick")


def run_settings(manifest: dict) -> dict:
    config = manifest.get("config", {})
    return {"hardware": manifest.get("hardware"), "experiments": sorted(manifest.get("experiments", [])),
            "implementations": sorted(config.get("impls") or []), "parameters": config.get("params") or {},
            "scale": config.get("scale"), "world size": config.get("world_size"),
            "quick": bool(config.get("quick"))}


def _show(value) -> str:
    if value is None:
        return "default"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True) if value else ("none" if isinstance(value, dict) else "all")
    return str(value)


def settings_differences(a: list[dict], b: list[dict]) -> list[str]:
    """``name: A x, B y`` for every setting whose values differ between the two sets of runs
    (each side given as its runs' manifests)."""
    differences = []
    for name in SETTINGS:
        values_a = sorted({_show(run_settings(m)[name]) for m in a})
        values_b = sorted({_show(run_settings(m)[name]) for m in b})
        if values_a != values_b:
            differences.append(f"{name}: A {' | '.join(values_a)}, B {' | '.join(values_b)}")
    return differences


def baseline_problems(runs: list[StoredRun]) -> list[str]:
    """Why these runs cannot serve as a baseline: not complete, or nothing measured."""
    problems = [f"{run.path.name} is {status}, not complete"
                for run in runs if (status := run_status(run.manifest)) != "complete"]
    measured = sum(row["status"] == "ok" for run in runs for row in run.rows)
    if not measured:
        total = sum(len(run.rows) for run in runs)
        problems.append(f"it measured nothing ({total} rows, none ok)")
    return problems


def check_baseline(a_runs: list[StoredRun], b_runs: list[StoredRun], allow_mismatch: bool = False) -> list[str]:
    """Refuse (HarnessError) an A that is no baseline for B; returns the setting differences
    that ``allow_mismatch`` let through, for the output to say."""
    problems = baseline_problems(a_runs)
    if problems:
        raise HarnessError(f"A ({', '.join(r.path.name for r in a_runs)}) is no baseline: {'; '.join(problems)}")
    differences = settings_differences([r.manifest for r in a_runs], [r.manifest for r in b_runs])
    if differences and not allow_mismatch:
        raise HarnessError("A and B were measured with different settings, so their points differ: "
                           + "; ".join(differences) + " (--allow-mismatch compares them anyway)")
    return differences


def find_reference(root: str | Path, candidate: str | Path) -> Path:
    """The newest run under ``root`` that can be ``candidate``'s baseline: complete, with measured
    rows, not withdrawn, and measured with the same settings (hardware, experiments,
    implementations, parameters, scale, world size, quick). The baseline a GPU runner compares
    against."""
    from .store import _RUN_DIR, withdrawn_reason

    cand = load_run(candidate if (Path(candidate) / "rows.jsonl").exists() else _only_run(candidate))
    want = run_settings(cand.manifest)
    passed_over = []
    for path in reversed(sorted(Path(root).iterdir()) if Path(root).is_dir() else []):
        if not (_RUN_DIR.match(path.name) and (path / "manifest.json").exists()) or withdrawn_reason(path):
            continue
        manifest = json.loads((path / "manifest.json").read_text())
        if run_settings(manifest)["hardware"] != want["hardware"]:
            continue
        why = settings_differences([manifest], [cand.manifest])
        if not why:
            run = load_run(path)
            why = baseline_problems([run])
            if not why:
                return path
        passed_over.append(f"{path.name} ({'; '.join(why)})")
    nearest = f"; passed over: {', '.join(passed_over[:3])}" if passed_over else ""
    raise NoReference(f"no reference run under {root} for hardware {want['hardware']} (experiments "
                      f"{', '.join(want['experiments'])}, quick={want['quick']}) that is complete and has the "
                      f"candidate's settings: nothing to compare with; commit a run of this hardware as the "
                      f"reference{nearest}")


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
    invalid: list[tuple[tuple, str]] = field(default_factory=list)   # an ok time (or rate) <= 0

    @property
    def failed(self) -> bool:
        """A regression or an invalid value; lost points are judged by the caller (--allow-missing)."""
        return bool(self.regressions or self.invalid)


# Units of a time, and a rate is something per time ("GB/s"): neither can be 0 or negative.
_TIME_UNITS = {"ns", "us", "µs", "ms", "s", "min", "h"}


def is_time_or_rate(unit: str | None) -> bool:
    head, _, per = str(unit or "").partition("/")
    return head.strip() in _TIME_UNITS or per.strip() in _TIME_UNITS


def _invalid_value(row: dict) -> str | None:
    """Why an ok row's value cannot be a measurement, or None."""
    if not is_time_or_rate(row.get("unit")):
        return None
    try:
        value = float(row["value"])
    except (TypeError, ValueError):
        return f"value {row.get('value')!r} is not a number"
    return None if value > 0 else f"{value:g} {row['unit']} (a time or rate must be > 0)"


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
        bad = [f"{side} {why}" for side, r in (("A", a), ("B", b)) if (why := _invalid_value(r))]
        if bad:
            result.invalid.append((key, "; ".join(bad)))
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
    if c.invalid:
        lines.append(f"\nINVALID: an ok time or rate of 0 or below ({len(c.invalid)}):")
        lines += [f"  {k[0]} {k[1]} {k[2]} {k[3]}: {why}" for k, why in c.invalid]
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
    lines.append(f"\n{len(c.regressions)} regressions, {len(c.lost)} lost, {len(c.invalid)} invalid, "
                 f"{len(c.improvements)} improvements, "
                 f"{len(c.unchanged)} unchanged, {len(c.only_a)} only in A, {len(c.only_b)} only in B")
    return "\n".join(lines)
