"""Runs experiments: expands grids, skips what cannot run here (as rows), measures, stores.

A point runs in this process, or on ranks when its experiment says so (``on_ranks``: every point
of a ``spawn_ranks`` experiment): the points of one world size run inside one launch of ranks
(``RunConfig.launch_per_point``: one launch per point), and rank 0 writes the rows. The runner is
the only place ranks come from.
"""

from __future__ import annotations

import signal
import sys
import threading
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import envinfo, plan, registry
from .config import RunConfig
from .errors import HarnessError, LaunchError, SkipPoint
from .estimate import Estimator, fmt_duration, machine_kind, params_json
from .experiment import Experiment, Measurement, Point, RunContext
from .launcher import RankContext, launch
from .needs import detect, memory_unmet
from .progress import Eta, PointProgress
from .store import RunStore, load_run
from .timing import now
from .worlds import run_world


@dataclass
class RunOutcome:
    store: RunStore
    ok: int = 0
    skipped: int = 0
    errors: int = 0
    experiments: list[str] = field(default_factory=list)
    failed_launches: list[str] = field(default_factory=list)   # why each failed launch of ranks ended
    plan: "plan.RunPlan | None" = None
    budget_ended: bool = False
    refinements_failed: list[str] = field(default_factory=list)   # budget refinements that measured nothing


def _format_value(m: Measurement) -> str:
    value = m.resolved_value()
    return f"{m.metric}={value:.4g} {m.unit}" if value is not None else m.metric


def make_row(exp: Experiment, point: Point, cfg: RunConfig, measurement: Measurement | None,
             status: str = "ok", reason: str | None = None) -> dict:
    metric = measurement.metric if measurement else exp.metric
    unit = measurement.unit if measurement else exp.unit
    params = dict(point.params)
    row = {
        "experiment": exp.id,
        "impl": point.impl,
        "params": params,
        "metric": metric,
        "unit": unit,
        "better": measurement.better if measurement else exp.better,
        "value": measurement.resolved_value() if measurement else None,
        "stats": measurement.stats.to_dict() if (measurement and measurement.stats) else None,
        "world_size": point.world_size,
        "device": cfg.device,
        "status": status,
        "time": envinfo.now_iso(),
    }
    if measurement and measurement.extra:
        # what the measurement observed (placement text, per-step times...): not part of the
        # point's identity, so runs stay comparable point by point
        row["extra"] = dict(measurement.extra)
    if reason:
        row["reason"] = reason
    return row


def impl_skip_reason(exp: Experiment, point: Point, cfg: RunConfig) -> str | None:
    spec = registry.get_impl(exp.interface, point.impl)
    reason = spec.needs.unmet(detect(), cfg.device, point.world_size)
    return reason or exp.skip_reason(point, cfg) or memory_unmet(memory_need(exp, point, cfg), detect(), cfg.device,
                                                                 point.world_size)


def memory_need(exp: Experiment, point: Point, cfg: RunConfig) -> dict | None:
    """``exp.memory_need``, or None where it cannot tell (an estimate never stops a run)."""
    try:
        return exp.memory_need(point, cfg)
    except Exception:
        return None


def run_one_point(exp: Experiment, point: Point, ctx: RunContext) -> list[dict]:
    """Measure a point and turn the outcome into rows (never raises for the point's own failure)."""
    cfg = ctx.cfg
    try:
        measurements = exp.run_point(point, ctx)
    except SkipPoint as skip:
        return [make_row(exp, point, cfg, None, "skipped", str(skip))]
    except HarnessError:
        raise
    except Exception as exc:  # a failing point is a row; the run goes on
        detail = traceback.format_exc(limit=6)
        reason = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
        return [make_row(exp, point, cfg, None, "error", reason) | {"traceback": detail}]
    if not measurements:
        return [make_row(exp, point, cfg, None, "error", "the point produced no measurement")]
    return [make_row(exp, point, cfg, m) for m in measurements]


def _outcome_text(rows: list[dict]) -> str:
    parts = []
    for r in rows:
        if r["status"] == "ok":
            parts.append(f"{r['metric']}={r['value']:.4g} {r['unit']}")
        else:
            parts.append(f"{r['status']}: {r.get('reason', '')}")
    return "; ".join(parts)


