"""The launcher on CPU ranks (gloo): results, failures, timeouts, exit codes, torchrun mode."""

from __future__ import annotations


import pytest

from harness.errors import LaunchError
from harness.launcher import free_port, launch, under_torchrun

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
    assert "\n" not in msg and "did not finish" not in msg
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


@pytest.mark.slow
def test_a_hanging_rank_times_out(tmp_path):
    with pytest.raises(LaunchError) as info:
        launch(launch_targets.hang, (str(tmp_path),), world_size=2, device="cpu", timeout_s=5)
    msg = str(info.value)
    assert "did not finish within 5 s" in msg and "still running" in msg
    for pid in _pids(tmp_path).values():
        assert not _alive(pid)


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
