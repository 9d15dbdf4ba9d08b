"""The launcher on CPU ranks (gloo): results, failures, timeouts, exit codes, torchrun mode."""

from __future__ import annotations

import os
import time

import pytest

from harness.errors import LaunchError
from harness.launcher import (STARTUP, STARTUP_ALLOWANCE_S, WAITING, RankState, free_port, launch, overdue,
                              under_torchrun, where_is)

from . import launch_targets
from .helpers import pid_alive as _alive


def _pids(pid_dir):
    return {int(p.stem[4:]): int(p.read_text()) for p in pid_dir.glob("rank*.pid")}


def test_spawned_children_can_import_the_test_helpers():
    """Spawned ranks re-import targets by module name: `tests.launch_targets` must resolve."""
    assert launch_targets.__name__ == "tests.launch_targets"


def test_two_ranks_all_reduce_in_rank_order():
    results = launch(launch_targets.all_reduce_sum, (10,), world_size=2, device="cpu", timeout_s=120)
    assert [r["rank"] for r in results] == [0, 1]
    for r in results:
        assert r["sum"] == (10 + 1) + (10 + 2)
        assert r["world"] == 2 and r["dist_world"] == 2 and r["dist_rank"] == r["rank"]
        assert r["backend"] == "gloo" and r["dist_backend"] == "gloo" and r["device"] == "cpu"
        assert r["local_rank"] == r["rank"] and r["env_rank"] == str(r["rank"])
    assert [r["is_main"] for r in results] == [True, False]


def test_a_raising_rank_is_named_and_the_others_are_stopped(tmp_path):
    with pytest.raises(LaunchError) as info:
        launch(launch_targets.raise_on_rank, (1, str(tmp_path)), world_size=2, device="cpu",
               timeout_s=120)
    msg = str(info.value)
    assert "rank 1" in msg
    assert "ValueError" in msg and "deliberate failure on rank 1" in msg
    assert "\n" not in msg and "(--timeout)" not in msg           # ended by the failure, not the timeout
    assert not (tmp_path / "rank0.woke").exists(), "the launch waited for the sleeper instead of stopping it"
    pids = _pids(tmp_path)
    assert set(pids) == {0, 1}
    assert not _alive(pids[0]), "the sleeping rank 0 was left running"
    # the remote traceback travels as the cause
    assert "deliberate failure" in str(info.value.__cause__)


def test_rank_zero_failure_is_named_too(tmp_path):
    with pytest.raises(LaunchError, match=r"rank 0 .*deliberate failure on rank 0"):
        launch(launch_targets.raise_on_rank, (0, str(tmp_path)), world_size=2, device="cpu",
               timeout_s=120)
    assert not _alive(_pids(tmp_path)[1])


def test_the_first_failing_rank_is_named_not_a_consequence():
    with pytest.raises(LaunchError) as info:
        launch(launch_targets.raise_on_rank1_while_rank0_waits_in_barrier, (), world_size=2,
               device="cpu", timeout_s=120)
    assert "rank 1" in str(info.value) and "root cause on rank 1" in str(info.value)


def _state(activity, since, where=None, seen=None):
    return RankState(activity, since, where, seen)


WAIT = f"{WAITING} barrier, called at experiments/x.py:20 in run_point"


def test_the_timeout_counts_from_the_start_of_a_ranks_point_not_the_launch():
    """A launch 1000 s old whose ranks began their point 5 s ago is not overdue at a 60 s timeout."""
    states = {0: _state("point 7", 995.0), 1: _state("point 7", 995.0)}
    assert overdue(states, [0, 1], now=1000.0, timeout_s=60, started=0.0) is None
    late = overdue(states, [0, 1], now=1056.0, timeout_s=60, started=0.0)
    assert late is not None and late.hung == [0, 1]


def test_the_rank_busy_in_its_own_code_is_named_not_the_one_waiting_for_it():
    """Rank 0 entered the point first and waits in the barrier for rank 1: rank 1 is the hung one,
    though rank 0 overran first."""
    states = {0: _state("point 2", 10.0, WAIT, 79.8),
              1: _state("point 2", 12.0, "at experiments/x.py:14 in run_point", 79.9)}
    late = overdue(states, [0, 1], now=80.0, timeout_s=60, started=0.0)
    assert late.rank == 1 and late.hung == [1]
    assert late.culprit == ("rank 1 was still in point 2 after 60 s (--timeout) "
                            "(at experiments/x.py:14 in run_point)")
    assert str(late) == late.culprit + f"; rank 0 in point 2 ({WAIT})"
    assert late.activities == {0: "point 2", 1: "point 2"}


