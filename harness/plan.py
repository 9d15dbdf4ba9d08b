"""What a run will do before it does it: its points, what each needs, whether it can run here, how
long it should take, and under ``--time-budget`` at which fidelity each point is measured first.

Budget levels come from the experiments (``Experiment.cheaper``): level 0 is the point as the run
would measure it without a budget, higher levels are cheaper ways to fill the same cell (fewer
repeats, one epoch, capped host epochs...). The plan starts every runnable point at its cheapest
level and raises the points whose next level adds the least time while the estimated total fits
the budget, so the whole table fills first; the runner refines the rest while time remains.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .errors import HarnessError
from .estimate import UNKNOWN, Estimate, Estimator, fmt_duration, params_json, settings_key

if TYPE_CHECKING:
    from .budget import Budget
    from .config import RunConfig
    from .experiment import Experiment, Point

MAX_LEVELS = 8          # an experiment's cheaper() ladder is cut here


@dataclass
class Level:
    point: "Point"
    cfg_changes: dict
    note: str                      # what is reduced ("" at level 0)
    estimate: Estimate = UNKNOWN


@dataclass
class PlannedPoint:
    index: int                     # position in the run, from 0
    exp: "Experiment"
    point: "Point"                 # the cell, as a run without a budget measures it
    skip: str | None               # why it cannot run here, or None
    levels: list[Level] = field(default_factory=list)
    level: int = 0                 # the level the run measures it at first
    done: bool = False             # a resumed run's stored rows already hold it: nothing to do
    stored_level: int | None = None   # a resumed run's finest stored level with an ok row

    @property
    def runnable(self) -> bool:
        return self.skip is None

    def cost(self, level: int) -> float | None:
        """Estimated seconds at ``level``; where unknown, bounded by the known estimates of its finer levels
        (a cheaper level never takes longer)."""
        known = [lv.estimate.seconds for lv in self.levels[: level + 1] if lv.estimate.known]
        own = self.levels[level].estimate.seconds
        return own if own is not None else (min(known) if known else None)

    def fidelity(self, level: int) -> dict | None:
        """The ``fidelity`` field of rows measured at ``level`` (None at full fidelity)."""
        if level == 0:
            return None
        lv = self.levels[level]
        out = {"level": level, "cheapest": len(self.levels) - 1, "note": lv.note}
        if lv.cfg_changes:
            out["cfg"] = dict(lv.cfg_changes)
        return out

    def cfg_at(self, cfg: "RunConfig", level: int) -> "RunConfig":
        changes = self.levels[level].cfg_changes
        return dataclasses.replace(cfg, **changes) if changes else cfg


@dataclass
class RunPlan:
    entries: list[PlannedPoint]
    kind: str                       # this machine's kind (1xH200, cpu)
    budget: "Budget | None" = None  # the run's time budget
    budget_s: float | None = None   # seconds the points may take (what the budget leaves them)
    resumed: str | None = None      # the run directory a resumed run appends to

    @property
    def runnable(self) -> list[PlannedPoint]:
        return [e for e in self.entries if e.runnable]

    @property
    def todo(self) -> list[PlannedPoint]:
        """The points this run measures first: runnable, not done, and (under a budget) not
        already measured at a reduced level (those are refined while time remains)."""
        return [e for e in self.runnable if not e.done
                and (e.stored_level is None or self.budget is None)]

    def total(self) -> tuple[float, int]:
        """Estimated seconds of the points to measure at their planned levels, and how many of
        them have no estimate."""
        costs = [e.cost(e.level) for e in self.todo]
        return sum(c for c in costs if c is not None), sum(c is None for c in costs)

    def summary(self) -> list[str]:
        """The plan in a few lines: printed by --dry-run and at the start of every run."""
        entries, runnable, todo = self.entries, self.runnable, self.todo
        per_exp: dict[str, int] = {}
        for e in entries:
            per_exp[e.exp.id] = per_exp.get(e.exp.id, 0) + 1
        lines = [f"plan: {len(entries)} points on {self.kind} ("
                 + ", ".join(f"{k} {n}" for k, n in per_exp.items())
                 + f"); {len(runnable)} can run here, {len(entries) - len(runnable)} skipped with their reason"]
        if self.resumed:
            done = sum(e.done for e in runnable)
            reduced = sum(e.stored_level is not None for e in runnable)
            lines.append(f"resuming {self.resumed}: {done} point{'s' if done != 1 else ''} already measured, "
                         f"{len(todo)} to measure" + (f", {reduced} stored at reduced fidelity"
                            + (" (refined while time remains)" if self.budget else " (measured again at full fidelity)")
                            if reduced else ""))
        seconds, unknown = self.total()
        sources: dict[str, int] = {}
        for e in todo:
            src = e.levels[e.level].estimate
            kind = _source_kind(src) if src.known else ("at most a finer level's time" if e.cost(e.level) is not None
                                                         else "no history")
            sources[kind] = sources.get(kind, 0) + 1
        text = f"estimate: about {fmt_duration(seconds)}" if todo else "estimate: nothing to run"
        if unknown and unknown == len(todo):
            text = f"estimate: unknown (no stored run of these points on {self.kind} or a comparable machine)"
        else:
            if unknown:
                text += f" plus {unknown} point{'s' if unknown > 1 else ''} of unknown length"
            if todo:
                text += " (" + ", ".join(f"{n} {k}" for k, n in sources.items()) + ")"
        lines.append(text)
        if self.budget is not None:
            reduced = [e for e in todo if e.level > 0]
            notes: dict[str, int] = {}
            for e in reduced:
                notes[f"{e.exp.id}: {e.levels[e.level].note}"] = notes.get(f"{e.exp.id}: {e.levels[e.level].note}", 0) + 1
            lines.append(f"budget {self.budget.text} ({fmt_duration(self.budget_s)} for points, "
                         f"{fmt_duration(self.budget.reserve_s)} kept for the end and the report): "
                         f"{len(todo) - len(reduced)} points planned at full fidelity, "
                         f"{len(reduced)} at reduced fidelity first, refined while time remains")
            lines += [f"  {n} x {note}" for note, n in notes.items()]
            if unknown:
                lines.append(f"  {unknown} point{'s have' if unknown > 1 else ' has'} no estimate, so whether the "
                             "budget reaches every point is unknown: each experiment gets a share of the time by "
                             "its points, and the points it does not reach are skipped rows saying so")
            elif seconds > self.budget_s:
                lines.append(f"  the cheapest plan needs about {fmt_duration(seconds)}, more than the "
                             f"{fmt_duration(self.budget_s)} the budget leaves for points: the points it does not "
                             "reach are skipped rows saying so")
        return lines


def _source_kind(estimate: Estimate) -> str:
    text = estimate.source
    if text.startswith(("scaled", "size model")):
        return "from a size model"
    if text.startswith("estimate from"):
        return text.split(" (")[0]
    return text.split(" (")[0]


def build(plans: list[tuple["Experiment", list["Point"]]], cfg: "RunConfig",
          skip_reason: Callable, estimator: Estimator, budget: "Budget | None" = None,
          stored: Callable[["PlannedPoint"], tuple[bool, int | None]] | None = None,
          resumed: str | None = None) -> RunPlan:
    """The plan of a run: every point with its skip reason, its budget levels (only under a
    budget) and their estimates, and the levels chosen to fit what the budget leaves for points.
    ``stored(entry)``: for a resumed run, (done, finest stored level with an ok row)."""
    entries = []
    for exp, points in plans:
        for point in points:
            entry = PlannedPoint(len(entries), exp, point, skip_reason(exp, point, cfg))
            entry.levels = [Level(point, {}, "")]
            if (budget is not None or stored is not None) and entry.runnable:
                entry.levels += ladder(exp, point, cfg)     # a resumed run's stored rows may be at any level
            if stored is not None and entry.runnable:
                entry.done, entry.stored_level = stored(entry)
            if entry.runnable and not entry.done:
                for lv in entry.levels:
                    lv.estimate = estimate_level(estimator, exp, lv, cfg)
            entries.append(entry)
    plan = RunPlan(entries, estimator.kind, budget, budget.left() if budget is not None else None, resumed)
    if budget is not None:
        choose_levels(plan.todo, plan.budget_s)
    return plan


def ladder(exp: "Experiment", point: "Point", cfg: "RunConfig") -> list[Level]:
    """The experiment's cheaper levels of ``point``, without repeats of the same variant."""
    out: list[Level] = []
    seen: list[tuple[dict, dict]] = [(point.params, {})]
    for level in range(1, MAX_LEVELS + 1):
        cheaper = exp.cheaper(point, level, cfg)
        if cheaper is None:
            break
        if any(params_json(cheaper.point.params) == params_json(p) and cheaper.cfg == c for p, c in seen):
            continue
        seen.append((cheaper.point.params, cheaper.cfg))
        out.append(Level(cheaper.point, dict(cheaper.cfg), cheaper.note))
    return out


