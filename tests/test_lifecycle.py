"""Rank lifecycle, through real `harness run` processes: killing the run kills its ranks, a killed
rank is named and its point is the error, shared memory never outlives the run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from harness.errors import LaunchError
from harness.launcher import launch
from harness.store import load_run, run_status

from . import launch_targets
from .conftest import REPO_ROOT
from .helpers import pid_alive as _alive

SCRIPT = REPO_ROOT / "tests" / "lifecycle_run.py"


def _wait_for(predicate, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def life(tmp_path):
    """Paths and environment for one lifecycle run: results, pid files, a private shm folder."""
    class Life:
        out, pids, shm = tmp_path / "out", tmp_path / "pids", tmp_path / "shm"
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HARNESS_SHM_DIR": str(tmp_path / "shm"),
               "OMP_NUM_THREADS": "1"}

        def argv(self, *params: str, command: str = "run") -> list[str]:
            args = [sys.executable, str(SCRIPT), command, "zzlife.steps", "--device", "cpu", "--ranks", "2",
                    "--out", str(self.out), "--no-report", "--timeout", "120",
                    "--param", f"pid_dir={self.pids}"]
            for p in params:
                args += ["--param", p]
            return args

        def rank_pids(self) -> dict[int, int]:
            return {int(p.stem[4:]): int(p.read_text()) for p in self.pids.glob("rank*.pid") if p.read_text()}

        def run_dir(self):
            (path,) = [p for p in self.out.iterdir() if (p / "rows.jsonl").exists()]
            return path

        def start_in_point_1(self, points: int) -> tuple[subprocess.Popen, dict[int, int]]:
            """A run whose ranks both sleep in point 1, each holding a shared-memory shard."""
            proc = subprocess.Popen(self.argv(f"points={points}", "sleep=120", "sleep_point=1", "shm=on"),
                                    env=self.env, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            try:
                _wait_for(lambda: len(self.rank_pids()) == 2 and len(list(self.shm.iterdir())) == 2
                          and any(load_run(self.run_dir()).rows), 90, "the ranks to reach point 1")
            except BaseException:
                proc.kill()
                raise
            return proc, self.rank_pids()

    life = Life()
    life.pids.mkdir()
    life.shm.mkdir()
    life.env.pop("HARNESS_SPAWNED", None)
    return life


def test_killing_the_run_kills_its_ranks_frees_shared_memory_and_leaves_an_abandoned_run(life):
    proc, ranks = life.start_in_point_1(points=2)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        _wait_for(lambda: not any(_alive(pid) for pid in ranks.values()), 15,
                  f"ranks {ranks} to die with their parent")
        _wait_for(lambda: not any(life.shm.iterdir()), 15, "shared memory to be freed")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in life.rank_pids().values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    run = load_run(life.run_dir())
    assert run.manifest["status"] == "running"             # nobody was left to finish it...
    assert run_status(run.manifest) == "abandoned"         # ...which readers can tell
    listing = subprocess.run([sys.executable, str(SCRIPT), "list", "--runs", "--results", str(life.out)],
                             env=life.env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    line = next(ln for ln in listing.stdout.splitlines() if life.run_dir().name in ln)
    assert "abandoned" in line
    report = subprocess.run([sys.executable, str(SCRIPT), "report", str(life.run_dir()), "--out",
                             str(life.out / "reports")], env=life.env, cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert "abandoned" in report.stderr
    assert "abandoned" in (life.out / "reports" / "zzlife" / "steps.md").read_text()


def test_terminating_the_run_stops_its_ranks_and_records_the_points_it_never_measured(life):
    proc, ranks = life.start_in_point_1(points=3)
    try:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err           # 128 + SIGTERM, as a process SIGTERM ends; Ctrl-C is 130
    assert "terminated" in err
    assert not any(_alive(pid) for pid in ranks.values())
    assert not any(life.shm.iterdir())
    run = load_run(life.run_dir())
    assert run.manifest["status"] == "interrupted" and run_status(run.manifest) == "interrupted"
    assert [(r["params"]["i"], r["status"]) for r in run.rows] == [(0, "ok"), (1, "skipped"), (2, "skipped")]


def test_an_interrupted_campaign_resumes_to_the_set_of_an_uninterrupted_run_measuring_no_point_twice(life, tmp_path):
    """CPU ranks: rank 0 interrupts the run during point 2 (SIGINT to the launching process, as
    Ctrl-C does); `--resume` then measures points 2 and 3 alone, and the rows equal those of a run
    never interrupted."""
    log, flag = tmp_path / "measured.log", tmp_path / "interrupted"
    params = ("points=4", "interrupt_point=2", f"interrupt_flag={flag}", f"log={log}")
    first = subprocess.run(life.argv(*params), env=life.env, cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 130, first.stdout + first.stderr
    run_dir = life.run_dir()
    run = load_run(run_dir)
    assert run.manifest["status"] == "interrupted"
    assert [(r["params"]["i"], r["status"]) for r in run.rows] == [(0, "ok"), (1, "ok"), (2, "skipped"), (3, "skipped")]

    second = subprocess.run(life.argv(*params) + ["--resume", str(run_dir)], env=life.env, cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    assert log.read_text().split() == ["0", "1", "2", "3"]              # each point measured once
    resumed = load_run(run_dir)
    assert resumed.manifest["status"] == "complete" and len(resumed.manifest["sittings"]) == 2
    assert [p.name for p in life.out.iterdir()] == [run_dir.name]       # appended, no new run

    log.unlink()
    whole = subprocess.run(life.argv(*params), env=life.env, cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=300)                                 # the flag is set: no interruption
    assert whole.returncode == 0, whole.stdout + whole.stderr
    (other,) = [p for p in life.out.iterdir() if p != run_dir]
    point_set = lambda rows: sorted((r["params"]["i"], r["status"], r["value"]) for r in rows)  # noqa: E731
    assert point_set(resumed.rows) == point_set(load_run(other).rows)


@pytest.mark.parametrize("how,named,survivor", [
    ("sigkill", "rank 1 died (SIGKILL)", "runs on"),      # rank 0 errs through the remaining points
    ("sigkill", "rank 1 died (SIGKILL)", "stuck"),        # rank 0 waits inside the point until stopped
    ("exit3", "rank 1 exited with code 3", "stuck"),
])
def test_a_dead_rank_is_named_its_point_is_the_error_and_later_points_say_why_they_never_ran(
        life, how, named, survivor):
    stuck = ("sleep=120", "sleep_point=1") if survivor == "stuck" else ()
    proc = subprocess.run(life.argv("points=4", "die_point=1", f"how={how}", "shm=on", *stuck), env=life.env,
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "exit code None" not in proc.stdout + proc.stderr
    run = load_run(life.run_dir())
    assert run.manifest["status"] == "failed"
    by_point = {r["params"]["i"]: r for r in run.rows}
    assert len(run.rows) == 4 and sorted(by_point) == [0, 1, 2, 3]
    assert by_point[0]["status"] == "ok" and by_point[0]["value"] == 1.0       # stored as point 0 ended
    assert by_point[1]["status"] == "error" and by_point[1]["reason"].startswith(named), by_point[1]
    for i in (2, 3):
        assert by_point[i]["status"] == "skipped"
        assert by_point[i]["reason"] == f"not reached: {named} during point step i=1", by_point[i]
    assert run.manifest["counts"] == {"ok": 1, "skipped": 2, "error": 1}
    assert not any(life.shm.iterdir()), list(life.shm.iterdir())


def test_the_timeout_holds_each_point_and_an_overrun_names_the_rank_that_did_not_finish(life):
    """Four points of 1.5 s together outlast the 5 s --timeout and all run; then rank 1 sleeps in
    point 2 while rank 0 waits for it: the error row names rank 1 and where it was, and the point
    after it says it was never reached because of that."""
    argv = life.argv("points=4", "sleep=1.5", "sleep_point=-1", "shm=on")
    argv[argv.index("--timeout") + 1] = "5"
    proc = subprocess.run(argv, env=life.env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r["status"] for r in load_run(life.run_dir()).rows] == ["ok"] * 4

    shutil.rmtree(life.out)
    argv = life.argv("points=4", "sleep=600", "sleep_point=2", "sleep_rank=1", "shm=on")
    argv[argv.index("--timeout") + 1] = "5"
    proc = subprocess.run(argv, env=life.env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    by_point = {r["params"]["i"]: r for r in load_run(life.run_dir()).rows}
    assert [by_point[i]["status"] for i in range(4)] == ["ok", "ok", "error", "skipped"]
    named = "rank 1 was still in point step i=2 after 5 s (--timeout) (at tests/lifecycle_targets.py:"
    assert by_point[2]["reason"].startswith(named) and "in run_point)" in by_point[2]["reason"], by_point[2]
    assert by_point[3]["reason"].startswith(f"not reached: {named}"), by_point[3]
    assert not any(life.shm.iterdir())


def test_a_failed_cpu_rank_launch_leaves_no_shared_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_SHM_DIR", str(tmp_path))
    with pytest.raises(LaunchError, match="rank 1"):
        launch(launch_targets.shared_store_then_fail_on_rank, (1,), world_size=2, device="cpu", timeout_s=120)
    assert not any(tmp_path.iterdir()), list(tmp_path.iterdir())
