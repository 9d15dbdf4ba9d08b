"""The figure and table rules of harness/figlint.py: each check fails on a figure made to break it,
and every committed artifact passes them all."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

from harness import figlint

matplotlib.use("Agg")


def _fig(**kw):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=kw.pop("figsize", (8, 4.5)))


def test_a_readable_figure_passes():
    fig, ax = _fig()
    for i in range(3):
        ax.plot([1, 2, 3], [1 + i, 2 + i, 3 + i], label=f"s{i}")
    ax.legend(fontsize=9)
    ax.set_ylabel("time (s)")
    assert figlint.figure_problems(fig) == []
    assert figlint.table_problems(pd.DataFrame({f"c{i}": [1] for i in range(12)})) == []


@pytest.mark.parametrize("case, expect", [
    ("series", "series in the legend"), ("rotated", "rotated tick label"), ("tuple", "tuple tick label"),
    ("span", "on a linear axis"), ("small", "pt (at least"), ("wide", "larger than a 1600 x 900 slide"),
])
def test_each_check_fails_on_a_figure_that_breaks_it(case, expect):
    fig, ax = _fig(figsize=(12, 4) if case == "wide" else (8, 4.5))
    if case == "series":
        for i in range(9):
            ax.plot([0, 1], [i, i + 1], label=f"s{i}")
    elif case == "span":
        ax.plot([1, 2], [1, 1000], label="wide range")
    else:
        ax.plot([1, 2], [1, 2], label="one")
    ax.legend(fontsize=6 if case == "small" else 9)
    if case in ("rotated", "tuple"):
        ax.set_xticks([1, 2])
        ax.set_xticklabels(["(a, b)", "(c, d)"] if case == "tuple" else ["a", "b"],
                           rotation=45 if case == "rotated" else 0)
    problems = figlint.figure_problems(fig)
    assert any(expect in p for p in problems), problems


def test_a_table_of_13_columns_fails():
    assert figlint.table_problems(pd.DataFrame({f"c{i}": [1] for i in range(13)}))


@pytest.mark.slow
def test_every_committed_artifact_is_readable():
    from .conftest import REPO_ROOT

    problems = {k: v for k, v in figlint.committed_problems(REPO_ROOT / "results").items() if v}
    assert not problems, "\n".join(f"{k}: {'; '.join(v)}" for k, v in problems.items())
