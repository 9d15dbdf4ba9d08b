"""Continuous addressing on GPUs: every rank's shard in ONE CUDA VMM range (impls/storage/vmm.py).

On 2 GPUs (all visible GPUs for the gather): rows filled with row + column (WholeGraph's tests'
content), random ids gathered through one pointer, every rank reading every other rank's first
and last row at base + global row * row_bytes, memory held once (a shard per GPU, no copies),
chunked addressing over the same range, and open/close cycles without leaks. Where the driver
refuses (CUDA_ERROR_NOT_SUPPORTED on some virtual machines, no peer access) every rank raises
SkipPoint and these tests skip with the driver's message.
"""

from __future__ import annotations

import pytest
import torch

from harness.launcher import launch
from tests.gather.targets import check_gather
from tests.helpers import SharedLaunch

from . import vmm_targets as targets

pytestmark = pytest.mark.gpu
pytest.importorskip("cupy")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
MiB = 1 << 20


def _skip_if_refused(results):
    reasons = {r["skipped"] for r in results if "skipped" in r}
    if reasons:
        assert len(reasons) == 1 and all("skipped" in r for r in results), results  # all ranks agree
        pytest.skip(reasons.pop())


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("mode", ["continuous", "chunked"])
def test_vmm_range_rows_and_placement(mode):
    world = GPUS
    row_elems = 128                                   # 512 B rows: 4096 rows per 2 MiB granule
    num_rows = world * (1 << 20) - 5                  # 512 MiB per rank, the last shard 5 rows short
    results = launch(targets.continuous_gather, (num_rows, row_elems, 200_000, mode, 3),
                     world_size=world, device="cuda", timeout_s=300)
    _skip_if_refused(results)
    bounds = results[0]["bounds"]
    assert all(e > s for s, e in bounds), bounds       # every rank holds rows here
    for r, res in enumerate(results):
        assert res["bounds"] == bounds and res["checked"] == 200_000 + 2 * world
        assert sorted(set(res["seen"].values())) == list(range(world))   # read every rank's rows
        shard = res["shard_bytes"]
        assert shard == (1 << 20) * 512
        # this GPU holds its own shard only: peers' shards are mapped, not copied
        assert shard <= res["allocated"] < shard + 64 * MiB, (r, res["allocated"], shard)
        assert ("base + id * row_bytes" in res["describe"]) == (mode == "continuous"), res["describe"]


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
def test_vmm_small_rows_pad_to_granules():
    """148 B rows: 524288 rows per granule; 1.2M rows over 2 GPUs leave rank 1 a shorter shard."""
    results = launch(targets.continuous_gather, (1_200_003, 37, 50_000, "continuous", 5),
                     world_size=2, device="cuda", timeout_s=300)
    _skip_if_refused(results)
    assert results[0]["rows_per_rank"] % 524288 == 0
    assert results[0]["bounds"] == [(0, results[0]["rows_per_rank"]), (results[0]["rows_per_rank"], 1_200_003)]


ROW_ELEMS = [1, 37, 128]
DTYPES = ["float32", "bfloat16", "float16", "int64"]


@pytest.fixture(scope="module")
def continuous_gathers():
    """The generic gather check at every row size, in one launch (a refusal skips each of them)."""
    return SharedLaunch({GPUS: {e: (check_gather, ("p2p_shared", "continuous", 100_003, e, DTYPES, 50_000, 7))
                                for e in ROW_ELEMS}}, device="cuda", timeout_s=600)


@pytest.mark.skipif(GPUS < 1, reason="needs a GPU")
@pytest.mark.parametrize("row_elems", ROW_ELEMS)
def test_continuous_gather_matches_closed_form(continuous_gathers, row_elems):
    """The generic gather check (every dtype, duplicates, empty list, out-of-range ids)."""
    assert continuous_gathers(GPUS, row_elems) == [{d: 50_000 for d in DTYPES}] * GPUS


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
@pytest.mark.parametrize("owner", [0, 1])
def test_fig6b_chase_reads_the_owners_shard_through_the_continuous_range(owner):
    """XGNN Fig. 6(b): the chase over rank ``owner``'s shard of the VMM range reads exactly the
    reference chain's words, those words sit in the owner's own GPU memory, and every GPU holds one
    shard of 64 MiB (no copy of a peer's)."""
    results = launch(targets.vmm_chase, (64 * MiB, owner, 0xF6B), world_size=2, device="cuda", timeout_s=300)
    _skip_if_refused(results)
    zero = results[0]
    assert zero["part_elems"] == 64 * MiB // 8 and zero["owners"] == [owner]
    assert zero["ptr"] == zero["base"] + owner * 64 * MiB            # the owner's segment of the one range
    assert ("imported" in zero["placement"]) == (owner == 1), zero["placement"]
    assert results[owner]["holds_chain"]
    for res in results:
        assert 64 * MiB <= res["allocated"] < 64 * MiB + 64 * MiB, res["allocated"]


@pytest.mark.skipif(GPUS < 2, reason="needs at least two GPUs")
def test_vmm_close_and_reopen_without_leaks():
    results = launch(targets.close_reopen, (2 * (1 << 19), 128, 2), world_size=2, device="cuda", timeout_s=300)
    _skip_if_refused(results)
    for res in results:
        base_free, base_fds = res["free"][0], res["fds"][0]
        assert res["shard_bytes"] == 256 * MiB
        for free, fds in zip(res["free"][1:], res["fds"][1:]):
            assert abs(free - base_free) < 8 * MiB, res["free"]     # a leak would be 256 MiB a cycle
            assert fds == base_fds, res["fds"]                        # exported/imported fds closed