@dataclass(frozen=True)
class Job:
    """A point as this run measures it: its index in the run's plan, the point at its budget level,
    that level's RunConfig changes, and the ``fidelity`` field of its rows (None: full fidelity)."""

    index: int
    point: Point
    cfg_changes: dict = field(default_factory=dict)
    fidelity: dict | None = None


def run_job(exp: Experiment, job: Job, ctx: RunContext) -> list[dict]:
    """Measure a job's point with its level's configuration (the process's cache shared) and mark
    its rows with the level's fidelity."""
    if job.cfg_changes:
        ctx = replace(ctx, cfg=replace(ctx.cfg, **job.cfg_changes))
    rows = run_one_point(exp, job.point, ctx)
    if job.fidelity:
        for row in rows:
            row["fidelity"] = job.fidelity
    return rows


def _rank_entry(ctx: RankContext, exp_id: str, cfg: RunConfig, jobs: list[Job],
                store_path: str | None, eta: Eta | None = None) -> list[tuple[int, float]]:
    """Runs inside every rank: all points of one world size, rank 0 storing rows. Returns (plan
    index, seconds) of every point finished, for the run's time-left estimate."""
    exp = registry.get_experiment(exp_id)
    store = RunStore(Path(store_path)) if (ctx.is_main and store_path) else None
    progress = PointProgress(exp.id, eta or Eta(len(jobs)), enabled=ctx.is_main) if ctx.is_main else None
    finished = []
    run = RunContext(cfg, ctx)           # one cache for the points of this launch
    try:
        for job in jobs:
            ctx.set_activity(f"point {job.point.label()}")
            if progress:
                progress.start_point(job.point.label())
            began = now()
            rows = run_job(exp, job, run)
            if store:
                for row in rows:
                    store.append(row)
            seconds = now() - began
            finished.append((job.index, seconds))
            if progress:
                progress.finish_point(job.point.label(), _outcome_text(rows), job.index, seconds)
    finally:
        if progress:
            progress.close()
    return finished


def check_params_known(exps: list[Experiment], cfg: RunConfig) -> None:
    known = {name for e in exps for name in e.parameters}
    unknown = sorted(set(cfg.params) - known)
    if unknown:
        listing = ", ".join(sorted(known)) or "none"
        raise HarnessError(f"unknown --param {', '.join(unknown)} for the selected experiments "
                           f"(known: {listing})")
    for exp in exps:
        exp.validate_params(cfg)


def _points(ids: list[str], cfg: RunConfig) -> list[tuple[Experiment, list[Point]]]:
    exps = registry.resolve(ids)
    check_params_known(exps, cfg)
    caps = detect()
    if cfg.device == "cuda" and not caps.cuda:
        raise HarnessError("--device cuda was asked for, but no CUDA GPU is visible")
    run_world(cfg)                       # a count this machine cannot give is an error before anything runs

    plans = []
    for exp in exps:
        exp.world_sizes(cfg)             # a count the experiment cannot use is an error, never replaced
        points = [p for p in exp.points(cfg) if cfg.wants_impl(p.impl)]
        if not points:
            raise HarnessError(f"{exp.id}: no point matches --impl {','.join(cfg.impl_patterns)} "
                               f"(implementations: {', '.join(exp.impls)})")
        plans.append((exp, points))
    return plans


def make_plan(ids: list[str], cfg: RunConfig) -> plan.RunPlan:
    """What ``run`` would do (``run --dry-run``): every point, its skip reason, its budget level
    and estimate. Reads stored runs and what ``harness list`` detects; starts nothing."""
    return _plan(_points(ids, cfg), cfg)


def _plan(points: list[tuple[Experiment, list[Point]]], cfg: RunConfig) -> plan.RunPlan:
    caps = detect()
    kind = machine_kind(cfg.device, caps.gpu_count, caps.gpu_names)
    estimator = Estimator.from_roots(kind, plan.history_roots(cfg))
    budget_s = None
    if cfg.time_budget_s is not None:
        spent = max(0.0, now() - cfg.started_at) if cfg.started_at else 0.0
        budget_s = max(0.0, cfg.time_budget_s - plan.budget_reserve(cfg.time_budget_s) - spent)
    return plan.build(points, cfg, impl_skip_reason, estimator, budget_s, fmt_duration(cfg.time_budget_s)
                      if cfg.time_budget_s else "")


