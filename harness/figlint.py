"""What a reader needs of a report's figure and table, checked (tests/test_figlint.py runs it on every
committed artifact): at most 8 series per panel, tick labels level and never tuples, a log axis where
the values span more than 100x, text of at least 8 points, a figure that fits a 1600 x 900 slide at
the DPI reports are written with, and tables of at most 12 columns."""

from __future__ import annotations

import re

MAX_SERIES = 8
MAX_COLUMNS = 12
MAX_SPAN_LINEAR = 100.0
MIN_FONT_PT = 8.0
SLIDE_PX = (1600, 900)
DPI = 150                      # harness/report.py writes PNGs at this DPI
_TUPLE = re.compile(r"^\(.*,.*\)$")


def figure_problems(fig) -> list[str]:
    out = []
    width, height = fig.get_size_inches()
    if width * DPI > SLIDE_PX[0] or height * DPI > SLIDE_PX[1]:
        out.append(f"figure {width:.1f} x {height:.1f} in is {width * DPI:.0f} x {height * DPI:.0f} px at "
                   f"{DPI} dpi, larger than a {SLIDE_PX[0]} x {SLIDE_PX[1]} slide")
    for i, ax in enumerate(fig.axes):
        name = ax.get_title() or f"panel {i + 1}"
        legend = ax.get_legend()
        if legend is not None and len(legend.get_texts()) > MAX_SERIES:
            out.append(f"{name}: {len(legend.get_texts())} series in the legend (at most {MAX_SERIES})")
        for tick in ax.get_xticklabels() + ax.get_yticklabels():
            text = tick.get_text()
            if tick.get_rotation() % 360 not in (0.0,) and text:
                out.append(f"{name}: rotated tick label '{text[:40]}'")
                break
            if _TUPLE.match(text.strip()):
                out.append(f"{name}: tuple tick label '{text[:40]}'")
                break
        values = _ys(ax)                 # the value axis; shares (% of something) stay linear
        positive = [v for v in values if v > 0]
        if ax.get_yscale() == "linear" and "%" not in ax.get_ylabel() and len(positive) > 1 \
                and max(positive) / min(positive) > MAX_SPAN_LINEAR and min(values) >= 0:
            out.append(f"{name}: values span {max(positive) / min(positive):.0f}x on a linear axis "
                       f"(log where more than {MAX_SPAN_LINEAR:.0f}x)")
        for text in ax.texts + [ax.title, ax.xaxis.label, ax.yaxis.label] + \
                ax.get_xticklabels() + ax.get_yticklabels():
            if text.get_text() and text.get_fontsize() < MIN_FONT_PT:
                out.append(f"{name}: text '{text.get_text()[:30]}' at {text.get_fontsize():.1f} pt "
                           f"(at least {MIN_FONT_PT:.0f})")
                break
        if legend is not None:
            for text in legend.get_texts():
                if text.get_fontsize() < MIN_FONT_PT:
                    out.append(f"{name}: legend at {text.get_fontsize():.1f} pt (at least {MIN_FONT_PT:.0f})")
                    break
    return out


def table_problems(table) -> list[str]:
    columns = len(getattr(table, "columns", []))
    return [f"table has {columns} columns (at most {MAX_COLUMNS})"] if columns > MAX_COLUMNS else []


def _ys(ax) -> list[float]:
    import math

    out = []
    for line in ax.get_lines():
        out += [float(v) for v in line.get_ydata() if _number(v)]
    for patch in ax.patches:
        h = getattr(patch, "get_height", lambda: None)()
        if h is not None and _number(h) and h != 0 and ax.get_xaxis().get_scale() == "linear":
            out.append(abs(float(h)))
    return [v for v in out if not math.isnan(v)]


def _number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def committed_problems(results_root, prefixes=()) -> dict[str, list[str]]:
    """{experiment id: problems} for every artifact ``report --all`` builds from ``results_root``
    (only the ids starting with one of ``prefixes``, when given)."""
    import tempfile
    from pathlib import Path

    import matplotlib

    from .report import report_runs, runs_by_experiment

    matplotlib.use("Agg")
    by_exp, _, _ = runs_by_experiment(Path(results_root))
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for exp_id, paths in sorted(by_exp.items()):
            if prefixes and not exp_id.startswith(tuple(prefixes)):
                continue
            built: dict = {}
            report_runs(paths, Path(tmp), only=[exp_id], artifacts=built)
            artifact = built[exp_id][0]
            found = table_problems(artifact.table)
            if artifact.figure is not None:
                found += figure_problems(artifact.figure)
            out[exp_id] = found
    return out


if __name__ == "__main__":        # python -m harness.figlint [id prefixes...]: each artifact's problems
    import sys

    for exp_id, found in committed_problems("results", sys.argv[1:]).items():
        print(f"{exp_id}: " + ("ok" if not found else "; ".join(found)))
