"""Gather implementations on GPU ranks (NCCL, CUDA IPC, pinned host) against the closed form."""

from __future__ import annotations

import pytest
import torch

from harness.launcher import launch
from tests.gather.targets import check_gather

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
DTYPES = ["float32", "bfloat16", "float16", "int64"]


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("impl,mode", [("p2p_shared", "chunked"), ("nccl_alltoallv", None),
                                       ("host_copy", None), ("host_uva", None)])
@pytest.mark.parametrize("row_elems", [1, 37, 128])
def test_gather_matches_closed_form_on_gpu_ranks(impl, mode, row_elems):
    results = launch(check_gather, (impl, mode, 100_003, row_elems, DTYPES, 50_000, 5),
                     world_size=GPUS, device="cuda", timeout_s=300)
    assert results == [{d: 50_000 for d in DTYPES}] * GPUS


@pytest.mark.skipif(GPUS < 1, reason="needs a GPU")
def test_gather_single_rank_gpu():
    results = launch(check_gather, ("p2p_shared", "chunked", 5000, 128, ["float32"], 4000, 1),
                     world_size=1, device="cuda", timeout_s=120)
    assert results == [{"float32": 4000}]
