"""MG-GCN's staged SpMM (Sec. 4.1, 4.3): ``C^i = sum_j A^{ij} H^j`` over the ranks' row blocks.

Rank i holds H^i; every other block reaches it once per SpMM, whole and in float32, as in the
paper. Three choices make a schedule, each a piece of this module:

- the transport (``TRANSPORTS``): ``broadcast``, the paper's: at its turn rank j broadcasts H^j
  through the process group (NCCL on GPUs, gloo on CPU ranks), P turns per SpMM, one of them the
  rank's own; or ``peer``: every rank copies the blocks it needs out of the peers' buffers, which
  every rank maps (torch symmetric memory on GPUs, copied by the copy engines over NVLink, no SM
  taken from the multiplies; /dev/shm on CPU ranks), block (i+s) mod P at step s, so that at every
  step every rank receives one block: P-1 steps. Both move the same bytes;
- the order of the multiplies: the local block first (it needs nothing from anyone, so it runs
  while the first remote blocks arrive), then the remote blocks as they arrive; or the paper's
  order (``local_first=False``, broadcast only): stage j multiplies block j;
- the lanes: with overlap, transfers on a communication lane and multiplies on the compute lane,
  two receive buffers, a transfer into a buffer waiting for the multiply that read the buffer
  before (:class:`StreamLanes`: two CUDA streams ordered by events, no host waits;
  :class:`InlineLanes`: CPU ranks, gloo's asynchronous broadcast running on gloo's thread while
  the host multiplies). Without overlap, one lane: transfer and multiply in turn.
"""

from __future__ import annotations

from dataclasses import dataclass

TRANSPORTS = ("broadcast", "peer")


@dataclass(frozen=True)
class Transfer:
    block: int                # whose rows move: rank ``block``'s H^block
    remote: int | None        # index among the blocks this rank receives, in arrival order;
                              # None: this rank's own turn to broadcast (it receives nothing)

    @property
    def slot(self) -> int | None:
        """The receive buffer (0: BC1, 1: BC2) the block lands in."""
        return None if self.remote is None else self.remote % 2


