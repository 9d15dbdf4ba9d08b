"""Continuous addressing on GPUs: every rank's shard mapped into ONE virtual address range.

WholeGraph's blog names three addressing modes of its multi-GPU store: ``continuous`` (all
ranks' memory mapped into one virtual address range on every GPU, so a global row offset is a
plain pointer offset), ``chunked`` (a pointer per rank) and ``distributed`` (communication
only). This module builds the continuous range with the CUDA driver's virtual memory
management (VMM) API through ``cuda.bindings.driver`` (package cuda-bindings):

1. every rank allocates its shard with ``cuMemCreate`` (pinned memory on its own GPU, exportable
   as a POSIX file descriptor), ``VmmLayout.shard_bytes`` long, a multiple of the largest
   recommended allocation granularity over the ranks, and exports it with
   ``cuMemExportToShareableHandle`` -> a file descriptor;
2. the file descriptors travel between the ranks' processes over Unix domain sockets with
   SCM_RIGHTS (``exchange_fds``): each rank listens on a socket in a private temporary folder,
   the socket paths are all-gathered through torch.distributed, and every rank pushes its fd to
   every peer;
3. every rank reserves one range of ``world * shard_bytes`` (``cuMemAddressReserve``), imports
   each peer's fd (``cuMemImportFromShareableHandle``), maps rank r's allocation at
   ``r * shard_bytes`` (``cuMemMap``) and grants its own GPU read/write access to every segment
   (``cuMemSetAccess``);
4. ``release`` unmaps, frees the range and releases the handles; the caller brackets it with
   barriers (``ShardedTable.close``) so that no rank frees memory a peer may still read. The
   driver frees a rank's physical memory once no process holds a handle or a mapping of it.

Padding (``VmmLayout``): rows per rank are rounded up to a multiple of
``granularity / gcd(granularity, row_bytes)`` rows, so that a shard is a whole number of rows
and of granules at once. Rank r's rows then start at global row ``r * rows_per_rank``, i.e. at
byte ``r * shard_bytes`` of the range, exactly where its allocation is mapped: global row i lives
at ``base + i * row_bytes`` on every rank, and the gather kernel reads the whole table as ONE
part (continuous), or as ``base + r * shard_bytes`` per rank (chunked over the same range).
The price is uneven shards for tables much smaller than ``world * granule-rows`` (the last
ranks may then hold fewer rows, or none).

Every step that can fail is followed by an agreement among the ranks (an all-gather of each
rank's outcome), so all ranks undo what they built and raise together: ``SkipPoint`` with the
driver's own message where the driver refuses (CUDA_ERROR_NOT_SUPPORTED on some virtual
machines, no peer access between two GPUs, no POSIX fd handles, ranks on several hosts, no
cuda-bindings), ``RuntimeError`` otherwise. The runner then records a skipped or an error row.
"""

from __future__ import annotations

import array
import contextlib
import math
import os
import socket
import struct
import tempfile
import uuid
from dataclasses import dataclass

from harness import ranks
from harness.errors import SkipPoint

from impls.core.layout import RowPartition