def estimate_level(estimator: Estimator, exp: "Experiment", level: Level, cfg: "RunConfig") -> Estimate:
    from .experiment import Point

    changes = level.cfg_changes
    settings = settings_key(cfg.quick, changes.get("repeats", cfg.repeats), changes.get("warmup", cfg.warmup))
    impl = level.point.impl

    def size(params: dict, ranks: int) -> float | None:
        try:
            return exp.cost_size(Point(impl, params, ranks), cfg)
        except Exception:        # a stored point the experiment no longer reads: no size
            return None

    return estimator.estimate(exp.id, impl, level.point.params, level.point.world_size, settings,
                              exp.cost_scales, exp.cost_per_rank, size)


def choose_levels(entries: list[PlannedPoint], budget_s: float) -> None:
    """Every point at its cheapest level, then the upgrade (one level finer) that adds the least
    estimated time, while the total fits ``budget_s``: every cell filled, and as many as fit at
    full fidelity. A level without an estimate of its own counts at its finer levels' estimate (it
    takes no longer); one with none at all is not planned (the runner may still refine to it)."""
    for e in entries:
        e.level = len(e.levels) - 1
    total = sum(c for e in entries if (c := e.cost(e.level)) is not None)
    while True:
        best = None
        for e in entries:
            if e.level == 0 or (up := e.cost(e.level - 1)) is None:
                continue
            delta = up - (e.cost(e.level) or 0.0)
            if best is None or delta < best[0]:
                best = (delta, e)
        if best is None or total + best[0] > budget_s:
            return
        total += best[0]
        best[1].level -= 1


