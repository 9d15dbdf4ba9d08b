"""Runs experiments: expands grids, skips what cannot run here (as rows), measures, stores.

A point runs in this process, or on ranks when its experiment says so (``on_ranks``: every point
of a ``spawn_ranks`` experiment): the points of one world size and rank environment
(``Experiment.rank_env``) run inside one launch of ranks (``RunConfig.launch_per_point``: one
launch per point), and rank 0 appends the rows as each point ends. The runner is the only place
ranks come from.

One loop measures a run: groups of points (an experiment's points in this process, or of one
world size and rank environment on ranks) in the plan's order. Under a time budget (harness.budget) the first pass goes
cheapest first at the levels the plan chose, each group stopping at its share of the time left so
that one experiment cannot take the whole budget, then further rounds take up what a share cut
short, then refinements measure again at finer levels while time remains. What was measured is
kept in memory (harness.ledger), not read back from rows.jsonl. ``resume=RUN_DIR`` appends to an
earlier run only what it lacks (harness.resume).
"""

from __future__ import annotations

import sys
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import envinfo, plan, ranks, registry
from . import resume as resuming
from .budget import Budget, BudgetEnded, Stop
from .config import RunConfig
from .errors import HarnessError, LaunchError, SkipPoint, StoreError
from .estimate import Estimator, machine_kind
from .experiment import Experiment, Measurement, Point, RunContext
from .launcher import RankContext, launch
from .ledger import Ledger, StoredRows, stored_state
from .needs import detect, memory_unmet
from .progress import Eta, PointProgress
from .store import RunStore
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
    budget: Budget | None = None
    budget_ended: bool = False
    refinements_failed: list[str] = field(default_factory=list)   # budget refinements that measured nothing
    store_error: str | None = None          # why the run could not write its rows (a full disk)
    manifest_final: bool = True             # False: not even the manifest's last update could be written


def make_row(exp: Experiment, point: Point, cfg: RunConfig, measurement: Measurement | None,
             status: str = "ok", reason: str | None = None, skip_cause: str | None = None) -> dict:
    """A result row. ``skip_cause`` of a skipped row the runner writes itself: "plan" (the point
    cannot run here) or "unreached" (the run never got to it: measured again on resume)."""
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
    if skip_cause:
        row["skip_cause"] = skip_cause
    return row


def impl_skip_reason(exp: Experiment, point: Point, cfg: RunConfig) -> str | None:
    spec = registry.get_impl(exp.interface, point.impl)
    reason = spec.needs.unmet(detect(), cfg.device, point.world_size) or spec.unavailable_reason(cfg.device)
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
    """A point as this run measures it: its index in the run's plan, its budget level, the point
    at that level, the level's RunConfig changes, and the ``fidelity`` field of its rows (None:
    full fidelity)."""

    index: int
    level: int
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


def _rank_entry(ctx: RankContext, exp_id: str, cfg: RunConfig, jobs: list[Job], store: RunStore | None,
                eta: Eta | None = None, stop: Stop | None = None) -> dict:
    """Runs inside every rank: ``jobs`` in order, rank 0 appending their rows. Before each job the
    ranks agree with rank 0 whether to go on (its ``stop``, or a write that failed). Returns, for
    the runner's ledger, what each finished job stored: (plan index, level, rows, seconds, how many
    of its rows rank 0 wrote), and the store's error if a write failed."""
    exp = registry.get_experiment(exp_id)
    stop = stop or Stop()
    if ctx.is_main and store is not None and _under_torchrun():
        store.update_manifest(topology=ctx.topology_record())      # torchrun's nodes, emulated or not
    progress = PointProgress(exp.id, eta or Eta(len(jobs)), enabled=True) if ctx.is_main else None
    done, store_error = [], None
    run = RunContext(cfg, ctx)           # one cache for the points of this launch
    try:
        for n, job in enumerate(jobs):
            go = store_error is None and not stop.due(first=n == 0) if ctx.is_main else None
            if not ranks.broadcast(ctx, go):
                break
            ctx.set_activity(f"point {job.point.label()}")
            if progress:
                progress.start_point(job.point.label())
            began = stop.now()
            rows = run_job(exp, job, run)
            seconds = stop.now() - began
            written = 0
            if ctx.is_main and store is not None:
                try:
                    for row in rows:
                        store.append(row)
                        written += 1
                except StoreError as exc:
                    store_error = str(exc)
            done.append((job.index, job.level, rows, seconds, written))
            if progress:
                progress.finish_point(job.point.label(), _outcome_text(rows), job.index, seconds)
    finally:
        if progress:
            progress.close()
    return {"done": done, "store_error": store_error}


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


