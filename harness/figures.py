"""Figures: how every report draws, and a figure declared as data.

- The primitives a report's figure is drawn with: :func:`figure` (a new figure and its axes),
  :func:`bars` (a frame's columns as bars), :func:`lines` (``(label, xs, ys[, style])`` lines),
  :func:`grouped_bars` (series side by side per group: the paper's hatched, extrapolated ones
  hollow, a text cell such as "OOM" where a value has no bar), :func:`log_axis`,
  :func:`legend_by_system` and :func:`finish`.
- One style for the paper's values wherever they stand beside ours: :data:`PAPER_STYLE` (a line)
  and :data:`PAPER_BAR` (a bar); one colour per system (harness/palette.py) and per paper series
  (a paper's :class:`~harness.palette.Palette`).
- A declared figure (:class:`FigureSpec`, after Triton's ``perf_report(Benchmark(...))``): panels
  (:class:`Panel`) of series (:class:`Series`) over axes (:class:`Axis`), bars side by side,
  stacked bars or lines, reference lines (:class:`Rule`), the paper's values in the paper's style,
  the verdict under the panel's title, one legend per panel or for the figure (:class:`Legend`);
  :func:`draw` turns it into a matplotlib figure, so a report module states what its figure shows
  and nothing of how.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from .palette import Palette, colour

if TYPE_CHECKING:
    import pandas as pd

# the paper's values beside ours: a dashed, lighter line; a hatched, lighter bar
PAPER_STYLE = {"linestyle": "--", "alpha": 0.7}
PAPER_BAR = {"hatch": "///", "alpha": 0.45}
# a bar extrapolated from a capped measurement: its outline only
HOLLOW_BAR = {"facecolor": "none", "linestyle": "--", "linewidth": 1.2}
TEXT_PT = 8
SYSTEMS = Palette("systems")          # the systems' colours alone: a figure of no paper's series
BAR_KINDS = ("bars", "stacked")


# ----------------------------------------------------------------------------- primitives

def figure(figsize=(8, 4), ncols: int = 1, nrows: int = 1, **kwargs):
    """A new figure (and its axes): every report's plot starts here."""
    import matplotlib.pyplot as plt

    if ncols > 1 or nrows > 1:
        return plt.subplots(nrows, ncols, figsize=figsize, **kwargs)
    return plt.subplots(figsize=figsize, **kwargs)


def bars(ax, frame: "pd.DataFrame", *, ylabel: str = "", logy: bool = False, stacked: bool = False,
         horizontal: bool = False, xlabel: str = "", by_system: bool = False, **style) -> None:
    """``frame``'s columns as grouped (or stacked) bars over its index (``style``: matplotlib's;
    ``by_system``: each column in its system's palette colour); cells that are not numbers ("OOM",
    "x") have no bar, and a frame without numbers draws nothing."""
    import pandas as pd

    frame = pd.to_numeric(frame, errors="coerce") if isinstance(frame, pd.Series) else \
        frame.apply(pd.to_numeric, errors="coerce")
    if frame.dropna(how="all").empty:
        return
    if by_system and isinstance(frame, pd.DataFrame):
        style["color"] = [colour(c) or f"C{i}" for i, c in enumerate(frame.columns)]
    if "color" in style and isinstance(style["color"], list):
        style["color"] = style["color"][: len(frame.columns)]
    if horizontal:
        frame.plot.barh(ax=ax, stacked=stacked, **style)
    else:
        frame.plot.bar(ax=ax, logy=logy, stacked=stacked, **style)
    if ylabel:
        ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)


def lines(ax, series: Iterable[tuple], *, xlabel: str = "", ylabel: str = "", legend_size: float | None = 7,
          grid: bool = True, by_system: bool = False, **style) -> None:
    """One line per ``(label, xs, ys)`` or ``(label, xs, ys, own_style)`` (a legend when there is
    any): ``own_style`` adds to ``style`` for that line, and ``{"paper": True}`` draws it as the
    paper's values (PAPER_STYLE); ``by_system``: each line in its system's palette colour."""
    drawn = 0
    for label, xs, ys, *own in series:
        mine = {**style, **(own[0] if own else {})}
        if mine.pop("paper", False):
            mine = {**PAPER_STYLE, **mine}
        if by_system and "color" not in mine and colour(label):
            mine["color"] = colour(label)
        ax.plot(xs, ys, label=label, **mine)
        drawn += 1
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if grid:
        ax.grid(True, alpha=0.3)
    if drawn and legend_size:
        ax.legend(fontsize=legend_size)


