"""The report kit: what every experiment's ``report(rows, runs)`` builds its artifact with.

A report reads stored rows (every run that measured the experiment) and returns the paper's
table beside ours, a caption, notes, a figure, a headline for the reports index and a status. The
kit holds what they all do alike, so that a change of layout happens here once:

- :class:`Report`: the rows with their parameters expanded (``p_<name>`` columns), the run labels
  (``4xH200``, or ``4xH200 #0047`` where several runs share a machine kind), the ok rows, the
  notes; :meth:`Report.table` (records -> the table: columns nobody filled and single-valued
  ``Machine`` columns dropped, a note row when empty), :meth:`Report.caption` (ends with the
  hardware and software of every run), :meth:`Report.artifact` (adds the notes of skipped and
  failed points and returns the :class:`ReportArtifact`);
- implementations: :func:`series_rows` (the rows of one registry series: an implementation in one
  of its variants), :func:`variant_names` (the variant of every row);
- figures (harness/figures.py, re-exported here): a figure declared as data (:class:`FigureSpec`
  of :class:`Panel` s of :class:`Series` over :class:`Axis` es, with :class:`Rule` s, the paper's
  values and the verdict) drawn by :func:`draw`; the primitives :func:`figure`, :func:`bars`,
  :func:`lines`, :func:`grouped_bars`, :func:`finish`; one palette per paper (:class:`Palette`)
  over the systems' (:data:`PALETTE`, :func:`colour`, harness/palette.py) and one style for the
  paper's values (:data:`PAPER_STYLE`, :data:`PAPER_BAR`); an artifact's ``history`` (every run,
  where its headline table shows fewer) is written apart from its table;
- paper tables: :func:`group` (records by cell), :func:`pivot` (rows -> one column per
  implementation), :func:`ratio`, :func:`span` ("lo-hi");
- verdicts: every artifact's status comes from the one rule of harness/verdicts.py: the report
  passes its paper's claims (:class:`Claim`, each an :class:`Estimate` with its interval and a
  :class:`Band` of tolerance) to :meth:`Report.artifact`, which judges them, states the rule and
  tolerance in the caption, notes each claim's verdict and leads the headline with the tally;
  smoke (``--quick``) and reduced-fidelity runs get no verdict (:meth:`Report.unjudgeable`);
- runs: :func:`run_labels`, :func:`machine_kind`, :func:`newest_per_kind` (the newest run per
  machine kind of every cell), :func:`newest_rows` (the rows of those runs),
  :func:`several_runs_per_kind`, :func:`skip_notes`, :func:`caption_hardware`;
- :func:`unmeasured`: the artifact of rows none of which was measured (every point skipped or
  failed), which the report writer uses in place of the experiment's own report.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Iterable

from .artifact import ReportArtifact
from .figures import (PAPER_BAR, PAPER_STYLE, Axis, FigureSpec, Legend, Panel, Rule, Series, bars, draw,  # noqa: F401
                      draw_panel, figure, finish, finite, grouped_bars, legend_by_system, legend_handles, lines,
                      log_axis)
from .palette import PALETTE, Palette, colour  # noqa: F401  (the report kit's palettes: reports import them from here)
from .verdicts import (INCONCLUSIVE, NO_VERDICT, NOT_MEASURED, NOT_REPRODUCED, PARTLY, REDUCED, REPRODUCED, SMOKE,
                       TOLERANCE, Band, Claim, Estimate, Verdict, verdict_of)

if TYPE_CHECKING:
    import pandas as pd

    from .artifact import RunInfo


# ----------------------------------------------------------------------------- rows and runs

def expand_params(rows: "pd.DataFrame") -> "pd.DataFrame":
    """A copy of ``rows`` with each key of ``params`` and of the measurement's ``extra`` as its
    own column ``p_<key>`` (rows that carry no ``extra`` hold those keys inside ``params``)."""
    import pandas as pd

    out = rows.copy()
    extras = out["extra"].tolist() if "extra" in out else [None] * len(out)
    merged = [{**(p or {}), **(e if isinstance(e, dict) else {})} for p, e in zip(out["params"], extras)]
    params = pd.json_normalize(merged, max_level=0).add_prefix("p_")
    params.index = out.index
    return pd.concat([out, params], axis=1)


def run_labels(rows: "pd.DataFrame", runs: list["RunInfo"]) -> dict[str, str]:
    """run_id -> column label: the hardware tag, made unique with the run number if needed."""
    tags = {r.run_id: _tag_with_gpus_used(r.hardware, rows, r.run_id) for r in runs}
    for run_id in rows["run_id"].unique():
        tags.setdefault(run_id, "unknown")
    counts: dict[str, int] = {}
    for tag in tags.values():
        counts[tag] = counts.get(tag, 0) + 1
    return {rid: (tag if counts[tag] == 1 else f"{tag} #{rid.split('_')[0]}") for rid, tag in tags.items()}


def _tag_with_gpus_used(tag: str, rows: "pd.DataFrame", run_id: str) -> str:
    """'2 of 4xH200' for a run that used 2 GPUs of a 4-GPU machine (``--gpus 2``)."""
    m = re.fullmatch(r"(\d+)x(.+)", tag or "")
    if not m or "world_size" not in rows or "run_id" not in rows:
        return tag
    mine = rows[(rows["run_id"] == run_id) & (rows.get("device", "cuda") == "cuda")]
    used = set(mine["world_size"].dropna().astype(int)) if not mine.empty else set()
    if len(used) == 1 and 0 < (w := used.pop()) < int(m.group(1)):
        return f"{w} of {tag}"
    return tag


def machine_kind(label: str) -> str:
    """'4xH200 #0084' -> '4xH200': the run label without its run number."""
    return re.sub(r" #\d+$", "", label)


def newest_per_kind(items: Iterable, labels: dict[str, str], cell: Callable, run_of: Callable) -> dict:
    """{(machine kind, *cell(item)): item}: for every cell, the item of the newest run on each
    kind of machine (run ids are numbered in the order the runs were made)."""
    out: dict = {}
    for item in sorted(items, key=run_of):
        run_id = run_of(item)
        out[(machine_kind(labels.get(run_id, run_id)), *cell(item))] = item
    return out


def newest_rows(rows: "pd.DataFrame", labels: dict[str, str], by: Iterable[str] = (),
                prefer: "pd.Series | None" = None) -> "pd.DataFrame":
    """The rows of the newest run on each kind of machine for every group of the ``by`` columns
    (the whole newest run where ``by`` is empty). ``prefer`` (a boolean per row, e.g. "at the
    paper's settings"): a machine kind with any such row is judged on those rows alone."""
    if rows.empty:
        return rows
    kind = rows["run_id"].map(lambda r: machine_kind(labels.get(r, r)))
    if prefer is not None:
        preferred_kinds = set(kind[prefer])
        keep = prefer | ~kind.isin(preferred_kinds)
        rows, kind = rows[keep], kind[keep]
    keys = [kind] + [rows[c].map(lambda v: tuple(v) if isinstance(v, list) else v) for c in by]
    newest = rows.groupby(keys, dropna=False, sort=False)["run_id"].transform("max")
    return rows[rows["run_id"] == newest]


def several_runs_per_kind(labels: dict[str, str]) -> bool:
    """Whether some kind of machine has more than one run: a table of the newest run per kind then
    shows less than every run, and the runs go to the artifact's history."""
    return len(labels) > len({machine_kind(label) for label in labels.values()})


def skip_notes(rows: "pd.DataFrame", labels: dict[str, str]) -> list[str]:
    """One note per distinct (run, impl, reason) of skipped or failed rows, leaving out those a later
    run on the same kind of machine superseded by trying that implementation of the experiment
    again (its own rows or notes say how it went; an old reason, such as a package then missing or
    code then unwritten, no longer explains anything)."""
    notes, seen = [], set()
    ran: dict = {}
    for _, r in rows.iterrows():
        key = (machine_kind(labels.get(r["run_id"], r["run_id"])), r.get("experiment"), r["impl"])
        ran[key] = max(ran.get(key, ""), r["run_id"])
    for _, r in rows[rows["status"] != "ok"].iterrows():
        key = (labels.get(r["run_id"], r["run_id"]), r["impl"], r.get("reason"))
        if key in seen or ran.get((machine_kind(key[0]), r.get("experiment"), r["impl"]), "") > r["run_id"]:
            continue
        seen.add(key)
        notes.append(f"{key[0]} `{r['impl']}` {r['status']}: {r.get('reason')}")
    return notes


def series_rows(frame: "pd.DataFrame", one) -> "pd.DataFrame":
    """The rows of ``frame`` (a Report's rows: ``impl`` and ``p_<name>`` columns) that measured
    ``one``, a registry ``Series``: its implementation, with its variant's options on every key any
    of the implementation's variants sets (absent where its variant sets none)."""
    mask = frame["impl"] == one.impl
    for key in {k for v in one.spec.variants for k in v.options}:
        want, column = one.variant.options.get(key), f"p_{key}"
        if column not in frame:
            mask &= want is None
        else:
            mask &= frame[column].isna() if want is None else frame[column] == want
    return frame[mask]


def variant_names(frame: "pd.DataFrame", interface: str) -> list:
    """The variant each row of ``frame`` measured (None for an implementation without variants, or
    a row no registered variant matches), by the registry of ``interface``."""
    from . import registry

    names = []
    for impl, params in zip(frame["impl"], frame[[c for c in frame.columns if c.startswith("p_")]].to_dict("records")):
        found = registry.series_of(interface, impl, {k[2:]: v for k, v in params.items()})
        names.append((found.variant.name or None) if found is not None else None)
    return names


def caption_hardware(runs: list["RunInfo"]) -> str:
    return " ".join(f"Measured on {r.describe()}." for r in runs)


# ----------------------------------------------------------------------------- numbers

def ratio(a, b):
    """a / b where both are finite and b > 0, else None."""
    return a / b if finite(a) and finite(b) and b > 0 else None


def span(values, fmt: str = ".2f", sep: str = "-") -> str:
    """'lo-hi' of ``values`` in ``fmt``."""
    values = list(values)
    return f"{min(values):{fmt}}{sep}{max(values):{fmt}}"


def group(items: Iterable, key: Callable, sub: Callable | None = None) -> dict:
    """{key(item): [items]} in first-seen order, or {key(item): {sub(item): item}} with ``sub``."""
    out: dict = {}
    for item in items:
        if sub is None:
            out.setdefault(key(item), []).append(item)
        else:
            out.setdefault(key(item), {})[sub(item)] = item
    return out


def pivot(frame: "pd.DataFrame", index: list[str], columns: str = "impl", values: str = "value",
          order: Iterable[str] | None = None) -> "pd.DataFrame":
    """One row per ``index`` tuple and one column per value of ``columns`` (the first value where
    several rows share a cell), in ``order`` where given."""
    wide = frame.pivot_table(index=index, columns=columns, values=values, aggfunc="first")
    if order is not None:
        wide = wide[[c for c in order if c in wide.columns]]
    return wide


def numeric(table: "pd.DataFrame", index, columns: Iterable[str]) -> "pd.DataFrame":
    """``table``'s ``columns`` as numbers (text cells such as "OOM" -> NaN) over its ``index``
    column(s): what a figure plots of a table; empty where the table lacks them."""
    import pandas as pd

    columns = [c for c in columns if c in table]
    index_columns = [index] if isinstance(index, str) else list(index)
    if not columns or any(c not in table for c in index_columns):
        return pd.DataFrame()
    return table.set_index(index)[columns].apply(pd.to_numeric, errors="coerce")


# ----------------------------------------------------------------------------- the report

class Report:
    """One experiment's report in the making (module doc)."""

    def __init__(self, exp, rows: "pd.DataFrame", runs: list["RunInfo"], expand: bool = True):
        self.exp, self.runs = exp, runs
        self.rows = expand_params(rows) if expand and not rows.empty else rows
        self.labels = run_labels(self.rows, runs)
        self.ok = self.rows[self.rows["status"] == "ok"] if "status" in self.rows else self.rows
        self.notes: list[str] = []

    def label(self, run_id: str) -> str:
        return self.labels.get(run_id, run_id)

    def table(self, records: list[dict], *, empty: str = "no rows", single: Iterable[str] = ("Machine",),
              keep: Iterable[str] = ("paper",), drop_empty: bool = True) -> "pd.DataFrame":
        """The records as the table: the ``single`` columns dropped where they hold one value, the
        columns no record filled dropped (but those starting with a ``keep`` prefix), or one
        ``note`` row saying ``empty``."""
        import pandas as pd

        table = pd.DataFrame.from_records(records)
        if table.empty:
            return pd.DataFrame({"note": [empty]})
        for column in single:
            if column in table and table[column].nunique() <= 1:
                table = table.drop(columns=[column])
        if drop_empty:
            keep = tuple(keep)
            table = table[[c for c in table.columns if table[c].notna().any() or (keep and c.startswith(keep))]]
        return table

    def caption(self, *parts: str, runs: Iterable[str] | None = None) -> str:
        """The sentences of the caption, then the hardware and software of every run (of the run
        ids ``runs`` only, where given: those the headline table and figure show)."""
        shown = self.runs if runs is None else [r for r in self.runs if r.run_id in set(runs)]
        return " ".join(p for p in parts if p) + " " + caption_hardware(shown)

    def skip_notes(self, rows: "pd.DataFrame | None" = None) -> list[str]:
        return skip_notes(self.rows if rows is None else rows, self.labels)

    def unjudgeable(self) -> dict[str, str]:
        """run id -> why its numbers get no verdict: a smoke run (``--quick``), or rows measured at
        reduced fidelity to fit a time budget."""
        out = {r.run_id: SMOKE for r in self.runs if (r.manifest.get("config") or {}).get("quick")}
        if "fidelity" in self.rows:
            for run_id, fidelity in zip(self.rows["run_id"], self.rows["fidelity"]):
                if isinstance(fidelity, dict) and fidelity.get("level"):
                    out.setdefault(run_id, REDUCED)
        return out

    def judge(self, claims: Iterable[Claim]) -> Verdict:
        """The claims judged by the one rule (harness/verdicts.py), this report's smoke and
        reduced-fidelity runs getting none."""
        return verdict_of(claims, self.unjudgeable())

    def artifact(self, title: str, caption: str, table, figure=None, *, headline: str = "",
                 claims: "Iterable[Claim] | Verdict | None" = None, skips: "bool | pd.DataFrame" = True,
                 history=None, status: str = "") -> ReportArtifact:
        """The artifact, its notes ending with those of the skipped and failed points among the rows
        (``skips=True``) or among the given rows; ``history``: every run's table, written apart.
        ``claims``: the paper's claims this artifact measured: judged here, their rule and
        tolerance added to the caption, a note per claim first among the notes, the tally leading
        the headline; the status is their verdict (``measured`` without claims). ``status``: only
        ``not measured``, for an artifact with no measured row (a verdict comes from claims alone)."""
        if status and (status != NOT_MEASURED or claims):
            raise ValueError(f"status {status!r}: an artifact's verdict comes from its claims (harness/verdicts.py)")
        if skips is True or skips is False:
            skips = self.rows if skips else None
        verdict = claims if isinstance(claims, Verdict) else self.judge(claims or ())
        notes = verdict.notes() + self.notes + (self.skip_notes(skips) if skips is not None else [])
        if verdict.judgements:
            caption = f"{caption.rstrip()} {verdict.caption()}"
            headline = f"{verdict.tally()}: {headline}" if headline else verdict.tally()
        return ReportArtifact(self.exp.artifact, title, caption, table, notes, figure, headline=headline,
                              status=status or verdict.status, history=history)


def unmeasured(exp, rows: "pd.DataFrame", runs: list["RunInfo"]) -> ReportArtifact:
    """The artifact of rows none of which is ok: one table row per point with its status and reason,
    so that a run whose every point was skipped (a CPU machine, a missing package) or failed still
    has a report saying why. Experiments' own reports read measured values; they are not asked."""
    report = Report(exp, rows, runs, expand=False)
    records = [{"Machine": report.label(r["run_id"]), "implementation": r["impl"],
                "point": ", ".join(f"{k}={v}" for k, v in sorted((r["params"] or {}).items())) or "-",
                "status": r["status"], "reason": " ".join(str(r.get("reason") or "").split())}
               for _, r in rows.iterrows()]
    kinds = rows["status"].value_counts()
    counted = ", ".join(f"{n} {status}" for status, n in sorted(kinds.items()))
    reasons = rows["reason"].dropna().map(lambda t: " ".join(str(t).split())) if "reason" in rows else []
    common = reasons.value_counts().index[0] if len(reasons) else ""      # the most frequent reason
    caption = report.caption(f"No point was measured ({counted}): each row of the table says why.")
    headline = counted + (f" (most: {common})" if common else "")
    return report.artifact(exp.title, caption, report.table(records), headline=headline, status=NOT_MEASURED,
                           skips=False)
