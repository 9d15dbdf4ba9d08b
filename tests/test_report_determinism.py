"""Reports regenerate byte for byte: committed reports match a regeneration, so `report --all` on a
fresh clone leaves git clean (SVG element ids are salted; PNG and SVG carry no dates)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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


@pytest.mark.slow
def test_report_all_gives_the_same_bytes_in_processes_of_different_hash_seeds(tmp_path):
    """A fresh clone regenerates in a new process, whose string hashing (and so set order) differs:
    every file of `report --all` must not depend on it."""
    seeds = ("0", "3")
    # the two processes at once: the suite's longest test otherwise, and a machine has two cores
    procs = [subprocess.Popen([sys.executable, "-m", "harness", "report", "--all", "--out", str(tmp_path / seed)],
                              cwd=REPO_ROOT, env={**os.environ, "PYTHONHASHSEED": seed}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for seed in seeds]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-2000:]
    outs = [{p.relative_to(tmp_path / seed): p.read_bytes() for p in (tmp_path / seed).rglob("*") if p.is_file()}
            for seed in seeds]
    assert outs[0].keys() == outs[1].keys() and len(outs[0]) > 100
    assert [str(p) for p in outs[0] if outs[0][p] != outs[1][p]] == []