def finish(fig, ax=None, title: str | None = None, tight: bool = True):
    """Title and layout of a report's figure; returns it."""
    if title is not None and ax is not None:
        ax.set_title(title)
    if tight:
        fig.tight_layout()
    return fig


@dataclass
class Series:
    """One series: a value per group (bars: a number, or text such as "OOM" written in its bar's
    place) or per x (lines, ``xs``); its colour (None: the palette's colour of its label; a list:
    one per group, e.g. the system of each group); the paper's values or ours; which of ours are
    extrapolated (drawn hollow); matplotlib's ``style`` for it, and for a stacked bar's each value
    (``each``, e.g. the hatch of a capped measurement)."""

    label: str
    values: Sequence
    colour: str | list | None = None
    paper: bool = False
    extrapolated: Sequence = ()
    xs: Sequence | None = None
    style: Mapping = field(default_factory=dict)
    each: Sequence[Mapping] = ()

    def colour_of(self, group: int, default: str, palette: Palette = SYSTEMS) -> str:
        if isinstance(self.colour, list):
            return self.colour[group] or default
        return self.colour or palette.get(self.label) or default


def grouped_bars(ax, groups: list[str], series: list[Series], *, horizontal: bool = False, log: bool = False,
                 value_label: str = "", legend: bool = True, text_size: float = TEXT_PT, width: float = 0.8,
                 palette: Palette = SYSTEMS, **legend_kw) -> bool:
    """``series`` side by side within each of ``groups`` (x ticks, or y ticks with ``horizontal``,
    level), on a log value axis with ``log``; a cell that is text is written where its bar would be;
    a legend entry per series (``legend``). True when a hollow (extrapolated) bar was drawn."""
    import matplotlib.transforms as mtransforms

    n = max(1, len(series))
    step = width / n
    if log:
        log_axis(ax, "x" if horizontal else "y")
    base = mtransforms.blended_transform_factory(ax.transAxes, ax.transData) if horizontal else \
        mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    hollow_drawn = False
    for i, s in enumerate(series):
        for g, value in enumerate(s.values):
            colour_ = s.colour_of(g, f"C{i}", palette)
            pos = g - width / 2 + step * (i + 0.5)
            if finite(value) and value > 0:
                hollow = bool(s.extrapolated and s.extrapolated[g])
                hollow_drawn |= hollow
                style = HOLLOW_BAR if hollow else {**(PAPER_BAR if s.paper else {}), "facecolor": colour_}
                (ax.barh if horizontal else ax.bar)(pos, value, step, edgecolor=colour_, **style)
            elif isinstance(value, str) and value:
                where = (0.01, pos) if horizontal else (pos, 0.01)
                ax.text(*where, value, transform=base, fontsize=text_size, color=colour_,
                        ha="left" if horizontal else "center", va="center" if horizontal else "bottom",
                        rotation=0 if horizontal else 90)
    ticks = list(range(len(groups)))
    if horizontal:
        ax.set_yticks(ticks, groups)
        ax.set_ylim(len(groups) - 0.5, -0.5)          # the first group on top, as a table reads
        ax.set_xlabel(value_label)
    else:
        ax.set_xticks(ticks, groups)
        ax.set_xlim(-0.5, len(groups) - 0.5)
        ax.set_ylabel(value_label)
    ax.grid(True, axis="x" if horizontal else "y", alpha=0.3)
    if legend and series:
        ax.legend(handles=[_patch(s.colour_of(0, f"C{i}", palette) if not isinstance(s.colour, list) else "0.5",
                                  s.label, s.paper) for i, s in enumerate(series)]
                  + ([_hollow()] if hollow_drawn else []), fontsize=9, **legend_kw)
    return hollow_drawn


