"""Reports regenerated from stored rows, without running anything."""

from __future__ import annotations

import csv
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli, registry
from harness.config import RunConfig
from harness.report import report_runs
from harness.runner import run as run_experiments

from .conftest import REPO_ROOT
from .helpers import CPU_MANIFEST, H200_MANIFEST, h200_table1_rows, table1_row, write_run

SUFFIXES = (".md", ".csv", ".tex", ".png", ".svg")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _row(rows: list[dict], size: str, machine: str) -> dict:
    """The table1 CSV has one row per (memory size, machine)."""
    hits = [r for r in rows if r["Memory size (GB)"] == size and r["Machine"] == machine]
    assert len(hits) == 1, (size, machine, rows)
    return hits[0]


def _sizes(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["Memory size (GB)"] for r in rows))


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """wholegraph.table1 measured on this CPU at a tiny scale (8 and 16 MB)."""
    root = tmp_path_factory.mktemp("runs")
    cfg = RunConfig(device="cpu", scale=0.001, repeats=2, warmup=0, params={"sizes_gb": "8,16"},
                    out_dir=root, label="cpu_table1")
    outcome = run_experiments(["wholegraph.table1"], cfg, ["harness", "run", "wholegraph.table1"])
    assert outcome.errors == 0 and outcome.ok == 2
    return outcome.store.path


def test_stored_run_is_complete(cpu_run):
    from harness.store import load_run

    run = load_run(cpu_run)
    assert run.manifest["status"] == "complete"
    assert run.manifest["experiments"] == ["wholegraph.table1"]
    assert run.manifest["config"]["scale"] == {"wholegraph.table1": 0.001}
    for key in ("command", "git", "software", "host", "gpus", "env", "start", "end", "hardware"):
        assert key in run.manifest, key
    local = [r for r in run.rows if r["impl"] == "local"]
    assert len(local) == 2 and all(r["status"] == "ok" and r["value"] > 0 for r in local)
    assert all(r["stats"]["repeats"] == 2 for r in local)
    assert {r["params"]["paper_size_gb"] for r in local} == {8.0, 16.0}
    assert {r["params"]["size_gb"] for r in local} == {0.008, 0.016}


def test_report_files_and_paper_values(cpu_run, tmp_path):
    before = {p.name: _digest(p) for p in cpu_run.iterdir() if p.is_file()}
    written = report_runs([cpu_run], tmp_path)
    out = tmp_path / "wholegraph"
    assert sorted(p.name for p in written) == sorted(f"table1{s}" for s in SUFFIXES)
    for s in SUFFIXES:
        assert (out / f"table1{s}").stat().st_size > 0
    assert (out / "table1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (out / "table1.svg").read_bytes()[:2000]

    rows = _csv(out / "table1.csv")
    assert _sizes(rows) == ["8", "16"]
    paper8, paper16 = _row(rows, "8", "A100 (paper)"), _row(rows, "16", "A100 (paper)")
    assert float(paper8["UM"]) == 20.8 and float(paper8["P2P"]) == 1.35
    assert float(paper16["UM"]) == 29.6 and float(paper16["P2P"]) == 1.37
    assert all(float(_row(rows, s, "cpu")["local"]) > 0 for s in ("8", "16"))
    # the CPU run measured no UM or P2P: those cells are empty, not invented
    assert all(_row(rows, s, "cpu")[c] == "" for s in ("8", "16") for c in ("UM", "P2P", "UM/P2P"))
    assert "UM remote" not in rows[0]        # columns with no data at all are dropped

    md = (out / "table1.md").read_text()
    assert "| cpu " in md and "20.8" in md and "1.35" in md
    assert "CPU only" in md                  # the hardware in the caption
    assert "0.001 x the paper's" in md       # the scale is stated
    exp = registry.get_experiment("wholegraph.table1")
    for impl in exp.impls:
        if impl == "local":
            continue
        note = next((ln for ln in md.splitlines() if f"`{impl}` skipped" in ln), None)
        assert note is not None, f"no note for skipped {impl}"
        assert "cuda" in note.lower()        # and its reason
    tex = (out / "table1.tex").read_text()
    assert r"\begin{tabular}" in tex and r"\label{tab:wholegraph.table1}" in tex and "20.8" in tex
    # the report read the run and did not touch it
    assert {p.name: _digest(p) for p in cpu_run.iterdir() if p.is_file()} == before


def test_regenerating_is_deterministic(cpu_run, tmp_path):
    report_runs([cpu_run], tmp_path / "a")
    report_runs([cpu_run], tmp_path / "b")
    report_runs([cpu_run], tmp_path / "a")   # over its own previous output
    for s in (".md", ".csv", ".tex"):
        a = tmp_path / "a" / "wholegraph" / f"table1{s}"
        b = tmp_path / "b" / "wholegraph" / f"table1{s}"
        assert a.read_bytes() == b.read_bytes(), s


def test_report_command_regenerates_from_a_run(cpu_run, tmp_path, py_env):
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(cpu_run), "--out",
                           str(tmp_path)], cwd=REPO_ROOT, env=py_env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    listed = {Path(ln).name for ln in proc.stdout.split()}
    assert listed == {f"table1{s}" for s in SUFFIXES}
    ref = tmp_path / "ref"
    report_runs([cpu_run], ref)
    for s in (".md", ".csv", ".tex"):
        assert (tmp_path / "wholegraph" / f"table1{s}").read_bytes() == \
            (ref / "wholegraph" / f"table1{s}").read_bytes()


