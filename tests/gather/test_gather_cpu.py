"""Gather implementations on CPU ranks (gloo + host shared memory) against the closed form.

Every rank-side check of this module runs in one launch per world size (tests.helpers.SharedLaunch)."""

from __future__ import annotations

import pytest

from harness import registry

from ..helpers import SharedLaunch
from .targets import ceiling_repeats, check_adversarial, check_gather, gather_against_the_table


def on_cpu(**select):
    """The registered series of ``select`` that run on CPU ranks here."""
    return [s for s in registry.series("gather", device="cpu", **select) if s.unmet("cpu", 3) is None]


DTYPES = ["float32", "bfloat16", "float16", "int64"]
# every gather that runs on CPU ranks, in each variant but those that only tune how memory is shared
IMPLS = [(s.impl, s.options) for s in on_cpu(without=("ceiling", "tuned"))]
WORLDS = [1, 3]
VARIANTS = IMPLS
UNEVEN = [(1000, 3), (2, 3), (7, 4)]
# the gathers that move rows between ranks (not the host paths); one with a capacity sized below
# what its last rank asks for
ADVERSARIAL = [(s.impl, {**s.options, **({"capacity": 600} if s.has("capacity") else {})})
               for s in on_cpu(without=("ceiling", "tuned", "host"))]
ADVERSARIAL_WORLDS = [(1001, 3), (7, 4)]
CEILINGS = [(s.impl, s.options) for s in on_cpu(traits=("ceiling",))]


def name(impl: str, options: dict) -> str:
    return f"{impl} {options}"


@pytest.fixture(scope="module")
def ranks():
    calls: dict[int, dict] = {}
    for world in WORLDS:
        for impl, options in IMPLS:
            # 1001 rows over 3 ranks leaves a short last shard; 37-element rows are not vector-sized
            calls.setdefault(world, {})[name(impl, options)] = (
                check_gather, (impl, options, 1001, 37, DTYPES, 500, 11))
    for num_rows, world in UNEVEN:
        calls.setdefault(world, {})[f"uneven {num_rows}"] = (gather_against_the_table, (VARIANTS, num_rows, 5, 300, 3))
    for impl, options in CEILINGS:
        calls[3][f"ceiling {name(impl, options)}"] = (ceiling_repeats, (impl, options, 1000))
    for num_rows, world in ADVERSARIAL_WORLDS:
        calls.setdefault(world, {})[f"adversarial {num_rows}"] = (
            check_adversarial, (ADVERSARIAL, num_rows, 5, ["float32", "int64"], 9))
    return SharedLaunch(calls, timeout_s=600)


def test_the_registry_gives_every_kind_of_gather_to_check():
    kinds = {s.impl for s in on_cpu(without=("ceiling", "tuned"))}
    assert {"nccl_alltoallv", "p2p_shared", "p2p_push", "host_copy"} <= kinds        # others may be added
    assert ("p2p_shared", {"mode": "continuous"}) in IMPLS and CEILINGS
    assert any("capacity" in options for _, options in ADVERSARIAL)


@pytest.mark.parametrize("impl,options", IMPLS, ids=[name(*v) for v in IMPLS])
@pytest.mark.parametrize("world", WORLDS)
def test_gather_matches_closed_form_on_cpu_ranks(ranks, impl, options, world):
    assert ranks(world, name(impl, options)) == [{d: 500 for d in DTYPES}] * world


@pytest.mark.parametrize("num_rows,world", UNEVEN)
def test_gather_equals_features_at_ids_when_the_ranks_do_not_divide_the_rows(ranks, num_rows, world):
    # 1000 = 334 + 334 + 332 rows; 2 rows over 3 ranks and 7 over 4 leave the last rank no rows
    assert ranks(world, f"uneven {num_rows}") == [{name(*v): 300 + num_rows for v in VARIANTS}] * world


@pytest.mark.parametrize("impl,options", CEILINGS, ids=[name(*v) for v in CEILINGS])
def test_the_ceilings_run_on_byte_counts_the_ranks_do_not_divide(ranks, impl, options):
    assert ranks(3, f"ceiling {name(impl, options)}") == [2, 2, 2]


@pytest.mark.parametrize("num_rows,world", ADVERSARIAL_WORLDS)
def test_adversarial_ids_on_cpu_ranks(ranks, num_rows, world):
    # duplicates, one owner, nothing (everywhere, on rank 0 only), descending, the edges; 7 rows over
    # 4 ranks leaves rank 3 one row; the push's last rank asks more than its capacity and pulls
    results = ranks(world, f"adversarial {num_rows}")
    cases = {"duplicates", "one_owner", "own_rows", "empty", "empty_on_rank0", "descending", "edges"}
    for rank_results in results:
        assert len(rank_results) == len(ADVERSARIAL)
        for key, result in rank_results.items():
            assert set(result["checked"]) == cases | ({"over_capacity"} if "capacity" in key else set())
            assert result["checked"]["empty"] == 0 and result["checked"]["edges"] > 0
    push = next(key for key in results[0] if "capacity" in key)
    assert "1 of 8 calls over capacity, pulled" in results[-1][push]["describe"]
    assert "pulled" not in results[0][push]["describe"]


def test_one_launch_per_world_size(ranks):
    for world, named in ranks.calls.items():
        ranks(world, next(iter(named)))
    assert ranks.launches == len(ranks.calls) == 3
