"""Gather implementations on GPU ranks (NCCL, CUDA IPC, pinned host) against the closed form.

Every check of this module runs in one launch per world size (tests.helpers.SharedLaunch): a launch
of GPU ranks costs about 10 s, more than most checks."""

from __future__ import annotations

import pytest
import torch

from tests.gather.targets import check_gather
from tests.helpers import SharedLaunch

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
DTYPES = ["float32", "bfloat16", "float16", "int64"]
IMPLS = [("p2p_shared", "chunked"), ("nccl_alltoallv", None), ("host_copy", None), ("host_uva", None)]
ROW_ELEMS = [1, 37, 128]


@pytest.fixture(scope="module")
def ranks():
    calls = {1: {"single": (check_gather, ("p2p_shared", "chunked", 5000, 128, ["float32"], 4000, 1))}}
    if GPUS >= 2:
        calls[GPUS] = {f"{impl} {mode} {e}": (check_gather, (impl, mode, 100_003, e, DTYPES, 50_000, 5))
                       for impl, mode in IMPLS for e in ROW_ELEMS}
    return SharedLaunch(calls, device="cuda", timeout_s=600)


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("impl,mode", IMPLS)
@pytest.mark.parametrize("row_elems", ROW_ELEMS)
def test_gather_matches_closed_form_on_gpu_ranks(ranks, impl, mode, row_elems):
    assert ranks(GPUS, f"{impl} {mode} {row_elems}") == [{d: 50_000 for d in DTYPES}] * GPUS


@pytest.mark.skipif(GPUS < 1, reason="needs a GPU")
def test_gather_single_rank_gpu(ranks):
    assert ranks(1, "single") == [{"float32": 4000}]
