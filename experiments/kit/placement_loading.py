"""Feature loading of a placement measured: every rank gathers its replayed mini-batches for real.

Run on every rank of a spawned group (``harness.launcher.launch``; CUDA ranks with NCCL, or
CPU ranks with gloo and host shared memory). One rank stands for one GPU of the placement's
topology (rank g = GPU g). For each :class:`MeasureJob`:

1. Store: the GPU buffers as one ``p2p_shared`` table (``impls.gather.p2p_shared``, chunked
   mode) of ``num_gpus * buffer_size`` rows; rank d owns rows ``d * buffer_size + slot`` and
   writes the features of ``placement.buffers[d][slot]`` there (the RowPartition that
   ``Placement.split_for_gather`` addresses). Host: every node's row in host shared memory
   (``impls.storage.host_table``), page-locked and read by the GPU kernel (``host_uva``) on
   CUDA, indexed on CPU.
2. Every replayed batch of this rank (the simulator's batches: ``simulate.replay_batches``):
   ``Placement.split_for_gather`` splits the input nodes into store rows (local + peer) and
   host ids outside the timed region (the dev_num / buf_pos lookup). ``batches_per_region``
   consecutive batches form one timed region, gathered by one launch sequence, so that a launch
   reads as many rows as one of the paper's mini-batches even where the stand-in's batches are
   scaled down (a gather of a few hundred rows measures its launch, not the rows). A region is
   - ``gather="fused"`` (CUDA; ICS'22 3.2's loader): ONE gather kernel over a pointer table of
     the GPU buffers and the mapped host table (``impls.core.row_gather``, the host as the last,
     larger part), each row read from where dev_num says, straight into the batches' order;
   - ``gather="split"`` (and every CPU run): one ``p2p_shared`` gather over the store rows, one
     host gather, and both scattered into the batches' order.
   Each region is barrier-bracketed and timed by CUDA events (GPU) or the host clock (CPU);
   ranks past their last region time an empty step. ``repeats`` passes over every region, each
   after an L2 flush: the spread between passes is the row's error bar.
3. The launch floor, in the same launch: the same regions, each reading one row per tier it
   reads, timed the same way (``floor``): what a region costs before it moves any data. A point
   whose loading time is within 2x of it, or whose modelled transfer is below it, is
   overhead-bound (the report says so).
4. The regions holding the first ``check_batches`` batches are compared with the features of
   their node ids (closed form, ``impls.core.layout.closed_form_rows``); a mismatch on any rank
   fails the job on every rank.

The feature content is the closed form of the node id, not the dataset's values: loading time
depends on the row bytes only, and the closed form makes every gathered row checkable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from impls.placement import Placement


@dataclass
class MeasureJob:
    """One placement to measure: ``batches[g]`` are GPU g's replayed input nodes, in order."""

    key: str
    placement: Placement
    batches: list[list[np.ndarray]]
    row_elems: int
    dtype: str = "float32"
    warmup: int = 2
    check_batches: int = 2          # -1: every batch
    gather: str = "fused"           # fused | split (see the module docstring); CPU ranks always split
    batches_per_region: int = 1     # consecutive batches one timed launch gathers
    repeats: int = 1                # timed passes over every region
    floor: bool = True              # also time each region reading one row per tier (the launch floor)
    meta: dict = field(default_factory=dict)


def portable(placement: Placement) -> Placement:
    """A copy of ``placement`` that pickles into spawned ranks: every GPU's lookup computed here
    and a policy's own ``lookup_fn`` (often a closure) dropped."""
    import copy

    for g in range(placement.num_gpus):
        placement.lookup(g)
        placement.slots(g)
    out = copy.copy(placement)
    out.lookup_fn = None
    out._lookups = dict(placement._lookups)
    return out


def measure_jobs(rank, jobs: list[MeasureJob]) -> list[dict]:
    """Collective: every rank measures every job in order; returns this rank's results."""
    return [measure_placement(rank, job) for job in jobs]


def _zero_copy_host(rank, spec):
    from impls.gather.host_paths import HostZeroCopyGather

    return HostZeroCopyGather(rank, spec)


