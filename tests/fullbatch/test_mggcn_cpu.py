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


def test_vertex_order_is_permuted_by_default_only_across_ranks():
    """The permutation balances the ranks' loads (Sec. 5.2); with one rank there is nothing to balance
    and it would only cost the SpMM its locality, so the factory leaves the order alone."""
    from harness import registry
    from impls.fullbatch.model import ModelConfig

    from .reference import make_test_graph

    make = registry.get_impl("fullbatch", "mggcn").factory
    graph = make_test_graph()
    assert make(graph, ModelConfig(2, 8), world=1).share.permuted is False
    assert make(graph, ModelConfig(2, 8), world=1, permute=True).share.permuted is True