def run(ids: list[str], cfg: RunConfig, argv: list[str]) -> RunOutcome:
    points = _points(ids, cfg)
    exps = [exp for exp, _ in points]
    if torchrun_worker():
        return _run_as_worker(points, cfg)
    if cfg.time_budget_s is not None and _under_torchrun():
        raise HarnessError("--time-budget needs the harness to launch the ranks itself (not under torchrun): "
                           "its plan changes as points finish, and every rank would have to follow it")
    run_plan = _plan(points, cfg)
    manifest = envinfo.capture(argv, extra={
        "experiments": [e.id for e in exps],
        "config": {
            "device": cfg.device, "world_size": cfg.world_size, "quick": cfg.quick,
            "scale": {e.id: _scales(e, pts, cfg) for e, pts in points}, "seed": cfg.seed,
            "warmup": cfg.warmup, "repeats": cfg.repeats, "impls": list(cfg.impl_patterns),
            "params": cfg.params, "launch_per_point": cfg.launch_per_point,
            **({"time_budget_s": cfg.time_budget_s} if cfg.time_budget_s is not None else {}),
        },
        "data": data_sources([(e, p) for e, pts in points for p in pts], cfg),
    })
    tag = envinfo.hardware_tag(manifest["gpus"], cfg.device)
    label = cfg.label or f"{tag}_{'+'.join(e.id for e in exps)}"
    if len(label) > 60:
        label = f"{tag}_{len(exps)}-experiments"
    store = RunStore.create(cfg.out_dir, label, {**manifest, "hardware": tag})
    outcome = RunOutcome(store=store, experiments=[e.id for e in exps], plan=run_plan)
    for line in run_plan.summary() + data_lines(manifest["data"]):
        print(line, file=sys.stderr, flush=True)
    deadline = None if run_plan.budget_s is None else now() + run_plan.budget_s
    eta = Eta(len(run_plan.entries), {e.index: e.cost(e.level) for e in run_plan.runnable}, deadline=deadline)
    status = "failed"
    try:
        try:
            with BudgetClock(deadline):
                if deadline is None:
                    for exp, entries in _by_experiment(run_plan.entries):
                        _record_skips(exp, entries, cfg, store, eta)
                        _run_jobs(exp, [_job(e, e.level) for e in entries if e.runnable], cfg, store, outcome, eta)
                else:
                    for exp, entries in _by_experiment(run_plan.entries):
                        _record_skips(exp, entries, cfg, store, eta)
                    for exp, entries in _by_experiment(plan.first_pass_order(run_plan.runnable)):
                        _run_jobs(exp, [_job(e, e.level) for e in entries], cfg, store, outcome, eta)
                    took = {(e.index, e.level): eta.finished.get(e.index) for e in run_plan.runnable}
                    _refine(run_plan, cfg, store, outcome, deadline, took)
        except BudgetEnded:
            outcome.budget_ended = True
        unfinished = _finish_rows(run_plan, cfg, store, budget_reason(cfg) if outcome.budget_ended else None)
        if outcome.budget_ended:
            print(f"the time budget of {fmt_duration(cfg.time_budget_s)} ended: "
                  + (f"{unfinished} points not reached (skipped rows say so)" if unfinished
                     else "every point has its row"), file=sys.stderr)
        status = "interrupted" if unfinished else ("failed" if outcome.failed_launches else "complete")
    except KeyboardInterrupt:
        # A time limit (timeout --signal=INT), Ctrl-C or SIGTERM: the rows already written stay, and
        # every point without one says why it is missing instead of silently vanishing.
        status = "interrupted"
        _finish_rows(run_plan, cfg, store, INTERRUPTED_REASON)
        print(f"rows so far: {store.rows_path}; `python -m harness report {store.path}` writes their report",
              file=sys.stderr)
        raise
    finally:
        counts = _status_counts(store)
        outcome.ok, outcome.skipped, outcome.errors = counts["ok"], counts["skipped"], counts["error"]
        extra = {"budget": _budget_record(run_plan, store, outcome)} if run_plan.budget_s is not None else {}
        store.update_manifest(end=envinfo.now_iso(), status=status, counts=counts, **extra)
    return outcome