def stage_plan(transport: str, rank: int, world: int, local_first: bool) -> tuple[list[int], list[Transfer]]:
    """(the blocks in the order this rank multiplies them, its transfers in the order it posts them).

    Broadcasts are collectives: every rank posts them in the same order (root 0, 1, ...).
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {TRANSPORTS}, got '{transport}'")
    if transport == "peer":
        if not local_first:
            raise ValueError("peer copies multiply the local block first (nothing to wait for)")
        blocks = [(rank + step) % world for step in range(1, world)]
        return [rank] + blocks, [Transfer(block, k) for k, block in enumerate(blocks)]
    transfers, received = [], 0
    for root in range(world):
        if root == rank:
            transfers.append(Transfer(root, None))
        else:
            transfers.append(Transfer(root, received))
            received += 1
    remote = [t.block for t in transfers if t.remote is not None]
    return ([rank] + remote if local_first else list(range(world))), transfers


# --- lanes ----------------------------------------------------------------------------------------

class StreamLanes:
    """GPUs: multiplies on the stream current when the SpMM starts, transfers on a second stream;
    every dependency is an event one stream waits for, none is a host wait.

    ``cuda``: the module providing Stream, Event, current_stream and stream (torch.cuda; tests
    pass fake streams that count host synchronizations and record the order of every operation).
    """

    deferred_arrivals = False

    def __init__(self, device, cuda=None):
        if cuda is None:
            import torch

            cuda = torch.cuda
        self.cuda = cuda
        self.device = device
        self.comm = cuda.Stream(device)
        self.compute = None
        self._trace = getattr(cuda, "trace_op", None)      # fake streams: name every operation

    def start(self) -> None:
        self.compute = self.cuda.current_stream(self.device)

    def stream(self, lane: str):
        return self.compute if lane == "compute" else self.comm

    def run(self, lane: str, label: tuple, fn):
        """Enqueue ``fn``'s work on ``lane`` (``label`` names it for tests' traces)."""
        stream = self.stream(lane)
        if self._trace is not None:
            self._trace(stream, label)
        with self.cuda.stream(stream):
            return fn()

    def signal(self, lane: str):
        """A token that is done once everything enqueued on ``lane`` so far is."""
        event = self.cuda.Event()
        event.record(self.stream(lane))
        return event

    def wait(self, lane: str, token) -> None:
        """Work enqueued on ``lane`` from now on starts after ``token`` is done."""
        if token is not None:
            self.stream(lane).wait_event(token)

    def arrival(self, handle):
        """The token of the transfer just enqueued on the communication lane."""
        return self.signal("comm")


class InlineLanes:
    """No second stream: work runs where it is enqueued (CPU ranks; GPUs without overlap). A
    transfer may return an asynchronous handle (gloo's broadcast with ``async_op``): it runs on
    gloo's thread until its arrival is waited for, so the host multiplies meanwhile."""

    deferred_arrivals = True

    def __init__(self):
        self._pending: list = []

    def start(self) -> None:
        self._pending = []

    def stream(self, lane: str):
        return None

    def run(self, lane: str, label: tuple, fn):
        return fn()

    def signal(self, lane: str):
        return tuple(self._pending) if lane == "comm" else None

    def wait(self, lane: str, token) -> None:
        if lane == "compute" and token:
            for handle in token:
                handle.wait()

    def arrival(self, handle):
        if handle is None:
            return ()
        self._pending.append(handle)
        return (handle,)


# --- transports -----------------------------------------------------------------------------------

class BroadcastTransport:
    """The paper's: at its turn, rank j broadcasts H^j to every rank."""

    name = "broadcast"

    def __init__(self, asynchronous: bool = False):
        self.asynchronous = asynchronous        # gloo: post now, wait for the handle later

    def allocate(self, numel: int, device):
        import torch

        return torch.empty(numel, dtype=torch.float32, device=device)

    def begin(self) -> None:
        pass

    def end(self) -> None:
        pass

    def send(self, transfer: Transfer, destination, local_rows):
        import torch.distributed as dist

        tensor = local_rows if transfer.remote is None else destination
        return dist.broadcast(tensor, src=transfer.block, async_op=self.asynchronous)

    def close(self) -> None:
        pass


class PeerCopyTransport:
    """Every rank copies the blocks it needs out of the peers' memory.

    The buffers an SpMM reads its rows from (the engine's buffer arena, X) are allocated here, the
    same size on every rank, as memory every rank maps: a rank finds block j at the offset its own
    view has in its own allocation. A barrier before the copies (every rank's rows are written) and
    after them (no rank overwrites rows a peer still copies) brackets each SpMM's transfers; on
    GPUs both are device-side barriers on the communication stream.
    """

    name = "peer"

    def __init__(self, rank: int, world: int, part_rows: list[int], device):
        import torch

        from harness.launcher import RankContext

        self.device = torch.device(device)
        cuda = self.device.type == "cuda"
        self.rank_ctx = RankContext(rank, world, self.device.index or 0, "cuda" if cuda else "cpu",
                                    "nccl" if cuda else "gloo")
        self.part_rows = list(part_rows)
        self._regions: list[tuple[object, list]] = []      # (owner, every rank's flat view)
        self._owners: list = []

    def allocate(self, numel: int, device=None):
        """A flat float32 region of ``numel`` elements on every rank (collective: every rank asks
        for the same size in the same order); returns this rank's part."""
        import torch

        from impls.storage import GpuBuffers, SharedHostArray

        ctx = self.rank_ctx
        if ctx.device == "cuda":
            owner = GpuBuffers(ctx, numel, torch.float32, shared=True)
            owner.map_peers()
            views = list(owner.views)
        else:
            from harness.ranks import broadcast

            import uuid

            tag = broadcast(ctx, uuid.uuid4().hex if ctx.rank == 0 else None)
            owner = SharedHostArray(ctx, f"mggcn-{tag}", f"region{len(self._regions)}",
                                    ctx.world_size * numel, torch.float32, register=False)
            views = [owner.tensor[r * numel:(r + 1) * numel] for r in range(ctx.world_size)]
        self._owners.append(owner)
        self._regions.append((views[ctx.rank], views))
        return views[ctx.rank]

    def peer_rows(self, local_rows, block: int):
        """Rank ``block``'s copy of the view ``local_rows`` (its rows of the same buffer)."""
        if not local_rows.is_contiguous():
            raise ValueError("peer copies read contiguous rows")
        width = local_rows.shape[1]
        for local, views in self._regions:
            offset = local_rows.data_ptr() - local.data_ptr()
            if 0 <= offset < local.numel() * local.element_size():
                start = offset // local.element_size()
                return views[block][start:start + self.part_rows[block] * width].view(-1, width)
        raise ValueError("the rows of a staged SpMM must live in memory the peers map")

    def _barrier(self) -> None:
        if self.rank_ctx.device == "cuda":
            self._owners[0].barrier()
        else:
            import torch.distributed as dist

            dist.barrier()

    def begin(self) -> None:
        self._barrier()

    def end(self) -> None:
        self._barrier()

    def send(self, transfer: Transfer, destination, local_rows):
        destination.copy_(self.peer_rows(local_rows, transfer.block))
        return None

    def close(self) -> None:
        for owner in self._owners:
            owner.close()
        self._owners, self._regions = [], []


# --- the staged SpMM ------------------------------------------------------------------------------

class StagedSpmm:
    """``out = sum_j tiles[j] @ H^j`` on this rank, H^j being rank j's rows (this rank's: the rows
    passed in), by the schedule above. ``arena`` hands out the receive buffers (BC1, BC2),
    ``timeline`` records every transfer and multiply."""

    def __init__(self, *, rank: int, world: int, part_rows: list[int], transport, lanes, overlap: bool,
                 local_first: bool, arena, timeline):
        self.rank, self.world, self.part_rows = rank, world, list(part_rows)
        self.transport, self.lanes = transport, lanes
        self.overlap, self.local_first = overlap, local_first
        self.arena, self.timeline = arena, timeline
        self.order, self.transfers = stage_plan(transport.name, rank, world, local_first)
        self._written = False

    def __call__(self, tiles, local_rows, out, tag: str) -> None:
        self._written = False          # the first multiply overwrites ``out`` (beta = 0)
        self._received = []
        self.lanes.start()
        if self.world == 1:
            self._multiply(tiles, self.rank, local_rows, out, tag, None)
        elif self.overlap:
            self._overlapped(tiles, local_rows, out, tag)
        else:
            self._serial(tiles, local_rows, out, tag)
        if not self._written:           # every tile was empty
            self.lanes.run("compute", ("zero",), out.zero_)
        self.arena.release(self._received)     # no-op for the shared receive buffers

    def _multiply(self, tiles, block: int, rows_in, out, tag: str, slot) -> None:
        def multiply():
            start = self.timeline.mark(self.lanes.stream("compute"))
            if tiles[block]._nnz():
                # cuSPARSE SpMM on GPU: the first multiply writes C (beta = 0, C not read, no
                # zeroing pass), later ones accumulate (beta = 1)
                out.addmm_(tiles[block], rows_in, beta=1 if self._written else 0)
                self._written = True
            self.timeline.add(tag, block, "compute", start, self.timeline.mark(self.lanes.stream("compute")))

        self.lanes.run("compute", ("multiply", block, slot), multiply)

    def _destination(self, transfer: Transfer, width: int, local_rows):
        if transfer.remote is None:
            return local_rows
        tile = self.arena.tensor("BC1" if transfer.slot == 0 else "BC2", -1, self.part_rows[transfer.block], width)
        self._received.append(tile)
        return tile

    def _send(self, transfer: Transfer, destination, local_rows, tag: str):
        """Enqueue one transfer on the communication lane; returns its arrival token and the start
        mark of a comm interval still open (closed when its arrival is waited for), or None."""
        lanes, timeline = self.lanes, self.timeline

        def send():
            start = timeline.mark(lanes.stream("comm"))
            handle = self.transport.send(transfer, destination, local_rows)
            if handle is None or not lanes.deferred_arrivals:
                timeline.add(tag, transfer.block, "comm", start, timeline.mark(lanes.stream("comm")))
                start = None
            return lanes.arrival(handle), start

        return lanes.run("comm", ("transfer", transfer.block, transfer.slot), send)

    def _overlapped(self, tiles, local_rows, out, tag: str) -> None:
        lanes, transfers = self.lanes, self.transfers
        width = local_rows.shape[1]
        # the rows to send were written on the compute lane, and the previous SpMM's multiplies
        # read the receive buffers there: the transfers start after both
        lanes.wait("comm", lanes.signal("compute"))
        lanes.run("comm", ("begin",), self.transport.begin)
        rows_of, arrived, open_comm, freed = {}, {}, {}, {}
        posted = 0

        def post_ready():
            # post every transfer whose receive buffer is free, in the transport's order; the
            # buffer of received block k was read by the multiply of block k-2
            nonlocal posted
            while posted < len(transfers):
                transfer = transfers[posted]
                if transfer.remote is not None and transfer.remote >= 2:
                    if transfer.remote - 2 not in freed:
                        return
                    lanes.wait("comm", freed[transfer.remote - 2])
                rows_of[transfer.block] = self._destination(transfer, width, local_rows)
                arrived[transfer.block], open_comm[transfer.block] = self._send(
                    transfer, rows_of[transfer.block], local_rows, tag)
                posted += 1

        def close_comm(block):
            start = open_comm.pop(block, None)
            if start is not None:
                self.timeline.add(tag, block, "comm", start, self.timeline.mark())

        remote_index = {t.block: t.remote for t in transfers if t.remote is not None}
        post_ready()
        for block in self.order:
            if block == self.rank:
                self._multiply(tiles, block, local_rows, out, tag, None)
                continue
            lanes.wait("compute", arrived[block])
            close_comm(block)
            self._multiply(tiles, block, rows_of[block], out, tag, remote_index[block] % 2)
            freed[remote_index[block]] = lanes.signal("compute")
            post_ready()
        lanes.run("comm", ("end",), self.transport.end)
        # the sources and receive buffers are written again after this SpMM: only once every
        # transfer is done (this rank's own broadcast is waited for by no multiply)
        lanes.wait("compute", lanes.signal("comm"))
        for block in list(open_comm):
            close_comm(block)

    def _serial(self, tiles, local_rows, out, tag: str) -> None:
        """One lane: each transfer, then the multiply of what it brought."""
        width = local_rows.shape[1]
        self.lanes.run("comm", ("begin",), self.transport.begin)
        if self.local_first:
            self._multiply(tiles, self.rank, local_rows, out, tag, None)
        for transfer in self.transfers:
            rows = self._destination(transfer, width, local_rows)
            token, start = self._send(transfer, rows, local_rows, tag)
            self.lanes.wait("compute", token)
            if start is not None:
                self.timeline.add(tag, transfer.block, "comm", start, self.timeline.mark())
            if transfer.remote is not None:
                self._multiply(tiles, transfer.block, rows, out, tag, transfer.slot)
            elif not self.local_first:
                self._multiply(tiles, self.rank, local_rows, out, tag, None)
        self.lanes.run("comm", ("end",), self.transport.end)
