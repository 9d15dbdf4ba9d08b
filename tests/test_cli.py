"""CLI: bad input gives one `error:` line and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness import cli

from .conftest import REPO_ROOT


def _one_error_line(capsys, code: int) -> str:
    out, err = capsys.readouterr()
    assert code != 0
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected exactly one stderr line, got {lines!r}"
    assert lines[0].startswith("error: ")
    assert "usage:" not in err
    return lines[0]


@pytest.mark.parametrize("argv, expect", [
    (["run", "nosuchexperiment"], "unknown experiment 'nosuchexperiment'"),
    (["run", "wholegraph.table99"], "unknown experiment 'wholegraph.table99'"),
    (["frobnicate"], "frobnicate"),
    (["run", "table1", "--repeats", "0"], "--repeats"),
    (["run", "table1", "--repeats", "many"], "--repeats"),
    (["run", "table1", "--scale", "-1"], "--scale"),
    (["run", "table1", "--scale", "0"], "--scale"),
    (["run", "table1", "--warmup", "-2"], "--warmup"),
    (["run", "table1", "--gpus", "0"], "--gpus"),
    (["run", "table1", "--device", "tpu"], "--device"),
    (["run", "table1", "--param", "foo"], "KEY=VALUE"),
    (["run", "table1", "--param", "=3"], "KEY=VALUE"),
    (["run", "table1", "--param", "foo=1"], "unknown --param foo"),
    (["run", "table1", "--param", "sizes_gb=eight"], "eight"),
    (["run", "table1", "--param", "steps=-5"], "-5"),
    (["run", "table1", "--param", "sizes_gb=-1"], "positive numbers, got -1"),      # was a run of skipped rows
    (["run", "wholegraph.gather", "--param", "row_bytes=0,512"], "positive integers, got 0"),
    (["run", "table1", "--param", "sizes_gb=8", "--param", "sizes_gb=16"], "--param sizes_gb is given twice"),
    (["run", "table1", "--timeout", "0"], "--timeout"),
    (["run", "table1", "--impl", "nosuchimpl"], "nosuchimpl"),
    (["run"], "ids"),
    ([], "command"),
    (["report", "/nonexistent/run/dir"], "/nonexistent/run/dir"),
    (["compare", "/nonexistent/a", "/nonexistent/b"], "/nonexistent/a"),
    (["list", "--bogus"], "--bogus"),
])
def test_bad_input_is_one_error_line(capsys, tmp_path, argv, expect):
    if argv and argv[0] == "run":
        argv = argv + ["--out", str(tmp_path / "runs")]
    code = cli.main(argv)
    line = _one_error_line(capsys, code)
    assert expect in line
    # nothing was run: no run directory was created for bad input
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_unknown_param_lists_the_known_ones(capsys, tmp_path):
    code = cli.main(["run", "wholegraph.table1", "--param", "colour=blue", "--out", str(tmp_path)])
    line = _one_error_line(capsys, code)
    for known in ("sizes_gb", "steps", "host_max_gb"):
        assert known in line


def test_device_cuda_without_cuda(capsys, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    code = cli.main(["run", "wholegraph.table1", "--device", "cuda", "--out", str(tmp_path)])
    line = _one_error_line(capsys, code)
    assert "cuda" in line.lower() and "no CUDA GPU" in line
    assert not any(tmp_path.iterdir())


def test_report_on_a_directory_without_rows(capsys, tmp_path):
    code = cli.main(["report", str(tmp_path), "--out", str(tmp_path / "rep")])
    line = _one_error_line(capsys, code)
    assert "not a run directory" in line


def test_report_on_an_empty_run(capsys, tmp_path):
    (tmp_path / "rows.jsonl").write_text("")
    code = cli.main(["report", str(tmp_path), "--out", str(tmp_path / "rep")])
    line = _one_error_line(capsys, code)
    assert "no rows" in line


def test_errors_from_python_dash_m_have_no_traceback(py_env, tmp_path):
    """The real entry point, through a subprocess: one line on stderr, exit code 2."""
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "nosuch", "--out", str(tmp_path)],
                          cwd=REPO_ROOT, env=py_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: unknown experiment 'nosuch' (see `python -m harness list`)"]
    assert proc.stdout == ""


def test_list_subprocess(py_env):
    proc = subprocess.run([sys.executable, "-m", "harness", "list"], cwd=REPO_ROOT, env=py_env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "wholegraph.table1" in out
    for name in ("local", "p2p", "um", "host_zero_copy"):
        assert any(name in ln and "probes" in ln for ln in out.splitlines()), name
    import torch

    if not torch.cuda.is_available():  # judged for --device cpu: the CPU path of `local` runs
        local_line = next(ln for ln in out.splitlines() if " local " in ln and "probes" in ln)
        assert "yes" in local_line
        um_line = next(ln for ln in out.splitlines() if " um " in ln and "probes" in ln)
        assert "no: needs CUDA" in um_line


def test_list_interface_filter(capsys):
    assert cli.main(["list", "--interface", "probes"]) == 0
    out = capsys.readouterr().out
    assert "host_zero_copy" in out and "wholegraph.table1" in out


def test_env_subprocess(py_env):
    proc = subprocess.run([sys.executable, "-m", "harness", "env"], cwd=REPO_ROOT, env=py_env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "harness " in out and "torch " in out
    for name in ("local", "p2p", "um", "host_zero_copy"):
        assert f"probes.{name}" in out
    import torch

    if not torch.cuda.is_available():
        assert "GPUs: none visible" in out
        assert "probes.local" in out and any(
            "probes.local" in ln and "yes" in ln for ln in out.splitlines())
        assert any("probes.um " in ln and "no:" in ln for ln in out.splitlines())


def test_help_is_not_an_error(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    assert "run" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "report"])
def test_out_path_that_is_a_file_is_one_error_line(capsys, tmp_path, command):
    a_file = tmp_path / "not_a_directory"
    a_file.write_text("x")
    if command == "run":
        argv = ["run", "wholegraph.table1", "--device", "cpu", "--impl", "um",
                "--param", "sizes_gb=8", "--out", str(a_file)]
    else:
        from .helpers import CPU_MANIFEST, table1_row, write_run

        run = write_run(tmp_path, "0001_cpu", CPU_MANIFEST,
                        [table1_row("local", 8, 0.1, gpus=1, device="cpu")])
        argv = ["report", str(run), "--out", str(a_file / "sub")]
    try:
        code = cli.main(argv)
    except OSError as exc:  # what happens today: the exception escapes main()
        pytest.fail(f"traceback instead of an error line: {exc!r}")
    line = _one_error_line(capsys, code)
    assert str(a_file) in line


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("line", ['{"foo": 1}', "[1, 2]"])
def test_a_run_with_a_foreign_row_is_one_error_line(capsys, tmp_path, command, line):
    run = tmp_path / "0001_bad"
    run.mkdir()
    (run / "rows.jsonl").write_text(line + "\n")
    argv = ["report", str(run), "--out", str(tmp_path / "rep")] if command == "report" \
        else ["compare", str(run), str(run)]
    try:
        code = cli.main(argv)
    except Exception as exc:  # what happens today
        pytest.fail(f"traceback instead of an error line: {exc!r}")
    line_out = _one_error_line(capsys, code)
    assert "rows.jsonl" in line_out


def test_withdrawn_run_is_left_out_of_report_all(capsys, tmp_path):
    """`harness withdraw` keeps the rows, and `report --all` leaves the run out and names it with
    its reason in the index; withdrawing twice, without a reason, or a run outside results/ is an
    error line."""
    from .helpers import CLEAN_CPU_MANIFEST, table1_row, write_run

    results = tmp_path / "results"
    results.mkdir()
    write_run(results, "0001_cpu", CLEAN_CPU_MANIFEST, [table1_row("local", 8, 0.1, gpus=1, device="cpu")])
    bad = write_run(results, "0002_cpu", CLEAN_CPU_MANIFEST, [table1_row("local", 8, 99.0, gpus=1, device="cpu")])
    mine = write_run(tmp_path / "runs", "0001_cpu", CLEAN_CPU_MANIFEST, [table1_row("local", 8, 1.0, gpus=1, device="cpu")])
    rows_before = (bad / "rows.jsonl").read_text()
    withdraw = ["withdraw", "--results", str(results)]
    assert cli.main(withdraw + [str(bad), "--reason", "edge weights  freed early"]) == 0
    assert (bad / "rows.jsonl").read_text() == rows_before
    code = cli.main(withdraw + [str(bad), "--reason", "again"])
    assert "already withdrawn" in _one_error_line(capsys, code)
    code = cli.main(withdraw + [str(results / "0001_cpu"), "--reason", "  "])
    assert "say why" in _one_error_line(capsys, code)
    code = cli.main(withdraw + [str(mine), "--reason", "not a reference"])
    assert f"{mine} is not a run directory under {results}/" in _one_error_line(capsys, code)
    assert not (mine / "withdrawn.json").exists()
    out = tmp_path / "reports"
    assert cli.main(["report", "--all", "--results", str(results), "--out", str(out)]) == 0
    index = (out / "README.md").read_text()
    assert "- `0002_cpu`: edge weights freed early" in index
    table = next(out.rglob("table1.md")).read_text()
    assert "0001" in table and "0002" not in table


def _finished_run(root, name, status="complete", dirty=False, **manifest):
    from .helpers import CLEAN_CPU_MANIFEST, table1_row, write_run

    git = {"commit": "fedcba9876543210", "dirty": dirty}
    return write_run(root, name, {**CLEAN_CPU_MANIFEST, "status": status, "git": git, **manifest},
                     [table1_row("local", 8, 0.1, gpus=1, device="cpu")])


@pytest.mark.parametrize("status, dirty, owner, reason", [
    ("complete", True, None, "measured on a tree with uncommitted changes (git.dirty)"),
    ("complete", None, None, "its manifest does not say whether its tree was clean"),
    ("failed", False, None, "failed (a launch of ranks or the run itself ended in an error)"),
    ("interrupted", False, None, "interrupted"),
    ("running", False, "dead", "abandoned: its manifest says running but its process is gone"),
    ("running", False, "alive", "still running (its process is alive)"),
])
def test_promote_refuses_a_run_that_is_no_reference_with_its_reason(capsys, tmp_path, status, dirty, owner, reason):
    import os
    import socket

    import psutil

    me = psutil.Process(os.getpid())
    owners = {"alive": {"pid": me.pid, "host": socket.gethostname(), "started": me.create_time()},
              "dead": {"pid": 2 ** 22 + 7, "host": socket.gethostname(), "started": 0.0}}
    run = _finished_run(tmp_path / "runs", "0001_cpu", status, dirty, **({"owner": owners[owner]} if owner else {}))
    code = cli.main(["promote", str(run), "--out", str(tmp_path / "results")])
    line = _one_error_line(capsys, code)
    assert line.startswith(f"error: not promoting {run}: it is ") and reason in line
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_failed_run_kept_as_a_record_is_listed_and_feeds_no_table(capsys, tmp_path):
    good = _finished_run(tmp_path / "runs", "0001_cpu")
    failed = _finished_run(tmp_path / "runs", "0002_cpu", "failed")
    results = tmp_path / "results"
    code = cli.main(["promote", str(failed), "--out", str(results)])
    assert "--keep-failed-as-record" in _one_error_line(capsys, code)
    code = cli.main(["promote", str(failed), "--out", str(results), "--keep-failed-as-record"])
    out = capsys.readouterr().out
    assert code == 0 and "(a record: failed, kept as a record (--keep-failed-as-record)" in out
    dirty = _finished_run(tmp_path / "runs", "0003_cpu", "failed", dirty=True)
    code = cli.main(["promote", str(dirty), "--out", str(results), "--keep-failed-as-record"])
    assert "uncommitted changes" in _one_error_line(capsys, code)         # a record of no commit: never
    assert cli.main(["promote", str(good), "--out", str(results)]) == 0
    reports = tmp_path / "reports"
    assert cli.main(["report", "--all", "--results", str(results), "--out", str(reports)]) == 0
    index = (reports / "README.md").read_text()
    assert "- `0001_cpu`: failed, kept as a record" in index               # promoted first: 0001
    line = next(ln for ln in index.splitlines() if "`wholegraph.table1`" in ln)
    assert "0002_cpu" in line and "0001_cpu" not in line


def test_report_all_reads_only_complete_runs_of_committed_code(capsys, tmp_path):
    results = tmp_path / "results"
    _finished_run(results, "0001_cpu")
    _finished_run(results, "0002_cpu", dirty=True)
    _finished_run(results, "0003_cpu", "interrupted")
    reports = tmp_path / "reports"
    assert cli.main(["report", "--all", "--results", str(results), "--out", str(reports)]) == 0
    index = (reports / "README.md").read_text()
    line = next(ln for ln in index.splitlines() if "`wholegraph.table1`" in ln)
    assert "0001_cpu" in line and "0002_cpu" not in line and "0003_cpu" not in line
    assert "- `0002_cpu`: measured on a tree with uncommitted changes" in index
    assert "- `0003_cpu`: interrupted" in index


def test_report_all_lists_each_artifacts_newest_reference_per_machine(tmp_path):
    """The references table: per artifact and machine, the newest reference with measured rows of
    it, its rank count, commit and day; a dirty run, though newer, is no reference; an artifact with
    no run says so."""
    from .helpers import CLEAN_CPU_MANIFEST, table1_row, write_run

    results = tmp_path / "results"
    for name, commit, start in (("0001_cpu", "1111111aaaa", "2026-11-01T10:00:00+00:00"),
                                ("0002_cpu", "2222222bbbb", "2026-11-02T10:00:00+00:00")):
        write_run(results, name, {**CLEAN_CPU_MANIFEST, "git": {"commit": commit, "dirty": False}, "start": start},
                  [table1_row("local", 8, 0.1, gpus=2, device="cpu")])
    _finished_run(results, "0003_cpu", dirty=True)
    table = tmp_path / "docs" / "references.md"
    assert cli.main(["report", "--all", "--results", str(results), "--out", str(tmp_path / "reports")]) == 0
    assert (tmp_path / "reports" / "references.md").exists()        # beside the reports when --out is given
    from harness.report import report_all

    report_all(results, tmp_path / "reports", references=table)
    lines = table.read_text().splitlines()
    (row,) = [ln for ln in lines if ln.startswith("| `wholegraph.table1` |")]
    assert "`0002_cpu`" in row and "2 CPU ranks" in row and "`2222222`" in row and "2026-11-02" in row
    assert "| `xgnn.fig10` | - | no committed run | - | - | - |" in lines


@pytest.mark.parametrize("how, code, said", [("sigterm", 143, "terminated"), ("ctrl-c", 130, "interrupted")])
def test_sigterm_exits_143_and_ctrl_c_130(monkeypatch, capsys, how, code, said):
    """A command ended by `kill` exits 128 + SIGTERM, as a process SIGTERM ends does; Ctrl-C 130."""
    import os
    import signal
    import time

    def command(args):
        if how == "ctrl-c":
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, cli._interrupt)       # what `run` installs
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)

    previous = signal.getsignal(signal.SIGTERM)
    monkeypatch.setitem(cli.COMMANDS, "env", command)
    try:
        assert cli.main(["env"]) == code
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert capsys.readouterr().err.strip() == said


def test_a_point_bigger_than_this_machine_is_a_skipped_row_in_the_plan_and_the_run(tmp_path, capsys):
    """--dry-run said a 128 GB chase could run on a CPU host of a few GB: the memory a point needs
    (Experiment.memory_need) is checked against the host (and on GPUs, each GPU)."""
    from harness.needs import detect

    host = detect().host_memory
    assert host, "psutil reports the host's memory"
    big = 2 * host / 2**30
    argv = ["run", "wholegraph.table1", "--device", "cpu", "--impl", "local", "--param", f"sizes_gb=0.001,{big:.0f}",
            "--scale", "1", "--out", str(tmp_path)]
    assert cli.main(argv + ["--dry-run"]) == 0
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if f"size_gb={big:.0f}" in ln]
    assert "no: needs" in line and "of host memory" in line
    assert "1 can run here, 1 skipped" in out


@pytest.mark.parametrize("need, device, world, expect", [
    ({"gpu": 100 * 2**30}, "cuda", 1, "needs 100 GiB per GPU, more than the 80 GiB of a GPU here"),
    ({"gpu": 60 * 2**30}, "cuda", 4, None),
    ({"host": 300 * 2**30}, "cuda", 1, "needs 300 GiB of host memory, more than the 256 GiB of this host"),
    ({"gpu": 100 * 2**30}, "cpu", 2, None),                  # two ranks' shares in 256 GiB of host memory
    ({"gpu": 100 * 2**30}, "cpu", 3, "needs 300 GiB of host memory"),
    ({"gpu": 1562 * 2**30}, "cuda", 1, "needs 1,562 GiB per GPU"),
    (None, "cuda", 1, None),
])
def test_memory_unmet(need, device, world, expect):
    from harness.needs import Capabilities, memory_unmet

    caps = Capabilities(cuda=True, gpu_count=2, gpu_memory=(80 * 2**30, 81 * 2**30), host_memory=256 * 2**30)
    got = memory_unmet(need, caps, device, world)
    assert (got is None) if expect is None else (expect in got), got


def _in_fresh_python(py_env, code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=py_env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_an_unknown_id_fails_before_any_experiment_or_torch_is_imported(py_env):
    """`run nosuch` took 12 s: it imported every experiment (and torch) to say the id is unknown."""
    out = _in_fresh_python(py_env, (
        "import sys; from harness.cli import main; code = main(['run', 'tabel1', '--dry-run']); "
        "print(code, sorted(m for m in ('torch', 'numpy', 'experiments.wholegraph.table1') if m in sys.modules))"))
    assert out.splitlines()[-1] == "2 []"


def test_the_parser_and_list_import_no_optional_package(py_env):
    """Building the parser imports no numpy (the data subcommands' package is lazy); `list` judges
    optional packages by what is installed, without importing DGL or PyG (seconds each)."""
    out = _in_fresh_python(py_env, (
        "import sys; from harness.cli import build_parser; build_parser(); print('numpy' in sys.modules)"))
    assert out == "False"
    out = _in_fresh_python(py_env, (
        "import sys, io, contextlib; from harness.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): code = main(['list'])\n"
        "print(code, sorted(m for m in ('dgl', 'torch_geometric', 'cupy', 'pylibwholegraph') if m in sys.modules))"))
    assert out.splitlines()[-1] == "0 []"