def _finish_rows(run_plan: plan.RunPlan, cfg: RunConfig, store: RunStore, unfinished_reason: str | None) -> int:
    """The rows a run leaves: under a budget one measurement per point, in the plan's order; a
    skipped row saying ``unfinished_reason`` for every point without a row. How many those were."""
    budget = run_plan.budget_s is not None
    if budget:
        _consolidate(run_plan, store)
    missing = _record_unfinished(run_plan, cfg, store, unfinished_reason) if unfinished_reason else 0
    if budget and missing:
        _consolidate(run_plan, store)
    return missing


def _by_experiment(entries: list[plan.PlannedPoint]) -> list[tuple[Experiment, list[plan.PlannedPoint]]]:
    out: list[tuple[Experiment, list[plan.PlannedPoint]]] = []
    for e in entries:
        if not out or out[-1][0] is not e.exp:
            out.append((e.exp, []))
        out[-1][1].append(e)
    return out


def data_sources(pairs: list[tuple[Experiment, Point]], cfg: RunConfig) -> dict[str, str]:
    """What each dataset the points name is read from (``datasets.source``): the real data at scale 1,
    else a stand-in, saying where real data under the data root is not read at the run's scale."""
    from . import datasets

    out: dict[str, str] = {}
    for exp, point in pairs:
        name = point.params.get("dataset")
        if not isinstance(name, str) or name in out or not datasets.is_registered(name):
            continue
        scale = point.params.get("scale")
        scale = float(scale) if isinstance(scale, (int, float)) else exp.scale(cfg, name)
        out[name] = datasets.source(name, scale, cfg.data_root)
    return out


def data_lines(sources: dict[str, str]) -> list[str]:
    """The run's datasets in a line each, printed with its plan."""
    return [f"data: {name}: {text}" for name, text in sources.items()]


def _scales(exp: Experiment, points: list[Point], cfg: RunConfig):
    """The experiment's scale per dataset of its points (its one scale where they name none)."""
    names = sorted({str(p.params["dataset"]) for p in points if "dataset" in p.params})
    return {name: exp.scale(cfg, name) for name in names} if names else exp.scale(cfg)


def skip_summary(rows: list[dict], most: int = 4) -> str | None:
    """One line: how many rows were skipped, grouped by reason, most frequent first."""
    from collections import Counter

    reasons = Counter(" ".join(str(r.get("reason", "")).split()) for r in rows if r["status"] == "skipped")
    if not reasons:
        return None
    total = sum(reasons.values())
    groups = [f"{n} x {reason[:100] + ('...' if len(reason) > 100 else '')}"
              for reason, n in reasons.most_common(most)]
    if len(reasons) > most:
        groups.append(f"{len(reasons) - most} more reasons")
    return f"skipped {total} of {len(rows)} rows: " + "; ".join(groups)


INTERRUPTED_REASON = "not measured: the run was interrupted (time limit, Ctrl-C or kill) before this point"


def budget_reason(cfg: RunConfig) -> str:
    return f"not measured: the time budget ({fmt_duration(cfg.time_budget_s)}) ended before this point"


def _record_unfinished(run_plan: plan.RunPlan, cfg: RunConfig, store: RunStore, reason: str) -> int:
    """A skipped row saying ``reason`` for every point of the plan without a row; how many."""
    written = load_run(store.path).rows          # tolerates a rank's write torn by the interrupt
    missing = 0
    for e in run_plan.entries:
        if not any(_rows_of(written, e.exp, lv.point) for lv in e.levels):
            store.append(make_row(e.exp, e.point, cfg, None, "skipped", reason))
            missing += 1
    return missing


def _status_counts(store: RunStore) -> dict[str, int]:
    """Counted from the rows file, which ranks append to directly, so a run stopped midway
    still reports what it holds."""
    counts = {"ok": 0, "skipped": 0, "error": 0}
    for row in load_run(store.path).rows:
        key = row["status"] if row["status"] in ("ok", "skipped") else "error"
        counts[key] += 1
    return counts


