"""`p2p_push`: the global gather pushed by the rows' owners, with NVLink stores instead of loads.

The one-kernel gather (`p2p_shared`) pulls: each rank's SMs load their rows from the owners'
shards, and every remote load sends a request packet over the links for each response. The NVML
link counters put that at 1.27-1.30 raw link bytes per payload byte, against 1.06 for a copy
engine's writes. Here the owners write instead (impls/gather/kernels/push.cu):

1. ``push_requests`` (each rank as requester): every id becomes an 8-byte request, (position << 32)
   | row within its owner's shard, stored into the owner's inbox, with a count per owner;
2. a barrier over the ranks, on the stream and without host synchronization (symmetric memory's
   signal pads, :meth:`impls.storage.GpuBuffers.barrier`);
3. ``push_rows_*`` (each rank as owner): every requested row read from the local shard and
   written to its requester's output buffer at its position. Mode ``sm``: a warp writes a row with
   16-byte stores; mode ``tma``: the warp stages the row in shared memory and the bulk copy unit
   writes the whole row with one instruction (rows of 16-byte multiples on compute capability
   9.0; otherwise the ``sm`` kernel runs and :meth:`PushGather.describe` says so);
4. a barrier: every owner's rows have arrived.

Besides the rows, a call costs 8 bytes of request per row (1.6% of a 512-byte row, written once
over the links), two barriers and three launches (zeroing the counts, requests, rows).

Each rank's workspace (every rank maps every other's) holds its counts, its inbox (a region of
``capacity`` requests per requester) and its output buffer of ``capacity`` rows. Ranks agree on the
capacity when they build the gatherer: the largest any asks for (``capacity``: the most ids a call
will gather, as the benchmark knows; default about 64 MiB of rows). The store is a chunked
:class:`~impls.storage.ShardedTable`, so the peers' shards are mapped too: a rank whose call exceeds
the capacity posts no requests and pulls its rows with the one-kernel gather, while the others
still push (describe() counts such calls).

The rows returned are a view of the output buffer: valid until this gatherer's next call, for work
on the same stream (copy them to keep them). ``gather`` is collective: every rank calls it the same
number of times.

CPU ranks: the same protocol in host shared memory (impls.storage.SharedHostArray): requests written
into the owners' inboxes, a barrier, each owner's rows copied into the requesters' output buffers
with index operations, a barrier. The kernels themselves run on a CPU in the tests through the
CUDA emulator (tests/gather/test_push_kernels.py).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from harness.errors import SkipPoint
from harness.needs import Needs
from harness.ranks import all_gather, broadcast
from harness.registry import Variant, register_impl
from impls.core import cuda
from impls.core.layout import TableSpec, check_ids
from impls.core.row_gather import (BULK_SHARED_BYTES, DEFAULT_LAUNCH, Launch, gather_into, parse_launch,
                                   vector_bytes)
from impls.storage import GpuBuffers, ShardedTable, SharedHostArray

from .p2p_shared import gather_mapped

KERNELS = cuda.KernelDir(Path(__file__).with_name("kernels"))
MODES = ("sm", "tma")
MAX_RANKS = 16                       # push.cu's tables
ALIGN = 256                          # workspace regions start on 256-byte boundaries
DEFAULT_CAPACITY_BYTES = 64 << 20
REQUEST_THREADS = 256
_U32 = (1 << 32) - 1


def default_capacity(row_bytes: int) -> int:
    """Rows per call the workspace holds when the caller names no capacity."""
    return max(1 << 16, min(1 << 20, DEFAULT_CAPACITY_BYTES // row_bytes))


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class WorkspaceLayout:
    """Byte offsets of one rank's workspace: counts (u32 per owner), inbox (u64 per request,
    ``capacity`` per requester), out (``capacity`` rows)."""

    def __init__(self, world: int, capacity: int, row_bytes: int):
        self.world, self.capacity, self.row_bytes = world, capacity, row_bytes
        self.counts = 0
        self.inbox = _aligned(world * 4)
        self.out = _aligned(self.inbox + world * capacity * 8)
        self.nbytes = _aligned(self.out + capacity * row_bytes)


class PushWorkspace:
    """Every rank's workspace, mapped by every rank (collective constructor and ``close``):
    torch symmetric memory on GPUs, one /dev/shm file holding every rank's on CPU ranks."""

    def __init__(self, rank, layout: WorkspaceLayout, spec: TableSpec):
        self.rank, self.layout, self.spec = rank, layout, spec
        self.device = rank.torch_device()
        world, nbytes = rank.world_size, layout.nbytes
        self._gpu = self._host = None
        if self.device.type == "cuda":
            self._gpu = GpuBuffers(rank, nbytes, torch.uint8, shared=True)
            self._gpu.map_peers()
            self.views = list(self._gpu.views)
            self.bases = list(self._gpu.ptrs)
        else:
            tag = broadcast(rank, uuid.uuid4().hex)
            self._host = SharedHostArray(rank, tag, "push-workspace", world * nbytes, torch.uint8, register=False)
            self.views = [self._host.tensor[r * nbytes:(r + 1) * nbytes] for r in range(world)]
            self.bases = [int(v.data_ptr()) for v in self.views]

    def counts(self, r: int) -> torch.Tensor:
        """Rank r's counts: the requests it posted to each owner this call."""
        lay = self.layout
        return self.views[r][lay.counts:lay.counts + lay.world * 4].view(torch.int32)

    def inbox(self, r: int) -> torch.Tensor:
        """Rank r's inbox, [requester, slot]: (position << 32) | row within r's shard."""
        lay = self.layout
        return self.views[r][lay.inbox:lay.inbox + lay.world * lay.capacity * 8].view(torch.int64) \
            .view(lay.world, lay.capacity)

    def out(self, r: int) -> torch.Tensor:
        """Rank r's output buffer, ``capacity`` rows."""
        lay = self.layout
        return self.views[r][lay.out:lay.out + lay.capacity * lay.row_bytes].view(self.spec.torch_dtype) \
            .view(lay.capacity, self.spec.row_elems)

    def pointer(self, r: int, region: str) -> int:
        return self.bases[r] + getattr(self.layout, region)

    def barrier(self) -> None:
        """Every rank's writes before it (local or into a peer's workspace) visible after it."""
        if self._gpu is not None:
            self._gpu.barrier()
        else:
            dist.barrier()

    def close(self) -> None:
        self.views = []
        if self._gpu is not None:
            self._gpu.close()
        if self._host is not None:
            self._host.close()
        self._gpu = self._host = None