def test_report_filter_by_experiment(cpu_run, tmp_path):
    assert report_runs([cpu_run], tmp_path, only=["xgnn.fig99"]) == []
    assert len(report_runs([cpu_run], tmp_path, only=["wholegraph.table1"])) == 5


def test_hand_written_h200_run_gets_the_ratio_column(tmp_path):
    run = write_run(tmp_path, "0001_2xH200_table1", H200_MANIFEST, h200_table1_rows())
    report_runs([run], tmp_path / "rep")
    out = tmp_path / "rep" / "wholegraph"
    rows = _csv(out / "table1.csv")
    assert _sizes(rows) == ["8", "16", "32"]
    cols = list(rows[0])
    for col in ("Machine", "UM", "P2P", "local", "host", "UM/P2P"):
        assert col in cols, (col, cols)
    for size, (um, p2p) in zip(("8", "16", "32"), [(17.5, 1.15), (18.0, 1.16), (18.5, 1.17)]):
        r = _row(rows, size, "2xH200")
        assert float(r["UM"]) == um and float(r["P2P"]) == p2p
        assert float(r["UM/P2P"]) == pytest.approx(um / p2p, rel=1e-12)
    assert float(_row(rows, "8", "A100 (paper)")["UM/P2P"]) == pytest.approx(20.8 / 1.35)
    md = (out / "table1.md").read_text()
    assert "2x NVIDIA H200" in md and "NV18" in md and "CUDA 13.0" in md and "NCCL 2.28.9" in md
    assert "UM/P2P latency ratio 15.2x at worst (8 GB)" in md
    assert "Sizes measured at" not in md         # measured at paper scale
    assert "(dirty)" not in md and "0123456789" in md


def test_report_over_two_runs_has_both_columns(cpu_run, tmp_path):
    h200 = write_run(tmp_path, "0002_2xH200_table1", H200_MANIFEST, h200_table1_rows())
    report_runs([cpu_run, h200], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "table1.md").read_text()
    rows = _csv(tmp_path / "rep" / "wholegraph" / "table1.csv")
    assert _sizes(rows) == ["8", "16", "32"]
    assert float(_row(rows, "8", "cpu")["local"]) > 0 and float(_row(rows, "8", "2xH200")["UM/P2P"]) > 1
    assert _row(rows, "32", "cpu")["local"] == ""    # the CPU run has no 32 GB point
    assert "CPU only" in md and "2x NVIDIA H200" in md


