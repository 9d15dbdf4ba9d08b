"""MG-GCN on 1-4 CPU ranks (gloo) equals a float64 dense single-device computation.

Per world size, one launch runs three models that put SpMM-first layers first, in the middle and
last, each with transfers overlapped or stage by stage, in every vertex order (input, the paper's
random permutation, random parts) with peer copies, and with random parts in every other
schedule: the paper's broadcasts (local block first, or the paper's stage order), broadcasts into
a fresh allocation per intermediate. Loss, logits and every weight gradient must match the
reference; overlap and buffer reuse must not change a single bit; three Adam steps must track the
reference.
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


def test_vertex_order_is_balanced_by_default_only_across_ranks():
    """Random parts balance the ranks' loads as the paper's permutation does (Sec. 5.2); with one rank
    there is nothing to balance, so the factory leaves the order alone."""
    from harness import registry
    from impls.fullbatch import default_order
    from impls.fullbatch.model import ModelConfig

    from .reference import make_test_graph

    make = registry.get_impl("fullbatch", "mggcn").factory
    graph = make_test_graph()
    assert make(graph, ModelConfig(2, 8), world=1).share.order == "original" == default_order(1)
    assert make(graph, ModelConfig(2, 8), world=1, order="random").share.permuted is True
    assert default_order(4) == "random_parts"