def make_plan(ids: list[str], cfg: RunConfig, resume: Path | None = None) -> plan.RunPlan:
    """What ``run`` would do (``run --dry-run``): every point, its skip reason, its budget level
    and estimate, and with ``resume`` what the resumed run already holds. Reads stored runs and
    what ``harness list`` detects; starts nothing."""
    points = _points(ids, cfg)
    prior = resuming.open_run(resume) if resume is not None else None
    return _plan(points, cfg, _budget(cfg, [exp for exp, _ in points]), prior)


def _budget(cfg: RunConfig, exps: list[Experiment], clock=None) -> Budget | None:
    """The run's time budget, its reserve sized for the artifacts its report writes (the
    experiments' own and those derived from them)."""
    if cfg.time_budget_s is None:
        return None
    from .report import derived_ids

    ids = {e.id for e in exps}
    return Budget.begin(cfg.time_budget_s, len(ids) + len(derived_ids(ids)), cfg.started_at, clock)


def _plan(points: list[tuple[Experiment, list[Point]]], cfg: RunConfig, budget: Budget | None,
          prior=None) -> plan.RunPlan:
    caps = detect()
    kind = machine_kind(cfg.device, caps.gpu_count, caps.gpu_names)
    estimator = Estimator.from_roots(kind, plan.history_roots(cfg))
    stored = None
    if prior is not None:
        rows = StoredRows(prior.rows)
        stored = lambda entry: stored_state(rows.attempts(entry))   # noqa: E731
    return plan.build(points, cfg, impl_skip_reason, estimator, budget, stored,
                      str(prior.path) if prior is not None else None)


INTERRUPTED_REASON = "not measured: the run was interrupted (time limit, Ctrl-C or kill) before this point"
STORE_REASON = "not measured: the run stopped when it could not write its rows ({})"


def run(ids: list[str], cfg: RunConfig, argv: list[str], *, resume: Path | None = None,
        clock=None) -> RunOutcome:
    """Measure the points of ``ids`` into a new run directory, or with ``resume`` into that run,
    only the points it lacks. ``clock``: the budget's clock (harness.budget; tests inject one)."""
    points = _points(ids, cfg)
    exps = [exp for exp, _ in points]
    if torchrun_worker():
        return _run_as_worker(points, cfg)
    if _under_torchrun() and (cfg.time_budget_s is not None or resume is not None):
        raise HarnessError("--time-budget and --resume need the harness to launch the ranks itself (not under "
                           "torchrun): their plan changes as points finish, and every rank would have to follow it")
    budget = _budget(cfg, exps, clock)
    prior = resuming.open_run(resume) if resume is not None else None
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
    manifest["hardware"] = envinfo.hardware_tag(manifest["gpus"], cfg.device)
    if prior is not None:
        resuming.check(prior, manifest)
    run_plan = _plan(points, cfg, budget, prior)
    commit = (manifest.get("git") or {}).get("commit")
    stamp = {"commit": commit} if commit else {}
    if prior is not None:
        store = RunStore.reopen(prior.path, resuming.merged(prior, manifest, [e.id for e in exps]), stamp)
    else:
        label = cfg.label or f"{manifest['hardware']}_{'+'.join(e.id for e in exps)}"
        if len(label) > 60:
            label = f"{manifest['hardware']}_{len(exps)}-experiments"
        store = RunStore.create(cfg.out_dir, label, manifest, stamp)
    ledger = Ledger(run_plan, store, prior.rows if prior is not None else [],
                    consolidate=budget is not None or prior is not None)
    outcome = RunOutcome(store=store, experiments=[e.id for e in exps], plan=run_plan, budget=budget)
    for line in run_plan.summary() + data_lines(manifest["data"]):
        print(line, file=sys.stderr, flush=True)
    store.reserve_space()
    status = "failed"
    try:
        try:
            with budget.alarm() if budget is not None else nullcontext():
                _measure(ledger, cfg, budget, outcome)
        except BudgetEnded:
            outcome.budget_ended = True
        except StoreError as exc:
            outcome.store_error = str(exc)
        reason = (budget.unreached_reason if outcome.budget_ended
                  else STORE_REASON.format(outcome.store_error) if outcome.store_error else None)
        unfinished = _finish(ledger, cfg, reason, outcome)
        if outcome.budget_ended:
            print(f"the time budget of {budget.text} ended: "
                  + (f"{unfinished} points not reached (skipped rows say so)" if unfinished
                     else "every point has its row"), file=sys.stderr)
        status = ("failed" if outcome.store_error or (outcome.failed_launches and not unfinished)
                  else "interrupted" if unfinished else "complete")
    except KeyboardInterrupt:
        # A time limit (timeout --signal=INT), Ctrl-C or SIGTERM: the rows already written stay, and
        # every point without one says why it is missing instead of silently vanishing.
        status = "interrupted"
        _finish(ledger, cfg, INTERRUPTED_REASON, outcome)
        print(f"rows so far: {store.rows_path}; `python -m harness report {store.path}` writes their report"
              + (f"; `--resume {store.path}` measures what it lacks" if not outcome.store_error else ""),
              file=sys.stderr)
        raise
    finally:
        _close(ledger, outcome, status, prior is not None)
    if outcome.store_error:
        raise StoreError(_store_failure(ledger, outcome))
    return outcome


