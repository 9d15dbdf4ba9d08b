"""Host-timed baselines keep a first call's cost out of their figures.

A fake implementation stands in for DGL's and PyG's samplers, their loaders and torch.unique, and
advances an injected clock (harness.timing.now): its first call costs a second (a library's
lazy set-up, worker start, page faults), every later one a few milliseconds. The reported value
must be the later calls' cost; with the warm-up taken away the same fake must reach it (the check
can fail).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from harness.config import RunConfig
from harness.experiment import Point, RunContext
from harness.launcher import RankContext

FIRST_S, LATER_S = 1.0, 0.003


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class FirstCallCost:
    """Advances the clock by FIRST_S on its first call and LATER_S on every other."""

    def __init__(self, clock: FakeClock, first: float = FIRST_S, later: float = LATER_S):
        self.clock, self.first, self.later, self.calls = clock, first, later, 0

    def charge(self) -> None:
        self.clock.t += self.first if self.calls == 0 else self.later
        self.calls += 1


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr("harness.timing.now", fake)
    return fake


def context(**cfg) -> RunContext:
    return RunContext(RunConfig(device="cpu", **cfg), RankContext(0, 1, 0, "cpu", "gloo"))


class FakeSampler:
    """The sampler interface's surface that the sampling experiment times."""

    def __init__(self, cost: FirstCallCost):
        self.cost = cost

    def sample(self, seeds, fanout, **_):
        self.cost.charge()
        n = int(seeds.numel())
        return torch.arange(n + 1, dtype=torch.int64), torch.zeros(n, dtype=torch.int64)

    def sample_minibatch(self, seeds, fanouts, **_):
        self.cost.charge()
        return {"nodes": int(seeds.numel()), "edges": 7 * int(seeds.numel())}

    def describe(self) -> str:
        return "fake host sampler"


@pytest.mark.parametrize("impl", ["dgl", "pyg"])
@pytest.mark.parametrize("kind", ["minibatch", "hop"])
@pytest.mark.parametrize("warmup", [None, 0])
def test_a_host_samplers_first_call_stays_out_of_its_row(monkeypatch, clock, impl, kind, warmup):
    from experiments.kit import samplers
    from experiments.wholegraph.sampling import SamplingTable

    cost = FirstCallCost(clock)
    monkeypatch.setattr(samplers, "implementation", lambda *a, **k: FakeSampler(cost))
    params = {"kind": kind, "dataset": "uniform:3000:6", "scale": 1.0, "store": "local", "mode": "continuous",
              "batch": 64, **({"fanouts": [5, 3]} if kind == "minibatch" else {"fanout": 4})}
    rows = SamplingTable().run_point(Point(impl, params, 1), context(warmup=warmup))
    time_ms = rows[0].stats
    if warmup is None:              # the experiment's own warm-up for host samplers
        assert time_ms.max == pytest.approx(LATER_S * 1e3) and time_ms.median == pytest.approx(LATER_S * 1e3)
    else:                           # without one the first call lands in the row: the check can fail
        assert time_ms.max == pytest.approx(FIRST_S * 1e3)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("warmup", [1, 0])
def test_a_host_loaders_start_stays_out_of_its_rate(monkeypatch, clock, workers, warmup):
    """A loader whose first batch costs a second (worker start) and each later one 4 ms: the time
    per batch is 4 ms once the warm-up windows (the prefetch buffer's batches too) are untimed."""
    import experiments.wholegraph.sampling as sampling

    cost = FirstCallCost(clock, later=0.004)

    class Loader:
        def __iter__(self):
            for _ in range(1000):
                cost.charge()
                yield 10

    class LoaderSampler:
        def loader(self, seeds, fanouts, batch, workers):
            return Loader(), (lambda b: b), "fake"

    spec = SimpleNamespace(factory=lambda *args, **options: LoaderSampler())
    graph = SimpleNamespace(indptr=None, indices=None, train_idx=np.arange(100))
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    out = sampling.loader_point(spec, graph, {"workers": workers, "fanouts": [3, 2], "batch": 8}, warmup, 3, seed=0)
    per_batch = out[0].stats
    if warmup or workers:           # the warm-up windows take the first batch
        assert per_batch.repeats == 3 and per_batch.max == pytest.approx(4.0)
        assert out[1].stats.median == pytest.approx(10 / 0.004)
    else:
        assert per_batch.max > 100


@pytest.mark.parametrize("warmup", [None, 0])
def test_torch_unique_on_the_host_keeps_a_first_call_out_of_its_row(monkeypatch, clock, warmup):
    """wholegraph.unique's sort (torch.unique) on CPU, its first timed call made expensive."""
    import experiments.wholegraph.unique as unique_mod
    from experiments.kit import samplers
    from experiments.wholegraph.unique import UniqueTable

    real = samplers.implementation
    cost = FirstCallCost(clock, later=0.0005)

    class Charged:
        def __init__(self, inner):
            self.inner = inner

        def append_unique(self, *a, check=True, **k):
            if not check:                       # the timed calls (the first call checks the output)
                cost.charge()
            return self.inner.append_unique(*a, check=check, **k)

        def describe(self):
            return self.inner.describe()

    def implementation(ctx, interface, name, graph, **options):
        got = real(ctx, interface, name, graph, **options)
        return Charged(got) if interface == "unique" and ctx.cache.get("charged-now") else got

    ctx = context(warmup=warmup)
    monkeypatch.setattr(samplers, "implementation", implementation)
    params = {"dataset": "uniform:4000:8", "scale": 1.0, "batch": 64, "fanouts": [5, 5], "hop": 2}
    frontier = unique_mod.frontier

    def charged_after_frontier(*a, **k):
        out = frontier(*a, **k)
        ctx.cache["charged-now"] = True        # the frontier's own sort stays uncharged
        return out

    monkeypatch.setattr(unique_mod, "frontier", charged_after_frontier)
    rows = UniqueTable().run_point(Point("sort", params, 1), ctx)
    us = rows[0].stats
    if warmup is None:
        assert us.max == pytest.approx(500.0)
    else:
        assert us.max == pytest.approx(FIRST_S * 1e6)
    assert np.isfinite(us.median)
