"""The chase over the continuous store's mapping (XGNN Fig. 6(b): "pointer chasing of VMM with shared
handle"): one rank's shard of a continuous ``ShardedTable`` on the CUDA VMM backend
(impls/storage/vmm.py: every shard a ``cuMemCreate`` allocation exported as a POSIX file descriptor,
passed to the other ranks' processes and mapped with ``cuMemMap`` into one virtual range), read by
rank 0's GPU through its own mapping of that range.

Collective: every rank builds the table (a shard of the region's size on its own GPU, so that the
owner's memory is a peer's in another process, as in XGNN's inter-process case), then rank 0
chases over rank ``owner``'s shard: its own (``vmm_local``, still mapped through the range) or the
next rank's (``vmm_remote``, a handle imported from that rank's process). The table's 128-byte
rows are the chase's lines. On CPU ranks the continuous table is one /dev/shm file that every rank
maps, and the host probe chases over the owner's rows of it: a toy-scale stand-in (host memory
either way, no TLB of interest).
"""

from __future__ import annotations

from harness.errors import SkipPoint

from . import chain

LINE_INT64 = chain.LINE_WORDS           # a table row is one 128-byte line of 16 int64 words


class VmmChase:
    """Every rank's shard of one continuous table and, on rank 0, the probe over ``owner``'s shard
    (module doc). ``allocate`` and ``close`` are collective; ``probe`` is None on other ranks."""

    placement = ""

    def __init__(self, rank, owner: int):
        if rank is None:
            raise SkipPoint("the chase over the continuous store runs on ranks (one process per GPU)")
        if not 0 <= owner < rank.world_size:
            raise SkipPoint(f"the shard of rank {owner} needs {owner + 1} ranks, the run has {rank.world_size}")
        self.rank, self.owner = rank, owner
        self.table = None
        self.probe = None

    def allocate(self, size_bytes: int, salt: int, chaser_reserve_bytes: int = 0) -> None:
        """Every rank allocates a shard of ``size_bytes`` (rounded up to whole allocation granules)
        in the continuous table; rank 0 fills ``owner``'s shard with the chain's words.
        ``chaser_reserve_bytes``: what rank 0's GPU must keep free beside its shard (a TLB flush)."""
        from harness import ranks
        from impls.core.layout import TableSpec
        from impls.storage import ShardedTable

        reserve = chaser_reserve_bytes if self.rank.rank == 0 else 0
        reason = chain.layout_refusal(size_bytes, 1) or self._memory_refusal(size_bytes + reserve)
        reasons = [r for r in ranks.all_gather(self.rank, reason) if r]
        if reasons:
            raise SkipPoint(reasons[0])
        lines = size_bytes // chain.LINE_BYTES
        spec = TableSpec(self.rank.world_size * lines, LINE_INT64, "int64")
        self.table = ShardedTable(self.rank, spec, mode="continuous", backend="vmm")
        start, end = self.table.partition.bounds(self.owner)
        if self.rank.rank == 0:
            self.probe = self._probe(start, end, salt)
            self.placement = self.probe.placement
        ranks.all_gather(self.rank, None)          # the owner's shard holds the chain before anyone reads

    def _memory_refusal(self, size_bytes: int) -> str | None:
        if self.rank.device != "cuda":
            return None
        import torch

        from .memory import device_refusal

        free = torch.cuda.mem_get_info(self.rank.torch_device())[0]
        return device_refusal(size_bytes, [free])

    def _probe(self, start: int, end: int, salt: int):
        words = (end - start) * LINE_INT64
        if self.rank.device != "cuda":
            from .host import HostChaseProbe

            probe = HostChaseProbe()
            probe.placement = (f"rank {self.owner}'s rows of a continuous store in host shared memory (/dev/shm), "
                               "read by rank 0 (CPU ranks)")
            probe.attach(self.table.whole[start:end].reshape(-1).numpy().view("uint64"), salt)
            return probe
        from .gpu import MappedProbe

        owner_gpu = self.owner                    # one GPU per rank: rank r's shard is on GPU r
        where = "its own" if self.owner == 0 else f"rank {self.owner}'s (an imported POSIX-fd handle)"
        probe = MappedProbe([self.table.peer_ptrs[self.owner]], [owner_gpu], chaser=self.rank.local_rank,
                            kind=f"CUDA VMM range of the continuous store, {where} shard")
        probe.attach(words, salt)
        return probe

    def close(self) -> None:
        """Collective: rank 0 lets go of the probe, then every rank unmaps and frees together."""
        if self.probe is not None:
            self.probe.close()
            self.probe = None
        if self.table is not None:
            self.table.close()
            self.table = None
