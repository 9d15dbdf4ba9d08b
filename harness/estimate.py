"""How long a point will take, from the time the same point took in stored runs.

A run's rows are appended as its points finish, each stamped with the time (``time``); the points
of a run follow one another, so a point took from the row written before its first row (or the
run's start, or the start of the sitting it was measured in, for a resumed run) to its last row. :func:`load_history` derives those durations from every run under
the result roots (withdrawn runs left out) and :class:`Estimator` answers per planned point, saying
where the number comes from:

1. the same point (experiment, implementation, parameters, ranks, repeats) measured on this kind
   of machine (``1xH200``, ``cpu``...): the median of its durations;
2. the same point on the nearest other kind (same GPU model first, then the closest GPU count);
3. a size model: the same point at another size (the experiment's ``cost_scales`` parameters,
   ``scale`` by default) or, where its work splits over its ranks (``cost_per_rank``), at another
   rank count, its time scaled linearly by the ratio;
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
from typing import Callable


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
    # a resumed run (run --resume): a sitting's first point counts from the sitting's start, not
    # from the last row of the sitting before
    sittings = sorted(t for s in manifest.get("sittings") or [] if (t := _parse_time(s.get("start"))) is not None)
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
        previous = max([t for t in sittings if previous is None or previous <= t <= min(times)] or [previous]) \
            if sittings else previous
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
            exp_id, impl, _, settings = t.key
            self._by_key.setdefault((exp_id, impl, settings), []).append(t)

    @classmethod
    def from_roots(cls, kind: str, roots: list[Path | str]) -> "Estimator":
        return cls(kind, load_history(roots))

    def estimate(self, experiment: str, impl: str, params: dict, world_size: int, settings: tuple,
                 cost_scales: tuple[str, ...] = ("scale",), per_rank: bool = False,
                 size: Callable[[dict, int], float | None] | None = None) -> Estimate:
        """The same point stored on this kind, else on the nearest kind; else the size model:
        stored points that differ only in ``cost_scales`` parameters (and, with ``per_rank``, in
        their rank count), ``size(params, ranks)`` their size (default: the product of the
        ``cost_scales`` values)."""
        candidates = self._by_key.get((experiment, impl, settings), [])
        world = int(world_size or 1)
        wanted = params_json(params)
        exact: dict[str, list[float]] = {}
        for t in candidates:
            if t.key[2] == world and params_json(t.params) == wanted:
                exact.setdefault(t.kind, []).append(t.seconds)
        kinds = self._nearest(exact)
        if kinds:
            runs = exact[kinds[0]]
            n = f"{len(runs)} run" + ("s" if len(runs) != 1 else "")
            text = (f"{self.kind} history ({n})" if kinds[0] == self.kind
                    else f"estimate from {kinds[0]} runs ({n})")
            return Estimate(statistics.median(runs), text)
        return self._scaled(candidates, params, world, cost_scales, per_rank,
                            size or (lambda p, w: _product(p, cost_scales)))

    def _nearest(self, by_kind: dict) -> list[str]:
        ranked = [(d, k) for k in by_kind if (d := kind_distance(self.kind, k)) is not None]
        return [k for _, k in sorted(ranked)]

    def _scaled(self, candidates: list[PointTime], params: dict, world: int, cost_scales: tuple[str, ...],
                per_rank: bool, size: Callable[[dict, int], float | None]) -> Estimate:
        """Stored points of the same family (equal but for their size) on the nearest kind that has
        any: with two sizes or more, time = fixed + per-size-unit fitted to them (least squares);
        with one, its time scaled in proportion to the size."""
        target = size(params, world)
        if not target or target <= 0:
            return UNKNOWN
        rest = params_json({k: v for k, v in params.items() if k not in cost_scales})
        family: dict[str, list[tuple[float, PointTime]]] = {}
        for t in candidates:
            if (t.key[2] != world and not per_rank) or kind_distance(self.kind, t.kind) is None:
                continue
            if params_json({k: v for k, v in t.params.items() if k not in cost_scales}) != rest:
                continue
            stored = size(t.params, t.key[2])
            if stored and stored > 0:
                family.setdefault(t.kind, []).append((float(stored), t))
        if not family:
            return UNKNOWN
        kind = self._nearest(family)[0]
        points = family[kind]
        if len({s for s, _ in points}) >= 2:
            fixed, per_unit = _affine([s for s, _ in points], [t.seconds for _, t in points])
            return Estimate(fixed + per_unit * target,
                            f"size model fitted to {len(points)} {kind} points at {len({s for s, _ in points})} "
                            f"sizes ({fixed:.0f} s fixed)")
        stored, t = min(points, key=lambda p: (abs(math.log(p[0] / target)), p[1].run_id))
        changed = ([f"{t.key[2]} -> {world} ranks"] if t.key[2] != world else []) + [
            f"{k} {_show(t.params.get(k))} -> {_show(params.get(k))}" for k in cost_scales
            if params_json({k: t.params.get(k)}) != params_json({k: params.get(k)})]
        factor = target / stored
        return Estimate(t.seconds * factor, f"scaled x{factor:.2g} from {', '.join(changed) or 'another size'} "
                                            f"({kind} run {t.run_id.split('_')[0]})")


def _affine(x: list[float], y: list[float]) -> tuple[float, float]:
    """Least-squares ``y = fixed + per_unit * x`` with both >= 0."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((a - mx) ** 2 for a in x)
    per_unit = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx if sxx else 0.0
    fixed = my - per_unit * mx
    if per_unit < 0:                      # noise: no growth seen, the mean time
        return my, 0.0
    if fixed < 0:                         # through the origin
        return 0.0, sum(a * b for a, b in zip(x, y)) / sum(a * a for a in x)
    return fixed, per_unit


def _product(params: dict, names: tuple[str, ...]) -> float | None:
    out = 1.0
    for k in names:
        v = params.get(k)
        if v is None:
            continue
        if not _positive(v):
            return None
        out *= float(v)
    return out


def _show(value) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