# --- the kernels' launches (GPU tensors, or CPU tensors under the tests' emulator) -------------

def post_requests(ids: torch.Tensor, rows_per_rank: int, world: int, me: int, capacity: int,
                  inbox_table: torch.Tensor, counts: torch.Tensor) -> None:
    """Requester ``me``: each id's request into its owner's inbox (``inbox_table[o]``: owner o's
    inbox base), ``counts[o]`` += requests to o (zeroed by the caller)."""
    n = ids.numel()
    if n == 0:
        return
    grid = cuda.grid_for(ids.device, n, REQUEST_THREADS)
    KERNELS.launch(ids.device, "push.cu", "push_requests", grid, REQUEST_THREADS, (
        cuda.ptr(ids), np.uint32(n), np.uint32(rows_per_rank), np.int32(world), np.int32(me),
        np.uint32(capacity), cuda.ptr(inbox_table), cuda.ptr(counts)))


def bulk_threads(row_bytes: int, launch: Launch) -> int:
    """Threads per block of ``push_rows_bulk`` (two row stages per warp in the shared memory a
    block gets without a raised limit), 0 where its rows do not suit the bulk copy."""
    if row_bytes % 16:
        return 0
    warps = min(launch.threads // 32, BULK_SHARED_BYTES // (2 * row_bytes))
    return 32 * warps if warps >= 1 else 0


def effective_mode(mode: str, row_bytes: int, device, launch: Launch = DEFAULT_LAUNCH) -> str:
    """The kernel that runs for ``mode``: ``tma`` needs rows of 16-byte multiples and compute
    capability 9.0 (the emulator runs its plain copies)."""
    if mode != "tma" or not bulk_threads(row_bytes, launch):
        return "sm"
    if cuda.emulated() or not isinstance(device, torch.device) or device.type != "cuda":
        return "tma"
    return "tma" if cuda.compute_capability(device)[0] >= 9 else "sm"


def push_rows(mode: str, device, peers: torch.Tensor, world: int, me: int, capacity: int, inbox: int,
              shard: int, row_bytes: int, launch: Launch = DEFAULT_LAUNCH) -> None:
    """Owner ``me``: every request in its inbox (``inbox``: its address) answered with the row of
    the local shard (``shard``), written to the requester's output buffer. ``peers``: int64
    [2 * world], each requester's counts address then its output buffer's address."""
    blocks = cuda.sm_count(device) * launch.blocks_per_sm
    if effective_mode(mode, row_bytes, device, launch) == "tma":
        threads = bulk_threads(row_bytes, launch)
        KERNELS.launch(device, "push.cu", "push_rows_bulk", blocks, threads, (
            cuda.ptr(peers), np.int32(world), np.int32(me), np.uint32(capacity), np.uint64(inbox),
            np.uint64(shard), np.uint32(row_bytes)), shared_mem=(threads // 32) * 2 * row_bytes)
        return
    width = vector_bytes(row_bytes)
    KERNELS.launch(device, "push.cu", f"push_rows_v{width}", blocks, launch.threads, (
        cuda.ptr(peers), np.int32(world), np.int32(me), np.uint32(capacity), np.uint64(inbox),
        np.uint64(shard), np.uint32(row_bytes // width), np.uint32(row_bytes)),
        options=(f"-DUNROLL={launch.unroll}",))


def largest_capacity(world: int, row_bytes: int) -> int:
    """The kernels count a call's work items in 32 bits: capacity x world x vectors per row."""
    return _U32 // (world * (row_bytes // vector_bytes(row_bytes)))


class PushGather:
    def __init__(self, rank, spec: TableSpec, mode: str = "sm", capacity: int | None = None,
                 launch: str | None = None):
        if mode not in MODES:
            raise ValueError(f"p2p_push mode must be one of {', '.join(MODES)}, not {mode!r}")
        world = rank.world_size
        if world > MAX_RANKS:
            raise SkipPoint(f"p2p_push takes at most {MAX_RANKS} ranks")
        rank.require_one_node("p2p_push (owners store rows into the askers' buffers)")
        self.rank, self.spec, self.mode = rank, spec, mode
        self.launch = parse_launch(launch)
        self.store = ShardedTable(rank, spec, "chunked")
        self.device = self.store.device
        self.rows_per_rank = self.store.partition.rows_per_rank
        if world * self.rows_per_rank > _U32:
            self.store.close()
            raise SkipPoint("p2p_push's kernels take tables of fewer than 2**32 rows")
        asked = int(capacity) if capacity else default_capacity(spec.row_bytes)
        self.capacity = min(max(all_gather(rank, asked)), largest_capacity(world, spec.row_bytes))
        self.ws = PushWorkspace(rank, WorkspaceLayout(world, self.capacity, spec.row_bytes), spec)
        self.counts, self.out = self.ws.counts(rank.rank), self.ws.out(rank.rank)
        self.calls = self.pulled = 0
        if self.device.type == "cuda":
            me = rank.rank
            self.inbox_table = torch.tensor([self.ws.pointer(o, "inbox") for o in range(world)],
                                            dtype=torch.int64, device=self.device)
            self.peer_table = torch.tensor([self.ws.pointer(q, "counts") for q in range(world)]
                                           + [self.ws.pointer(q, "out") for q in range(world)],
                                           dtype=torch.int64, device=self.device)
            parts, _ = self.store.kernel_parts()
            self.pull_table = torch.tensor(parts, dtype=torch.int64, device=self.device)
            self.shard_ptr = int(parts[me])

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        if check:
            check_ids(ids, self.spec.num_rows)
        ids = ids.to(self.device, torch.int64).contiguous()
        n = ids.numel()
        over = n > self.capacity           # this rank pulls; its peers still push to the others
        self.calls += 1
        self.pulled += over
        me, world = self.rank.rank, self.rank.world_size
        self.counts.zero_()
        if self.device.type == "cuda":
            if not over:
                post_requests(ids, self.rows_per_rank, world, me, self.capacity, self.inbox_table, self.counts)
            self.ws.barrier()
            push_rows(self.mode, self.device, self.peer_table, world, me, self.capacity,
                      self.ws.pointer(me, "inbox"), self.shard_ptr, self.spec.row_bytes, self.launch)
            self.ws.barrier()
            if over:
                out = torch.empty((n, self.spec.row_elems), dtype=self.spec.torch_dtype, device=self.device)
                return gather_into(out, self.pull_table, self.rows_per_rank, ids, self.spec.row_bytes, self.launch)
            return self.out[:n]
        if not over:
            self._post_on_host(ids)
        self.ws.barrier()
        self._push_on_host()
        self.ws.barrier()
        if over:
            out = torch.empty((n, self.spec.row_elems), dtype=self.spec.torch_dtype)
            return gather_mapped(self.store, ids, out)
        return self.out[:n]

    def _post_on_host(self, ids: torch.Tensor) -> None:
        """push_requests with index operations: the same requests in the same inboxes."""
        me = self.rank.rank
        owner = torch.div(ids, self.rows_per_rank, rounding_mode="floor")
        requests = (torch.arange(ids.numel(), dtype=torch.int64) << 32) | (ids - owner * self.rows_per_rank)
        for o in range(self.rank.world_size):
            mine = requests[owner == o]
            self.ws.inbox(o)[me, :mine.numel()] = mine
            self.counts[o] = mine.numel()

    def _push_on_host(self) -> None:
        """push_rows with index operations: each requester's rows into its output buffer."""
        me = self.rank.rank
        inbox = self.ws.inbox(me)
        for q in range(self.rank.world_size):
            count = int(self.ws.counts(q)[me])
            if count:
                requests = inbox[q, :count]
                rows = self.store.local.index_select(0, requests & _U32)
                self.ws.out(q).index_copy_(0, requests >> 32, rows)

    def describe(self) -> str:
        how = {"sm": "a warp's 16-byte stores per row", "tma": "one bulk-copy store per row"}
        if self.device.type == "cuda":
            ran = effective_mode(self.mode, self.spec.row_bytes, self.device, self.launch)
            b, t, u = self.launch
            kernel = f"{how[ran]} ({b} blocks per SM"
            kernel += f" x {bulk_threads(self.spec.row_bytes, self.launch)} threads)" if ran == "tma" else \
                f" x {t} threads, {u} rows in flight per thread)"
            if ran != self.mode:
                kernel += f"; mode {self.mode} does not apply to these rows here"
        else:
            kernel = "index operations on host shared memory"
        pulled = f"; {self.pulled} of {self.calls} calls over capacity, pulled" if self.pulled else ""
        return (f"{self.store.describe()}; requests posted to the owners' inboxes, rows pushed by their "
                f"owners into each requester's {self.capacity}-row output buffer with {kernel}{pulled}")

    def close(self) -> None:
        """Collective: every rank's pushes are done before any workspace goes."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        dist.barrier()
        self.counts = self.out = None
        self.ws.close()
        self.store.close()


@register_impl("gather", "p2p_push",
               needs=Needs(devices=("cpu", "cuda"), cuda_packages=("cupy",), peer_access=True),
               summary="rows pushed by their owners: requests posted to the owners' inboxes, each owner "
                       "writes its rows into the requesters' output buffers (NVLink stores by SMs, or "
                       "bulk-copy stores: mode tma)",
               label="ours p2p_push", order=20, traits=("capacity",), variants=(
                   Variant("sm", {"mode": "sm"}, "ours: pushed, NVLink stores", traits=frozenset({"launch"})),
                   Variant("tma", {"mode": "tma"}, "ours: pushed, bulk-copy stores", ("cuda",),
                           frozenset({"launch", "bulk_copy"}))))
def make(rank, spec: TableSpec, mode: str = "sm", capacity: int | None = None, launch: str | None = None, **_):
    return PushGather(rank, spec, mode, capacity, launch)