def _finish(ledger: Ledger, cfg: RunConfig, reason: str | None, outcome: RunOutcome) -> int:
    """The rows a run leaves: a skipped row saying ``reason`` for every point it was to measure and
    has no row for, then (under a budget, or resumed) one measurement per point in the plan's
    order. Where the disk refused rows, the run's reserved space is released first so that they
    and the skipped rows can still be written. How many points were not reached."""
    missing = ledger.missing() if reason else []
    if ledger.unwritten or outcome.store_error:
        ledger.store.release_space()
        _keep_store_error(outcome, ledger.retry_unwritten)
    for e in missing:
        row = make_row(e.exp, e.point, cfg, None, "skipped", reason, "unreached")
        _keep_store_error(outcome, lambda: ledger.add(e.index, 0, [row]))
    _keep_store_error(outcome, ledger.finish)
    return len(missing)


def _keep_store_error(outcome: RunOutcome, write) -> None:
    try:
        write()
    except StoreError as exc:
        outcome.store_error = outcome.store_error or str(exc)


def _close(ledger: Ledger, outcome: RunOutcome, status: str, resumed: bool) -> None:
    """The manifest's last word: end, status, counts (and the budget's account, each sitting's)."""
    store = ledger.store
    final = ledger.final_rows()
    counts = ledger.counts([r for r in final if not any(r is u for u in ledger.unwritten)])
    outcome.ok, outcome.skipped, outcome.errors = counts["ok"], counts["skipped"], counts["error"]
    updates = {"end": envinfo.now_iso(), "status": status, "counts": counts}
    record = _budget_record(ledger, outcome) if outcome.budget is not None else None
    if record is not None or resumed:
        updates["budget"] = record           # this sitting's (a resumed sitting without one: none)
    try:
        if resumed:
            sittings = store.read_manifest().get("sittings") or [{}]
            sittings[-1] = {**sittings[-1], "end": updates["end"], "status": status,
                            "measured": ledger.measured_now(), **({"budget": record} if record else {})}
            updates["sittings"] = sittings
        store.update_manifest(**updates)
    except (StoreError, OSError, ValueError) as exc:
        outcome.store_error = outcome.store_error or str(exc)
        outcome.manifest_final = False
    store.release_space()


def _store_failure(ledger: Ledger, outcome: RunOutcome) -> str:
    """One line: what could not be written, and what the run directory holds."""
    text = f"{outcome.store_error}; the run stopped ({ledger.store.path})"
    lost = list(dict.fromkeys(f"{r['experiment']} {r['impl']} {' '.join(f'{k}={v}' for k, v in r['params'].items())}".strip()
                              for r in ledger.unwritten))
    if lost:
        text += (f": {len(lost)} point{'s' if len(lost) > 1 else ''} could not be recorded ("
                 + ", ".join(lost[:4]) + (f" and {len(lost) - 4} more" if len(lost) > 4 else "") + ")")
    else:
        text += ": the points it did not measure are skipped rows"
    if not outcome.manifest_final:
        text += "; its manifest could not be updated either (it still says running)"
    return text


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
        group = [Job(i, 0, p) for i, p in enumerate(runnable)
                 if p.world_size == world and not env_refusal(exp.rank_env(p, cfg))]
        if group:
            launch(_rank_entry, (exp.id, cfg, group, None), world_size=world, device=cfg.device,
                   timeout_s=cfg.timeout_s)
    return RunOutcome(store=None)




# ------------------------------------------------------------------------------------ the loop

