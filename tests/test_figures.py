"""Declared figures (harness/figures.py) and the palettes (harness/palette.py): a figure spec drawn
from synthetic rows has the panels, series, colours and paper style it declares; no experiment
keeps a colour table of its own (each paper has one palette, experiments/<paper>/__init__.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import matplotlib
import pytest
from matplotlib.colors import to_hex

from harness import reportkit as kit
from harness.figures import PAPER_BAR, PAPER_STYLE, Axis, FigureSpec, Panel, Rule, Series, draw, legend_handles
from harness.palette import PALETTE, Palette

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
# a colour spelled out: hex, a Tableau name or a colour-cycle entry (greys such as "0.3" and
# "black" mark annotations, not series, and are left to the figures)
COLOUR = re.compile(r"#[0-9a-fA-F]{6}([0-9a-fA-F]{2})?|tab:[a-z]+|C[0-9]")
# files that still spell colours out of their paper's palette: this list may only shrink
ALLOWED: dict[str, int] = {}


def spelled_colours(source: str) -> int:
    """How many colour literals ``source`` spells out, those of a ``Palette(...)`` call aside."""
    tree = ast.parse(source)
    inside_palettes = {id(n) for call in ast.walk(tree) if isinstance(call, ast.Call)
                       and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Palette"
                       for n in ast.walk(call)}
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
               and COLOUR.fullmatch(n.value) and id(n) not in inside_palettes)


def test_no_experiment_keeps_a_colour_table_of_its_own():
    found = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "experiments").rglob("*.py"))
             if (n := spelled_colours(p.read_text()))}
    assert found == ALLOWED, ("colours belong in the paper's palette (experiments/<paper>/__init__.py, "
                              "harness.palette.Palette); an allowed file that spells fewer: lower its count")


def test_the_colour_check_sees_a_table_and_ignores_the_palette():
    assert spelled_colours('STAGES = {"sample": "#f2a93b", "train": "tab:blue"}\nax.plot(x, color="C3")') == 3
    assert spelled_colours('PALETTE = Palette("X", {"sample": "#f2a93b", "train": "tab:blue"})') == 0
    assert spelled_colours('ax.plot(x, color="0.3", label="C3PO")') == 0


def test_every_paper_has_one_palette_that_falls_back_on_the_systems():
    from experiments import mggcn, placement, wholegraph, xgnn

    for paper in (mggcn, placement, wholegraph, xgnn):
        assert isinstance(paper.PALETTE, Palette)
    assert xgnn.PALETTE["Sampler"] == "#6baed6" and xgnn.PALETTE["Trainer"] == "#08519c"
    assert xgnn.PALETTE["DGL 1.1"] == PALETTE["DGL"]              # a system: the systems' colour
    from experiments.placement.paper import policy_colour

    assert policy_colour("Our") == PALETTE["ours"] and policy_colour("Our+LAS") == placement.PALETTE["Our+LAS"]
    assert policy_colour("no such policy", "0.6") == "0.6"
    assert xgnn.PALETTE.get("no such series") is None and "no such series" not in xgnn.PALETTE
    with pytest.raises(KeyError, match="XGNN's palette"):
        xgnn.PALETTE["no such series"]


# ----------------------------------------------------------------------------- a toy figure spec

TOY = Palette("Toy", {"sampling": "#f2a93b", "training": "#4d4d4d"})
ROWS = [{"system": "PyG", "dataset": "products", "sample s": 3.0, "train s": 1.0},
        {"system": "WholeGraph", "dataset": "products", "sample s": 0.5, "train s": 0.7}]
PAPER_EPOCH = {"PyG": 5.0, "WholeGraph": 1.0}


def toy_spec() -> FigureSpec:
    """A toy report's figure from rows: epoch times by system beside the paper's, and each system's
    epoch stacked by stage, the verdict on the first panel."""
    systems = [r["system"] for r in ROWS]
    ours = Series("ours", [r["sample s"] + r["train s"] for r in ROWS], colour=[PALETTE[s] for s in systems])
    paper = Series("paper (8x A100)", [PAPER_EPOCH[s] for s in systems], colour="0.5", paper=True)
    stages = [Series(stage, [r[f"{column} s"] for r in ROWS]) for stage, column in (("sampling", "sample"),
                                                                                   ("training", "train"))]
    return FigureSpec(
        [Panel([ours, paper], groups=systems, title="epoch", y=Axis("seconds per epoch", log=True),
               rules=[Rule(2.0, "paper: WholeGraph under 2 s", paper=True)], verdict="reproduced 1/1"),
         Panel(stages, kind="stacked", groups=systems, title="stages", y=Axis("seconds"), totals="{:.2g} s",
               legend={"loc": "upper right"}),
         Panel([Series("PyG", [1.0, 0.6], xs=[1, 2]), Series("paper: linear", [1.0, 0.5], xs=[1, 2], paper=True,
                                                             colour="0.4")],
               kind="lines", title="scaling", x=Axis("GPUs"), y=Axis("seconds", limits=(0, 1.2)))],
        palette=TOY, ncols=3, size=(9, 3))


def faces(ax) -> list[str]:
    return [to_hex(p.get_facecolor()) for p in ax.patches]


def test_a_toy_spec_draws_its_panels_series_and_palette():
    fig = draw(toy_spec())
    bars, stacked, scaling = fig.axes
    assert [ax.get_title() for ax in fig.axes] == ["epoch\nreproduced 1/1", "stages", "scaling"]
    # ours in each system's colour, then the paper's hatched and lighter beside them
    assert faces(bars)[:2] == [PALETTE["PyG"], PALETTE["WholeGraph"]]
    paper_bars = bars.patches[2:4]
    assert all(p.get_hatch() == PAPER_BAR["hatch"] and p.get_alpha() == PAPER_BAR["alpha"] for p in paper_bars)
    assert [p.get_height() for p in bars.patches[:4]] == [4.0, 1.2, 5.0, 1.0]
    assert bars.get_yscale() == "log" and bars.get_ylabel() == "seconds per epoch"
    assert [t.get_text() for t in bars.get_xticklabels()] == ["PyG", "WholeGraph"]
    rule = [ln for ln in bars.get_lines() if ln.get_label().startswith("paper: WholeGraph")]
    assert rule and rule[0].get_linestyle() == PAPER_STYLE["linestyle"] and rule[0].get_ydata()[0] == 2.0
    assert [t.get_text() for t in bars.get_legend().get_texts()] == ["ours", "paper (8x A100)"]
    # the stages in the paper's own palette, stacked, each stack's total above it
    assert faces(stacked) == ["#f2a93b", "#4d4d4d"] * 2
    assert [p.get_y() for p in stacked.patches] == [0.0, 3.0, 0.0, 0.5]
    assert [t.get_text() for t in stacked.texts] == ["4 s", "1.2 s"]
    assert [t.get_text() for t in stacked.get_legend().get_texts()] == ["sampling", "training"]
    # lines: a system in its colour, the paper's dashed
    pyg, linear = scaling.get_lines()
    assert to_hex(pyg.get_color()) == PALETTE["PyG"] and pyg.get_linestyle() == "-"
    assert linear.get_linestyle() == "--" and scaling.get_ylim() == (0, 1.2)


def test_a_figure_legend_names_each_series_once_in_place_of_the_panels():
    spec = toy_spec()
    spec = FigureSpec([spec.panels[1], spec.panels[1]], palette=TOY, ncols=2, legend={"loc": "lower center"})
    fig = draw(spec)
    assert all(ax.get_legend() is None for ax in fig.axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["sampling", "training"]
    assert [to_hex(h.get_facecolor()) for h in legend_handles(spec)] == ["#f2a93b", "#4d4d4d"]


def test_a_panel_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="pie"):
        Panel([], kind="pie")


def test_the_kit_reexports_the_figures():
    assert kit.FigureSpec is FigureSpec and kit.draw is draw and kit.Palette is Palette


def test_a_horizontal_stack_reads_top_down_with_points_and_per_value_styles():
    stages = [Series("sampling", [1.0, 2.0], each=[{}, {"hatch": "xxx"}]), Series("training", [1.0, None])]
    spec = FigureSpec([Panel(stages, kind="stacked", horizontal=True, groups=["first", "second"], x=Axis("GiB"),
                             points=[Series("device used", [2.5, None], colour="black", style={"marker": "D"})]),
                       Panel([], frame=False, title="no run")], palette=TOY, ncols=2)
    fig = draw(spec)
    ax, empty = fig.axes
    assert [p.get_x() for p in ax.patches] == [0.0, 1.0, 0.0, 2.0]        # stacked left to right
    assert [p.get_hatch() for p in ax.patches] == [None, None, "xxx", None]
    assert ax.yaxis_inverted() and ax.get_xlabel() == "GiB"
    (points,) = ax.get_lines()
    assert list(points.get_xdata()) == [2.5] and list(points.get_ydata()) == [0] and points.get_marker() == "D"
    assert not empty.axison and empty.get_title() == "no run"
    assert [h.get_label() for h in legend_handles(spec)] == ["sampling", "training", "device used"]


def test_a_log2_axis_marks_the_values_it_is_given():
    fig = draw(FigureSpec([Panel([Series("PyG", [4.0, 2.5, 1.5], xs=[1, 2, 4])], kind="lines",
                                 x=Axis("GPUs", log=True, base=2, ticks=[1, 2, 4]), y=Axis(limits=(0, None)))]))
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    assert ax.get_ylim()[0] == 0
