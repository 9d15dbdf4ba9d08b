"""The staged SpMM's schedules (staged.py): which blocks move and in which order, that the GPU
schedule orders every receive buffer by events and never waits on the host (fake CUDA streams on
CPU tensors), in one process over stand-in blocks and on gloo ranks end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.launcher import launch
from harness.timing import DeviceClock
from impls.fullbatch.buffers import Arena, BufferPlan
from impls.fullbatch.mggcn import csr_to_torch
from impls.fullbatch.problem import CsrMatrix
from impls.fullbatch.profiling import StageTimeline
from impls.fullbatch.staged import InlineLanes, StagedSpmm, StreamLanes, Transfer, stage_plan

from .fake_streams import FakeCuda, counting_host_syncs, races
from .reference import MODELS, NUM_NODES, DenseReference, assert_close_to_reference, make_test_graph


def test_stage_plans():
    # the paper's broadcasts: every rank posts them in root order; rank 1 multiplies its own block
    # first, then the others as they arrive, two receive buffers in turn
    order, transfers = stage_plan("broadcast", 1, 4, local_first=True)
    assert order == [1, 0, 2, 3]
    assert transfers == [Transfer(0, 0), Transfer(1, None), Transfer(2, 1), Transfer(3, 2)]
    assert [t.slot for t in transfers] == [0, None, 1, 0]
    assert stage_plan("broadcast", 1, 4, local_first=False)[0] == [0, 1, 2, 3]      # stage j: block j
    # peer copies: block (i + s) mod P at step s, so every rank receives one block per step
    order, transfers = stage_plan("peer", 2, 4, local_first=True)
    assert order == [2, 3, 0, 1] and [t.block for t in transfers] == [3, 0, 1]
    senders = [[stage_plan("peer", r, 4, True)[1][s].block for r in range(4)] for s in range(3)]
    assert all(sorted(step) == [0, 1, 2, 3] for step in senders)       # no rank serves two at once
    assert stage_plan("peer", 0, 1, True) == ([0], [])
    with pytest.raises(ValueError):
        stage_plan("peer", 0, 2, local_first=False)
    with pytest.raises(ValueError):
        stage_plan("pigeon", 0, 2, True)


class LocalBlocks:
    """A transport over blocks held in this process: rank ``block``'s rows, copied on request."""

    def __init__(self, name: str, blocks: list[torch.Tensor]):
        self.name, self.blocks = name, blocks

    def begin(self):
        pass

    def end(self):
        pass

    def send(self, transfer, destination, local_rows):
        if transfer.remote is not None:
            destination.copy_(self.blocks[transfer.block])


class SkipsCommWaits(StreamLanes):
    """A broken schedule: transfers never wait for the compute stream."""

    def wait(self, lane, token):
        if lane != "comm":
            super().wait(lane, token)


class WaitsOnHost(StreamLanes):
    """A schedule that waits on the host for every event instead of letting streams wait."""

    def wait(self, lane, token):
        token.synchronize()


def _staged_problem(world: int, rank: int, width: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    part_rows = [5 + (j % 3) for j in range(world)]
    blocks = [torch.from_numpy(rng.standard_normal((r, width)).astype(np.float32)) for r in part_rows]
    tiles, dense = [], []
    for j, cols in enumerate(part_rows):
        a = np.where(rng.random((part_rows[rank], cols)) < 0.4, rng.standard_normal((part_rows[rank], cols)), 0.0)
        a = a.astype(np.float32)
        rows, idx = np.nonzero(a)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=a.shape[0]))]).astype(np.int64)
        tiles.append(csr_to_torch(CsrMatrix(indptr, idx.astype(np.int32), a[rows, idx], a.shape), "cpu"))
        dense.append(a)
    expected = sum(a.astype(np.float64) @ b.numpy().astype(np.float64) for a, b in zip(dense, blocks))
    return part_rows, blocks, tiles, expected


def _run_staged(transport: str, world: int, rank: int, lanes, local_first: bool = True, spmms: int = 2):
    width = 3
    part_rows, blocks, tiles, expected = _staged_problem(world, rank, width)
    arena = Arena(BufferPlan((width, width), part_rows[rank], max(part_rows), world), "cpu")
    stages = StagedSpmm(rank=rank, world=world, part_rows=part_rows, transport=LocalBlocks(transport, blocks),
                        lanes=lanes, overlap=True, local_first=local_first, arena=arena,
                        timeline=StageTimeline(DeviceClock("cpu"), True))
    for _ in range(spmms):
        out = torch.full((part_rows[rank], width), float("nan"))
        stages(tiles, blocks[rank], out, "fwd0")
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    return stages


@pytest.mark.parametrize("transport,local_first", [("peer", True), ("broadcast", True), ("broadcast", False)])
@pytest.mark.parametrize("world,rank", [(2, 1), (3, 0), (4, 2), (5, 4)])
def test_gpu_schedule_orders_every_buffer_by_events_without_host_waits(transport, local_first, world, rank):
    fake = FakeCuda()
    with counting_host_syncs(fake):
        stages = _run_staged(transport, world, rank, StreamLanes("cpu", fake), local_first)
    assert fake.host_syncs == 0
    assert races(fake.trace) == []
    ops = [entry for entry in fake.trace if entry[1] == "op"]
    assert {stream for stream, _, label in ops if label[0] == "transfer"} == {"side1"}
    assert {stream for stream, _, label in ops if label[0] == "multiply"} == {"compute"}
    multiplied = [label[1] for _, _, label in ops if label[0] == "multiply"]
    assert multiplied == 2 * stages.order
    if local_first:
        assert multiplied[0] == rank                   # nothing to wait for: runs first


def test_the_checks_fail_on_a_broken_schedule():
    fake = FakeCuda()
    _run_staged("broadcast", 4, 1, SkipsCommWaits("cpu", fake))
    assert any("not ordered" in problem for problem in races(fake.trace))
    fake = FakeCuda()
    with counting_host_syncs(fake):
        _run_staged("peer", 3, 0, WaitsOnHost("cpu", fake))
    assert fake.host_syncs > 0
    fake = FakeCuda()
    with counting_host_syncs(fake):
        torch.cuda.synchronize()                       # torch's own host waits are counted too
    assert fake.host_syncs == 1


@pytest.mark.parametrize("transport", ["peer", "broadcast"])
def test_cpu_lanes_compute_the_same(transport):
    _run_staged(transport, 3, 1, InlineLanes())


def test_gpu_schedule_on_gloo_ranks_with_fake_streams():
    """The two-stream schedule with the real transports (gloo broadcasts; copies out of the peers'
    /dev/shm buffers) on three CPU ranks: the reference's gradients, no race, no host wait."""
    from .targets import FAKE_STREAM_VARIANTS, run_on_fake_streams

    world = 3
    per_rank = launch(run_on_fake_streams, (), world_size=world, device="cpu", timeout_s=240)
    g = make_test_graph(1)
    ref = DenseReference(g, MODELS["spmm_first_middle"]).gradients()
    for variant in FAKE_STREAM_VARIANTS:
        logits = np.full((NUM_NODES, g.num_classes), np.nan)
        for result in per_rank:
            loss, old_ids, rows, grads, spmms, trace, syncs = result[variant]
            logits[old_ids] = rows
            assert syncs == 0, f"{variant}: {syncs} host synchronizations"
            assert races(trace) == [], variant
            assert sum(1 for _, kind, label in trace if kind == "op" and label[0] == "begin") == len(spmms)
        loss, _, _, grads, *_ = per_rank[0][variant]
        assert_close_to_reference(loss, logits, grads, ref, label=variant)
