"""Gather implementations on CPU ranks (gloo + host shared memory) against the closed form.

Every rank-side check of this module runs in one launch per world size (tests.helpers.SharedLaunch)."""

from __future__ import annotations

import pytest

from ..helpers import SharedLaunch
from .targets import alltoall_ceiling, check_adversarial, check_gather, gather_against_the_table

DTYPES = ["float32", "bfloat16", "float16", "int64"]
IMPLS = [("nccl_alltoallv", None), ("p2p_shared", "chunked"), ("p2p_shared", "continuous"), ("host_copy", None),
         ("p2p_push", "sm")]
WORLDS = [1, 3]
VARIANTS = IMPLS
UNEVEN = [(1000, 3), (2, 3), (7, 4)]
ADVERSARIAL = [("p2p_push", {"mode": "sm", "capacity": 600}), ("p2p_shared", {"mode": "chunked"}),
               ("nccl_alltoallv", {})]
ADVERSARIAL_WORLDS = [(1001, 3), (7, 4)]


@pytest.fixture(scope="module")
def ranks():
    calls: dict[int, dict] = {}
    for world in WORLDS:
        for impl, mode in IMPLS:
            # 1001 rows over 3 ranks leaves a short last shard; 37-element rows are not vector-sized
            calls.setdefault(world, {})[f"{impl} {mode}"] = (check_gather, (impl, mode, 1001, 37, DTYPES, 500, 11))
    for num_rows, world in UNEVEN:
        calls.setdefault(world, {})[f"uneven {num_rows}"] = (gather_against_the_table, (VARIANTS, num_rows, 5, 300, 3))
    calls[3]["ceiling"] = (alltoall_ceiling, (1000,))
    for num_rows, world in ADVERSARIAL_WORLDS:
        calls.setdefault(world, {})[f"adversarial {num_rows}"] = (
            check_adversarial, (ADVERSARIAL, num_rows, 5, ["float32", "int64"], 9))
    return SharedLaunch(calls, timeout_s=600)


@pytest.mark.parametrize("impl,mode", IMPLS)
@pytest.mark.parametrize("world", WORLDS)
def test_gather_matches_closed_form_on_cpu_ranks(ranks, impl, mode, world):
    assert ranks(world, f"{impl} {mode}") == [{d: 500 for d in DTYPES}] * world


@pytest.mark.parametrize("num_rows,world", UNEVEN)
def test_gather_equals_features_at_ids_when_the_ranks_do_not_divide_the_rows(ranks, num_rows, world):
    # 1000 = 334 + 334 + 332 rows; 2 rows over 3 ranks and 7 over 4 leave the last rank no rows
    assert ranks(world, f"uneven {num_rows}") == [{f"{impl} {mode}": 300 + num_rows for impl, mode in VARIANTS}] * world


def test_the_alltoall_ceiling_runs_on_byte_counts_the_ranks_do_not_divide(ranks):
    assert ranks(3, "ceiling") == [2, 2, 2]


@pytest.mark.parametrize("num_rows,world", ADVERSARIAL_WORLDS)
def test_adversarial_ids_on_cpu_ranks(ranks, num_rows, world):
    # duplicates, one owner, nothing (everywhere, on rank 0 only), descending, the edges; 7 rows over
    # 4 ranks leaves rank 3 one row; the push's last rank asks more than its capacity and pulls
    results = ranks(world, f"adversarial {num_rows}")
    cases = {"duplicates", "one_owner", "own_rows", "empty", "empty_on_rank0", "descending", "edges"}
    for rank_results in results:
        assert len(rank_results) == len(ADVERSARIAL)
        for name, result in rank_results.items():
            assert set(result["checked"]) == cases | ({"over_capacity"} if name.startswith("p2p_push") else set())
            assert result["checked"]["empty"] == 0 and result["checked"]["edges"] > 0
    push = next(name for name in results[0] if name.startswith("p2p_push"))
    assert "1 of 8 calls over capacity, pulled" in results[-1][push]["describe"]
    assert "pulled" not in results[0][push]["describe"]


def test_one_launch_per_world_size(ranks):
    for world, named in ranks.calls.items():
        ranks(world, next(iter(named)))
    assert ranks.launches == len(ranks.calls) == 3
