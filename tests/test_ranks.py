"""harness.ranks on two CPU ranks: decisions every rank takes together, and one process alone."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError, SkipPoint
from harness.launcher import launch
from harness.ranks import agree, all_gather, broadcast, load_on_ranks, prepare_on_rank0

from . import launch_targets


def test_two_ranks_agree_broadcast_gather_and_prepare_on_rank_0(tmp_path):
    results = launch(launch_targets.ranks_decide_together, (str(tmp_path),), world_size=2, device="cpu",
                     timeout_s=120)
    for rank, got in enumerate(results):
        assert got["agree_all"] is True and got["agree_one_no"] is False     # one rank's no is everyone's
        assert got["broadcast"] == "from 0" and got["all_gather"] == [0, 10]
        assert got["load"] == ("ok", f"cache@{rank}")                       # rank 1 read what rank 0 wrote
        assert got["refuse"] == ("skip", "scale too small for this graph")  # rank 0's reason on every rank
        assert got["prepared"] == ("ok", {"rank0": 0})                      # rank 0's value on every rank
    assert results[0]["crash"] == ("error", "ValueError: bug on rank 0")
    assert results[1]["crash"][0] == "error" and "bug on rank 0" in results[1]["crash"][1]


def test_one_process_alone_needs_no_group():
    assert agree(None, False) is False and broadcast(None, 3) == 3 and all_gather(None, 5) == [5]
    assert load_on_ranks(None, lambda: "graph") == "graph"
    with pytest.raises(SkipPoint, match="too big"):
        prepare_on_rank0(None, lambda: (_ for _ in ()).throw(HarnessError("too big")))


def skip_together(ctx):
    from harness.errors import SkipPoint

    raise SkipPoint("every rank refuses")


def test_a_shared_launch_runs_every_call_once_and_hands_each_test_its_own():
    """tests.helpers.SharedLaunch: one launch for all calls of a size; a joint SkipPoint skips only
    its own call; a failing call fails every test of that launch, naming the call."""
    from .helpers import SharedLaunch

    shared = SharedLaunch({1: {"ten": (launch_targets.all_reduce_sum, (10,)), "skip": (skip_together, ()),
                               "twenty": (launch_targets.all_reduce_sum, (20,))},
                           2: {"boom": (launch_targets.raise_on_rank, (1,))}}, timeout_s=120)
    assert [r["sum"] for r in shared(1, "twenty")] == [21.0] and [r["sum"] for r in shared(1, "ten")] == [11.0]
    with pytest.raises(pytest.skip.Exception, match="every rank refuses"):
        shared(1, "skip")
    with pytest.raises(KeyError, match="not among the shared calls"):
        shared(1, "nope")
    for _ in range(2):
        with pytest.raises(Exception, match=r"raise_on_rank\(1,\): ValueError: deliberate failure on rank 1"):
            shared(2, "boom")
    assert shared.launches == 2