def torchrun_worker() -> bool:
    """Under torchrun every rank runs this CLI; only rank 0 stores rows and runs single-process
    experiments, the others join the rank groups (the points an experiment runs ``on_ranks``)."""
    import os

    from .launcher import under_torchrun

    return under_torchrun() and int(os.environ["RANK"]) != 0


def _run_as_worker(plans, cfg: RunConfig) -> RunOutcome:
    for exp, points in plans:
        runnable = [p for p in points if exp.on_ranks(p) and not impl_skip_reason(exp, p, cfg)]
        world = int(__import__("os").environ["WORLD_SIZE"])
        group = [Job(i, p) for i, p in enumerate(runnable) if p.world_size == world]
        if group:
            launch(_rank_entry, (exp.id, cfg, group, None), world_size=world, device=cfg.device,
                   timeout_s=cfg.timeout_s)
    return RunOutcome(store=None)


def _record_skips(exp: Experiment, entries: list[plan.PlannedPoint], cfg: RunConfig, store: RunStore,
                  eta: Eta) -> None:
    """The rows of the points that cannot run here, with their reasons."""
    skipped = [e for e in entries if not e.runnable]
    for e in skipped:
        store.append(make_row(exp, e.point, cfg, None, "skipped", e.skip))
    if skipped:
        with PointProgress(exp.id, eta) as progress:
            for e in skipped:
                progress.finish_point(e.point.label(), f"skipped: {e.skip}", e.index)


def _job(entry: plan.PlannedPoint, level: int) -> Job:
    lv = entry.levels[level]
    return Job(entry.index, lv.point, lv.cfg_changes, entry.fidelity(level))


def _run_jobs(exp: Experiment, jobs: list[Job], cfg: RunConfig, store: RunStore, outcome: RunOutcome,
              eta: Eta) -> None:
    """Measure ``jobs`` of ``exp``: in this process, or those it runs ``on_ranks`` in launches of
    ranks (one per world size, or per point with ``launch_per_point``), rank 0 appending the rows."""
    local = [j for j in jobs if not exp.on_ranks(j.point)]
    if local:
        run = RunContext(cfg)            # one cache for the points run in this process
        with PointProgress(exp.id, eta) as progress:
            for job in local:
                progress.start_point(job.point.label())
                began = now()
                rows = run_job(exp, job, run)
                for row in rows:
                    store.append(row)
                progress.finish_point(job.point.label(), _outcome_text(rows), job.index, now() - began)

    by_world: dict[int, list[Job]] = {}
    for job in jobs:
        if exp.on_ranks(job.point):
            by_world.setdefault(job.point.world_size, []).append(job)
    if _under_torchrun():
        import os

        world_now = int(os.environ["WORLD_SIZE"])
        for world in [w for w in by_world if w != world_now]:
            for job in by_world.pop(world):
                store.append(make_row(exp, job.point, cfg, None, "skipped",
                                      f"needs {world} ranks; this torchrun has {world_now}"))
                eta.finish(job.index, None)
    launches = [(world, chunk) for world, group in sorted(by_world.items())
                for chunk in ([[j] for j in group] if cfg.launch_per_point else [group])]
    for world, group in launches:
        before = len(load_run(store.path).rows)
        try:
            results = launch(_rank_entry, (exp.id, cfg, group, str(store.path), eta), world_size=world,
                             device=cfg.device, timeout_s=cfg.timeout_s)
            for index, seconds in (results or [None])[0] or ():
                eta.finish(index, seconds)
        except LaunchError as exc:
            outcome.failed_launches.append(str(exc))
            _record_failed_launch(exp, group, cfg, store, before, exc)
        for job in group:                  # points a failed launch never finished count as done
            eta.finished.setdefault(job.index, None)


