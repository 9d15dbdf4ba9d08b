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


def _skipped_rows(exp, reason="runs on cuda only, not on cpu"):
    from harness.config import RunConfig
    from harness.experiment import Point
    from harness.runner import make_row

    cfg = RunConfig(device="cpu")
    return [make_row(exp, Point(impl, {"size": i}, world_size=1), cfg, None, "skipped", reason)
            for i, impl in enumerate(exp.impls or ("default",))]


def test_every_report_renders_a_run_of_skipped_rows(tmp_path):
    """A run that measured nothing (a CPU machine, `--impl um`) still has a report per artifact,
    saying which points were skipped and why (table1's report used to raise KeyError)."""
    from harness import registry
    from harness.report import report_runs

    from .helpers import CPU_MANIFEST, write_run

    exps = registry.experiments()
    assert len(exps) > 30
    run = write_run(tmp_path, "0001_cpu", {**CPU_MANIFEST, "status": "complete"},
                    [row for exp in exps for row in _skipped_rows(exp)])
    artifacts: dict = {}
    report_runs([run], tmp_path / "report", artifacts=artifacts)
    assert set(artifacts) == {e.id for e in exps}
    for exp in exps:
        artifact, _, _ = artifacts[exp.id]
        assert artifact.status == "not measured", exp.id
        md = (tmp_path / "report" / exp.paper / f"{artifact.name}.md").read_text()
        assert "No point was measured" in md and "runs on cuda only, not on cpu" in md, exp.id


def test_run_prints_a_verdict_line_per_artifact_not_its_markdown(tmp_path, capsys):
    """`run` ends with where the rows and report are and one line per artifact; the Markdown tables
    stay in the report files (table5 on CPU printed 495 lines). A run of skipped rows gets its report."""
    out = tmp_path / "runs"
    assert main(["run", "wholegraph.table1", "--device", "cpu", "--quick", "--impl", "local",
                 "--param", "sizes_gb=8", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert not [ln for ln in printed if ln.startswith("|") or ln.startswith("# ")], printed
    (verdict,) = [ln for ln in printed if ln.startswith("  wholegraph.table1: ")]
    assert verdict.endswith("table1.md)")
    assert len(printed) <= 5, printed

    assert main(["run", "wholegraph.table1", "--device", "cpu", "--impl", "um", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "  wholegraph.table1: not measured: 5 skipped (most: runs on cuda only, not on cpu)" in printed
    (skipped_run,) = [p for p in out.iterdir() if p.name.startswith("0002")]
    assert "No point was measured" in (skipped_run / "report" / "wholegraph" / "table1.md").read_text()
