"""Rank functions for the CUDA VMM continuous-addressing tests (module level: spawned ranks
import them by name). Each returns a plain dict, or {"skipped": reason} on every rank where
the driver refuses (the store raises SkipPoint on all ranks together)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from harness import registry
from harness.errors import SkipPoint
from impls.core.layout import TableSpec


def _row_plus_column(ids: torch.Tensor, row_elems: int) -> torch.Tensor:
    """WholeGraph's test content: row i, column j holds i + j (exact in float32 below 2**24)."""
    cols = torch.arange(row_elems, device=ids.device, dtype=torch.int64)
    return (ids.to(torch.int64).unsqueeze(1) + cols).to(torch.float32)


def _view_at(ptr: int, rows: int, row_elems: int, device) -> torch.Tensor:
    """float32 rows at a raw address of this rank's virtual range (no copy)."""
    import cupy as cp

    nbytes = rows * row_elems * 4
    mem = cp.cuda.UnownedMemory(ptr, nbytes, None, device_id=device.index)
    raw = cp.ndarray((rows, row_elems), dtype=cp.float32, memptr=cp.cuda.MemoryPointer(mem, 0))
    out = torch.from_dlpack(raw)
    assert out.device == device and out.data_ptr() == ptr
    return out


def continuous_gather(ctx, num_rows: int, row_elems: int, n_ids: int, mode: str, seed: int) -> dict:
    """Fill every rank's shard with row + column, then gather random ids (with every rank's first
    and last row) through the one-pointer kernel, the whole-table view and raw addresses
    base + row * row_bytes; compare with the closed form. Also: where the memory is."""
    device = ctx.torch_device()
    spec = TableSpec(num_rows, row_elems, "float32")
    # NCCL sets up its communicator (channel buffers outside torch's allocator, hundreds of MiB on
    # 4 GPUs) at the first collective: do that before counting what the store takes
    dist.all_reduce(torch.zeros(1, device=device))
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    free_before = torch.cuda.mem_get_info(device)[0]
    try:
        g = registry.get_impl("gather", "p2p_shared").factory(ctx, spec, mode=mode, backend="vmm")
    except SkipPoint as exc:
        return {"skipped": str(exc)}
    try:
        store = g.store
        torch.cuda.empty_cache()
        allocated = free_before - torch.cuda.mem_get_info(device)[0]
        lay = store._vmm.layout
        rpp = store.partition.rows_per_rank
        row_bytes = spec.row_bytes
        assert rpp == lay.rows_per_rank and (rpp * row_bytes) % lay.granularity == 0
        assert store.peer_ptrs == [store.base_ptr + r * rpp * row_bytes for r in range(ctx.world_size)]
        parts = g.table.tolist()
        assert parts == ([store.base_ptr] if mode == "continuous" else store.peer_ptrs), parts
        # fill this rank's rows with row + column through the local view (its own GPU memory)
        start, end = store.start, store.end
        if end > start:
            store.local[: end - start] = _row_plus_column(torch.arange(start, end, device=device), row_elems)
        torch.cuda.synchronize(device)
        dist.barrier()
        bounds = [store.partition.bounds(r) for r in range(ctx.world_size)]
        edges = [b for s, e in bounds if e > s for b in (s, e - 1)]
        gen = torch.Generator().manual_seed(seed + 31 * ctx.rank)
        ids = torch.cat([torch.randint(0, num_rows, (n_ids,), generator=gen), torch.tensor(edges)]).to(device)
        expect = _row_plus_column(ids, row_elems)
        rows = g.gather(ids)
        assert torch.equal(rows, expect), f"kernel: {int((rows != expect).any(1).sum())} rows differ"
        if store.whole is not None:
            assert torch.equal(store.whole.index_select(0, ids), expect), "whole-table view"
        # every rank reads every other rank's first and last row at base + global row * row_bytes
        seen = {}
        for r, (s, e) in enumerate(bounds):
            for row in ({s, e - 1} if e > s else set()):
                got = _view_at(store.base_ptr + row * row_bytes, 1, row_elems, device)
                want = _row_plus_column(torch.tensor([row], device=device), row_elems)
                assert torch.equal(got, want), f"rank {ctx.rank} reading rank {r}'s row {row}"
                seen[row] = r
        torch.cuda.synchronize(device)
        return {"rows_per_rank": rpp, "bounds": bounds, "seen": seen, "shard_bytes": lay.shard_bytes,
                "allocated": allocated, "describe": g.describe(), "checked": int(ids.numel())}
    finally:
        g.close()


def close_reopen(ctx, num_rows: int, row_elems: int, cycles: int) -> dict:
    """Open, gather, close ``cycles + 1`` times; free GPU memory and open file descriptors
    after every cycle (the first one loads kernels and pools: the baseline is after it)."""
    device = ctx.torch_device()
    spec = TableSpec(num_rows, row_elems, "float32")
    free, fds = [], []
    for cycle in range(cycles + 1):
        try:
            g = registry.get_impl("gather", "p2p_shared").factory(ctx, spec, mode="continuous")
        except SkipPoint as exc:
            return {"skipped": str(exc)}
        try:
            ids = torch.randint(0, num_rows, (4096,), device=device)
            rows = g.gather(ids)
            assert rows.shape == (4096, row_elems)
            shard = g.store._vmm.layout.shard_bytes
        finally:
            g.close()
        del g, rows
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        dist.barrier()
        free.append(torch.cuda.mem_get_info(device)[0])
        fds.append(len(os.listdir("/proc/self/fd")))
    return {"free": free, "fds": fds, "shard_bytes": shard}


def vmm_chase(ctx, size_bytes: int, owner: int, salt: int) -> dict:
    """XGNN Fig. 6(b)'s probe: every rank's shard in the continuous store, rank 0 chasing over
    ``owner``'s. Rank 0's chain is checked against the Python reference; the owner then reads its own
    shard and finds the chain's words there (rank 0 wrote them through its mapping, into the
    owner's GPU memory); every rank says how much of its GPU the store took."""
    from experiments.kit.probes import verify_chain
    from harness import ranks
    from impls.probes import chain

    device = ctx.torch_device()
    dist.all_reduce(torch.zeros(1, device=device))           # NCCL's buffers before counting
    torch.cuda.synchronize(device)
    free_before = torch.cuda.mem_get_info(device)[0]
    try:
        region = registry.get_impl("probes", "vmm_remote" if owner else "vmm_local").factory("cuda", [0, 1],
                                                                                              rank=ctx)
        region.allocate(size_bytes, salt)
    except SkipPoint as exc:
        return {"skipped": str(exc)}
    try:
        out = {"allocated": free_before - torch.cuda.mem_get_info(device)[0]}
        if ctx.rank == 0:
            probe = region.probe
            verify_chain(probe, 5_000, 11)                       # raises on a wrong word
            out.update(placement=probe.placement, part_elems=probe.part_elems, owners=probe.part_owner,
                       ptr=probe.part_ptrs[0], base=region.table.base_ptr)
        ranks.all_gather(ctx, None)
        if ctx.rank == owner:
            local = region.table.local.reshape(-1)[:1000].cpu().view(torch.int64).tolist()
            out["holds_chain"] = [w & chain.MASK for w in local] == [chain.word(i, salt) for i in range(1000)]
        return out
    finally:
        region.close()
