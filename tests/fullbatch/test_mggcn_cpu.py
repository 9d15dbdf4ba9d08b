"""MG-GCN on 1-4 CPU ranks (gloo) equals a float64 dense single-device computation.

Per world size, one launch runs every combination of: three models that put SpMM-first layers
first, in the middle and last; original and permuted vertex order; broadcasts overlapped (gloo's
asynchronous broadcast) or stage by stage; shared buffers or a fresh allocation per
intermediate. Loss, logits and every weight gradient must match the reference; overlap and
buffer reuse must not change a single bit; three Adam steps must track the reference.
"""

from __future__ import annotations

import pytest

from harness.launcher import RankContext, launch

from .checks import check_configurations
from .targets import run_configurations


def test_one_rank_in_process():
    ctx = RankContext(rank=0, world_size=1, local_rank=0, device="cpu", backend="gloo")
    check_configurations([run_configurations(ctx)], 1)


@pytest.mark.parametrize("world", [2, 3, 4])
def test_ranks_match_single_device(world):
    per_rank = launch(run_configurations, (), world_size=world, device="cpu", timeout_s=240)
    check_configurations(per_rank, world)
