"""Reports regenerate byte for byte: committed reports match a regeneration, so `report --all` on a
fresh clone leaves git clean (SVG element ids are salted; PNG and SVG carry no dates)."""

from __future__ import annotations

from pathlib import Path

from harness.report import report_runs

from .conftest import REPO_ROOT

RUNS = ["0140_h200_table1-cold", "0141_h200_fig6-cold", "0146_h200_mggcn.table3-one-rank"]


def test_rendering_twice_gives_the_same_bytes(tmp_path):
    runs = [REPO_ROOT / "results" / r for r in RUNS]
    first = report_runs(runs, tmp_path / "a")
    second = report_runs(runs, tmp_path / "b")
    assert {p.suffix for p in first} >= {".md", ".csv", ".tex", ".png", ".svg"}
    for a in first:
        b = tmp_path / "b" / a.relative_to(tmp_path / "a")
        assert b in second and a.read_bytes() == b.read_bytes(), a.name
