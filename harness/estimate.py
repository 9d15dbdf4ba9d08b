"""How long a point will take, from the time the same point took in stored runs.

A run's rows are appended as its points finish, each stamped with the time (``time``); the points
of a run follow one another, so a point took from the row written before its first row (or the
run's start) to its last row. :func:`load_history` derives those durations from every run under
the result roots (withdrawn runs left out) and :class:`Estimator` answers per planned point, saying
where the number comes from:

1. the same point (experiment, implementation, parameters, ranks, repeats) measured on this kind
   of machine (``1xH200``, ``cpu``...): the median of its durations;
2. the same point on the nearest other kind (same GPU model first, then the closest GPU count);
3. a size model: the same point at another size (the experiment's ``cost_scales`` parameters,
   ``scale`` by default), its time scaled linearly by the size ratio;
4. otherwise unknown.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Estimate:
    seconds: float | None        # None: unknown
    source: str                  # where the number comes from, said to the user

    @property
    def known(self) -> bool:
        return self.seconds is not None


UNKNOWN = Estimate(None, "no history: unknown")


@dataclass(frozen=True)
class PointTime:
    """One measured point of a stored run and how long it took."""

    kind: str                    # the run's hardware tag: 1xH200, 4xH200, cpu
    key: tuple                   # (experiment, impl, world_size, run settings) -- see point_key
    params: dict
    seconds: float
    run_id: str


def params_json(params: dict) -> str:
    return json.dumps(params, sort_keys=True, default=lambda v: list(v) if isinstance(v, (tuple, set)) else str(v))


def settings_key(quick: bool, repeats, warmup) -> tuple:
    """The run settings besides a point's parameters that change how long it takes."""
    return (bool(quick), repeats, warmup)


def point_key(experiment: str, impl: str, world_size: int, settings: tuple) -> tuple:
    return (experiment, impl, int(world_size or 1), settings)


def _parse_time(text) -> float | None:
    try:
        return _dt.datetime.fromisoformat(str(text)).timestamp()
    except (TypeError, ValueError):
        return None


_RUN_DIR = re.compile(r"^\d{4,}_")


def load_history(roots: list[Path | str]) -> list[PointTime]:
    """Every measured point of every run under ``roots`` (each root a folder of run directories),
    with its duration; withdrawn runs and unreadable files are left out."""
    out: list[PointTime] = []
    seen: set[Path] = set()
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for path in sorted(root.iterdir()):
            if not _RUN_DIR.match(path.name) or path.resolve() in seen:
                continue
            seen.add(path.resolve())
            if (path / "withdrawn.json").exists():
                continue
            out += run_point_times(path)
    return out


def run_point_times(path: Path) -> list[PointTime]:
    """The measured points of one run directory and their durations (see the module's doc)."""
    try:
        manifest = json.loads((path / "manifest.json").read_text())
        lines = (path / "rows.jsonl").read_text().splitlines()
    except (OSError, ValueError):
        return []
    config = manifest.get("config") or {}
    kind = str(manifest.get("hardware") or "unknown")
    settings = settings_key(config.get("quick"), config.get("repeats"), config.get("warmup"))
    previous = _parse_time(manifest.get("start"))
    groups: list[tuple[tuple, list[dict]]] = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict) or "experiment" not in row:
            continue
        fidelity = row.get("fidelity") or {}
        ident = (row["experiment"], row.get("impl"), params_json(row.get("params") or {}),
                 row.get("world_size"), fidelity.get("level", 0))
        if groups and groups[-1][0] == ident:
            groups[-1][1].append(row)
        else:
            groups.append((ident, [row]))
    out = []
    for (exp_id, impl, _, world, _), rows in groups:
        times = [t for t in (_parse_time(r.get("time")) for r in rows) if t is not None]
        if not times:
            continue
        end = max(times)
        if previous is not None and any(r.get("status") == "ok" for r in rows) and end >= previous:
            changes = (rows[0].get("fidelity") or {}).get("cfg") or {}
            mine = settings_key(settings[0], changes.get("repeats", settings[1]), changes.get("warmup", settings[2]))
            out.append(PointTime(kind, point_key(exp_id, impl, world, mine), rows[0].get("params") or {},
                                 end - previous, path.name))
        previous = end if previous is None else max(previous, end)
    return out


