"""Drawing XGNN's report figures: grouped bars whose series are measured (solid), the paper's
(hatched) or extrapolated from a capped epoch (hollow, cell by cell), with the cell's text ("OOM",
"x") where it has no bar, and one legend that names each kind of bar drawn."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.reportkit import colour, finite

TEXT_PT = 8
PAPER_BAR = {"hatch": "///", "alpha": 0.45}


@dataclass
class Bars:
    """One series of bars: a value per group (a number, or text such as "OOM" drawn in its place),
    its colour (the system's), the paper's values or ours, and which of ours are extrapolated."""

    label: str
    values: list
    colour: str | list | None = None      # a list: one colour per group (e.g. the system of each group)
    paper: bool = False
    extrapolated: list = field(default_factory=list)

    def __post_init__(self):
        self.colour = self.colour or colour(self.label)

    def colour_of(self, group: int, default: str) -> str:
        if isinstance(self.colour, list):
            return self.colour[group] or default
        return self.colour or default


def grouped_bars(ax, groups: list[str], series: list[Bars], *, horizontal: bool = False, log: bool = False,
                 value_label: str = "", legend: bool = True, text_size: float = TEXT_PT, width: float = 0.8,
                 **legend_kw) -> bool:
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
            colour_ = s.colour_of(g, f"C{i}")
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
        ax.legend(handles=[_patch(s.colour_of(0, f"C{i}") if not isinstance(s.colour, list) else "0.5", s.label,
                                  s.paper) for i, s in enumerate(series)]
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


HOLLOW_BAR = {"facecolor": "none", "linestyle": "--", "linewidth": 1.2}


def _patch(colour_, label: str, paper: bool = False):
    from matplotlib.patches import Patch

    return Patch(facecolor=colour_, edgecolor=colour_, label=label, **(PAPER_BAR if paper else {}))


def _hollow():
    from matplotlib.patches import Patch

    return Patch(edgecolor="0.3", label="hollow: extrapolated from a capped epoch", **HOLLOW_BAR)
