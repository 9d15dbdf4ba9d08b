"""Runs experiments: expands grids, skips what cannot run here (as rows), measures, stores.

A point runs in this process, or on ranks when its experiment says so (``on_ranks``: every point
of a ``spawn_ranks`` experiment): the points of one world size run inside one launch of ranks
(``RunConfig.launch_per_point``: one launch per point), and rank 0 writes the rows. The runner is
the only place ranks come from.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path

from . import envinfo, registry
from .config import RunConfig
from .errors import HarnessError, LaunchError, SkipPoint
from .experiment import Experiment, Measurement, Point, RunContext
from .launcher import RankContext, launch
from .needs import detect
from .progress import PointProgress
from .store import RunStore, load_run
from .worlds import run_world


@dataclass
class RunOutcome:
    store: RunStore
    ok: int = 0
    skipped: int = 0
    errors: int = 0
    experiments: list[str] = field(default_factory=list)
    failed_launches: list[str] = field(default_factory=list)   # why each failed launch of ranks ended


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
    return reason or exp.skip_reason(point, cfg)


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


def _rank_entry(ctx: RankContext, exp_id: str, cfg: RunConfig, points: list[Point],
                store_path: str | None) -> int:
    """Runs inside every rank: all points of one world size, rank 0 storing rows."""
    exp = registry.get_experiment(exp_id)
    store = RunStore(Path(store_path)) if (ctx.is_main and store_path) else None
    progress = PointProgress(exp.id, len(points), enabled=ctx.is_main) if ctx.is_main else None
    written = 0
    run = RunContext(cfg, ctx)           # one cache for the points of this launch
    try:
        for point in points:
            ctx.set_activity(f"point {point.label()}")
            if progress:
                progress.start_point(point.label())
            rows = run_one_point(exp, point, run)
            if store:
                for row in rows:
                    store.append(row)
                    written += 1
            if progress:
                progress.finish_point(point.label(), _outcome_text(rows))
    finally:
        if progress:
            progress.close()
    return written


def check_params_known(exps: list[Experiment], cfg: RunConfig) -> None:
    known = {name for e in exps for name in e.parameters}
    unknown = sorted(set(cfg.params) - known)
    if unknown:
        listing = ", ".join(sorted(known)) or "none"
        raise HarnessError(f"unknown --param {', '.join(unknown)} for the selected experiments "
                           f"(known: {listing})")
    for exp in exps:
        exp.validate_params(cfg)


def run(ids: list[str], cfg: RunConfig, argv: list[str]) -> RunOutcome:
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

    if torchrun_worker():
        return _run_as_worker(plans, cfg)
    manifest = envinfo.capture(argv, extra={
        "experiments": [e.id for e in exps],
        "config": {
            "device": cfg.device, "world_size": cfg.world_size, "quick": cfg.quick,
            "scale": {e.id: _scales(e, points, cfg) for e, points in plans}, "seed": cfg.seed,
            "warmup": cfg.warmup, "repeats": cfg.repeats, "impls": list(cfg.impl_patterns),
            "params": cfg.params, "launch_per_point": cfg.launch_per_point,
        },
    })
    tag = envinfo.hardware_tag(manifest["gpus"], cfg.device)
    label = cfg.label or f"{tag}_{'+'.join(e.id for e in exps)}"
    if len(label) > 60:
        label = f"{tag}_{len(exps)}-experiments"
    store = RunStore.create(cfg.out_dir, label, {**manifest, "hardware": tag})
    outcome = RunOutcome(store=store, experiments=[e.id for e in exps])
    status = "failed"
    try:
        for exp, points in plans:
            _run_experiment(exp, points, cfg, store, outcome)
        status = "failed" if outcome.failed_launches else "complete"
    except KeyboardInterrupt:
        # A time limit (timeout --signal=INT), Ctrl-C or SIGTERM: the rows already written stay, and
        # every point without one says why it is missing instead of silently vanishing.
        status = "interrupted"
        _record_unfinished(plans, cfg, store)
        raise
    finally:
        store.update_manifest(end=envinfo.now_iso(), status=status, counts=_status_counts(store))
    return outcome


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


def _record_unfinished(plans, cfg: RunConfig, store: RunStore) -> None:
    written = load_run(store.path).rows          # tolerates a rank's write torn by the interrupt
    for exp, points in plans:
        for point in points:
            if not any(r["experiment"] == exp.id and r["impl"] == point.impl
                       and _covers(r["params"], point.params) for r in written):
                store.append(make_row(exp, point, cfg, None, "skipped", INTERRUPTED_REASON))


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
        group = [p for p in runnable if p.world_size == world]
        if group:
            launch(_rank_entry, (exp.id, cfg, group, None), world_size=world, device=cfg.device,
                   timeout_s=cfg.timeout_s)
    return RunOutcome(store=None)


def _tally(outcome: RunOutcome, rows: list[dict]) -> None:
    for r in rows:
        if r["status"] == "ok":
            outcome.ok += 1
        elif r["status"] == "skipped":
            outcome.skipped += 1
        else:
            outcome.errors += 1


def _run_experiment(exp: Experiment, points: list[Point], cfg: RunConfig, store: RunStore,
                    outcome: RunOutcome) -> None:
    runnable: list[Point] = []
    skipped_rows = []
    skipped_labels = []
    for point in points:
        reason = impl_skip_reason(exp, point, cfg)
        if reason:
            skipped_rows.append(make_row(exp, point, cfg, None, "skipped", reason))
            skipped_labels.append(point.label())
        else:
            runnable.append(point)
    for row in skipped_rows:
        store.append(row)
    _tally(outcome, skipped_rows)

    ranked = [p for p in runnable if exp.on_ranks(p)]
    local = [p for p in runnable if not exp.on_ranks(p)]
    if local or not ranked:
        run = RunContext(cfg)            # one cache for the points run in this process
        with PointProgress(exp.id, len(points) - len(ranked)) as progress:
            for label, row in zip(skipped_labels, skipped_rows):
                progress.finish_point(label, f"skipped: {row['reason']}")
            for point in local:
                progress.start_point(point.label())
                rows = run_one_point(exp, point, run)
                for row in rows:
                    store.append(row)
                _tally(outcome, rows)
                progress.finish_point(point.label(), _outcome_text(rows))

    by_world: dict[int, list[Point]] = {}
    for point in ranked:
        by_world.setdefault(point.world_size, []).append(point)
    if _under_torchrun():
        import os

        world_now = int(os.environ["WORLD_SIZE"])
        for world in [w for w in by_world if w != world_now]:
            for point in by_world.pop(world):
                row = make_row(exp, point, cfg, None, "skipped",
                               f"needs {world} ranks; this torchrun has {world_now}")
                store.append(row)
                _tally(outcome, [row])
    launches = [(world, chunk) for world, group in sorted(by_world.items())
                for chunk in ([[p] for p in group] if cfg.launch_per_point else [group])]
    for world, group in launches:
        before = len(load_run(store.path).rows)
        try:
            launch(_rank_entry, (exp.id, cfg, group, str(store.path)), world_size=world,
                   device=cfg.device, timeout_s=cfg.timeout_s)
        except LaunchError as exc:
            outcome.failed_launches.append(str(exc))
            _record_failed_launch(exp, group, cfg, store, before, exc)
        _tally(outcome, load_run(store.path).rows[before:])


def _record_failed_launch(exp: Experiment, group: list[Point], cfg: RunConfig, store: RunStore,
                          before: int, exc: LaunchError) -> None:
    """The rows of a launch that ended early: points finished before the failure keep the rows
    rank 0 stored as they ended; the point the failing rank was in is the error, and the points
    after it are skipped rows saying why they never ran. Rows rank 0 stored for those points
    after the failure (collectives that lost a peer) are consequences, not results, and go."""
    rows = load_run(store.path).rows
    mine = rows[before:]
    failed_at = _failed_point(exp, group, mine, exc)
    who = exc.culprit or str(exc)
    kept = [r for r in mine if not any(_rows_of([r], exp, p) for p in group[failed_at:])]
    new = []
    for i, point in enumerate(group[failed_at:]):
        if i == 0:
            new.append(make_row(exp, point, cfg, None, "error", who))
        else:
            where = f" during point {group[failed_at].label()}"
            new.append(make_row(exp, point, cfg, None, "skipped", f"not reached: {who}{where}"))
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