def measure_placement(rank, job: MeasureJob) -> dict:
    import torch
    import torch.distributed as dist

    from harness.timing import CacheFlush, CpuTimer, TorchCudaTimer, reduce_across_ranks
    from impls.core.layout import TableSpec, closed_form_rows
    from impls.gather.p2p_shared import SharedMemoryGather
    from impls.storage import HostTable

    placement = job.placement
    n_gpus, bsize = placement.num_gpus, placement.buffer_size
    if rank.world_size != n_gpus:
        raise ValueError(f"{placement.topology.name} has {n_gpus} GPUs, the group has {rank.world_size} ranks")
    me = rank.rank
    cuda = rank.device == "cuda"
    device = rank.torch_device()
    dtype_spec = TableSpec(1, job.row_elems, job.dtype)
    tdtype = dtype_spec.torch_dtype

    # --- the GPU buffers: one chunked p2p_shared store of BSIZE rows per rank -------------
    store = SharedMemoryGather(rank, TableSpec(n_gpus * max(bsize, 1), job.row_elems, job.dtype), "chunked")
    host = None
    try:
        if store.rows_per_rank != max(bsize, 1):
            raise RuntimeError(f"store has {store.rows_per_rank} rows per rank, the placement {bsize}")
        mine = placement.buffers[me]
        if len(mine):
            ids = torch.from_numpy(mine).to(device)
            store.store.local[:len(mine)] = closed_form_rows(ids, job.row_elems, tdtype)
        if cuda:
            torch.cuda.synchronize(device)
        dist.barrier()
        # --- the host copy: every node at its own id --------------------------------------
        host_spec = TableSpec(placement.num_nodes, job.row_elems, job.dtype)
        if cuda:
            host = _zero_copy_host(rank, host_spec)
            host_gather, host_rows = host.gather, None
        else:
            host = HostTable(rank, host_spec)
            host_rows = host.rows
            host_gather = lambda ids: torch.index_select(host_rows, 0, ids)  # noqa: E731

        batches = job.batches[me]
        n = n_gpus
        if job.gather not in ("fused", "split"):
            raise ValueError(f"gather must be fused or split, not '{job.gather}'")
        fused = cuda and job.gather == "fused"
        if fused:
            from impls.core.row_gather import gather_into

            if store.rows_per_part != store.rows_per_rank:
                raise RuntimeError("the fused gather needs one store part per GPU")
            # parts 0..n-1: the GPU buffers (local or peer through NVLink); part n: the mapped host
            # table, the kernel's larger last part, so row n * rpp + v reads node v from the host
            table = torch.cat([store.table, host.ptrs])
            rpp = store.rows_per_part
            if n * rpp + placement.num_nodes >= 1 << 32:
                raise RuntimeError("the fused gather's row ids need 32 bits")
        k = max(1, int(job.batches_per_region))
        regions = [batches[i:i + k] for i in range(0, len(batches), k)]
        steps = max(-(-len(b) // k) for b in job.batches)
        reads = np.zeros((len(batches), n + 1), dtype=np.int64)
        splits = []
        for i, nodes in enumerate(batches):
            split = placement.split_for_gather(me, nodes)
            reads[i, :n] = np.bincount(split.store_device, minlength=n)[:n]
            reads[i, n] = len(split.host_ids)
            splits.append(split)

        def prepared_region(first: int, size: int, one_row: bool):
            """What one launch sequence gathers for batches first..first+size-1 (``one_row``: one
            row per tier they read, the launch floor)."""
            parts, offset = [], 0
            for split, nodes in zip(splits[first:first + size], batches[first:first + size]):
                parts.append((split, offset))
                offset += len(nodes)
            store_rows = np.concatenate([sp.store_rows for sp, _ in parts])
            store_pos = np.concatenate([sp.store_pos + off for sp, off in parts])
            host_ids = np.concatenate([sp.host_ids for sp, _ in parts]).astype(np.int64)
            host_pos = np.concatenate([sp.host_pos + off for sp, off in parts])
            count = offset
            if one_row:
                store_rows, host_ids = store_rows[:1], host_ids[:1]
                store_pos = np.zeros(len(store_rows), dtype=np.int64)
                host_pos = np.full(len(host_ids), len(store_rows), dtype=np.int64)
                count = len(store_rows) + len(host_ids)
            if fused:
                rows = np.empty(count, dtype=np.int64)
                rows[store_pos] = store_rows
                rows[host_pos] = n * rpp + host_ids
                return torch.from_numpy(rows).to(device), count
            return tuple(torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in
                         (store_rows, store_pos, host_ids, host_pos)) + (count,)

        prepared = [prepared_region(i * k, len(r), False) for i, r in enumerate(regions)]
        floors = [prepared_region(i * k, len(r), True) for i, r in enumerate(regions)] if job.floor else []
        out_box: list = [None]

        def load(item):
            if fused:
                rows, count = item
                out = torch.empty((count, job.row_elems), dtype=tdtype, device=device)
                out_box[0] = gather_into(out, table, rpp, rows, dtype_spec.row_bytes, store.launch)
                return
            store_rows, store_pos, host_ids, host_pos, count = item
            out = torch.empty((count, job.row_elems), dtype=tdtype, device=device)
            if store_rows.numel():
                out.index_copy_(0, store_pos, store.gather(store_rows, check=False))
            if host_ids.numel():
                out.index_copy_(0, host_pos, host_gather(host_ids))
            out_box[0] = out

        timer = TorchCudaTimer() if cuda else CpuTimer()
        flush = CacheFlush([device] if cuda else ())
        for w in range(min(job.warmup, len(prepared))):   # kernels, page-locking
            load(prepared[w])
            if floors:
                load(floors[w])

        def timed_pass(items) -> list[float]:
            """Every region once (after an L2 flush: the warm-up and earlier passes read the same
            rows), barrier-bracketed; this rank's seconds per region."""
            flush()
            if cuda:
                torch.cuda.synchronize(device)
            dist.barrier()
            times = []
            for step in range(steps):
                item = items[step] if step < len(items) else None
                dist.barrier()
                t = timer.time((lambda: load(item)) if item is not None else (lambda: None))
                reduce_across_ranks(t)           # keeps the ranks in step, as a training step would
                if item is not None:
                    times.append(t)
            return times

        # correctness first, on an untimed pass over the checked regions
        checked, bad = 0, []
        limit = len(batches) if job.check_batches < 0 else job.check_batches
        for i, region in enumerate(regions):
            if i * k >= limit:
                break
            load(prepared[i])
            nodes = torch.from_numpy(np.concatenate(region).astype(np.int64)).to(device)
            checked += len(region)
            if not torch.equal(out_box[0], closed_form_rows(nodes, job.row_elems, tdtype)):
                bad.append(i)
        # every rank learns whether any rank gathered wrong rows
        flag = torch.tensor([len(bad)], dtype=torch.int64, device=device)
        dist.all_reduce(flag)
        if int(flag.item()):
            raise RuntimeError(f"{job.key}: measured gather returned wrong rows ({int(flag.item())} regions "
                               f"over all ranks; rank {me}: regions {bad[:5]})")
        repeats = max(1, int(job.repeats))
        region_s = [timed_pass(prepared) for _ in range(repeats)]
        floor_s = [timed_pass(floors) for _ in range(repeats)] if floors else []
        per_batch = [sum(p) / max(1, len(batches)) for p in region_s]
        floor_per_batch = [sum(p) / max(1, len(batches)) for p in floor_s]
        mean = float(np.median(per_batch)) if batches else 0.0
        spread = reduce_across_ranks(mean)
        return {"key": job.key, "rank": me, "batch_reads": reads, "region_s": region_s,
                "per_batch_s": per_batch, "mean_s": mean, "max_mean_s": spread.max,
                "floor_per_batch_s": floor_per_batch,
                "floor_s": float(np.median(floor_per_batch)) if floor_per_batch else None,
                "regions": len(regions), "batches": len(batches), "batches_per_region": k,
                "rows_per_region": float(np.mean([p[-1] for p in prepared])) if prepared else 0.0,
                "checked": checked, "store": store.describe(), "host": host.describe() if host is not None else "",
                "gather": "fused" if fused else "split", "device": rank.device, "flush_bytes": flush.flush_bytes}
    finally:
        if host is not None:
            host.close()
        store.close()