def first_pass_order(entries: list[PlannedPoint]) -> list[PlannedPoint]:
    """The order a budgeted run measures its points in first: cheapest first, so a budget that ends
    early leaves the dearest points unmeasured rather than whole datasets or experiments; points of
    similar cost (within a factor of 4) stay together by experiment (fewer launches of ranks). A
    point without an estimate counts at the median estimate."""
    known = sorted(c for e in entries if (c := e.cost(e.level)) is not None)
    typical = known[len(known) // 2] if known else 1.0
    experiments = {id(e.exp): i for i, e in reversed(list(enumerate(entries)))}

    def key(e: PlannedPoint):
        cost = e.cost(e.level)
        cost = typical if cost is None else cost
        return (math.floor(math.log(max(cost, 1.0), 4)), experiments[id(e.exp)], cost, e.index)

    return sorted(entries, key=key)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smh]?)")


def parse_duration(text: str) -> float:
    """'20m', '90s', '1.5h', '1h30m' or bare seconds ('300') -> seconds."""
    cleaned = str(text).strip().lower().replace(" ", "")
    if cleaned.startswith("-"):
        raise HarnessError(f"--time-budget must be more than 0 s, not '{text}'")
    parts = list(_DURATION.finditer(cleaned))
    if not cleaned or not parts or "".join(m.group(0) for m in parts) != cleaned \
            or (len(parts) > 1 and not all(m.group(2) for m in parts)):
        raise HarnessError(f"--time-budget takes a duration such as 90s, 20m, 1.5h or 1h30m, not '{text}'")
    seconds = sum(float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)] for m in parts)
    if seconds <= 0:
        raise HarnessError(f"--time-budget must be more than 0 s, not '{text}'")
    return seconds