def test_two_runs_on_the_same_hardware_get_distinct_columns(tmp_path):
    a = write_run(tmp_path, "0001_2xH200", H200_MANIFEST, h200_table1_rows())
    b = write_run(tmp_path, "0002_2xH200", H200_MANIFEST, h200_table1_rows())
    report_runs([a, b], tmp_path / "rep")
    machines = {r["Machine"] for r in _csv(tmp_path / "rep" / "wholegraph" / "table1.csv")}
    assert {"2xH200 #0001", "2xH200 #0002"} <= machines


def test_refused_um_point_shows_as_missing_with_its_reason(tmp_path):
    run = write_run(tmp_path, "0001_2xH200", H200_MANIFEST, h200_table1_rows(um_128_refused=True))
    report_runs([run], tmp_path / "rep")
    out = tmp_path / "rep" / "wholegraph"
    rows = _csv(out / "table1.csv")
    last = _row(rows, "128", "2xH200")
    assert last["UM"] == "" and last["UM/P2P"] == ""
    assert float(last["P2P"]) == 1.2
    md = (out / "table1.md").read_text()
    assert "`um` skipped: refused: 128 GB of managed memory" in md


def test_ratio_note_skips_missing_points(tmp_path):
    run = write_run(tmp_path, "0001_2xH200", H200_MANIFEST, h200_table1_rows(um_128_refused=True))
    report_runs([run], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "table1.md").read_text()
    note = next(ln for ln in md.splitlines() if "UM/P2P latency ratio" in ln)
    assert "15.2x at worst (8 GB)" in note
    assert "nan" not in note.lower(), note


def test_scaled_cpu_rows_written_by_hand(tmp_path):
    rows = [table1_row("local", s, v, gpus=1, scale=1 / 64, device="cpu")
            for s, v in [(8, 0.09), (16, 0.11)]]
    rows += [table1_row("um", s, None, gpus=1, scale=1 / 64, device="cpu", status="skipped",
                        reason="runs on cuda only, not on cpu") for s in (8, 16)]
    run = write_run(tmp_path, "0001_cpu", CPU_MANIFEST, rows)
    report_runs([run], tmp_path / "rep")
    md = (tmp_path / "rep" / "wholegraph" / "table1.md").read_text()
    assert "0.0156 x the paper's" in md or "0.015625 x the paper's" in md
    assert "(dirty)" in md and "Test CPU" in md
    rows = _csv(tmp_path / "rep" / "wholegraph" / "table1.csv")
    assert all(r["UM/P2P"] == "" for r in rows if r["Machine"] == "cpu")


def test_report_of_an_unknown_experiment_is_one_error_line(tmp_path, capsys):
    from .helpers import row

    run = write_run(tmp_path, "0001_x", CPU_MANIFEST, [row("a", 1.0, experiment="nopaper.fig1")])
    code = cli.main(["report", str(run), "--out", str(tmp_path / "rep")])
    out, err = capsys.readouterr()
    assert code != 0 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "nopaper.fig1" in err


def test_skip_notes_drop_reasons_a_later_run_on_the_same_machine_kind_superseded():
    import pandas as pd

    from harness.reportkit import skip_notes

    def r(run_id, impl, status, reason=None):
        return {"run_id": run_id, "experiment": "x.fig1", "impl": impl, "status": status, "reason": reason}

    rows = pd.DataFrame([r("0001_a", "lib", "skipped", "package 'lib' is not installed"),
                         r("0001_a", "pyg", "skipped", "package 'pyg' is not installed"),
                         r("0002_b", "lib", "ok"),
                         r("0003_c", "pyg", "skipped", "package 'pyg' is not installed"),
                         r("0004_d", "lib", "skipped", "out of memory")])
    labels = {"0001_a": "4xH200 #0001", "0002_b": "4xH200 #0002", "0003_c": "2 of 4xH200 #0003",
              "0004_d": "cpu"}
    notes = skip_notes(rows, labels)
    assert notes == ["4xH200 #0001 `pyg` skipped: package 'pyg' is not installed",   # no later 4xH200 pyg
                     "2 of 4xH200 #0003 `pyg` skipped: package 'pyg' is not installed",
                     "cpu `lib` skipped: out of memory"]                              # another machine kind
