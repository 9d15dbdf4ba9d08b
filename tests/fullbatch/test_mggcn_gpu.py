"""MG-GCN on 1-4 GPU ranks (NCCL): the same equalities as on CPU ranks, overlap on two streams,
and peak memory within the L+3 buffer bound.  Skipped without CUDA. One launch per world size
serves both the equalities and the overlap probe (tests.helpers.SharedLaunch).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tests.helpers import SharedLaunch  # noqa: E402

from .checks import check_configurations  # noqa: E402
from .targets import run_configurations  # noqa: E402

pytestmark = pytest.mark.gpu
GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
OVERLAP = (400_000, 16)


@pytest.fixture(scope="module")
def ranks():
    calls = {world: {"configurations": (run_configurations, ())} for world in (1, 2, 3, 4) if world <= GPUS}
    for world in (2, 4):
        for transport in ("peer", "broadcast"):
            if world in calls:
                calls[world][f"overlap {transport}"] = (overlap_probe, (*OVERLAP, transport))
    return SharedLaunch(calls, device="cuda", timeout_s=900)


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_gpu_ranks_match_single_device(ranks, world):
    if world > GPUS:
        pytest.skip(f"needs {world} GPUs, {GPUS} visible")
    per_rank = ranks(world, "configurations")
    check_configurations(per_rank, world, bitwise=False)
    for transport in ("peer", "broadcast"):
        has_comm_stream, distinct = per_rank[0][("streams", transport)]
        assert has_comm_stream == distinct == (world > 1)


def overlap_probe(ctx, nodes: int, degree: int, transport: str):
    """One recorded epoch with overlap on a graph big enough that transfers and multiplies take time."""
    import torch

    from impls.fullbatch.mggcn import MGGCN
    from impls.fullbatch.model import ModelConfig
    from impls.fullbatch.problem import random_graph, rank_share

    g = random_graph(nodes, degree, 256, 16, seed=0)
    share = rank_share(g, ctx.rank, ctx.world_size, order="random_parts", seed=0)
    engine = MGGCN(share, ModelConfig(2, 256), device=str(ctx.torch_device()), overlap=True,
                   record_timeline=True, transport=transport)
    for _ in range(2):                      # warm-up: cuSPARSE handles, NCCL channels
        engine.train_epoch()
    engine.collect_timeline()
    engine.train_epoch()
    intervals = [(i.spmm, i.stage, i.kind, i.start_s, i.end_s) for i in engine.collect_timeline()]
    streams = (engine.comm_stream, torch.cuda.current_stream())
    engine.close()
    return intervals, streams[0] is not None and streams[0] != streams[1]


@pytest.mark.parametrize("transport", ["peer", "broadcast"])
@pytest.mark.parametrize("world", [2, 4])
def test_transfers_overlap_multiplies_on_two_streams(ranks, world, transport):
    if world > GPUS:
        pytest.skip(f"needs {world} GPUs, {GPUS} visible")
    per_rank = ranks(world, f"overlap {transport}")
    for rank, (intervals, two_streams) in enumerate(per_rank):
        assert two_streams, f"rank {rank}: transfers and multiplies share a stream"
        overlapped = 0
        for spmm in {i[0] for i in intervals}:
            comm = {i[1]: (i[3], i[4]) for i in intervals if i[0] == spmm and i[2] == "comm"}
            compute = {i[1]: (i[3], i[4]) for i in intervals if i[0] == spmm and i[2] == "compute"}
            moved = set(range(world)) - ({rank} if transport == "peer" else set())
            assert set(comm) == moved and set(compute) == set(range(world))
            # a block arrives while another one is multiplied
            for block, (b0, b1) in comm.items():
                if block != rank and any(c0 < b1 and c1 > b0 for j, (c0, c1) in compute.items() if j != block):
                    overlapped += 1
            if spmm == "fwd0":      # 256 columns: long enough that launch gaps do not matter
                # only concurrency lets the SpMM end before its broadcasts and multiplies would in a row
                every = list(comm.values()) + list(compute.values())
                span = max(e for _, e in every) - min(s for s, _ in every)
                busy = sum(e - s for s, e in every)
                assert span < busy, f"rank {rank} {spmm}: span {span} >= busy {busy}"
        assert overlapped > 0, f"rank {rank}: no broadcast overlapped a multiply"


def test_peak_memory_within_the_buffer_bound():
    if GPUS < 1:
        pytest.skip("needs a GPU")
    from impls.fullbatch.mggcn import MGGCN
    from impls.fullbatch.model import ModelConfig
    from impls.fullbatch.problem import random_graph, rank_share

    g = random_graph(200_000, 16, 100, 47, seed=0)
    share = rank_share(g, 0, 1, order="random", seed=0)
    peaks = {}
    for reuse in (True, False):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        engine = MGGCN(share, ModelConfig(3, 256), device="cuda:0", reuse_buffers=reuse)
        for _ in range(2):
            engine.train_epoch()
        torch.cuda.synchronize()
        peaks[reuse] = torch.cuda.max_memory_allocated() - before
        report = engine.memory_report()
        if reuse:
            workspaces = engine.measure_library_workspaces()
            bound = (report.static_bytes + report.planned_buffer_bytes + report.loss_workspace_bytes
                     + sum(workspaces.values()))
            # slack: the allocator rounds every tensor up to 512 B
            assert peaks[reuse] <= 1.002 * bound + (1 << 20), (peaks[reuse], bound, workspaces)
        engine.close()
        del engine
    assert peaks[False] > 1.3 * peaks[True], peaks