def _measure(ledger: Ledger, cfg: RunConfig, budget: Budget | None, outcome: RunOutcome) -> None:
    """Every point of the plan this run measures: the skipped rows of those that cannot run here,
    then groups of points in the plan's order (cheapest first under a budget, each group within
    its share of the time left), rounds again for what a share cut short, then refinements."""
    run_plan = ledger.plan
    eta = Eta(len(run_plan.entries), {e.index: e.cost(e.level) for e in run_plan.todo},
              {e.index: None for e in run_plan.entries if e.done}, budget=budget)
    _record_skips(ledger, cfg, eta)
    pending = plan.first_pass_order(run_plan.todo) if budget is not None else run_plan.todo
    while pending:
        groups = _groups(run_plan, [_job(e, e.level) for e in pending], cfg)
        cut: list[Job] = []
        for n, (exp, where, jobs) in enumerate(groups):
            if budget is not None and budget.ended():
                raise BudgetEnded()
            ahead = [j for _, _, group in groups[n:] for j in group] + cut
            stop = Stop(budget, _share_end(run_plan, budget, jobs, ahead, eta) if budget is not None else None)
            _run_group(ledger, exp, where, jobs, cfg, stop, outcome, eta)
            cut += [j for j in jobs if not ledger.tried_now(j.index)]
        if budget is None or len(cut) == sum(len(jobs) for _, _, jobs in groups):
            break                        # no share cut anything short, or nothing moved: no next round
        pending = [run_plan.entries[j.index] for j in cut]
    if budget is not None:
        if any(not ledger.tried_now(e.index) for e in run_plan.todo):
            raise BudgetEnded()          # the budget ended before these points could start
        _refine(ledger, cfg, budget, outcome)


