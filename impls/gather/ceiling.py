"""Link ceilings measured in the same run as the gathers: one-way peer copy, raw alltoall, and the
copy engines all-to-all.

Registered under `gather` so the gather experiments can list them as points; they are
reference measurements, not gathers. ``ceiling_copy_all`` is what a gather moved by the copy
engines could reach at best: every rank copies a buffer to (``push``) or from (``pull``) every peer
at once, one cudaMemcpyAsync per peer on a stream of its own, so several copy engines run and
every link carries traffic both ways, as in a gather (the one-way peer copy loads one direction).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from harness.needs import Needs
from harness.registry import Variant, register_impl
from harness.timing import RepeatBudget, TorchCudaTimer, measure, measure_collective

from . import Ceiling, Reading


def peer_copy_buffers(rank, nbytes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Source on rank 0's GPU (random bytes) and destination on GPU 1."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=rank.torch_device()).random_(0, 255)
    return src, torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", 1))


def peer_copy_seconds(rank, nbytes: int, budget: RepeatBudget):
    """Rank 0 copies ``nbytes`` from its GPU to GPU 1 (cudaMemcpyPeerAsync through torch);
    the other ranks wait. Returns Stats (seconds) on rank 0, None elsewhere."""
    stats = None
    dist.barrier()
    if rank.rank == 0:
        src, dst = peer_copy_buffers(rank, nbytes)
        stats = measure(lambda: dst.copy_(src, non_blocking=True), timer=TorchCudaTimer(), budget=budget)
        if not torch.equal(dst[:4096].cpu(), src[:4096].cpu()):
            raise RuntimeError("peer copy did not copy")
        del src, dst
        torch.cuda.empty_cache()
    dist.barrier()
    return stats


def alltoall_seconds(rank, nbytes_per_rank: int, budget: RepeatBudget):
    """Raw all_to_all_single of ``nbytes_per_rank`` per rank: NCCL's own ceiling.

    Each rank sends ``nbytes_per_rank`` split as evenly as bytes allow; where the ranks do not
    divide it, the first peers get one byte more (explicit splits)."""
    device = rank.torch_device()
    world = rank.world_size
    send = torch.empty(nbytes_per_rank, dtype=torch.uint8, device=device).random_(0, 255)
    share, extra = divmod(nbytes_per_rank, world)
    if extra:
        send_split = [share + (peer < extra) for peer in range(world)]
        recv_split = [share + (rank.rank < extra)] * world
        recv = torch.empty(sum(recv_split), dtype=torch.uint8, device=device)

        def exchange():
            dist.all_to_all_single(recv, send, recv_split, send_split)
    else:
        recv = torch.empty_like(send)

        def exchange():
            dist.all_to_all_single(recv, send)
    stats, _ = measure_collective(exchange, timer=TorchCudaTimer() if device.type == "cuda" else None,
                                  budget=budget)
    return stats


def copy_all(rank, nbytes_per_peer: int, direction: str, budget: RepeatBudget, link_counters: bool = False):
    """Every rank moves ``nbytes_per_peer`` to (push) or from (pull) each peer at once through the
    copy engines. Returns (Stats in seconds, NVLink traffic of this rank's device or None); the
    bytes a rank receives per call are (world - 1) x ``nbytes_per_peer``."""
    from impls.storage import GpuBuffers

    if direction not in ("push", "pull"):
        raise ValueError(f"direction must be push or pull, not {direction!r}")
    device, me, world = rank.torch_device(), rank.rank, rank.world_size
    nbytes = int(nbytes_per_peer)
    # slot r of a rank's buffer: what rank r pushed here (push) or what this rank read from r (pull)
    buffers = GpuBuffers(rank, world * nbytes, torch.uint8, shared=True)
    buffers.local.random_(0, 255)
    buffers.map_peers()
    peers = [p for p in range(world) if p != me]
    streams = [torch.cuda.Stream(device) for _ in peers]

    def slot(t: torch.Tensor, r: int) -> torch.Tensor:
        return t[r * nbytes:(r + 1) * nbytes]

    def exchange():
        main = torch.cuda.current_stream(device)
        for stream, p in zip(streams, peers):
            stream.wait_stream(main)
            with torch.cuda.stream(stream):
                if direction == "push":
                    slot(buffers.views[p], me).copy_(slot(buffers.local, me), non_blocking=True)
                else:
                    slot(buffers.local, p).copy_(slot(buffers.views[p], me), non_blocking=True)
        for stream in streams:
            main.wait_stream(stream)

    try:
        stats, _ = measure_collective(exchange, timer=TorchCudaTimer(), budget=budget)
        traffic = None
        if link_counters:
            from .link_counters import link_traffic

            dist.barrier()
            traffic = link_traffic(exchange, device, payload_bytes=(world - 1) * nbytes, per_call_s=stats.median)
            dist.barrier()
        exchange()
        torch.cuda.synchronize(device)
        dist.barrier()          # every peer's copies into this buffer are done before checking it
        for p in peers:
            got, sent = (slot(buffers.local, p), slot(buffers.views[p], p)) if direction == "push" else \
                (slot(buffers.local, p), slot(buffers.views[p], me))
            if not torch.equal(got[:4096], sent[:4096]):
                raise RuntimeError(f"copy engines: the {direction} between ranks {me} and {p} did not copy")
    finally:
        torch.cuda.synchronize(device)
        dist.barrier()          # nobody copies into or out of a buffer that is about to go
        buffers.close()
    return stats, traffic


class PeerCopy:
    """Rank 0 copies ``copy_bytes`` to GPU 1 (the others wait): metric ``peer_copy_bw``. With link
    counters, the copy repeated for half a second with GPU 0's and GPU 1's NVLink counters read."""

    size_param = "copy_bytes"

    def default_bytes(self, quick: bool) -> int:
        return 1 << 30

    def measure(self, rank, params: dict, budget: RepeatBudget, link_counters: bool = False) -> Reading:
        nbytes = int(params[self.size_param])
        stats = peer_copy_seconds(rank, nbytes, budget)
        traffic = peer_copy_traffic(rank, nbytes, stats) if link_counters else None
        return Reading("peer_copy_bw", stats, nbytes, extra={"nvlink": traffic} if traffic else {})


def peer_copy_traffic(rank, nbytes: int, stats) -> dict | None:
    """NVLink counters of GPU 0 and GPU 1 while rank 0 repeats the one-way peer copy."""
    from .link_counters import link_traffic

    traffic = None
    dist.barrier()
    if rank.rank == 0:
        src, dst = peer_copy_buffers(rank, nbytes)
        traffic = link_traffic(lambda: dst.copy_(src, non_blocking=True), rank.torch_device(),
                               payload_bytes=nbytes, per_call_s=stats.median, peers=(dst.device,))
        del src, dst
        torch.cuda.empty_cache()
    dist.barrier()
    return traffic


class CopyAll:
    """Every rank copies ``copy_bytes`` to (push) or from (pull) every peer at once: metric
    ``copy_all_bw``, the bytes a rank receives per call."""

    size_param = "copy_bytes"

    def default_bytes(self, quick: bool) -> int:
        return 256 << 20                  # per peer and call: about as many bytes as a gather's

    def measure(self, rank, params: dict, budget: RepeatBudget, link_counters: bool = False) -> Reading:
        nbytes = int(params[self.size_param])
        stats, traffic = copy_all(rank, nbytes, params["direction"], budget, link_counters=link_counters)
        received = (rank.world_size - 1) * nbytes
        return Reading("copy_all_bw", stats, received,
                       extra={"received_bytes_per_rank": received, **({"nvlink": traffic} if traffic else {})})


class AllToAll:
    """Raw all_to_all_single of ``alltoall_bytes`` per rank: metric ``algbw`` (and ``busbw``)."""

    size_param = "alltoall_bytes"

    def default_bytes(self, quick: bool) -> int:
        return (8 << 20) if quick else (256 << 20)

    def measure(self, rank, params: dict, budget: RepeatBudget, link_counters: bool = False) -> Reading:
        nbytes = int(params[self.size_param])
        return Reading("algbw", alltoall_seconds(rank, nbytes, budget), nbytes, busbw=True)


_CEILING = dict(family="reference", contract=Ceiling)
_GPU = ("cuda",)          # the copy engines: a point on GPUs only


@register_impl("gather", "ceiling_peer_copy", needs=Needs(devices=("cuda",), min_gpus=2),
               summary="reference, not a gather: one-way GPU0->GPU1 peer copy bandwidth",
               label="one-way peer copy GPU 0 -> GPU 1", traits=("ceiling", "one_way_copy"), order=0, **_CEILING)
def make_peer_copy(rank=None, spec=None, **_):
    return PeerCopy()


@register_impl("gather", "ceiling_copy_all", needs=Needs(devices=("cuda",), min_gpus=2),
               summary="reference, not a gather: the copy engines all-to-all, every rank copying to (push) "
                       "or from (pull) every peer at once",
               label="copy engines all-to-all", traits=("ceiling",), order=2,
               variants=(Variant("push", {"direction": "push"}, devices=_GPU), Variant("pull", {"direction": "pull"}, devices=_GPU)),
               **_CEILING)
def make_copy_all(rank=None, spec=None, **_):
    return CopyAll()


@register_impl("gather", "ceiling_alltoall", needs=Needs(devices=("cpu", "cuda")),
               summary="reference, not a gather: raw all_to_all_single bandwidth",
               label="raw all_to_all_single (NCCL on GPUs, gloo on CPU)", traits=("ceiling",), order=1, **_CEILING)
def make_alltoall(rank=None, spec=None, **_):
    return AllToAll()
