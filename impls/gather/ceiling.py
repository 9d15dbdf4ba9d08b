"""Link ceilings measured in the same run as the gathers: one-way peer copy, raw alltoall.

Registered under `gather` so the gather experiments can list them as points; they are
reference measurements, not gathers.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from harness.needs import Needs
from harness.registry import register_impl
from harness.timing import TorchCudaTimer, measure, measure_collective


def peer_copy_buffers(rank, nbytes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Source on rank 0's GPU (random bytes) and destination on GPU 1."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=rank.torch_device()).random_(0, 255)
    return src, torch.empty(nbytes, dtype=torch.uint8, device=torch.device("cuda", 1))


def peer_copy_seconds(rank, nbytes: int, warmup: int, repeats: int):
    """Rank 0 copies ``nbytes`` from its GPU to GPU 1 (cudaMemcpyPeerAsync through torch);
    the other ranks wait. Returns Stats (seconds) on rank 0, None elsewhere."""
    stats = None
    dist.barrier()
    if rank.rank == 0:
        src, dst = peer_copy_buffers(rank, nbytes)
        stats = measure(lambda: dst.copy_(src, non_blocking=True), timer=TorchCudaTimer(),
                        warmup=warmup, repeats=repeats)
        if not torch.equal(dst[:4096].cpu(), src[:4096].cpu()):
            raise RuntimeError("peer copy did not copy")
        del src, dst
        torch.cuda.empty_cache()
    dist.barrier()
    return stats


def alltoall_seconds(rank, nbytes_per_rank: int, warmup: int, repeats: int):
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
                                  warmup=warmup, repeats=repeats)
    return stats


class _Reference:
    """Marker object: the experiment measures these with the functions above."""

    def __init__(self, kind: str):
        self.kind = kind


@register_impl("gather", "ceiling_peer_copy", needs=Needs(devices=("cuda",), min_gpus=2),
               summary="reference, not a gather: one-way GPU0->GPU1 peer copy bandwidth")
def make_peer_copy(rank=None, spec=None, **_):
    return _Reference("peer_copy")


@register_impl("gather", "ceiling_alltoall", needs=Needs(devices=("cpu", "cuda")),
               summary="reference, not a gather: raw all_to_all_single bandwidth")
def make_alltoall(rank=None, spec=None, **_):
    return _Reference("alltoall")
