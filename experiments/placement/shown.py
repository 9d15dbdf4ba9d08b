"""Which rows a placement report shows: the newest run per machine kind at the paper's settings.

A run is at the paper's settings when it is not a ``--quick`` smoke run and left every parameter
that changes the paper's method (an experiment's ``method_params``) at its default. Per machine
kind, the newest such run fixes the size of the comparison (its stand-in scale and the values of
the experiment's ``size_params``), and every cell (a point: implementation and its parameters)
shows the newest row of that kind at that size: a run that re-measured some policies leaves the
others to the earlier run of the same size. When no run is at the paper's settings, the newest
smoke run per machine kind is shown instead, and the report says so. Every other run goes to the
artifact's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.reportkit import caption_hardware, machine_kind, newest_per_kind

if TYPE_CHECKING:
    import pandas as pd

    from harness.artifact import RunInfo
    from harness.reportkit import Report


@dataclass
class Shown:
    rows: "pd.DataFrame"        # the shown rows (every metric of every shown cell)
    run_ids: list[str]          # the runs they come from, oldest first
    kinds: dict[str, str]       # run id -> machine kind
    smoke: bool                 # no run at the paper's settings: the newest smoke runs instead

    def kind(self, run_id: str) -> str:
        return self.kinds.get(run_id, run_id)

    def runs(self, runs: list["RunInfo"]) -> list["RunInfo"]:
        return [r for r in runs if r.run_id in self.run_ids]

    def caption_hardware(self, runs: list["RunInfo"]) -> str:
        """The hardware and software of the shown runs (the others are in the history)."""
        return caption_hardware(self.runs(runs))


def given_params(run: "RunInfo") -> dict:
    return (run.manifest.get("config") or {}).get("params") or {}


def is_quick(run: "RunInfo") -> bool:
    return bool((run.manifest.get("config") or {}).get("quick"))


def param_value(exp, name: str, run: "RunInfo"):
    """The value a run used for one of ``exp``'s parameters (its default unless given)."""
    spec = exp.parameters[name]
    raw = given_params(run).get(name)
    if raw is None:
        return spec.default
    try:
        return spec.parse(raw)
    except (ValueError, TypeError):
        return raw


def at_paper_settings(exp, run: "RunInfo") -> bool:
    """Not a smoke run, and every parameter in ``exp.method_params`` at its default."""
    return not is_quick(run) and all(param_value(exp, name, run) == exp.parameters[name].default
                                     for name in getattr(exp, "method_params", ()))


def run_size(exp, rows: "pd.DataFrame", run: "RunInfo") -> tuple:
    """A run's stand-in scale(s) and its values of ``exp.size_params``: rows of runs of one size
    compare with each other."""
    mine = rows[rows["run_id"] == run.run_id]
    scales = tuple(sorted(set(mine["p_scale"].dropna()))) if "p_scale" in mine else ()
    return (scales, *(str(param_value(exp, name, run)) for name in getattr(exp, "size_params", ())))


def shown_rows(rep: "Report", cell: list[str]) -> Shown:
    """The rows ``rep``'s figure and headline table show (module doc); ``cell``: the row columns
    that name a point (the metric aside)."""
    import pandas as pd

    exp, rows = rep.exp, rep.rows
    if rows.empty:
        return Shown(rows, [], {}, False)
    infos = {r.run_id: r for r in rep.runs if r.run_id in set(rows["run_id"])}
    paper = {rid for rid, run in infos.items() if at_paper_settings(exp, run)}
    smoke = not paper
    pool = paper or set(infos)
    kinds = {rid: machine_kind(rep.label(rid)) for rid in infos}
    chosen: set = set()
    for kind in sorted({kinds[rid] for rid in pool}):
        mine = sorted(rid for rid in pool if kinds[rid] == kind)
        size = run_size(exp, rows, infos[mine[-1]])
        same = [rid for rid in mine if run_size(exp, rows, infos[rid]) == size]
        cols = [c for c in cell if c in rows]
        keys = rows[rows["run_id"].isin(same)][["run_id", *cols]].astype(str).drop_duplicates()
        items = [tuple(k) for k in keys.itertuples(index=False)]
        chosen |= set(newest_per_kind(items, rep.labels, cell=lambda t: t[1:], run_of=lambda t: t[0]).values())
    cols = [c for c in cell if c in rows]
    key = pd.Series(list(zip(rows["run_id"], *(rows[c].astype(str) for c in cols))), index=rows.index)
    picked = rows[key.isin(chosen)]
    run_ids = sorted(set(picked["run_id"]))
    return Shown(picked, run_ids, {rid: kinds[rid] for rid in run_ids}, smoke)


SMOKE_NOTE = ("no committed run at the paper's settings: this shows the newest smoke run (--quick: a toy "
              "stand-in and a few batches or epochs) of each machine kind")