def _share_end(run_plan: plan.RunPlan, budget: Budget, jobs: list[Job], ahead: list[Job], eta: Eta) -> float:
    """When a group stops starting points: its share of the time left, in proportion to its
    estimated cost among the points still ahead (a point without an estimate counts as the mean
    point measured so far, else the median estimate), so that an experiment whose points were
    underestimated cannot take the time of the experiments after it."""
    took = [s for s in eta.finished.values() if s is not None]
    known = sorted(c for j in ahead if (c := run_plan.entries[j.index].cost(j.level)) is not None)
    typical = sum(took) / len(took) if took else (known[len(known) // 2] if known else 1.0)

    def cost(group: list[Job]) -> float:
        return sum(c if (c := run_plan.entries[j.index].cost(j.level)) is not None else typical for j in group)

    share = budget.left() * cost(jobs) / max(cost(ahead), 1e-9)
    return budget.clock() + share


def _job(entry: plan.PlannedPoint, level: int) -> Job:
    lv = entry.levels[level]
    return Job(entry.index, level, lv.point, lv.cfg_changes, entry.fidelity(level))


def _groups(run_plan: plan.RunPlan, jobs: list[Job],
            cfg: RunConfig) -> list[tuple[Experiment, tuple | None, list[Job]]]:
    """``jobs`` as the groups they run in: consecutive jobs of one experiment, those it runs in
    this process first (None), then those on ranks by :func:`launch_key` (world size and rank
    environment: one launch each)."""
    out: list[tuple[Experiment, tuple | None, list[Job]]] = []
    chunks: list[tuple[Experiment, list[Job]]] = []
    for job in jobs:
        exp = run_plan.entries[job.index].exp
        if not chunks or chunks[-1][0] is not exp:
            chunks.append((exp, []))
        chunks[-1][1].append(job)
    for exp, chunk in chunks:
        local = [j for j in chunk if not exp.on_ranks(j.point)]
        if local:
            out.append((exp, None, local))
        by_launch: dict[tuple, list[Job]] = {}
        for j in chunk:
            if exp.on_ranks(j.point):
                by_launch.setdefault(launch_key(exp, j.point, cfg), []).append(j)
        out += [(exp, key, by_launch[key]) for key in sorted(by_launch)]
    return out


def launch_key(exp: Experiment, point: Point, cfg: RunConfig) -> tuple[int, tuple]:
    """What a launch of ranks is shared by: the world size and the environment the point's ranks
    need (``Experiment.rank_env``), as a sortable tuple."""
    return point.world_size, tuple(sorted(exp.rank_env(point, cfg).items()))


def env_refusal(env: dict[str, str]) -> str | None:
    """Why ranks that already exist (torchrun) cannot run a point needing ``env``, or None."""
    import os

    wrong = {k: v for k, v in env.items() if os.environ.get(k) != v}
    if not wrong:
        return None
    return ("needs " + " ".join(f"{k}={v}" for k, v in sorted(wrong.items())) + " in the ranks' environment "
            "before their process group forms; set it for the torchrun")


def _record_skips(ledger: Ledger, cfg: RunConfig, eta: Eta) -> None:
    """The rows of the points that cannot run here, with their reasons (a resumed run keeps a
    point's measured rows instead)."""
    skipped = [e for e in ledger.plan.entries if not e.runnable and ledger.best_level(e.index) is None]
    for e in skipped:
        ledger.add(e.index, 0, [make_row(e.exp, e.point, cfg, None, "skipped", e.skip, "plan")])
    by_exp: dict[str, list[plan.PlannedPoint]] = {}
    for e in skipped:
        by_exp.setdefault(e.exp.id, []).append(e)
    for exp_id, entries in by_exp.items():
        with PointProgress(exp_id, eta) as progress:
            for e in entries:
                progress.finish_point(e.point.label(), f"skipped: {e.skip}", e.index)


def _run_group(ledger: Ledger, exp: Experiment, where: tuple | None, jobs: list[Job], cfg: RunConfig,
               stop: Stop, outcome: RunOutcome, eta: Eta) -> None:
    """Measure ``jobs`` of ``exp`` until ``stop`` says so: in this process (``where`` None), or in a
    launch of ranks (``where``: its world size and environment, :func:`launch_key`; one launch per
    job with ``launch_per_point``), rank 0 appending the rows."""
    if where is None:
        run = RunContext(cfg)            # one cache for the points run in this process
        with PointProgress(exp.id, eta) as progress:
            for n, job in enumerate(jobs):
                if stop.due(first=n == 0):
                    return
                progress.start_point(job.point.label())
                began = stop.now()
                rows = run_job(exp, job, run)
                seconds = stop.now() - began
                ledger.add(job.index, job.level, rows, seconds)
                progress.finish_point(job.point.label(), _outcome_text(rows), job.index, seconds)
        return
    world, env = where[0], dict(where[1])
    if _under_torchrun():
        import os

        world_now = int(os.environ["WORLD_SIZE"])
        why = f"needs {world} ranks; this torchrun has {world_now}" if world != world_now else env_refusal(env)
        if why:
            for job in jobs:
                ledger.add(job.index, job.level, [make_row(exp, job.point, cfg, None, "skipped", why, "plan")])
                eta.finish(job.index, None)
            return
    launches = [[j] for j in jobs] if cfg.launch_per_point else [jobs]
    for n, group in enumerate(launches):
        if n and stop.due(first=False):
            return

        def overdue(exc: LaunchError, group=group) -> None:
            # under torchrun rank 0 ends the job at once (harness/launcher.py): the rows and the
            # manifest say why first, as a failed launch's would
            outcome.failed_launches.append(str(exc))
            _recover(ledger, exp, group, cfg, exc)
            _finish(ledger, cfg, f"not measured: the torchrun job ended, {exc.culprit or exc}", outcome)
            _close(ledger, outcome, "failed", False)

        try:
            results = launch(_rank_entry, (exp.id, cfg, group, ledger.store, eta, stop), world_size=world,
                             device=cfg.device, timeout_s=cfg.timeout_s, on_overdue=overdue, env=env)
        except LaunchError as exc:
            outcome.failed_launches.append(str(exc))
            _recover(ledger, exp, group, cfg, exc)
            for job in group:              # points a failed launch never finished count as done
                eta.finished.setdefault(job.index, None)
            continue
        except KeyboardInterrupt:          # Ctrl-C, kill or the budget's end: keep what rank 0 stored
            ledger.adopt(group)
            raise
        result = (results or [None])[0] or {}
        for index, level, rows, seconds, written in result.get("done", ()):
            ledger.add(index, level, rows, seconds, written)
            eta.finish(index, seconds)
        if result.get("store_error"):
            raise StoreError(result["store_error"])


def _recover(ledger: Ledger, exp: Experiment, jobs: list[Job], cfg: RunConfig, exc: LaunchError) -> None:
    """The rows of a launch that ended early: points finished before the failure keep the rows
    rank 0 stored as they ended; the point the failing rank was in is the error, and the points
    after it are skipped rows saying why they never ran."""
    who = exc.culprit or str(exc)

    def failed_at(stored: set[tuple[int, int]]) -> int:
        """The job the failing rank was in (for a timeout, the earliest a rank was still in);
        without that, the first job that stored no row."""
        doing = [f"point {j.point.label()}" for j in jobs]
        said = [exc.activities.get(exc.rank)] if exc.rank is not None else list(exc.activities.values())
        known = [doing.index(a) for a in said if a in doing]
        if known:
            return min(known)
        return next((i for i, j in enumerate(jobs) if (j.index, j.level) not in stored), len(jobs))

    def error(job: Job) -> dict:
        return make_row(exp, job.point, cfg, None, "error", who) | ({"fidelity": job.fidelity} if job.fidelity else {})

    def unreached(job: Job, failed: Job) -> dict:
        row = make_row(exp, job.point, cfg, None, "skipped", f"not reached: {who} during point {failed.point.label()}",
                       "unreached")
        return row | ({"fidelity": job.fidelity} if job.fidelity else {})

    ledger.recover_launch(jobs, failed_at, error, unreached)


def _refine(ledger: Ledger, cfg: RunConfig, budget: Budget, outcome: RunOutcome) -> None:
    """While time remains, measure again the points measured at a reduced level (this sitting or
    an earlier one): each at the finest level that still fits the time left, the cheapest points
    first. A level without an estimate counts at twice the point's measured time per level finer
    (a guess; the budget's end stops a point that runs longer, and its coarser rows stay)."""
    run_plan = ledger.plan
    tried: set[tuple[int, int]] = set()
    while True:
        candidates = []
        for e in run_plan.runnable:
            level = ledger.best_level(e.index)
            if e.done or not level:
                continue
            coarse = ledger.seconds.get((e.index, level)) or e.cost(level)
            costs = {j: c if (c := e.cost(j)) is not None else
                     (coarse * 2 ** (level - j) if coarse is not None else None)
                     for j in range(level) if (e.index, j) not in tried}
            if costs:
                candidates.append((costs, e))
        left = budget.left()
        chosen, total = [], 0.0
        finest = lambda c: c[0][min(c[0])]           # noqa: E731  (the cost of full fidelity, or the finest left)
        for costs, e in sorted(candidates, key=lambda c: (finest(c) is None, finest(c) or 0.0, c[1].index)):
            fits = [j for j, c in sorted(costs.items()) if c is not None and total + c <= left]
            if fits:
                chosen.append((e, fits[0]))
                total += costs[fits[0]]
        if not candidates:
            return
        if not chosen:                   # nothing fits the time left: the budget ends the refinement
            if budget.ended() or any(c is not None for costs, _ in candidates for c in costs.values()):
                raise BudgetEnded()
            return
        tried |= {(e.index, level) for e, level in chosen}
        eta = Eta(len(chosen), {e.index: e.cost(level) for e, level in chosen}, budget=budget, tag="refine ")
        levels = dict((e.index, level) for e, level in chosen)
        jobs = [_job(e, levels[e.index]) for e in sorted((e for e, _ in chosen), key=lambda e: e.index)]
        for exp, where, group in _groups(run_plan, jobs, cfg):
            if budget.ended():
                raise BudgetEnded()
            _run_group(ledger, exp, where, group, cfg, Stop(budget), outcome, eta)
        for e, level in chosen:
            mine = [r for a in ledger.level_attempts(e.index, level) for r in a.rows]
            if not mine:                 # the budget ended before this refinement could start
                raise BudgetEnded()
            if not any(r["status"] == "ok" for r in mine):
                why = next((r.get("reason") for r in mine if r.get("reason")), "no row")
                outcome.refinements_failed.append(f"{e.exp.id} {e.point.label()} at level {level}: {why}")


def _budget_record(ledger: Ledger, outcome: RunOutcome) -> dict:
    """The manifest's account of a budgeted run: the budget, the plan's estimate, and per point
    the level it was planned at and the level its rows hold."""
    run_plan, budget = ledger.plan, outcome.budget
    seconds, unknown = run_plan.total()
    return {
        "seconds": run_plan.budget_s, "total_s": budget.total_s, "reserve_s": budget.reserve_s,
        "ended": outcome.budget_ended, "planned_estimate_s": seconds, "planned_unknown": unknown,
        "refinements_failed": outcome.refinements_failed,
        "points": [{"experiment": e.exp.id, "impl": e.point.impl, "params": e.point.params,
                    "planned_level": e.level, "measured_level": ledger.best_level(e.index),
                    "levels": [lv.note or "full" for lv in e.levels]} for e in run_plan.runnable],
    }


def _under_torchrun() -> bool:
    from .launcher import under_torchrun

    return under_torchrun()
