"""Gather implementations on GPU ranks (NCCL, CUDA IPC, pinned host, pushed by the owners) against the closed form.

The checks of this module run in one launch per world size (tests.helpers.SharedLaunch): a launch of
GPU ranks costs about 10 s, more than most checks. The memory-release checks keep launches of their
own, so that nothing an earlier check left cached can hide a leak."""

from __future__ import annotations

import pytest
import torch

from harness import registry
from harness.launcher import launch
from tests.gather.targets import ceiling_repeats, check_adversarial, check_gather, device_memory_after_rounds
from tests.helpers import SharedLaunch

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
DTYPES = ["float32", "bfloat16", "float16", "int64"]
# this repository's gathers on GPUs (real WholeGraph has tests/gpu/test_wholegraph_lib_gpu.py), each
# variant but those that only tune how memory is shared or loaded
OURS = dict(device="cuda", without=("ceiling", "library"))
IMPLS = [(s.impl, s.options) for s in registry.series("gather", **OURS) if not s.has("tuned")]
ROW_ELEMS = [1, 37, 128]
# every way this repository gathers across GPUs (the pull kernel's loads and ways of sharing memory,
# the push's two kernels, NCCL), not the host paths; a push with a capacity its last rank exceeds
ADVERSARIAL = [(s.impl, {**s.options, **({"capacity": 4096} if s.has("capacity") else {})})
               for s in registry.series("gather", **OURS) if not s.has("host")]
CEILINGS = [(s.impl, s.options) for s in registry.series("gather", device="cuda", traits=("ceiling",))]


def name(impl: str, options: dict) -> str:
    return f"{impl} {options}"


@pytest.fixture(scope="module")
def ranks():
    paper = registry.series("gather", traits=("paper",))[0]
    calls = {1: {"single": (check_gather, (paper.impl, paper.options, 5000, 128, ["float32"], 4000, 1))}}
    if GPUS >= 2:
        calls[GPUS] = {f"{name(impl, options)} {e}": (check_gather, (impl, options, 100_003, e, DTYPES, 50_000, 5))
                       for impl, options in IMPLS for e in ROW_ELEMS}
        calls[GPUS].update({f"adversarial {e}": (check_adversarial, (ADVERSARIAL, 100_003, e, DTYPES, 7))
                            for e in ROW_ELEMS})
        calls[GPUS].update({f"ceiling {name(*c)}": (ceiling_repeats, (*c, 1 << 20)) for c in CEILINGS})
    return SharedLaunch(calls, device="cuda", timeout_s=900)


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("impl,options", IMPLS, ids=[name(*v) for v in IMPLS])
@pytest.mark.parametrize("row_elems", ROW_ELEMS)
def test_gather_matches_closed_form_on_gpu_ranks(ranks, impl, options, row_elems):
    assert ranks(GPUS, f"{name(impl, options)} {row_elems}") == [{d: 50_000 for d in DTYPES}] * GPUS


@pytest.mark.skipif(GPUS < 1, reason="needs a GPU")
def test_gather_single_rank_gpu(ranks):
    assert ranks(1, "single") == [{"float32": 4000}]


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("row_elems", [128, 37, 1])
def test_adversarial_ids_on_gpu_ranks(ranks, row_elems):
    # 512-byte rows take the bulk-copy and 16-byte paths; 148-byte rows 4-byte vectors; one-element
    # rows of every dtype 2- to 8-byte vectors; 100,003 rows leave a short last shard; the push's
    # last rank asks 3x its capacity and pulls
    results = ranks(GPUS, f"adversarial {row_elems}")
    hopper = torch.cuda.get_device_capability(0)[0] >= 9
    for (impl, options), key in zip(ADVERSARIAL, results[0]):
        assert all(key in mine for mine in results)
        for mine in results:
            assert mine[key]["checked"]["edges"] > 0 and mine[key]["checked"]["empty"] == 0
            assert ("over_capacity" in mine[key]["checked"]) == ("capacity" in options)
        described = results[0][key]["describe"]
        if options.get("mode") == "tma":
            assert ("one bulk-copy store per row" in described) == (row_elems == 128 and hopper), described
        if options.get("load") == "bulk":
            assert ("a row per bulk-copy load" in described) == (row_elems == 128 and hopper), described
        if "capacity" in options:
            assert "1 of 8 calls over capacity, pulled" in results[-1][key]["describe"]


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
def test_every_ceiling_measures_through_its_contract(ranks):
    # the copy engines all-to-all both ways (every rank times it), the raw alltoall, the one-way peer
    # copy (rank 0 times it, the others wait)
    assert {options.get("direction") for _, options in CEILINGS} >= {"push", "pull"}
    for ceiling in CEILINGS:
        repeats = ranks(GPUS, f"ceiling {name(*ceiling)}")
        assert repeats[0] == 2 and set(repeats) <= {0, 2}, (ceiling, repeats)


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("impl,options", [(s.impl, s.options) for s in registry.series("gather", traits=("capacity",))],
                         ids=lambda v: str(v))
def test_a_closed_push_gather_releases_its_device_memory(impl, options):
    # each round maps a 1 GB table and a 512 MiB workspace per rank; three leaked rounds would hold
    # well over 1.5 GB per GPU
    results = launch(device_memory_after_rounds, (impl, {**options, "capacity": 1 << 20}, 3),
                     world_size=GPUS, device="cuda", timeout_s=180)
    for before, after in results:
        assert after >= before - (256 << 20), f"{(before - after) >> 20} MiB still held after closing"
