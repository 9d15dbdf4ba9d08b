"""harness.worlds: the one reading of --gpus/--ranks, and each experiment's declared counts."""

from __future__ import annotations

import pytest

from harness import registry, worlds
from harness.config import RunConfig
from harness.errors import HarnessError
from harness.worlds import Worlds, world_sizes


@pytest.fixture
def gpus(monkeypatch):
    """Pretend this machine has N visible GPUs."""
    def set_count(n):
        monkeypatch.setattr(worlds, "_visible_gpus", lambda: n)
    return set_count


@pytest.fixture(autouse=True)
def not_under_torchrun(monkeypatch):
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)


def test_the_runs_count_is_the_option_else_every_gpu_else_two_cpu_ranks(gpus):
    gpus(4)
    assert worlds.run_world(RunConfig(device="cpu")) == 2
    assert worlds.run_world(RunConfig(device="cpu", world_size=3)) == 3
    assert worlds.run_world(RunConfig(device="cuda")) == 4
    assert worlds.run_world(RunConfig(device="cuda", world_size=2)) == 2
    with pytest.raises(HarnessError, match="asked for 8 GPUs, 4 visible"):
        worlds.run_world(RunConfig(device="cuda", world_size=8))


def test_under_torchrun_its_world_is_the_runs(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.delenv("HARNESS_SPAWNED", raising=False)
    assert worlds.run_world(RunConfig(device="cpu")) == 3


@pytest.mark.parametrize("declared, asked, device, visible, want", [
    (Worlds(), None, "cuda", 4, [4]),
    (Worlds(), 3, "cpu", 0, [3]),
    (Worlds(default=1), None, "cuda", 4, [1]),
    (Worlds(default=1), 2, "cuda", 4, [2]),
    (Worlds(fixed=(1, 4)), None, "cuda", 8, [4]),
    (Worlds(fixed=(1, 4)), None, "cuda", 2, [1]),
    (Worlds(fixed=(1, 4)), None, "cpu", 0, [1]),
    (Worlds(fixed=(1, 4)), 4, "cuda", 4, [4]),
    (Worlds(ladder=(1, 2, 4, 8)), None, "cuda", 4, [1, 2, 4]),
    (Worlds(ladder=(1, 2, 4, 8)), 3, "cuda", 4, [1, 2, 3]),
    (Worlds(ladder=(1, 4), cpu=Worlds(ladder=(1, 2))), None, "cpu", 0, [1, 2]),
    (Worlds(counts=(1, 4, 8)), None, "cuda", 4, [1, 4]),
    (Worlds(cpu=Worlds(fixed=(1,))), None, "cpu", 0, [1]),
    (Worlds(cpu=Worlds(fixed=(1,))), 3, "cuda", 4, [3]),
])
def test_declared_counts(gpus, declared, asked, device, visible, want):
    gpus(visible)
    assert world_sizes(RunConfig(device=device, world_size=asked), declared) == want


def test_a_count_the_experiment_cannot_use_is_an_error_not_replaced(gpus):
    gpus(4)
    with pytest.raises(HarnessError, match=r"x.fig1 runs on 1 or 4 GPUs, not the 2 that --gpus/--ranks asks for"):
        world_sizes(RunConfig(device="cuda", world_size=2), Worlds(fixed=(1, 4)), "x.fig1")
    with pytest.raises(HarnessError, match="none of the counts 8 fits the 4 GPUs"):
        world_sizes(RunConfig(device="cuda"), Worlds(counts=(8,)), "x.fig1")


def test_wholegraph_table1_on_cpu_takes_one_rank_and_refuses_three():
    exp = registry.get_experiment("wholegraph.table1")
    assert {p.world_size for p in exp.points(RunConfig(device="cpu"))} == {1}
    with pytest.raises(HarnessError, match="wholegraph.table1 runs on 1 CPU ranks"):
        list(exp.points(RunConfig(device="cpu", world_size=3)))


def test_sampling_follows_the_one_rule_two_cpu_ranks():
    exp = registry.get_experiment("wholegraph.sampling")
    points = list(exp.points(RunConfig(device="cpu", quick=True, params={"kinds": "minibatch"})))
    assert {p.world_size for p in points} == {2}