def log_axis(ax, which: str = "y") -> None:
    """A log value axis (``which``: "x" or "y") labelled in plain numbers at 1, 2 and 5 of each decade."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def legend_by_system(target, labels: list[str], *, paper: str | None = None, hollow: bool = False,
                     colours: dict | None = None, **legend_kw) -> None:
    """A legend (of an axes or a whole figure) that names the systems by colour, the paper's bars
    by their hatch and the extrapolated ones by their outline."""
    colours = colours or {}
    handles = [_patch(colours.get(label) or colour(label), label) for label in labels]
    if paper:
        handles.append(_patch("0.6", f"hatched: {paper}", paper=True))
    if hollow:
        handles.append(_hollow())
    target.legend(handles=handles, fontsize=9, **legend_kw)


def _patch(colour_, label: str, paper: bool = False):
    from matplotlib.patches import Patch

    return Patch(facecolor=colour_, edgecolor=colour_, label=label, **(PAPER_BAR if paper else {}))


def _hollow():
    from matplotlib.patches import Patch

    return Patch(edgecolor="0.3", label="hollow: extrapolated from a capped epoch", **HOLLOW_BAR)


def finite(x) -> bool:
    """True for a real number that is neither NaN nor infinite (not None, a bool or a table's
    "OOM" / "x" text): what has a bar, and what a report's numbers are (the kit re-exports it)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


# ----------------------------------------------------------------------------- declared figures

@dataclass(frozen=True)
class Axis:
    """An axis: its label, a log scale (labelled in plain numbers; ``base`` 2 for counts of GPUs),
    the values it marks (``ticks``, labelled as they are, no minor ticks), its limits (None:
    matplotlib's; one end None: that end matplotlib's) or the room its data leaves at either end
    (``margin``, a fraction of the data's span)."""

    label: str = ""
    log: bool = False
    limits: tuple | None = None
    margin: float | None = None
    base: int = 10
    ticks: Sequence | None = None


@dataclass(frozen=True)
class Rule:
    """A reference line across a panel at ``at`` on the value axis (``vertical``: on the other): a
    paper's bound drawn in the paper's style (``paper``), or a mark of ours such as speedup 1."""

    at: float
    label: str = ""
    paper: bool = False
    vertical: bool = False
    style: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    """One panel: its ``series`` drawn as ``kind`` ("bars": side by side per group, "stacked": one
    stack per group, "lines": one line per series over its ``xs``) over ``groups`` (the bars'
    categories), its title, axes, reference lines, the verdict of the claim it shows (a line under
    its title), and its legend (True: matplotlib's best place; a dict: legend keywords;
    False: none). ``totals``: a stack's total written above it in this format ("{:.3g} s");
    ``grid``: lines across the value axis (side-by-side bars always have them); ``frame``: False
    for a panel that only says in its title why it is empty (no axes drawn); ``points``: series
    marked over the bars, a marker per group at its value (what a device reports, say)."""

    series: Sequence[Series]
    kind: str = "bars"
    groups: Sequence[str] = ()
    title: str = ""
    x: Axis = Axis()
    y: Axis = Axis()
    horizontal: bool = False
    width: float = 0.8
    totals: str = ""
    rules: Sequence[Rule] = ()
    verdict: str = ""
    legend: bool | Mapping = True
    title_size: float | None = None
    grid: bool = True
    frame: bool = True
    points: Sequence[Series] = ()

    def __post_init__(self):
        if self.kind not in (*BAR_KINDS, "lines"):
            raise ValueError(f"panel kind {self.kind!r}: one of {(*BAR_KINDS, 'lines')}")


@dataclass(frozen=True)
class Legend:
    """The figure's one legend (below its panels, say): ``systems`` named by colour whatever their
    bars are drawn as (ours solid, the paper's hatched, extrapolated ones hollow), the paper's bars
    named once as hatched (``paper``: whose values), the hollow bar explained where one is drawn;
    without ``systems``, every series named once. ``colours``: a name's colour where the palette has
    none; ``room``: the rectangle (figure fractions) the panels keep, the rest is the legend's;
    ``where``: ``fig.legend``'s keywords (one row unless they say ``ncol``)."""

    systems: Sequence[str] = ()
    paper: str = ""
    colours: Mapping = field(default_factory=dict)
    room: tuple | None = None
    where: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class FigureSpec:
    """A report's figure as data: its panels (``ncols`` a row, the rest hidden), the paper's palette
    for every series without its own colour, the figure's size in inches, its title, and one legend
    for the whole figure (``legend``: a :class:`Legend`, or keywords of ``fig.legend`` naming each
    series once) in place of the panels' own; ``sharex``, ``sharey``: the panels share that axis;
    ``layout``: matplotlib's tight layout (False where the report places its title and legend
    itself)."""

    panels: Sequence[Panel]
    palette: Palette = SYSTEMS
    ncols: int = 1
    size: tuple = (8, 4)
    title: str = ""
    legend: Legend | Mapping | None = None
    sharex: bool = False
    sharey: bool = False
    layout: bool = True