def test_ranks_that_all_wait_are_named_by_who_overran():
    """Every rank in a collective (one never joined by some rank, a mismatched pair): the overdue ones."""
    states = {0: _state("point 2", 10.0, WAIT, 79.8), 1: _state("point 3", 50.0, WAIT, 79.8)}
    late = overdue(states, [0, 1], now=80.0, timeout_s=60, started=0.0)
    assert late.hung == [0] and late.culprit.startswith("rank 0 was still in point 2 after 60 s")
    assert "rank 1 in point 3" in str(late)


def test_a_rank_that_finished_is_not_named_and_a_silent_heartbeat_is_said():
    states = {0: _state("point 2", 10.0, "at experiments/x.py:9 in run_point", 30.0), 1: _state("point 2", 10.0)}
    late = overdue(states, [0], now=80.0, timeout_s=60, started=0.0)
    assert late.hung == [0] and "rank 1" not in str(late)
    assert late.culprit.endswith("(at experiments/x.py:9 in run_point, 50 s ago)")


def test_startup_has_its_own_allowance():
    """Importing torch on a loaded machine can outlast a short --timeout; a startup never is a point."""
    assert overdue({0: _state(None, None), 1: _state(STARTUP, 1.0), 2: _state(None, 50.0)}, [0, 1, 2], now=100.0,
                   timeout_s=5, started=0.0) is None              # 2: started, loading what its first point needs
    now = 2 * STARTUP_ALLOWANCE_S
    late = overdue({0: _state(STARTUP, 1.0), 1: _state("point 0", now - 1, WAIT)}, [0, 1], now=now,
                   timeout_s=5, started=0.0)
    assert late.hung == [0] and late.culprit.startswith(f"rank 0 was still in {STARTUP}")


def test_where_a_thread_is_tells_a_collective_from_own_code():
    import sys

    here = where_is(sys._getframe())
    assert here.startswith("at tests/test_launcher.py:")
    assert here.endswith("in test_where_a_thread_is_tells_a_collective_from_own_code")
    assert where_is(None) == ""


@pytest.mark.slow
def test_a_hung_point_is_named_with_its_rank_and_the_timeout_is_per_point():
    """Three points of 1.5 s each, then rank 1 works for ever in point 3 while rank 0 waits for it:
    the 4 s timeout holds each point (not the launch, which takes longer), and rank 1 is named."""
    with pytest.raises(LaunchError) as info:
        launch(launch_targets.hang_in_a_point, (5, 3, 1, 1.5), world_size=2, device="cpu", timeout_s=4)
    err = info.value
    assert err.rank == 1 and err.hung == [1], str(err)
    assert err.culprit.startswith("rank 1 was still in point 3 after 4 s (--timeout) (at tests/launch_targets.py:")
    assert "in hang_in_a_point" in err.culprit
    assert f"rank 0 in point 3 ({WAITING} barrier, called at tests/launch_targets.py:" in str(err)


def _poll_until_dead(pids, bound_s: float) -> list[int]:
    """The pids still alive after waiting up to ``bound_s`` (generous: it only bounds a failing test)."""
    end = time.monotonic() + bound_s
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_a_rank_blocked_in_a_collective_dies_with_its_launcher(tmp_path):
    """SIGKILL of the launching process: both ranks, each waiting in gloo for the other (the group's
    timeout far away), die with it within seconds."""
    import os
    import signal
    import subprocess
    import sys

    from .conftest import REPO_ROOT

    code = ("from harness.launcher import launch; from tests import launch_targets; "
            f"launch(launch_targets.block_in_a_collective, ({str(tmp_path)!r},), world_size=2, device='cpu', "
            "timeout_s=3000)")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    env.pop("HARNESS_SPAWNED", None)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, env=env)
    try:
        end = time.monotonic() + 120
        while len(_pids(tmp_path)) < 2 and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.1)
        pids = _pids(tmp_path)
        assert set(pids) == {0, 1}, "the ranks never reached their places"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _poll_until_dead(list(pids.values()), 30) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _pids(tmp_path).values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_an_exit_code_is_reported():
    with pytest.raises(LaunchError) as info:
        launch(launch_targets.hard_exit_on_rank, (1, 3), world_size=2, device="cpu", timeout_s=120)
    assert str(info.value) == "rank 1 exited with code 3"
    assert info.value.rank == 1 and info.value.culprit == "rank 1 exited with code 3"


def test_a_rank_killed_by_a_signal_is_named_with_the_signal_and_what_it_was_doing():
    """The survivor reports a lost connection first; the silent dead rank is still the cause."""
    with pytest.raises(LaunchError) as info:
        launch(launch_targets.kill_rank_in_a_collective, (1,), world_size=2, device="cpu", timeout_s=120)
    assert str(info.value) == "rank 1 died (SIGKILL) during the second barrier"
    assert info.value.activities == {0: "the second barrier", 1: "the second barrier"}


def test_a_rank_that_returns_nothing_is_fine():
    # None is a legitimate return value; only a rank that never reports is an error
    assert launch(launch_targets.return_nothing_on_rank, (1,), world_size=2, device="cpu",
                  timeout_s=120) == [0, None]


