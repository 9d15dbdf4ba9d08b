"""xgnn, dgl_cache and quiver pipelines on two CUDA ranks (symmetric-memory peers, zero-copy host
rows, kernels, prefetch on a side stream): the same checks as tests/xgnn on CPU ranks."""

from __future__ import annotations

import pytest

from tests.gpu import require_gpus

torch = require_gpus(2)

from harness.launcher import launch  # noqa: E402
from tests.xgnn.checks import CASES, check_stats_memory_and_oom, check_steps  # noqa: E402
from tests.xgnn.targets import train_steps  # noqa: E402

pytestmark = pytest.mark.gpu


def test_tiered_pipelines_on_two_gpus():
    results = launch(train_steps, (CASES,), world_size=2, device="cuda", timeout_s=600)
    check_steps(results, rtol=1e-3)
    check_stats_memory_and_oom(results)
