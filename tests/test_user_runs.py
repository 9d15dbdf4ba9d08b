"""A user's runs stay apart from the committed references: `run` writes under ./runs by default, its
report lands beside the run, `report RUN` writes beside RUN, and only `promote` adds a run to
results/, which `report --all` reads alone."""

from __future__ import annotations

from harness.cli import main


def test_a_quick_run_touches_neither_results_nor_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_GIT_COMMIT", "0123abcd")      # a clean tree: promote takes no other
    monkeypatch.setenv("HARNESS_GIT_DIRTY", "0")
    assert main(["run", "wholegraph.table1", "--device", "cpu", "--quick", "--impl", "local",
                 "--param", "sizes_gb=8"]) == 0
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "rows.jsonl").is_file() and (runs[0] / "report").is_dir()
    assert not (tmp_path / "results").exists() and not (tmp_path / "reports").exists()

    assert main(["report", str(runs[0]), "--experiment", "wholegraph.table1"]) == 0
    assert (runs[0] / "report" / "wholegraph" / "table1.md").is_file()
    assert not (tmp_path / "reports").exists()

    assert main(["promote", str(runs[0])]) == 0
    promoted = list((tmp_path / "results").iterdir())
    assert len(promoted) == 1 and (promoted[0] / "rows.jsonl").is_file()
    assert main(["report", "--all"]) == 0
    assert (tmp_path / "reports" / "wholegraph" / "table1.md").is_file()
    assert (tmp_path / "reports" / "README.md").is_file()
    page = (tmp_path / "reports" / "wholegraph" / "README.md").read_text()    # a page per paper
    assert "`wholegraph.table1`" in page and "![wholegraph.table1](table1.png)" in page and "Setup:" in page
    assert "(wholegraph/README.md)" in (tmp_path / "reports" / "README.md").read_text()