def test_bad_world_sizes():
    with pytest.raises(LaunchError, match=">= 1"):
        launch(launch_targets.all_reduce_sum, (0,), world_size=0, device="cpu")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(LaunchError, match="2 GPU ranks, 0 GPUs visible"):
            launch(launch_targets.all_reduce_sum, (0,), world_size=2, device="cuda")


def test_under_torchrun_the_current_process_is_the_rank(monkeypatch):
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group already exists in this process")
    monkeypatch.delenv("HARNESS_SPAWNED", raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    # the in-place launch names its shared-memory prefix in os.environ: undone with the test, so no
    # later test's torchrun nodes inherit one prefix (tests/test_torchrun.py)
    monkeypatch.setenv("HARNESS_SHM_PREFIX", f"harness-{os.getpid()}-inplace")
    assert under_torchrun()
    (res,) = launch(launch_targets.all_reduce_sum, (5,), world_size=1, device="cpu", timeout_s=60)
    assert res["sum"] == 6.0 and res["dist_world"] == 1 and res["env_rank"] == "0"
    assert not dist.is_initialized(), "the group created for the call must be destroyed"
    monkeypatch.setenv("HARNESS_SPAWNED", "1")
    assert not under_torchrun()


def test_rank_context_reduces_float_lists_over_the_ranks():
    results = launch(launch_targets.reduce_floats, (), world_size=3, device="cpu", timeout_s=120)
    for largest, summed in results:
        assert largest == [2.0, 30.0]
        assert summed == [3.0, 60.0]


class _FakeStore:
    """The c10d store's calls a StoreBoard makes, over a dict."""

    def __init__(self):
        self.keys: dict[str, bytes] = {}

    def set(self, key, value):
        self.keys[key] = value.encode() if isinstance(value, str) else value

    def get(self, key):
        return self.keys[key]

    def check(self, keys):
        return all(k in self.keys for k in keys)


def _watches(monkeypatch, timeout_s=60.0):
    """Two torchrun ranks' watches over one fake store (times given, never read from a clock); what
    each ended with, instead of ending the process."""
    from harness import launcher

    ended: dict[int, str] = {}
    recorded: list[str] = []
    store = _FakeStore()
    boards = [launcher.StoreBoard(store, "harness-board/test/1", 2) for _ in range(2)]
    watches = []
    for rank, board in enumerate(boards):
        watch = launcher._SelfWatch("unused-prefix")
        watch.launch = (board, rank, timeout_s, 0.0, recorded.append if rank == 0 else None)
        watch.end = (lambda late, on_overdue, rank=rank: (ended.__setitem__(rank, str(late)),
                                                          on_overdue and on_overdue(str(late))))
        watches.append(watch)
    return boards, watches, ended, recorded


def test_under_torchrun_rank_0_names_the_rank_overdue_in_its_point_from_the_shared_board(monkeypatch):
    boards, watches, ended, recorded = _watches(monkeypatch)
    boards[0].write(0, "point 3", now=100.0)
    boards[1].write(1, "point 3", now=100.0)
    watches[1].beat("at experiments/x.py:40 in run_point", now=150.0)
    watches[0].beat(WAIT, now=150.0)
    assert ended == {}, "nothing is overdue 50 s into a 60 s timeout"
    watches[1].beat("at experiments/x.py:40 in run_point", now=161.0)
    assert ended == {}, "rank 1 leaves the decision to rank 0 until its backstop"
    watches[0].beat(WAIT, now=161.0)
    assert recorded == [ended[0]]
    assert ended[0].startswith("rank 1 was still in point 3 after 60 s (--timeout) (at experiments/x.py:40 in "
                               "run_point); rank 0 in point 3 (waiting in torch.distributed barrier")


def test_under_torchrun_a_rank_done_with_the_launch_is_never_overdue_and_the_backstop_ends_the_others(monkeypatch):
    from harness.launcher import BACKSTOP_S, DONE

    boards, watches, ended, recorded = _watches(monkeypatch)
    boards[0].write(0, "point 1", now=100.0)
    boards[1].write(1, DONE, now=100.0)
    watches[0].beat("at experiments/x.py:40 in run_point", now=130.0)
    assert ended == {}
    boards[1].write(1, "point 2", now=200.0)
    watches[1].beat("at experiments/x.py:41 in run_point", now=200.0 + 60.0 + BACKSTOP_S - 1)
    assert 1 not in ended
    watches[1].beat("at experiments/x.py:41 in run_point", now=200.0 + 60.0 + BACKSTOP_S + 1)
    assert ended[1].startswith("rank 1 was still in point 2 after 90 s (--timeout 60 s, then 30 s for rank 0 to "
                               "end the job)") and recorded == []