def _kind_parts(kind: str) -> tuple[int, str] | None:
    m = re.fullmatch(r"(\d+)x(.+)", kind or "")
    return (int(m.group(1)), m.group(2)) if m else None


def kind_distance(mine: str, other: str) -> float | None:
    """How far another machine kind is from this one for estimating (None: not comparable):
    same GPU model first, nearest GPU count; a CPU-only run compares only with CPU runs."""
    if mine == other:
        return 0.0
    a, b = _kind_parts(mine), _kind_parts(other)
    if a is None or b is None:
        return None
    return (0.0 if a[1] == b[1] else 10.0) + 1.0 + abs(math.log2(b[0] / a[0]))


def machine_kind(device: str, gpu_count: int, gpu_names) -> str:
    """This machine's kind as a run's manifest names it (envinfo.hardware_tag), from what
    ``needs.detect()`` already knows: no nvidia-smi, no run directory."""
    from .envinfo import hardware_tag

    return hardware_tag({"count": gpu_count, "devices": [{"name": n} for n in gpu_names]}, device)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    seconds = max(0.0, float(seconds))
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        m, s = divmod(int(round(seconds)), 60)
        return f"{m} min {s:02d} s" if m < 10 else f"{m} min"
    h, rest = divmod(int(round(seconds)), 3600)
    return f"{h} h {rest // 60:02d} min"


@dataclass
class Estimator:
    """Estimates for points of a run on machine ``kind`` from ``history`` (load_history)."""

    kind: str
    history: list[PointTime] = field(default_factory=list)

    def __post_init__(self):
        self._by_key: dict[tuple, list[PointTime]] = {}
        for t in self.history:
            self._by_key.setdefault(t.key, []).append(t)

    @classmethod
    def from_roots(cls, kind: str, roots: list[Path | str]) -> "Estimator":
        return cls(kind, load_history(roots))

    def estimate(self, experiment: str, impl: str, params: dict, world_size: int, settings: tuple,
                 cost_scales: tuple[str, ...] = ("scale",)) -> Estimate:
        candidates = self._by_key.get(point_key(experiment, impl, world_size, settings), [])
        if not candidates:
            return UNKNOWN
        wanted = params_json(params)
        exact: dict[str, list[float]] = {}
        for t in candidates:
            if params_json(t.params) == wanted:
                exact.setdefault(t.kind, []).append(t.seconds)
        kinds = self._nearest(exact)
        if kinds:
            runs = exact[kinds[0]]
            n = f"{len(runs)} run" + ("s" if len(runs) != 1 else "")
            text = (f"{self.kind} history ({n})" if kinds[0] == self.kind
                    else f"estimate from {kinds[0]} runs ({n})")
            return Estimate(statistics.median(runs), text)
        return self._scaled(candidates, params, cost_scales)

    def _nearest(self, by_kind: dict) -> list[str]:
        ranked = [(d, k) for k in by_kind if (d := kind_distance(self.kind, k)) is not None]
        return [k for _, k in sorted(ranked)]

    def _scaled(self, candidates: list[PointTime], params: dict, cost_scales: tuple[str, ...]) -> Estimate:
        """The same point at another size: its time times the size ratio (linear model)."""
        rest = {k: v for k, v in params.items() if k not in cost_scales}
        best = None
        for t in candidates:
            distance = kind_distance(self.kind, t.kind)
            if distance is None:
                continue
            if params_json({k: v for k, v in t.params.items() if k not in cost_scales}) != params_json(rest):
                continue
            factor = 1.0
            for k in cost_scales:
                new, old = params.get(k), t.params.get(k)
                if new == old:
                    continue
                if not (_positive(new) and _positive(old)):
                    factor = None
                    break
                factor *= float(new) / float(old)
            if factor is None:
                continue
            rank = (distance, abs(math.log(factor)), factor > 1 and 0 or 1)
            if best is None or rank < best[0]:
                best = (rank, t, factor)
        if best is None:
            return UNKNOWN
        _, t, factor = best
        size = "a smaller size" if factor > 1 else "a larger size"
        sizes = ", ".join(f"{k} {t.params.get(k)} -> {params.get(k)}" for k in cost_scales
                          if t.params.get(k) != params.get(k))
        return Estimate(t.seconds * factor, f"scaled from {size} ({sizes}; {t.kind} run {t.run_id.split('_')[0]})")


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
