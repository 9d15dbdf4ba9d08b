"""Gather implementations on GPU ranks (NCCL, CUDA IPC, pinned host, pushed by the owners) against the closed form.

The checks of this module run in one launch per world size (tests.helpers.SharedLaunch): a launch of
GPU ranks costs about 10 s, more than most checks. The memory-release checks keep launches of their
own, so that nothing an earlier check left cached can hide a leak."""

from __future__ import annotations

import pytest
import torch

from harness.launcher import launch
from tests.gather.targets import check_adversarial, check_gather, copy_all_ceiling, device_memory_after_rounds
from tests.helpers import SharedLaunch

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
DTYPES = ["float32", "bfloat16", "float16", "int64"]
IMPLS = [("p2p_shared", "chunked"), ("nccl_alltoallv", None), ("host_copy", None), ("host_uva", None)]
ROW_ELEMS = [1, 37, 128]
# every way this repository gathers across GPUs: the pull kernel's three loads, the push's two kernels
ADVERSARIAL = [("p2p_shared", {"mode": "chunked"}), ("p2p_shared", {"mode": "chunked", "load": "l2_256"}),
               ("p2p_shared", {"mode": "chunked", "load": "bulk"}), ("p2p_shared", {"mode": "continuous"}),
               ("p2p_push", {"mode": "sm", "capacity": 4096}), ("p2p_push", {"mode": "tma", "capacity": 4096}),
               ("nccl_alltoallv", {})]


@pytest.fixture(scope="module")
def ranks():
    calls = {1: {"single": (check_gather, ("p2p_shared", "chunked", 5000, 128, ["float32"], 4000, 1))}}
    if GPUS >= 2:
        calls[GPUS] = {f"{impl} {mode} {e}": (check_gather, (impl, mode, 100_003, e, DTYPES, 50_000, 5))
                       for impl, mode in IMPLS for e in ROW_ELEMS}
        calls[GPUS].update({f"adversarial {e}": (check_adversarial, (ADVERSARIAL, 100_003, e, DTYPES, 7))
                            for e in ROW_ELEMS})
        calls[GPUS]["copy engine"] = (copy_all_ceiling, (1 << 20, ("push", "pull")))
    return SharedLaunch(calls, device="cuda", timeout_s=900)


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("impl,mode", IMPLS)
@pytest.mark.parametrize("row_elems", ROW_ELEMS)
def test_gather_matches_closed_form_on_gpu_ranks(ranks, impl, mode, row_elems):
    assert ranks(GPUS, f"{impl} {mode} {row_elems}") == [{d: 50_000 for d in DTYPES}] * GPUS


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
    for (impl, options), name in zip(ADVERSARIAL, results[0]):
        assert all(name in mine for mine in results)
        for mine in results:
            assert mine[name]["checked"]["edges"] > 0 and mine[name]["checked"]["empty"] == 0
            assert ("over_capacity" in mine[name]["checked"]) == (impl == "p2p_push")
        described = results[0][name]["describe"]
        if options.get("mode") == "tma":
            assert ("one bulk-copy store per row" in described) == (row_elems == 128 and hopper), described
        if options.get("load") == "bulk":
            assert ("a row per bulk-copy load" in described) == (row_elems == 128 and hopper), described
        if impl == "p2p_push":
            assert "1 of 8 calls over capacity, pulled" in results[-1][name]["describe"]


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
def test_the_copy_engine_all_to_all_copies_both_ways(ranks):
    assert ranks(GPUS, "copy engine") == [[2, 2]] * GPUS


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("mode", ["sm", "tma"])
def test_a_closed_push_gather_releases_its_device_memory(mode):
    # each round maps a 1 GB table and a 512 MiB workspace per rank; three leaked rounds would hold
    # well over 1.5 GB per GPU
    results = launch(device_memory_after_rounds, ("p2p_push", {"mode": mode, "capacity": 1 << 20}, 3),
                     world_size=GPUS, device="cuda", timeout_s=180)
    for before, after in results:
        assert after >= before - (256 << 20), f"{(before - after) >> 20} MiB still held after closing"
