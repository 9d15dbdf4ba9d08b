"""A run's rows in memory: the runner's one record of what it measured, mirrored to its store.

Every row is placed at the point of the run's plan it measures (plan index and budget level); the
rows of one measurement of one point are an attempt. The runner asks the ledger what it needs (has
a point rows, the finest level it was measured at, how long that took) instead of reading
rows.jsonl back; the file is read again only to recover what a failed launch of ranks left in it.

The rows file holds every row as it was appended, so a crash keeps them; where a run measured a
point more than once (a budget's coarse level, then a finer one; a resumed run measuring again
what an earlier sitting left unreached or failed), ``finish`` rewrites it once with one
measurement per point, in the plan's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import StoreError
from .estimate import params_json

if TYPE_CHECKING:
    from .plan import PlannedPoint, RunPlan
    from .store import RunStore

# Rows written before skipped rows said why they were skipped (``skip_cause``): the reasons the
# runner gave points it never reached.
_UNREACHED_PREFIXES = ("not measured: ", "not reached: ")


def row_key(experiment: str, impl: str, params: dict, world_size, level: int) -> tuple:
    return (experiment, impl, params_json(params), int(world_size or 1), level)


def _key_of(row: dict) -> tuple:
    level = (row.get("fidelity") or {}).get("level", 0)
    return row_key(row["experiment"], row["impl"], row.get("params") or {}, row.get("world_size"), level)


def unreached(row: dict) -> bool:
    """A skipped row for a point the run never reached (a budget's end, an interruption, a failed
    launch, a full disk): measured again on resume."""
    if row.get("status") != "skipped":
        return False
    cause = row.get("skip_cause")
    if cause is not None:
        return cause == "unreached"
    return str(row.get("reason", "")).startswith(_UNREACHED_PREFIXES)


@dataclass
class Attempt:
    """The rows of one measurement of one point at one level."""

    level: int
    rows: list[dict] = field(default_factory=list)
    now: bool = True                       # made by this sitting (False: read from a resumed run)

    @property
    def ok(self) -> bool:
        return any(r["status"] == "ok" for r in self.rows)

    @property
    def unreached(self) -> bool:
        return bool(self.rows) and all(unreached(r) for r in self.rows)

    @property
    def own_skip(self) -> bool:
        """Skipped by the point itself (SkipPoint: too big for this machine...), which a resumed
        run keeps rather than measuring again."""
        return bool(self.rows) and all(r["status"] == "skipped" and not unreached(r)
                                       and r.get("skip_cause") != "plan" for r in self.rows)


def _place(plan: "RunPlan") -> dict[tuple, tuple[int, int]]:
    index: dict[tuple, tuple[int, int]] = {}
    for e in plan.entries:
        for k, lv in enumerate(e.levels):
            index.setdefault(row_key(e.exp.id, lv.point.impl, lv.point.params, lv.point.world_size, k), (e.index, k))
    return index


class StoredRows:
    """A resumed run's rows, found by point and level."""

    def __init__(self, rows: list[dict]):
        self.by_key: dict[tuple, list[tuple[int, dict]]] = {}
        for position, row in enumerate(rows):
            self.by_key.setdefault(_key_of(row), []).append((position, row))

    def attempts(self, entry: "PlannedPoint") -> list[Attempt]:
        """The stored attempts at ``entry``'s levels, oldest first (rows of one level stored one
        after the other are one attempt)."""
        found = sorted((position, k, row) for k, lv in enumerate(entry.levels)
                       for position, row in self.by_key.get(row_key(entry.exp.id, lv.point.impl, lv.point.params,
                                                                     lv.point.world_size, k), ()))
        out: list[Attempt] = []
        last = None
        for position, level, row in found:
            if last is not None and position == last[0] + 1 and level == last[1]:
                out[-1].rows.append(row)
            else:
                out.append(Attempt(level, [row], now=False))
            last = (position, level)
        return out


def stored_state(attempts: list[Attempt]) -> tuple[bool, int | None]:
    """What a resumed run does with a point from its stored attempts: (done, the finest level with
    an ok row). Done: measured at full fidelity, or skipped by the point itself. A point that
    failed, was never reached, or was skipped because it could not run here (and now can) is
    measured again."""
    ok_levels = [a.level for a in attempts if a.ok]
    if ok_levels:
        finest = min(ok_levels)
        return finest == 0, (finest if finest > 0 else None)
    tried = [a for a in attempts if not a.unreached]
    return bool(tried) and tried[-1].own_skip, None