def draw(spec: FigureSpec):
    """The matplotlib figure of ``spec``."""
    ncols = max(1, min(spec.ncols, len(spec.panels)))
    nrows = max(1, -(-len(spec.panels) // ncols))
    shared = {k: True for k, on in (("sharex", spec.sharex), ("sharey", spec.sharey)) if on}
    fig, axes = figure(spec.size, ncols=ncols, nrows=nrows, squeeze=False, **shared)
    hollow = False
    for ax, panel in zip(axes.flat, spec.panels):
        hollow |= draw_panel(ax, panel, spec.palette, legend=spec.legend is None)
    for ax in list(axes.flat)[len(spec.panels) or 1:]:        # a figure of no panel keeps its empty axes
        ax.set_visible(False)
    room = None
    if isinstance(spec.legend, Legend):
        legend, room = spec.legend, spec.legend.room
        if legend.systems:
            entries = len(legend.systems) + bool(legend.paper) + hollow
            legend_by_system(fig, list(legend.systems), paper=legend.paper or None, hollow=hollow,
                             colours=dict(legend.colours), **{"ncol": entries, **legend.where})
        else:
            handles = legend_handles(spec)
            fig.legend(handles=handles, **{"ncol": len(handles), **legend.where})
    elif spec.legend is not None:
        fig.legend(handles=legend_handles(spec), **spec.legend)
    if spec.title:
        fig.suptitle(spec.title)
    if spec.layout:
        fig.tight_layout(**({"rect": room} if room else {}))
    return fig


def draw_panel(ax, panel: Panel, palette: Palette = SYSTEMS, legend: bool = True) -> bool:
    """One panel on ``ax`` (``legend``: its own legend, where it asks for one); True when it drew a
    hollow (extrapolated) bar."""
    legend_kw = dict(panel.legend) if isinstance(panel.legend, Mapping) else {}
    show_legend = legend and bool(panel.legend)
    if not panel.series:                # nothing measured: the panel says so in its title, on empty axes
        if not panel.frame:
            ax.set_axis_off()
        if panel.title:
            ax.set_title(panel.title, **({"fontsize": panel.title_size} if panel.title_size else {}))
        return False
    value_axis, group_axis = (panel.x, panel.y) if panel.horizontal else (panel.y, panel.x)
    hollow = False
    if panel.kind == "bars":
        hollow = grouped_bars(ax, list(panel.groups), list(panel.series), horizontal=panel.horizontal, log=value_axis.log,
                     value_label=value_axis.label, legend=show_legend, width=panel.width, palette=palette,
                     **legend_kw)
    elif panel.kind == "stacked":
        _stacked(ax, panel, palette)
        _points(ax, panel, palette)
        if panel.grid:
            ax.grid(True, axis="x" if panel.horizontal else "y", alpha=0.3)
        if show_legend:
            ax.legend(**{"fontsize": 9, **legend_kw})
    else:
        lines(ax, [(s.label, s.xs, s.values, {**({"color": c} if (c := s.colour_of(0, "", palette)) else {}),
                                              **({"paper": True} if s.paper else {}), **s.style})
                   for s in panel.series], legend_size=None, grid=panel.grid)
        for which, axis in (("x", panel.x), ("y", panel.y)):
            _scale(ax, which, axis)
        if show_legend:
            ax.legend(**{"fontsize": 7, **legend_kw})
    if group_axis.label or panel.kind == "lines":
        (ax.set_xlabel if not panel.horizontal or panel.kind == "lines" else ax.set_ylabel)(panel.x.label)
    if panel.kind == "lines" and panel.y.label:
        ax.set_ylabel(panel.y.label)
    for rule in panel.rules:
        style = {"color": "0.3", "linewidth": 0.8, "linestyle": ":", **(PAPER_STYLE if rule.paper else {}),
                 **rule.style}
        vertical = rule.vertical != panel.horizontal if panel.kind != "lines" else rule.vertical
        (ax.axvline if vertical else ax.axhline)(rule.at, **({"label": rule.label} if rule.label else {}), **style)
    for which, axis, set_limits in (("x", panel.x, ax.set_xlim), ("y", panel.y, ax.set_ylim)):
        if axis.limits is not None:
            set_limits(*axis.limits)
        if axis.margin is not None:
            ax.margins(**{which: axis.margin})
    if panel.title or panel.verdict:        # the verdict under the title, where no bar or legend hides it
        ax.set_title("\n".join(t for t in (panel.title, panel.verdict) if t),
                     **({"fontsize": panel.title_size} if panel.title_size else {}))
    return hollow


def _scale(ax, which: str, axis: Axis) -> None:
    """A lines panel's ``axis`` (``which``: "x" or "y"): its scale and the values it marks."""
    if axis.log and axis.base == 10 and axis.ticks is None:
        log_axis(ax, which)
    elif axis.log:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=axis.base)
    if axis.ticks is not None:
        (ax.set_xticks if which == "x" else ax.set_yticks)(list(axis.ticks), [f"{t:g}" for t in axis.ticks])
        ax.minorticks_off()


def _points(ax, panel: Panel, palette: Palette) -> None:
    """The panel's points: a marker per group with a value, at that value over the group."""
    for s in panel.points:
        at = [(g, v) for g, v in enumerate(s.values) if finite(v)]
        if not at:
            continue
        groups, values = [g for g, _ in at], [v for _, v in at]
        xs, ys = (values, groups) if panel.horizontal else (groups, values)
        ax.plot(xs, ys, **{"color": s.colour_of(0, "0.2", palette), "linestyle": "none", **s.style})


def _stacked(ax, panel: Panel, palette: Palette) -> None:
    """One stack per group, the series bottom to top (left to right with ``horizontal``), each
    stack's total written past its end in ``panel.totals``'s format; a group no series has a value
    of stays empty."""
    bar = ax.barh if panel.horizontal else ax.bar
    labelled: set = set()
    for g in range(len(panel.groups)):
        if not any(finite(s.values[g]) for s in panel.series):
            continue
        base = 0.0
        for i, s in enumerate(panel.series):
            value = s.values[g] if finite(s.values[g]) else 0.0
            face = s.colour_of(g, f"C{i}", palette)
            style = {**(PAPER_BAR if s.paper else {}), **s.style, **(s.each[g] if s.each else {})}
            bar(g, value, panel.width, **({"left": base} if panel.horizontal else {"bottom": base}), color=face,
                label=None if s.label in labelled else s.label, **style)
            labelled.add(s.label)
            base += value
        if panel.totals:
            ax.text(*((base, g) if panel.horizontal else (g, base)), panel.totals.format(base),
                    ha="left" if panel.horizontal else "center", va="center" if panel.horizontal else "bottom",
                    fontsize=9)
    ticks = list(range(len(panel.groups)))
    if panel.horizontal:
        ax.set_yticks(ticks, list(panel.groups))
        ax.invert_yaxis()                              # the first group on top, as a table reads
        ax.set_xlabel(panel.x.label)
    else:
        ax.set_xticks(ticks, list(panel.groups))
        ax.set_ylabel(panel.y.label)


def legend_handles(spec: FigureSpec) -> list:
    """One legend entry per series label over every panel of ``spec`` (first seen first), a bar
    series as a patch, a line or points as a line, the paper's in the paper's style."""
    seen: dict = {}
    for panel in spec.panels:
        for handle in (_handles(panel.series, spec.palette) if panel.kind in BAR_KINDS
                       else _line_handles(panel.series, spec.palette)) + _line_handles(panel.points, spec.palette):
            seen.setdefault(handle.get_label(), handle)
    return list(seen.values())


def _handles(series: Sequence[Series], palette: Palette) -> list:
    from matplotlib.patches import Patch

    return [Patch(color=s.colour_of(0, f"C{i}", palette), label=s.label, **(PAPER_BAR if s.paper else {}))
            for i, s in enumerate(series)]


def _line_handles(series: Sequence[Series], palette: Palette) -> list:
    from matplotlib.lines import Line2D

    return [Line2D([], [], label=s.label, **{**({"color": c} if (c := s.colour_of(0, "", palette)) else {}),
                                             **(PAPER_STYLE if s.paper else {}), **s.style})
            for s in series]