# Driver results that mean "this machine cannot do it" (a skipped row), not "it broke".
REFUSALS = ("CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_INVALID_DEVICE",
            "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "CUDA_ERROR_NO_DEVICE")
# Every name of cuda.bindings.driver used here (checked against the real module by the tests).
DRIVER_NAMES = (
    "cuInit", "cuDeviceGet", "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease", "cuCtxPushCurrent", "cuCtxPopCurrent", "cuCtxSynchronize",
    "cuMemGetAllocationGranularity", "cuMemCreate", "cuMemExportToShareableHandle",
    "cuMemImportFromShareableHandle", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess",
    "cuMemUnmap", "cuMemAddressFree", "cuMemRelease", "cuGetErrorString",
    "CUresult", "CUdevice_attribute", "CUmemAllocationProp", "CUmemAllocationType",
    "CUmemLocationType", "CUmemAllocationHandleType", "CUmemAllocationGranularity_flags",
    "CUmemAccessDesc", "CUmemAccess_flags",
)
FD_TIMEOUT_S = 120.0
_HEADER = struct.Struct("<16sQ")   # receiver's token, sender's rank
_FD = array.array("i")


# --- layout: pure arithmetic --------------------------------------------------------------

def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def granule_rows(row_bytes: int, granularity: int) -> int:
    """Fewest rows whose bytes are a whole number of granules."""
    if row_bytes < 1 or granularity < 1:
        raise ValueError("row_bytes and granularity must be positive")
    return granularity // math.gcd(granularity, row_bytes)


@dataclass(frozen=True)
class VmmLayout:
    """Where every row lives in the one range: rank r's allocation is mapped at
    ``offset(r) = r * shard_bytes`` and holds global rows ``[r * rows_per_rank, ...)``."""

    num_rows: int
    world_size: int
    row_bytes: int
    granularity: int

    def partition(self) -> RowPartition:
        return RowPartition(self.num_rows, self.world_size, granule_rows(self.row_bytes, self.granularity))

    @property
    def rows_per_rank(self) -> int:
        return self.partition().rows_per_rank

    @property
    def shard_bytes(self) -> int:
        return self.rows_per_rank * self.row_bytes      # a multiple of the granularity

    @property
    def total_bytes(self) -> int:
        return self.world_size * self.shard_bytes

    def offset(self, rank: int) -> int:
        return rank * self.shard_bytes

    def row_offset(self, row: int) -> int:
        """Byte offset of global row ``row`` from the base (continuous addressing)."""
        return row * self.row_bytes

    def chunk_offset(self, row: int) -> int:
        """The same offset found the chunked way: the owner's segment, then the local row."""
        owner, local = divmod(row, self.rows_per_rank)
        return self.offset(owner) + local * self.row_bytes

    def padding_bytes(self) -> int:
        """Bytes allocated beyond the table, over all ranks."""
        return self.total_bytes - self.num_rows * self.row_bytes


# --- file descriptors over Unix domain sockets --------------------------------------------

def send_fd(sock: socket.socket, fd: int, payload: bytes) -> None:
    """One message: ``payload`` with ``fd`` as SCM_RIGHTS ancillary data."""
    sent = socket.send_fds(sock, [payload], [fd])
    if sent != len(payload):
        raise OSError(f"sent {sent} of {len(payload)} bytes with the file descriptor")


def recv_fd(sock: socket.socket, size: int) -> tuple[bytes, int]:
    """Receive one message of ``size`` bytes and exactly one file descriptor (close-on-exec)."""
    # recvmsg itself: socket.recv_fds drops its flags argument before Python 3.13
    data, ancillary, flags, _ = sock.recvmsg(size, socket.CMSG_SPACE(4 * _FD.itemsize), socket.MSG_CMSG_CLOEXEC)
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    fds = list(fds)
    while fds and len(data) < size:                      # a stream may split the payload
        more = sock.recv(size - len(data))
        if not more:
            break
        data += more
    if len(fds) != 1 or len(data) != size or flags & socket.MSG_CTRUNC:
        for fd in fds:
            os.close(fd)
        raise OSError(f"expected {size} bytes and one file descriptor, got {len(data)} bytes and "
                      f"{len(fds)} descriptors")
    return data, fds[0]


def _socket_dir() -> str:
    base = tempfile.gettempdir()
    if len(base) > 60:                                   # sun_path holds 107 bytes
        base = "/tmp"
    return tempfile.mkdtemp(prefix="harness-vmm-", dir=base)   # mode 0700: only this user


def exchange_fds(fd: int, rank: int, world: int, all_gather, timeout_s: float = FD_TIMEOUT_S
                 ) -> dict[int, int]:
    """Give ``fd`` to every other rank and return ``{peer rank: its fd}`` (collective).

    ``all_gather(obj) -> list`` (one entry per rank, e.g. torch.distributed's
    all_gather_object). Each rank listens on a socket in its own private folder; the paths and
    one random token per rank are all-gathered; every rank then connects to each peer and pushes
    its fd with the peer's token (the message waits in the peer's backlog, so no rank waits for
    another to accept), then accepts ``world - 1`` connections. A message without the right
    token or from an unknown or repeated rank is refused. The caller owns the returned fds.
    """
    if world == 1:
        return {}
    token = uuid.uuid4().bytes
    folder = path = listener = None
    problem = None
    try:
        folder = _socket_dir()
        path = os.path.join(folder, f"r{rank}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(world)
        listener.settimeout(timeout_s)
    except OSError as exc:
        problem = f"{type(exc).__name__}: {exc}"
    entries = all_gather((path if problem is None else None, token, problem))
    received: dict[int, int] = {}
    try:
        for peer, (_, _, why) in enumerate(entries):
            if why is not None:
                raise OSError(f"rank {peer} could not listen on a Unix socket: {why}")
        for peer, (peer_path, peer_token, _) in enumerate(entries):
            if peer == rank:
                continue
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(timeout_s)
                conn.connect(peer_path)
                send_fd(conn, fd, _HEADER.pack(peer_token, rank))
        while len(received) < world - 1:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(timeout_s)
                data, got = recv_fd(conn, _HEADER.size)
                their_token, sender = _HEADER.unpack(data)
                if their_token != token or not 0 <= sender < world or sender == rank or sender in received:
                    os.close(got)
                    raise OSError(f"refused a file descriptor from an unexpected sender (rank field {sender})")
                received[sender] = got
        return received
    except BaseException:
        for got in received.values():
            os.close(got)
        raise
    finally:
        if listener is not None:
            listener.close()
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
        if folder is not None:
            with contextlib.suppress(OSError):
                os.rmdir(folder)


# --- the driver ---------------------------------------------------------------------------

class Refused(Exception):
    """This machine lacks something continuous addressing needs (becomes a skipped row)."""


class DriverError(RuntimeError):
    def __init__(self, call: str, name: str, text: str, where: str = ""):
        self.call, self.name = call, name
        super().__init__(f"{call}{' (' + where + ')' if where else ''}: {name}: {text}")

    @property
    def refused(self) -> bool:
        return self.name in REFUSALS


def load_driver():
    """``cuda.bindings.driver`` (cuda-bindings >= 12.6), else the older ``cuda.cuda`` layout."""
    try:
        from cuda.bindings import driver
        return driver
    except ImportError as first:
        try:
            from cuda import cuda as driver  # cuda-python < 12.6
            return driver
        except ImportError:
            raise Refused("mapping peer GPU memory into one range needs the cuda-bindings package "
                          f"(cuda.bindings.driver), which does not import here: {first}") from None


def call(drv, name: str, *args, where: str = ""):
    """``drv.name(*args)``; raises DriverError unless CUDA_SUCCESS; returns the outputs."""
    out = getattr(drv, name)(*args)
    out = out if isinstance(out, tuple) else (out,)
    err, rest = out[0], out[1:]
    if err != drv.CUresult.CUDA_SUCCESS:
        code = getattr(err, "name", None) or str(err)
        text = ""
        with contextlib.suppress(Exception):
            ok, raw = drv.cuGetErrorString(err)
            if ok == drv.CUresult.CUDA_SUCCESS and raw:
                text = raw.decode() if isinstance(raw, bytes) else str(raw)
        raise DriverError(name, code, text or "no description", where)
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


class VmmRange:
    """This rank's view of one virtual address range holding every rank's shard.

    Collective constructor: every rank of the process group builds it with the same
    ``num_rows`` and ``row_bytes``. ``base`` is the range's start on this rank's GPU (the value
    differs between ranks, the layout does not); ``layout`` says where each row lives.
    ``driver`` and ``all_gather`` are for tests (a fake driver, threads as ranks).
    """

    def __init__(self, rank, num_rows: int, row_bytes: int, *, driver=None, all_gather=None,
                 timeout_s: float = FD_TIMEOUT_S):
        self.rank, self.world, self.ordinal = rank.rank, rank.world_size, rank.local_rank
        self._gather = all_gather or (lambda obj: ranks.all_gather(rank, obj))     # over the rank's group
        self._timeout_s = timeout_s
        self._drv = driver
        self._dev = self._ctx = None
        self._handle = None          # this rank's allocation
        self._fd: int | None = None  # its exported file descriptor (until sent)
        self._peer_fds: dict[int, int] = {}
        self._imported: list = []    # peers' allocations imported into this process
        self._va: int | None = None
        self._mapped: list[int] = []  # ranks whose segment is mapped
        self.layout: VmmLayout | None = None
        self.base = 0
        self.granularities: list[int] = []
        infos = self._step("setting up", self._setup)
        hosts = sorted({host for _, host in infos})
        if len(hosts) > 1:
            self.release()
            raise SkipPoint("continuous addressing maps peer GPU memory, so every rank must run on "
                            f"one host; these ranks run on {', '.join(hosts)}")
        self.granularities = [g for g, _ in infos]
        self.layout = VmmLayout(num_rows, self.world, row_bytes, max(self.granularities))
        self._step("allocating the shard", self._allocate)
        self._step("passing file descriptors", self._exchange)
        self._step("mapping the shards", self._map)
        self.base = int(self._va)

    # every step, then an agreement: all ranks go on, or all undo and raise
    def _step(self, what: str, fn) -> list:
        failure, value = None, None
        try:
            value = fn()
        except Refused as exc:
            failure = ("skip", str(exc))
        except DriverError as exc:
            failure = ("skip" if exc.refused else "error", str(exc))
        except Exception as exc:  # noqa: BLE001 - reported on every rank below
            failure = ("error", f"{type(exc).__name__}: {exc}")
        outcomes = self._gather((failure, value))
        failed = [(r, f) for r, (f, _) in enumerate(outcomes) if f is not None]
        if not failed:
            return [v for _, v in outcomes]
        self.release()
        kind = "error" if any(f[0] == "error" for _, f in failed) else "skip"
        who, (_, message) = next((r, f) for r, f in failed if f[0] == kind)
        text = f"continuous addressing (CUDA VMM), {what} on rank {who}: {message}"
        if kind == "skip":
            raise SkipPoint(text)
        raise RuntimeError(text)

    @contextlib.contextmanager
    def _current(self):
        """This GPU's primary context, current for the driver calls inside."""
        call(self._drv, "cuCtxPushCurrent", self._ctx)
        try:
            yield
        finally:
            call(self._drv, "cuCtxPopCurrent")

    def _prop(self):
        drv = self._drv
        prop = drv.CUmemAllocationProp()
        prop.type = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = self.ordinal
        prop.requestedHandleTypes = drv.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        return prop

    def _setup(self):
        if self._drv is None:
            self._drv = load_driver()
        drv = self._drv
        call(drv, "cuInit", 0)
        self._dev = call(drv, "cuDeviceGet", self.ordinal)
        attr = drv.CUdevice_attribute
        if not call(drv, "cuDeviceGetAttribute", attr.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                    self._dev):
            raise Refused(f"GPU {self.ordinal} does not support CUDA virtual memory management "
                          "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0)")
        if not call(drv, "cuDeviceGetAttribute",
                    attr.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, self._dev):
            raise Refused(f"GPU {self.ordinal} cannot export allocations as POSIX file descriptors "
                          "(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 0)")
        self._ctx = call(drv, "cuDevicePrimaryCtxRetain", self._dev)
        with self._current():
            granularity = int(call(drv, "cuMemGetAllocationGranularity", self._prop(),
                                   drv.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return granularity, socket.gethostname()

    def _allocate(self):
        drv = self._drv
        with self._current():
            self._handle = call(drv, "cuMemCreate", self.layout.shard_bytes, self._prop(), 0,
                                where=f"{self.layout.shard_bytes} bytes on GPU {self.ordinal}")
            self._fd = int(call(drv, "cuMemExportToShareableHandle", self._handle,
                                drv.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))

    def _exchange(self):
        self._peer_fds = exchange_fds(self._fd, self.rank, self.world, self._gather, self._timeout_s)
        os.close(self._fd)   # every peer holds its own copy now
        self._fd = None

    def _map(self):
        drv, lay = self._drv, self.layout
        fd_type = drv.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        with self._current():
            self._va = int(call(drv, "cuMemAddressReserve", lay.total_bytes, lay.granularity, 0, 0,
                                where=f"{lay.total_bytes} bytes"))
            for r in range(self.world):
                if r == self.rank:
                    handle = self._handle
                else:
                    fd = self._peer_fds.pop(r)
                    try:
                        handle = call(drv, "cuMemImportFromShareableHandle", fd, fd_type, where=f"rank {r}'s shard")
                    finally:
                        os.close(fd)   # the imported handle holds its own reference
                    self._imported.append(handle)
                call(drv, "cuMemMap", self._va + lay.offset(r), lay.shard_bytes, 0, handle, 0,
                     where=f"rank {r}'s shard")
                self._mapped.append(r)
            access = drv.CUmemAccessDesc()
            access.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            access.location.id = self.ordinal
            access.flags = drv.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            for r in range(self.world):   # one segment at a time: a refusal names the peer
                call(drv, "cuMemSetAccess", self._va + lay.offset(r), lay.shard_bytes, [access], 1,
                     where=f"GPU {self.ordinal} reading rank {r}'s shard")

    def segment(self, rank: int) -> int:
        """Address of rank ``rank``'s first row on this rank's GPU."""
        return self.base + self.layout.offset(rank)

    def release(self) -> list[str]:
        """Unmap, free the range, release the handles, close the fds (not collective: the
        caller puts barriers around it). Idempotent; returns what the driver refused."""
        problems: list[str] = []

        def attempt(name, *args):
            try:
                call(drv, name, *args)
            except Exception as exc:  # noqa: BLE001 - teardown goes on
                problems.append(str(exc))

        for fd in [self._fd, *self._peer_fds.values()]:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd, self._peer_fds = None, {}
        drv = self._drv
        if drv is None or self._ctx is None:
            return problems
        pushed = True
        try:
            call(drv, "cuCtxPushCurrent", self._ctx)
        except Exception as exc:  # noqa: BLE001
            problems.append(str(exc))
            pushed = False
        if self._mapped:
            attempt("cuCtxSynchronize")
        lay = self.layout
        for r in self._mapped:
            attempt("cuMemUnmap", self._va + lay.offset(r), lay.shard_bytes)
        self._mapped = []
        if self._va is not None:
            attempt("cuMemAddressFree", self._va, lay.total_bytes)
            self._va = None
        for handle in [*self._imported, *([self._handle] if self._handle is not None else [])]:
            attempt("cuMemRelease", handle)
        self._imported, self._handle = [], None
        if pushed:
            attempt("cuCtxPopCurrent")
        attempt("cuDevicePrimaryCtxRelease", self._dev)
        self._ctx = None
        self.base = 0
        return problems

    def describe(self) -> str:
        lay = self.layout
        return (f"one {lay.total_bytes / 2**20:.0f} MiB virtual range (CUDA VMM: cuMemCreate shards, "
                f"POSIX fds over Unix sockets, cuMemMap), {lay.granularity // 2**10} KiB granules, "
                f"{lay.rows_per_rank} rows per rank")