def history_roots(cfg: "RunConfig") -> list[Path]:
    """Where stored runs are read for estimates: the committed results of this checkout, and the
    run's own result root when it is elsewhere."""
    from .envinfo import REPO_ROOT

    return list(dict.fromkeys([REPO_ROOT / "results", Path(cfg.out_dir)]))


# ------------------------------------------------------------------------------------ rendering

def common_params(points: list["Point"]) -> dict:
    """The parameters every point shares (printed once instead of on every line)."""
    if not points:
        return {}
    first = points[0].params
    return {k: v for k, v in first.items()
            if all(k in p.params and params_json({k: p.params[k]}) == params_json({k: v}) for p in points[1:])}


def short_label(point: "Point", common: dict) -> str:
    inner = " ".join(f"{k}={v}" for k, v in point.params.items() if k not in common)
    return f"{point.impl} {inner}".strip()


def needs_text(entry: PlannedPoint, cfg: "RunConfig") -> str:
    from . import registry

    spec = registry.get_impl(entry.exp.interface, entry.point.impl)
    needs = spec.needs
    world = entry.point.world_size
    parts = [f"{world} GPU{'s' if world > 1 else ''}" if cfg.device == "cuda"
             else f"{world} CPU rank{'s' if world > 1 else ''}"]
    if needs.peer_access and cfg.device == "cuda" and world > 1:
        parts.append("P2P")
    try:
        memory = entry.exp.memory_need(entry.point, cfg)
    except Exception:           # an estimate must never stop the plan
        memory = None
    if memory:
        per = "per GPU" if cfg.device == "cuda" else "per rank"
        parts += [f"{_bytes(memory[k])} {where}" for k, where in (("gpu", per), ("host", "host")) if memory.get(k)]
    packages = list(needs.packages) + (list(needs.cuda_packages) if cfg.device == "cuda" else [])
    if packages:
        parts.append(", ".join(packages))
    return "; ".join(parts)


def _bytes(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def render(plan: RunPlan, cfg: "RunConfig") -> str:
    """The --dry-run listing: one table per experiment, then the summary."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, width=170, highlight=False, soft_wrap=False)
    by_exp: dict[str, list[PlannedPoint]] = {}
    for e in plan.entries:
        by_exp.setdefault(e.exp.id, []).append(e)
    for exp_id, entries in by_exp.items():
        common = common_params([e.point for e in entries])
        shared = " ".join(f"{k}={v}" for k, v in common.items())
        table = Table(title=f"{exp_id}: {len(entries)} points" + (f" (all with {shared})" if shared else ""),
                      title_justify="left", box=box.SIMPLE_HEAD)
        for col in ("#", "point", "needs", "here", "level", "estimate", "from"):
            table.add_column(col, overflow="fold")
        for e in entries:
            if e.done:
                here, level, est, source = "stored", "-", "-", "the resumed run"
            elif e.runnable and e.stored_level is not None and plan.budget is not None:
                here, est, source = "stored", "-", "the resumed run"
                level = f"{e.stored_level}: {e.levels[e.stored_level].note}; refined while time remains"
            elif e.runnable:
                lv = e.levels[e.level]
                level = "full" if e.level == 0 else f"{e.level}: {lv.note}"
                cost = e.cost(e.level)
                source = lv.estimate.source if lv.estimate.known else (
                    "at most a finer level's time" if cost is not None else lv.estimate.source)
                here, est = "yes", fmt_duration(cost)
            else:
                here, level, est, source = f"no: {e.skip}", "-", "-", "-"
            table.add_row(str(e.index + 1), short_label(e.point, common), needs_text(e, cfg), here, level, est, source)
        console.print(table)
    for line in plan.summary():
        console.print(line, markup=False)
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())
