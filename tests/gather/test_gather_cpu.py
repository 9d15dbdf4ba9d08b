"""Gather implementations on CPU ranks (gloo + host shared memory) against the closed form."""

from __future__ import annotations

import pytest

from harness.launcher import launch

from .targets import check_gather

DTYPES = ["float32", "bfloat16", "float16", "int64"]


@pytest.mark.parametrize("impl,mode", [("nccl_alltoallv", None), ("p2p_shared", "chunked"),
                                       ("p2p_shared", "continuous"), ("host_copy", None)])
@pytest.mark.parametrize("world", [1, 3])
def test_gather_matches_closed_form_on_cpu_ranks(impl, mode, world):
    # 1001 rows over 3 ranks leaves a short last shard; 37-element rows are not vector-sized
    results = launch(check_gather, (impl, mode, 1001, 37, DTYPES, 500, 11), world_size=world,
                     device="cpu", timeout_s=120)
    assert results == [{d: 500 for d in DTYPES}] * world