def _record_failed_launch(exp: Experiment, jobs: list[Job], cfg: RunConfig, store: RunStore,
                          before: int, exc: LaunchError) -> None:
    """The rows of a launch that ended early: points finished before the failure keep the rows
    rank 0 stored as they ended; the point the failing rank was in is the error, and the points
    after it are skipped rows saying why they never ran. Rows rank 0 stored for those points
    after the failure (collectives that lost a peer) are consequences, not results, and go."""
    group = [j.point for j in jobs]
    rows = load_run(store.path).rows
    mine = rows[before:]
    failed_at = _failed_point(exp, group, mine, exc)
    who = exc.culprit or str(exc)
    kept = [r for r in mine if not any(_rows_of([r], exp, p) for p in group[failed_at:])]
    new = []
    for i, job in enumerate(jobs[failed_at:]):
        if i == 0:
            row = make_row(exp, job.point, cfg, None, "error", who)
        else:
            where = f" during point {group[failed_at].label()}"
            row = make_row(exp, job.point, cfg, None, "skipped", f"not reached: {who}{where}")
        new.append(row | ({"fidelity": job.fidelity} if job.fidelity else {}))
    store.replace_rows(rows[:before] + kept + new)


def _failed_point(exp: Experiment, group: list[Point], mine: list[dict], exc: LaunchError) -> int:
    """Index in ``group`` of the point the failing rank was in (for a timeout, the earliest point a
    rank was still in); without that, the first point that stored no row."""
    doing = [f"point {p.label()}" for p in group]
    said = [exc.activities.get(exc.rank)] if exc.rank is not None else list(exc.activities.values())
    known = [doing.index(a) for a in said if a in doing]
    if known:
        return min(known)
    return next((i for i, p in enumerate(group) if not _rows_of(mine, exp, p)), len(group))


def _rows_of(rows: list[dict], exp: Experiment, point: Point) -> list[dict]:
    return [r for r in rows if r["experiment"] == exp.id and r["impl"] == point.impl
            and _covers(r["params"], point.params)]


def _covers(row_params: dict, point_params: dict) -> bool:
    """True when a stored row (params round-tripped through JSON) belongs to the point."""
    import json

    norm = lambda v: json.dumps(v, sort_keys=True, default=str)  # noqa: E731
    return all(k in row_params and norm(row_params[k]) == norm(list(v) if isinstance(v, tuple) else v)
               for k, v in point_params.items())


def _under_torchrun() -> bool:
    from .launcher import under_torchrun

    return under_torchrun()


# ------------------------------------------------------------------------------------ time budget

class BudgetEnded(KeyboardInterrupt):
    """The time budget ended: raised in the main thread wherever it is (a point in this process,
    the wait for a launch of ranks, which then stops its ranks), so the run stops as at Ctrl-C."""


class BudgetClock:
    """Raises BudgetEnded in the main thread at ``deadline`` (harness.timing.now) while entered; nothing
    without a deadline, or outside the main thread (the runner then stops between points only)."""

    def __init__(self, deadline: float | None):
        self.deadline = deadline
        self._previous = None
        self._armed = False

    def _fire(self, signum, frame):
        if self._armed:
            self._armed = False
            raise BudgetEnded()

    def __enter__(self):
        if self.deadline is None or threading.current_thread() is not threading.main_thread():
            return self
        self._previous = signal.signal(signal.SIGALRM, self._fire)
        self._armed = True
        signal.setitimer(signal.ITIMER_REAL, max(0.001, self.deadline - now()))
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            self._armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)
            self._previous = None
        return False


def _level_rows(rows: list[dict], entry: plan.PlannedPoint, level: int) -> list[dict]:
    point = entry.levels[level].point
    wanted = params_json(point.params)
    return [r for r in rows if r["experiment"] == entry.exp.id and r["impl"] == point.impl
            and (r.get("fidelity") or {}).get("level", 0) == level and params_json(r["params"]) == wanted]


def _best_levels(run_plan: plan.RunPlan, rows: list[dict]) -> dict[int, int]:
    """Plan index -> the lowest (finest) level with an ok row."""
    out = {}
    for e in run_plan.runnable:
        ok = [k for k in range(len(e.levels)) if any(r["status"] == "ok" for r in _level_rows(rows, e, k))]
        if ok:
            out[e.index] = min(ok)
    return out


