"""xgnn, dgl_cache and quiver pipelines on two CPU ranks: every training step's loss equals a
single-process reference (same initial weights, the ranks' blocks, DDP's mean gradient, Adam), the
gathered inputs are the dataset's rows, sampled edges are graph edges, prefetching changes no
result, and a pipeline that does not fit its memory budget is an OOM result (tests/xgnn/checks.py)."""

from __future__ import annotations

import pytest

from harness.launcher import launch

from .checks import CASES, check_stats_memory_and_oom, check_steps
from .targets import train_steps


@pytest.fixture(scope="module")
def results():
    return launch(train_steps, (CASES,), world_size=2, device="cpu", timeout_s=300)


def test_steps_match_single_process_reference(results):
    check_steps(results)


def test_stats_memory_and_oom(results):
    check_stats_memory_and_oom(results)