class Ledger:
    """The rows of the run whose plan is ``plan``, appended through ``store``. ``stored``: the rows
    a resumed run already holds; ``consolidate``: rewrite the rows at the end with one
    measurement per point in the plan's order (under a budget, or when resuming)."""

    def __init__(self, plan: "RunPlan", store: "RunStore", stored: list[dict] = (), consolidate: bool = False):
        self.plan, self.store, self.consolidate = plan, store, consolidate
        self._index = _place(plan)
        self.rows: list[dict] = list(stored)       # every row, in the order of the file
        stored_rows = StoredRows(self.rows)
        self.attempts: dict[int, list[Attempt]] = {e.index: found for e in plan.entries
                                                   if (found := stored_rows.attempts(e))}
        self.loose = [r for r in self.rows if self.place(r) is None]     # rows of points outside the plan
        self.seconds: dict[tuple[int, int], float | None] = {}   # (index, level) -> seconds this sitting
        self.unwritten: list[dict] = []            # rows that could not be written (a full disk)

    def place(self, row: dict) -> tuple[int, int] | None:
        return self._index.get(_key_of(row))

    # ------------------------------------------------------------------ adding rows

    def add(self, index: int, level: int, rows: list[dict], seconds: float | None = None, written: int = 0) -> None:
        """One attempt's rows; the first ``written`` are in the file already (rank 0 appended
        them), the rest are appended here. A row that cannot be written stays in memory
        (``unwritten``) and the StoreError goes on."""
        rows = [{**self.store.stamp, **r} for r in rows]
        self.rows += rows
        self.attempts.setdefault(index, []).append(Attempt(level, rows))
        self.seconds[(index, level)] = seconds
        for n, row in enumerate(rows[written:]):
            if self.unwritten:               # the disk already refused a row: keep order, write nothing
                self.unwritten += rows[written + n:]
                return
            try:
                self.store.append(row)
            except StoreError:
                self.unwritten += rows[written + n:]
                raise

    def _read_back(self) -> tuple[dict[tuple[int, int], list[dict]], bool]:
        """The rows rank 0 appended that this ledger has not seen, by (plan index, level), and
        whether reading the file dropped anything (a line torn by a rank stopped mid-write)."""
        from .store import load_run

        stored = load_run(self.store.path)
        by_job: dict[tuple[int, int], list[dict]] = {}
        for row in stored.rows[len(self.rows) - len(self.unwritten):]:
            where = self.place(row)
            if where is not None:
                by_job.setdefault(where, []).append(row)
        return by_job, bool(stored.problems)

    def _on_file(self) -> list[dict]:
        return [r for r in self.rows if not any(r is u for u in self.unwritten)]

    def adopt(self, jobs) -> None:
        """After a launch that was interrupted (Ctrl-C, the budget's end): the rows rank 0 had
        appended for ``jobs`` become their attempts; a line torn by the interruption goes."""
        by_job, torn = self._read_back()
        for job in jobs:
            rows = by_job.get((job.index, job.level))
            if rows:
                self.rows += rows
                self.attempts.setdefault(job.index, []).append(Attempt(job.level, rows))
                self.seconds.setdefault((job.index, job.level), None)
        if torn:
            self.store.replace_rows(self._on_file())

    def recover_launch(self, jobs, failed_at_of, make_error, make_unreached) -> None:
        """After a launch of ranks that failed: the rows rank 0 appended for ``jobs`` are read back,
        the jobs before the one the launch failed in keep theirs, that one gets
        ``make_error(job)``, the later ones ``make_unreached(job, failed_job)``; rows stored for
        those after the failure (collectives that lost a peer) are consequences, not results, and
        go. ``failed_at_of(stored)``: the index in ``jobs`` of the failed one, from the (plan
        index, level) of every job that stored rows."""
        by_job, _ = self._read_back()
        failed_at = failed_at_of(set(by_job))
        for n, job in enumerate(jobs):
            if n < failed_at:
                rows = by_job.get((job.index, job.level), [])
            elif n == failed_at:
                rows = [make_error(job)]
            else:
                rows = [make_unreached(job, jobs[failed_at])]
            rows = [{**self.store.stamp, **r} for r in rows]
            self.rows += rows
            self.attempts.setdefault(job.index, []).append(Attempt(job.level, rows))
            self.seconds.setdefault((job.index, job.level), None)
        self.store.replace_rows(self._on_file())

    def retry_unwritten(self) -> None:
        """Write the rows the disk refused, in order (after the run released its reserved space)."""
        while self.unwritten:
            self.store.append(self.unwritten[0])
            self.unwritten.pop(0)

    # ------------------------------------------------------------------ questions

    def tried_now(self, index: int) -> bool:
        return any(a.now for a in self.attempts.get(index, ()))

    def best_level(self, index: int) -> int | None:
        """The finest level with an ok row (None: no ok row)."""
        levels = [a.level for a in self.attempts.get(index, ()) if a.ok]
        return min(levels) if levels else None

    def level_attempts(self, index: int, level: int) -> list[Attempt]:
        return [a for a in self.attempts.get(index, ()) if a.level == level and a.now]

    def counts(self, rows: list[dict] | None = None) -> dict[str, int]:
        counts = {"ok": 0, "skipped": 0, "error": 0}
        for row in self.final_rows() if rows is None else rows:
            counts[row["status"] if row["status"] in ("ok", "skipped") else "error"] += 1
        return counts

    def measured_now(self) -> int:
        return sum(1 for attempts in self.attempts.values() for a in attempts if a.now and a.ok)

    # ------------------------------------------------------------------ the end

    def missing(self) -> list["PlannedPoint"]:
        """The points this run was to measure that have no row from any sitting but 'not reached'
        ones from earlier sittings (those get a fresh one)."""
        out = []
        for e in self.plan.todo:
            attempts = self.attempts.get(e.index, ())
            if not any(a.now for a in attempts) and all(a.unreached for a in attempts):
                out.append(e)
        return out

    def chosen(self, index: int) -> list[dict]:
        """The rows a point keeps: the latest attempt with an ok row at its finest such level;
        else its latest attempt that ran (an error, its own skip); else its latest."""
        attempts = self.attempts.get(index, [])
        if not attempts:
            return []
        best = self.best_level(index)
        if best is not None:
            return [a for a in attempts if a.level == best and a.ok][-1].rows
        ran = [a for a in attempts if not a.unreached]
        return (ran or attempts)[-1].rows

    def final_rows(self) -> list[dict]:
        if not self.consolidate:
            return self.rows
        return self.loose + [r for e in self.plan.entries for r in self.chosen(e.index)]

    def finish(self) -> None:
        """Rewrite the rows file with the final rows where they differ from what was appended."""
        if self.consolidate and not self.unwritten:
            self.store.replace_rows(self.final_rows())
