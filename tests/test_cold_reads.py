"""A probe point's timed reads come from no cache (issue: Table I's chase was served from L2).

The chain reference shows, at default settings, that each timed chain reads at least 4x a given
L2 in distinct lines and none that an earlier launch of the point read; the accounting the rows
carry agrees with the lines themselves, and it does report the reuse of a chain restarted from
the same place every launch (the defect these tests exist for).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from experiments.kit import probes
from experiments.kit.probes import Launches, chase_steps, line_reuse
from harness.timing import Stats
from impls.probes import chain

MiB, GiB = 1 << 20, 1 << 30


def lines_read(ranges, perm):
    return [(role, chain.permuted_lines(perm, first, count)) for role, first, count in ranges]


def brute_force_reuse(ranges, perm) -> tuple[int, int]:
    """(fewest distinct lines of a timed launch, most lines a timed launch read that an earlier
    launch read), counted on the lines themselves."""
    seen = np.zeros(perm.lines, dtype=bool)
    distinct, before = perm.lines, 0
    for role, lines in lines_read(ranges, perm):
        if role == "timed":
            mine = np.unique(lines)
            distinct = min(distinct, mine.size)
            before = max(before, int(seen[mine].sum()))
        seen[lines.astype(np.int64)] = True
    return distinct, before


@pytest.mark.parametrize("l2_bytes", [50 * MiB, 60 * MiB])
def test_default_chain_reads_4x_the_l2_in_distinct_lines_and_no_line_twice(l2_bytes):
    """wholegraph.table1's defaults on an 8 GB region: verification, one warm-up, five repeats."""
    size, verify, warmup, repeats = 8 * GiB, 20_000, 1, 5
    lines = chain.region_lines(1, size // 8)
    steps = chase_steps(l2_bytes, lines, warmup + repeats, verify)
    assert steps >= 4 * l2_bytes // chain.LINE_BYTES
    ranges = Launches(verify, steps, warmup, repeats).ranges()
    assert [r for r, _, _ in ranges] == ["verify", "warmup"] + ["timed"] * repeats
    distinct, before = brute_force_reuse(ranges, chain.LinePermutation(lines, 0x5EED))
    assert distinct * chain.LINE_BYTES >= 4 * l2_bytes
    assert before == 0
    assert line_reuse(ranges, lines) == probes.LineReuse(lines, distinct, 0)


def test_the_accounting_reports_a_chain_restarted_from_the_same_place():
    """The old probe started every launch at the same step: every timed line had been read."""
    lines, steps = 1 << 20, 100_000
    restarted = [("verify", 0, 20_000), ("warmup", 0, steps)] + [("timed", 0, steps)] * 5
    distinct, before = brute_force_reuse(restarted, chain.LinePermutation(lines, 1))
    assert before == distinct == steps
    assert line_reuse(restarted, lines).lines_read_before == steps


def test_line_reuse_matches_the_lines_on_random_plans():
    rng = random.Random(24)
    for _ in range(60):
        lines = rng.randint(1, 5000)
        plan = Launches(rng.randint(0, 3000), rng.randint(1, 4000), rng.randint(0, 3), rng.randint(1, 4))
        ranges = plan.ranges()
        want = brute_force_reuse(ranges, chain.LinePermutation(lines, rng.getrandbits(64)))
        got = line_reuse(ranges, lines)
        assert (got.distinct_lines, got.lines_read_before) == want, (lines, plan)


def test_default_steps_respect_the_paper_floor_and_the_region():
    assert chase_steps(1 * MiB, 1 << 26, 6, 20_000) == 100_000                 # small L2: the paper's 100K
    assert chase_steps(50 * MiB, 1 << 26, 6, 20_000) == 4 * 50 * MiB // 128   # 4x L2 fits the region
    small = 1 << 20                                                           # 128 MiB region
    assert chase_steps(50 * MiB, small, 6, 20_000) == (small - 20_000) // 6   # read once over, not twice
    assert chase_steps(50 * MiB, 1000, 6, 20_000) == 100_000                  # a tiny region: the floor


class RecordingProbe:
    """A probe that records what time_chase asks of it, on a real host chain."""

    def __init__(self):
        from impls.probes.host import HostChaseProbe

        self.inner = HostChaseProbe()
        self.inner.allocate(8 * MiB, salt=3, nparts=1)
        self.nparts_used, self.part_elems, self.salt = 1, self.inner.part_elems, 3
        self.calls = []

    l2_bytes = 1 * MiB

    def run_chase(self, steps, start, first_step=0):
        self.calls.append(("chase", first_step, steps))
        return self.inner.run_chase(steps, start, first_step)

    def reset(self):
        self.calls.append(("reset",))

    def flush_caches(self):
        self.calls.append(("flush",))
        return 4 * MiB


@pytest.mark.parametrize("reset_each", [False, True])
def test_time_chase_gives_each_launch_the_next_range_after_a_flush(reset_each):
    probe = RecordingProbe()
    plan = Launches(verify=1_000, per_launch=5_000, warmup=2, repeats=3)
    stats, extra = probes.time_chase(probe, "cpu", plan, start=7, reset_each=reset_each)
    assert isinstance(stats, Stats) and stats.repeats == 3
    chases = [c for c in probe.calls if c[0] == "chase"]
    assert chases == [("chase", 0, 1_000)] + [("chase", 1_000 + 5_000 * k, 5_000) for k in range(5)]
    for i, call in enumerate(probe.calls):
        if call[0] == "chase" and call[1] > 0:      # every launch after the verification
            assert probe.calls[i - 1] == ("flush",)
            assert (probe.calls[i - 2] == ("reset",)) == reset_each
    assert extra["lines_read_before"] == 0 and extra["distinct_lines"] == 5_000
    assert extra["flush_mib"] == 4 and extra["l2_mib"] == 1


def test_a_tlb_flush_runs_before_the_l2_flush_of_every_launch():
    """XGNN Fig. 6(b)'s chase: no launch finds the translations (nor the lines) an earlier one left."""
    probe = RecordingProbe()

    class RecordingTlbFlush:
        def __call__(self):
            probe.calls.append(("tlb",))

        def extra(self):
            return {"tlb_flush_mib": 16384.0, "tlb_flush_stride_kib": 64.0}

    plan = Launches(verify=1_000, per_launch=5_000, warmup=1, repeats=3)
    _, extra = probes.time_chase(probe, "cpu", plan, start=7, reset_each=False, tlb_flush=RecordingTlbFlush())
    launches = [i for i, call in enumerate(probe.calls) if call[0] == "chase" and call[1] > 0]
    assert len(launches) == 4
    for i in launches:
        assert probe.calls[i - 2:i] == [("tlb",), ("flush",)]
    assert extra["tlb_flush_mib"] == 16384.0 and extra["lines_read_before"] == 0


def test_the_tlb_flush_reads_one_byte_of_every_page_of_its_buffer():
    from harness.timing import TlbFlush

    flush = TlbFlush(span_bytes=1 << 20, stride_bytes=4096)
    assert flush() == flush.pages == 256
    (buffer,) = flush._buffers
    assert buffer.nbytes == 1 << 20 and buffer[::4096].size == 256
    assert flush.extra() == {"tlb_flush_mib": 1.0, "tlb_flush_stride_kib": 4.0}
    with pytest.raises(ValueError):
        TlbFlush(span_bytes=1024, stride_bytes=4096)                # not a single page


def test_table1_rows_on_cpu_say_what_was_cold(tmp_path):
    from harness.config import RunConfig
    from harness.runner import run
    from harness.store import load_run

    cfg = RunConfig(device="cpu", scale=1 / 64, repeats=2, warmup=1, out_dir=tmp_path,
                    params={"sizes_gb": "8"})
    outcome = run(["wholegraph.table1"], cfg, ["pytest"])
    ok = [r for r in load_run(outcome.store.path).rows if r["status"] == "ok"]
    assert ok
    for row in ok:
        extra = row["extra"]
        assert extra["lines_read_before"] == 0
        assert extra["distinct_lines"] == extra["steps"]
        assert extra["flush_mib"] > 0 and extra["l2_mib"] > 0


TIMED_UNITS = {"s", "ms", "us", "ms/batch", "GB/s", "%", "B"}


def without_warm_and_cold(experiments) -> list[str]:
    return [e.id for e in experiments if e.unit in TIMED_UNITS and not e.warm_and_cold.strip()]


def test_every_timed_experiment_says_what_was_warm_and_what_was_cold(monkeypatch):
    """The report caption of every experiment that times something carries one line on what a
    repeat found warm and what it read cold (docs/measurement.md)."""
    from harness import registry

    experiments = registry.experiments()
    assert len([e for e in experiments if e.unit in TIMED_UNITS]) > 30
    assert without_warm_and_cold(experiments) == []
    unique = registry.get_experiment("wholegraph.unique")
    monkeypatch.setattr(unique, "warm_and_cold", "")           # the check does catch a missing line
    assert without_warm_and_cold(experiments) == ["wholegraph.unique"]


def test_the_caption_line_reaches_the_report(tmp_path):
    from harness.config import RunConfig
    from harness.report import report_runs
    from harness.runner import run

    cfg = RunConfig(device="cpu", scale=1 / 512, repeats=1, warmup=0, out_dir=tmp_path,
                    params={"sizes_gb": "8", "steps": "2000", "verify_steps": "500"})
    outcome = run(["wholegraph.table1"], cfg, ["pytest"])
    report_runs([outcome.store.path], tmp_path / "rep")
    text = (tmp_path / "rep" / "wholegraph" / "table1.md").read_text()
    from harness import registry

    assert registry.get_experiment("wholegraph.table1").warm_and_cold in text


def test_seed_batches_are_disjoint_until_the_pool_runs_out():
    import types

    import torch

    from experiments.kit.samplers import seed_batches

    graph = types.SimpleNamespace(train_idx=np.arange(1000, 2000), num_nodes=5000)
    batches = seed_batches(graph, 64, 15, seed=1, rank=0, device="cpu")   # 15 x 64 = 960 <= 1000
    seen = torch.cat(batches)
    assert len(batches) == 15 and all(b.numel() == 64 for b in batches)
    assert seen.unique().numel() == seen.numel()                          # no seed twice
    assert int(seen.min()) >= 1000 and int(seen.max()) < 2000
    more = seed_batches(graph, 64, 20, seed=1, rank=0, device="cpu")      # past the pool: a new shuffle
    assert torch.equal(torch.cat(more[:15]), seen) and more[15].unique().numel() == 64
