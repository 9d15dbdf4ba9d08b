"""`nccl_alltoallv`: the distributed-memory global gather of WholeGraph Fig. 4 (left).

Five steps: (1) bucket ids by home rank, (2) exchange the per-rank counts,
(3) exchange the ids (alltoallv), (4) gather the requested rows locally,
(5) alltoallv the rows back, then restore the callers' order. NCCL on GPU ranks,
gloo on CPU ranks, both through torch.distributed.all_to_all_single.

:func:`exchange_rows` is those five steps for any table split over every rank of the default
group: the path between nodes of ``p2p_shared`` too (its rows of other nodes).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from harness.needs import Needs
from harness.registry import register_impl
from harness.timing import DeviceClock, Laps
from impls.core.layout import TableSpec, check_ids
from impls.storage import ShardedTable


class AllToAllGather:
    def __init__(self, rank, spec: TableSpec, **_):
        self.rank, self.spec = rank, spec
        self.store = ShardedTable(rank, spec, "distributed")
        self.rows_per_rank = self.store.partition.rows_per_rank
        self.device = self.store.device
        self.world = rank.world_size
        self.profile = False          # True: time each of the five steps with CUDA events
        self.step_ms: dict[str, float] = {}

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        if check:
            check_ids(ids, self.spec.num_rows)
        ids = ids.to(self.device, torch.int64)
        marks = Laps(DeviceClock(self.device)) if self.profile else None
        out = exchange_rows(self.store, ids, marks)
        if marks:
            self.step_ms = {step: seconds * 1e3 for step, seconds in marks.seconds().items()}
        return out

    def describe(self) -> str:
        backend = "NCCL" if self.device.type == "cuda" else "gloo"
        return f"{self.store.describe()}; 5-step alltoallv over {backend}"

    def close(self) -> None:
        self.store.close()


def exchange_rows(store: ShardedTable, ids: torch.Tensor, marks: Laps | None = None) -> torch.Tensor:
    """Rows ``ids`` of ``store`` (split over every rank of the default group, this rank's shard in
    ``store.local``) in the order of ``ids``, through the five steps (module doc). Collective: every
    rank calls it, with the ids it wants (none, too)."""
    spec, device = store.spec, store.device
    world, rows_per_rank = store.rank.world_size, store.partition.rows_per_rank
    # (1) bucket ids by home rank: a stable radix sort on 8-bit owner keys is one pass
    owner = torch.div(ids, rows_per_rank, rounding_mode="floor")
    key = owner.to(torch.uint8) if world <= 256 else owner.to(torch.int32)
    _, order = torch.sort(key, stable=True)
    send_ids = ids[order]
    send_counts = torch.bincount(owner, minlength=world)
    marks and marks.lap("bucket")
    # (2) exchange counts
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    counts = torch.stack([send_counts, recv_counts]).cpu()  # one host sync for both
    send_split, recv_split = counts[0].tolist(), counts[1].tolist()
    marks and marks.lap("exchange_counts")
    # (3) exchange ids
    recv_ids = torch.empty(sum(recv_split), dtype=torch.int64, device=device)
    dist.all_to_all_single(recv_ids, send_ids, recv_split, send_split)
    marks and marks.lap("exchange_ids")
    # (4) local gather of what the peers asked for
    local_rows = _rows_at(store.local, recv_ids - store.start, spec)
    marks and marks.lap("local_gather")
    # (5) send the rows back, then undo the bucketing with a gather (reads random, writes in order)
    back = torch.empty((ids.numel(), spec.row_elems), dtype=spec.torch_dtype, device=device)
    dist.all_to_all_single(back, local_rows, send_split, recv_split)
    marks and marks.lap("alltoallv_rows")
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device=device)
    out = _rows_at(back, inverse, spec)
    marks and marks.lap("reorder")
    if store.reads is not None:
        store.reads.add("nccl", owner)
    return out


def _rows_at(table: torch.Tensor, index: torch.Tensor, spec: TableSpec) -> torch.Tensor:
    """``table[index]``: on GPUs with the vectorized gather kernel (index_select reaches well under
    half the device bandwidth on random rows), on CPU with index_select."""
    if table.device.type != "cuda" or table.shape[0] >= 1 << 32 or index.numel() == 0:
        return table.index_select(0, index)
    from impls.core.row_gather import gather_into

    out = torch.empty((index.numel(), spec.row_elems), dtype=spec.torch_dtype, device=table.device)
    base = torch.tensor([table.data_ptr()], dtype=torch.int64, device=table.device)
    return gather_into(out, base, max(table.shape[0], 1), index, spec.row_bytes)


@register_impl("gather", "nccl_alltoallv", needs=Needs(devices=("cpu", "cuda")),
               summary="distributed shards; bucket, exchange counts, alltoallv ids, local gather, alltoallv rows",
               label="NCCL alltoallv (5 steps)", family="NCCL", order=30, traits=("collective",))
def make(rank, spec: TableSpec, **options):
    return AllToAllGather(rank, spec, **options)