def _consolidate(run_plan: plan.RunPlan, store: RunStore) -> None:
    """One measurement per point, in the plan's order: the rows of its finest level with an ok row
    (the rows of its other levels go: the coarser measurement a finer one replaced, a refinement
    that failed), or where it has none, the rows it has. Also drops a last line torn by a rank
    stopped at the deadline."""
    rows = load_run(store.path).rows
    best = _best_levels(run_plan, rows)
    placed: dict[int, tuple[int, int]] = {}          # id(row) -> (plan index, level)
    for e in run_plan.entries:
        for k in range(len(e.levels)):
            for r in _level_rows(rows, e, k):
                placed.setdefault(id(r), (e.index, k))

    def kept(row: dict) -> bool:
        index, level = placed.get(id(row), (None, None))
        return index is None or best.get(index, level) == level

    keep = [r for r in rows if kept(r)]
    order = {id(r): placed.get(id(r), (len(run_plan.entries), 0))[0] for r in keep}
    store.replace_rows(sorted(keep, key=lambda r: order[id(r)]))


def _refine(run_plan: plan.RunPlan, cfg: RunConfig, store: RunStore, outcome: RunOutcome,
            deadline: float, took: dict[tuple[int, int], float | None]) -> None:
    """While time remains, measure again the points the first pass measured at a reduced level: each
    at the finest level that still fits the time left, the cheapest points first. A level without
    an estimate counts at twice the point's measured time per level finer (a guess; the budget's end
    stops a point that runs longer, and its coarser rows stay). ``took``: (plan index, level) ->
    seconds the point took at that level in this run (updated here)."""
    tried: set[tuple[int, int]] = set()
    while True:
        rows = load_run(store.path).rows
        best = _best_levels(run_plan, rows)
        candidates = []
        for e in run_plan.runnable:
            level = best.get(e.index)
            if not level:
                continue
            coarse = took.get((e.index, level))
            costs = {j: c if (c := e.cost(j)) is not None else
                     (coarse * 2 ** (level - j) if coarse is not None else None)
                     for j in range(level) if (e.index, j) not in tried}
            if costs:
                candidates.append((costs, e))
        left = deadline - now()
        chosen, total = [], 0.0
        finest = lambda c: c[0][min(c[0])]           # noqa: E731  (the cost of full fidelity, or the finest left)
        for costs, e in sorted(candidates, key=lambda c: (finest(c) is None, finest(c) or 0.0, c[1].index)):
            fits = [j for j, c in sorted(costs.items()) if c is not None and total + c <= left]
            if fits:
                chosen.append((e, fits[0]))
                total += costs[fits[0]]
        if not chosen:
            return
        tried |= {(e.index, level) for e, level in chosen}
        eta = Eta(len(chosen), {e.index: e.cost(level) for e, level in chosen}, deadline=deadline, tag="refine ")
        levels = dict((e.index, level) for e, level in chosen)
        for exp, group in _by_experiment(sorted((e for e, _ in chosen), key=lambda e: e.index)):
            _run_jobs(exp, [_job(e, levels[e.index]) for e in group], cfg, store, outcome, eta)
        rows = load_run(store.path).rows
        for e, level in chosen:
            took[(e.index, level)] = eta.finished.get(e.index)
            mine = _level_rows(rows, e, level)
            if not any(r["status"] == "ok" for r in mine):
                why = next((r.get("reason") for r in mine if r.get("reason")), "no row")
                outcome.refinements_failed.append(f"{e.exp.id} {e.point.label()} at level {level}: {why}")
        _consolidate(run_plan, store)


def _budget_record(run_plan: plan.RunPlan, store: RunStore, outcome: RunOutcome) -> dict:
    """The manifest's account of a budgeted run: the budget, the plan's estimate, and per point
    the level it was planned at and the level its rows hold."""
    rows = load_run(store.path).rows
    best = _best_levels(run_plan, rows)
    seconds, unknown = run_plan.total()
    return {
        "seconds": run_plan.budget_s, "ended": outcome.budget_ended,
        "planned_estimate_s": seconds, "planned_unknown": unknown,
        "refinements_failed": outcome.refinements_failed,
        "points": [{"experiment": e.exp.id, "impl": e.point.impl, "params": e.point.params,
                    "planned_level": e.level, "measured_level": best.get(e.index),
                    "levels": [lv.note or "full" for lv in e.levels]} for e in run_plan.runnable],
    }
