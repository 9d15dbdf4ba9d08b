"""One process per device: spawned by the harness on one node, or formed under torchrun.

``launch(fn, args, world_size=..., device=...)`` runs ``fn(rank_ctx, *args)`` on every
rank inside an initialized ``torch.distributed`` process group (NCCL on GPUs, gloo
on CPU) and returns the list of per-rank return values. Every child's exit code is
checked; a failing rank or a timeout stops all ranks and raises ``LaunchError``
naming the rank and how it ended (its error line, exit code or signal) and what it was
doing (``RankContext.set_activity``), instead of hanging.

``timeout_s`` bounds each activity of a rank (a point of the runner), not the whole launch: a
rank still in one activity after ``timeout_s`` ends the launch, and the error names the rank(s)
that did not finish it and where each rank's main thread was (a heartbeat thread in every rank
writes it to the launch's :class:`ActivityBoard`), telling a rank busy in its own code from one
waiting in a collective for it.

Spawned ranks die with the process that launched them, also while blocked in a collective that
will never return (Linux: PR_SET_PDEATHSIG, and a thread watching the parent pid and SIGTERM),
and the shared-memory files of a launch are removed however it ends (``harness.shm``).

Under torchrun (``torchrun --nnodes N --nproc-per-node G``, c10d rendezvous) this process is one
rank: the group is formed from torchrun's environment, and the same rules hold with the agent of
this node as the launcher. The rank dies with its agent. The board is kept in the job's c10d store
(:class:`StoreBoard`), so that rank 0 sees every rank, whichever host it runs on: where a rank has
stayed in one activity longer than ``timeout_s``, rank 0 says so on stderr with the same error the
harness's launcher raises (the rank, its activity, where its main thread is; the others waiting),
lets the caller record it (``on_overdue``: the point's error row) and ends, which ends the job;
every other rank ends itself ``BACKSTOP_S`` after its own timeout, in case rank 0 cannot. The ranks
learn their
:class:`Topology` (which node each rank runs on, torchrun's ``GROUP_RANK``, and on which host): a
store that maps peers' memory maps only its own node's (``RankContext.node_view``: the ranks of this
node as a group of their own), and the ranks of a node share host shared-memory files under a
prefix of their own (``harness.shm.node_prefix``), so nodes emulated on one host share none.
Under the harness's own launcher every rank is on one node.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import queue
import select
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from . import shm, timing
from .errors import LaunchError, SkipPoint


EMULATED = "emulated nodes (one host)"      # how tables, figures and manifests name nodes sharing a host


@dataclass(frozen=True)
class Topology:
    """Which node each rank of a group runs on (``node_of``, by rank) and the host of each node
    (``hosts``, by node). Nodes are torchrun's (``GROUP_RANK``); several nodes on one host are
    emulated nodes (a 4-GPU machine run as two torchrun nodes of 2 GPUs)."""

    node_of: tuple[int, ...]
    hosts: tuple[str, ...]

    def __post_init__(self):
        if sorted(set(self.node_of)) != list(range(len(self.hosts))):
            raise LaunchError(f"nodes {sorted(set(self.node_of))} of the ranks do not number the "
                              f"{len(self.hosts)} hosts 0..{len(self.hosts) - 1}")

    @property
    def nodes(self) -> int:
        return len(self.hosts)

    def ranks_of(self, node: int) -> tuple[int, ...]:
        return tuple(r for r, n in enumerate(self.node_of) if n == node)

    @property
    def per_node(self) -> int | None:
        """Ranks per node, where every node has as many (else None)."""
        sizes = {len(self.ranks_of(n)) for n in range(self.nodes)}
        return sizes.pop() if len(sizes) == 1 else None

    @property
    def emulated(self) -> bool:
        """Several nodes on fewer hosts: nodes emulated by torchrun node processes on one machine."""
        return self.nodes > 1 and len(set(self.hosts)) < self.nodes

    def label(self, unit: str = "GPUs") -> str:
        """'1 node x 4 GPUs', '2 nodes x 2 GPUs, emulated nodes (one host)'."""
        per = self.per_node
        if per == 1:
            unit = unit.removesuffix("s")
        ranks = f"{per} {unit}" if per is not None else "/".join(str(len(self.ranks_of(n))) for n in range(self.nodes))
        text = f"{self.nodes} node{'s' if self.nodes > 1 else ''} x {ranks}"
        return f"{text}, {EMULATED}" if self.emulated else text

    def record(self) -> dict:
        """What a manifest and a row keep of it."""
        return {"nodes": self.nodes, "ranks_per_node": [len(self.ranks_of(n)) for n in range(self.nodes)],
                "hosts": len(set(self.hosts)), "emulated": self.emulated, "label": self.label()}


@dataclass(frozen=True)
class RankContext:
    rank: int
    world_size: int
    local_rank: int
    device: str          # cpu | cuda
    backend: str         # gloo | nccl
    board: "ActivityBoard | None" = field(default=None, compare=False, repr=False)
    topology: Topology | None = None        # None: every rank on one node
    # a node view's process group and the global ranks of its members (None / (): the default group)
    group: Any = field(default=None, compare=False, repr=False)
    members: tuple[int, ...] = ()
    node_groups: tuple = field(default=(), compare=False, repr=False)   # one process group per node

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def set_activity(self, text: str) -> None:
        """Say what this rank is doing now; a launch that fails names it for the failing rank."""
        if self.board is not None:
            self.board.write(self.global_rank(self.rank), text)

    def __reduce__(self):
        # the board is shared memory of this launch, the groups live in this process: a copy sent
        # elsewhere goes without them
        return (RankContext, (self.rank, self.world_size, self.local_rank, self.device, self.backend, None,
                              self.topology))

    # --- nodes ---------------------------------------------------------------------------
    @property
    def nodes(self) -> int:
        return 1 if self.topology is None else self.topology.nodes

    @property
    def node(self) -> int:
        return 0 if self.topology is None else self.topology.node_of[self.rank]

    @property
    def node_ranks(self) -> tuple[int, ...]:
        """The ranks (of this group) on this rank's node, this one included."""
        if self.topology is None:
            return tuple(range(self.world_size))
        return self.topology.ranks_of(self.node)

    @property
    def local_world_size(self) -> int:
        """Ranks on this rank's node (torchrun's LOCAL_WORLD_SIZE; the whole group on one node)."""
        return len(self.node_ranks)

    def global_rank(self, r: int) -> int:
        """Rank ``r`` of this group in the default group (the same, except in a node view)."""
        return self.members[r] if self.members else r

    def node_view(self) -> "RankContext":
        """The ranks of this node as a group of their own (this context where every rank is on one
        node): what a store mapping peers' memory is built on, so it maps only its node's peers
        (WholeGraph: each node holds its own replica of the graph and features)."""
        if self.nodes == 1:
            return self
        mine = self.node_ranks
        return RankContext(mine.index(self.rank), len(mine), self.local_rank, self.device, self.backend,
                           self.board, None, self.node_groups[self.node], tuple(self.global_rank(r) for r in mine))

    def _topology(self) -> Topology:
        return self.topology or Topology((0,) * self.world_size, (socket.gethostname(),))

    def topology_label(self) -> str:
        """'2 nodes x 2 GPUs, emulated nodes (one host)' (``Topology.label``)."""
        return self._topology().label("GPUs" if self.device == "cuda" else "CPU ranks")

    def topology_record(self) -> dict:
        """The nodes of these ranks as a manifest and a row keep them (``Topology.record``)."""
        return {**self._topology().record(), "label": self.topology_label()}

    def require_one_node(self, what: str) -> None:
        """Skip the point where this group spans nodes: ``what`` maps peers' memory, which only the
        ranks of one node share (build it on ``node_view()``, or reach other nodes through NCCL)."""
        if self.nodes > 1:
            raise SkipPoint(f"{what} maps peers' memory, which only the ranks of one node share: these "
                            f"{self.world_size} ranks span {self.topology_label()}")

    def torch_device(self):
        import torch

        return torch.device("cuda", self.local_rank) if self.device == "cuda" else torch.device("cpu")

    def progress(self, text: str) -> None:
        """A progress line on stderr, from the main rank only."""
        if self.is_main:
            import sys

            print(text, file=sys.stderr, flush=True)

    def all_reduce_floats(self, values: list[float], op: str = "max") -> list[float]:
        """``values`` reduced element-wise over the ranks ("max" or "sum"; identity without a group)."""
        import torch
        import torch.distributed as dist

        t = torch.tensor(values, dtype=torch.float64, device=self.torch_device())
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM, group=self.group)
        return [float(v) for v in t]


class ActivityBoard:
    """Per rank, in shared memory: what it is doing and since when (``RankContext.set_activity``),
    and where its main thread was at its last heartbeat. Written synchronously, so the last
    activity of a rank killed a moment later is still there for the parent to read; times are
    ``harness.timing.now()``, one clock for every process of the machine."""

    SLOT = 4096

    def __init__(self, mp_context, world_size: int):
        self.array = mp_context.RawArray("c", world_size * self.SLOT)
        self.wheres = mp_context.RawArray("c", world_size * self.SLOT)
        self.times = mp_context.RawArray("d", world_size * 2)      # activity since, last heartbeat
        self.world_size = world_size

    @classmethod
    def _put(cls, array, rank: int, text: str) -> None:
        data = text.encode("utf-8", "replace")[: cls.SLOT]
        array[rank * cls.SLOT:(rank + 1) * cls.SLOT] = data.ljust(cls.SLOT, b"\0")

    @classmethod
    def _get(cls, array, rank: int) -> str:
        return bytes(array[rank * cls.SLOT:(rank + 1) * cls.SLOT]).rstrip(b"\0").decode("utf-8", "replace")

    def write(self, rank: int, text: str, now: float | None = None) -> None:
        self._put(self.array, rank, text)
        self.times[2 * rank] = timing.now() if now is None else now

    def beat(self, rank: int, where: str, now: float | None = None) -> None:
        self._put(self.wheres, rank, where)
        self.times[2 * rank + 1] = timing.now() if now is None else now

    def read(self) -> dict[int, str]:
        return {r: text for r in range(self.world_size) if (text := self._get(self.array, r))}

    def states(self, now: float | None = None) -> dict[int, "RankState"]:
        return {r: self.state_of(r) for r in range(self.world_size)}

    def state_of(self, rank: int, now: float | None = None) -> "RankState":
        return RankState(self._get(self.array, rank) or None, self.times[2 * rank] or None,
                         self._get(self.wheres, rank) or None, self.times[2 * rank + 1] or None)


@dataclass(frozen=True)
class RankState:
    """One rank's slot of the board: its activity and since when, where its main thread was and when
    that was seen (None: not yet)."""

    activity: str | None
    since: float | None
    where: str | None = None
    seen: float | None = None

    @property
    def waiting(self) -> bool:
        return bool(self.where) and self.where.startswith(WAITING)


WAITING = "waiting in torch.distributed"
STARTUP = "startup (imports, process group)"
# until a rank names its first activity (imports, the process group, loading the experiments), it has
# at least this long: a startup slower than a short --timeout (a loaded machine importing torch) is no hang
STARTUP_ALLOWANCE_S = 300.0
HEARTBEAT_S = 0.5


def overdue(states: dict[int, RankState], running: list[int], now: float, timeout_s: float,
            started: float, why: str = "--timeout") -> LaunchError | None:
    """The error that ends a launch where a running rank has been in one activity longer than
    ``timeout_s`` (before its first activity: at least ``STARTUP_ALLOWANCE_S``), else None.

    The ranks named are those still busy in their own code (not waiting in a collective); where
    every running rank waits, the overdue ones: a collective that some rank never joined."""
    def allowed(state: RankState) -> float:
        starting = state.activity in (None, STARTUP)
        return max(timeout_s, STARTUP_ALLOWANCE_S) if starting else timeout_s

    def age(r: int) -> float:
        return now - (states[r].since or started)

    late = [r for r in running if age(r) > allowed(states[r])]
    if not late:
        return None
    busy = [r for r in running if not states[r].waiting]
    named = busy or late
    waiting = [r for r in running if r not in named]

    def doing(r: int) -> str:
        state = states[r]
        return f"in {state.activity}" if state.activity else "before its first activity"

    def where(r: int) -> str:
        state = states[r]
        if not state.where:
            return ""
        stale = f", {now - state.seen:.0f} s ago" if state.seen and now - state.seen > 10 * HEARTBEAT_S else ""
        return f" ({state.where}{stale})"

    first = named[0]
    culprit = f"rank {first} was still {doing(first)} after {timeout_s:.0f} s ({why}){where(first)}"
    parts = [f"rank {r} {doing(r)}{where(r)}" for r in named[1:] + waiting]
    message = culprit + ("; " + "; ".join(parts) if parts else "")
    states_text = {r: s.activity for r, s in states.items() if s.activity}
    return LaunchError(message, culprit=culprit, rank=first, activities=states_text, hung=named)


def under_torchrun() -> bool:
    """True when the environment already defines this process's rank (torchrun, srun...)."""
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")) \
        and "HARNESS_SPAWNED" not in os.environ


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init_group(ctx: RankContext, init_method: str | None, timeout_s: float) -> None:
    import torch
    import torch.distributed as dist

    if ctx.device == "cuda":
        torch.cuda.set_device(ctx.local_rank)
    kwargs = {"backend": ctx.backend, "timeout": datetime.timedelta(seconds=timeout_s)}
    if init_method:
        kwargs.update(init_method=init_method, rank=ctx.rank, world_size=ctx.world_size)
    if ctx.device == "cuda":
        kwargs["device_id"] = torch.device("cuda", ctx.local_rank)
    dist.init_process_group(**kwargs)


def _die_with_parent(parent_pid: int, shm_prefix: str, beat: Callable[[str], None] | None = None) -> None:
    """End this rank when the launching process is gone or sends SIGTERM, removing the launch's
    shared memory, also while the main thread waits in a collective that will never return.

    PR_SET_PDEATHSIG sends SIGTERM when the parent dies. Python runs a signal's handler only
    between bytecodes of the main thread, which a collective can block for good, so the C-level
    handler also writes the signal to a pipe (``signal.set_wakeup_fd``) that a thread reads; that
    thread also watches the parent pid and hands ``beat`` where the main thread is, every
    ``HEARTBEAT_S`` (the rank's heartbeat on its board). Either thread leaves through
    :func:`_leave`, which works off the main thread.
    """
    def leave(signum=signal.SIGTERM, frame=None):
        _leave(shm_prefix)

    signal.signal(signal.SIGTERM, leave)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:     # the parent died before the signal was armed
        leave()
    main = threading.main_thread().ident

    def watch():
        while True:
            ready, _, _ = select.select([wake_read], [], [], HEARTBEAT_S)
            if ready and int(signal.SIGTERM) in os.read(wake_read, 512):
                _leave(shm_prefix)
            if os.getppid() != parent_pid:
                _leave(shm_prefix)
            if beat is not None:
                beat(where_is(sys._current_frames().get(main)))

    threading.Thread(target=watch, name="harness-parent-watch", daemon=True).start()


class StoreBoard:
    """The activity board of a torchrun launch, over the job's c10d store (torchrun's rendezvous
    store at MASTER_ADDR:MASTER_PORT): every rank writes its own slot (activity, where its main
    thread is) and rank 0 reads every slot, whichever host it runs on. Ages travel, not times: the
    hosts' clocks differ. A store that fails (its host gone) leaves the slots as they were: the
    launch is ending anyway."""

    def __init__(self, store, prefix: str, world_size: int):
        self.store, self.prefix, self.world_size = store, prefix, world_size
        self.mine: dict[int, list] = {}        # rank -> [activity, since, where, seen] on this process's clock

    def _put(self, rank: int, now: float) -> None:
        import json

        activity, since, where, seen = self.mine[rank]
        try:
            self.store.set(f"{self.prefix}/{rank}", json.dumps([activity, now - since, where, now - seen]))
        except Exception:                     # noqa: BLE001 - module doc
            pass

    def write(self, rank: int, text: str, now: float | None = None) -> None:
        now = timing.now() if now is None else now
        slot = self.mine.setdefault(rank, ["", now, "", now])
        slot[0], slot[1] = text, now
        self._put(rank, now)

    def beat(self, rank: int, where: str, now: float | None = None) -> None:
        now = timing.now() if now is None else now
        slot = self.mine.setdefault(rank, ["", now, "", now])
        slot[2], slot[3] = where, now
        self._put(rank, now)

    def states(self, now: float | None = None) -> dict[int, RankState]:
        """Every rank's slot that has been written, on this process's clock."""
        import json

        now = timing.now() if now is None else now
        out = {}
        for r in range(self.world_size):
            key = f"{self.prefix}/{r}"
            try:
                if not self.store.check([key]):
                    continue
                activity, age, where, stale = json.loads(self.store.get(key))
            except Exception:                 # noqa: BLE001 - module doc
                continue
            out[r] = RankState(activity or None, now - age, where or None, now - stale)
        return out

    def read(self) -> dict[int, str]:
        return {r: s.activity for r, s in self.states().items() if s.activity}

    def state_of(self, rank: int, now: float | None = None) -> RankState | None:
        """This process's own slot, read without the store."""
        slot = self.mine.get(rank)
        return None if slot is None else RankState(slot[0] or None, slot[1], slot[2] or None, slot[3])


DONE = "done with the launch"
BACKSTOP_S = 30.0       # a torchrun rank other than 0 ends itself this long after its own --timeout


class _SelfWatch:
    """A torchrun rank's watch of its launch (module doc): its heartbeat on the launch's board, and
    the end of a point that overstays ``timeout_s``. Rank 0 judges every rank by the shared board
    (:class:`StoreBoard`) as the harness's launcher would, records the point (``on_overdue``) and
    ends, which ends the job; every rank also ends itself ``BACKSTOP_S`` after its own timeout, in
    case rank 0 cannot."""

    def __init__(self, shm_prefix: str):
        self.shm_prefix = shm_prefix
        self.launch: tuple | None = None     # (board, rank, timeout_s, started, on_overdue) while one runs

    def beat(self, where: str, now: float | None = None) -> LaunchError | None:
        launch = self.launch
        if launch is None:
            return None
        board, rank, timeout_s, started, on_overdue = launch
        now = timing.now() if now is None else now
        board.beat(rank, where, now)
        late = None
        if rank == 0 and isinstance(board, StoreBoard):
            states = board.states(now)
            running = [r for r, state in states.items() if state.activity != DONE]
            late = overdue(states, running, now, timeout_s, started)
        mine = board.state_of(rank, now)
        if late is None and mine is not None:
            backstop = BACKSTOP_S if rank else 0.0
            late = overdue({rank: mine}, [rank], now, timeout_s + backstop, started,
                           f"--timeout {timeout_s:.0f} s, then {backstop:.0f} s for rank 0 to end the job"
                           if backstop else "--timeout")
        if late is not None:
            self.end(late, on_overdue)
        return late

    def end(self, late: LaunchError, on_overdue) -> None:
        self.launch = None
        print(f"error: {late} (under torchrun this rank ends, and with it the job)", file=sys.stderr, flush=True)
        if on_overdue is not None:
            try:
                on_overdue(late)
            except Exception:                 # noqa: BLE001 - the rank ends either way
                traceback.print_exc()
        _leave(self.shm_prefix)


_SELF_WATCH: list[_SelfWatch] = []          # armed once per process (signal handlers are process-wide)


def _self_watch(shm_prefix: str) -> _SelfWatch:
    if not _SELF_WATCH:
        watch = _SelfWatch(shm_prefix)
        _die_with_parent(os.getppid(), shm_prefix, watch.beat)
        _SELF_WATCH.append(watch)
    return _SELF_WATCH[0]


def _leave(shm_prefix: str) -> None:
    """Remove the launch's shared memory and die by SIGTERM, from any thread: ``signal.signal``
    works on the main thread only, so libc's ``signal`` restores the default action."""
    try:
        shm.remove_segments(shm_prefix)
        import ctypes

        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal(int(signal.SIGTERM), ctypes.c_void_p(0))        # SIG_DFL
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)
    finally:
        os._exit(128 + signal.SIGTERM)


_PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def where_is(frame) -> str:
    """Where a thread is, from its innermost frame: ``waiting in torch.distributed barrier, called at
    experiments/x.py:12 in run_point``, or ``at experiments/x.py:40 in run_point`` (the innermost
    frame of this project's code; else the innermost frame)."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    if not frames:
        return ""
    ours = next((f for f in frames if f.f_code.co_filename.startswith(_PROJECT)
                 and not f.f_code.co_filename.endswith(os.sep + "launcher.py")), frames[0])
    at = f"{_short(ours.f_code.co_filename)}:{ours.f_lineno} in {ours.f_code.co_name}"
    collective = next((f for f in frames if f"{os.sep}torch{os.sep}distributed{os.sep}" in f.f_code.co_filename),
                      None)
    if collective is not None:
        return f"{WAITING} {collective.f_code.co_name}, called at {at}"
    return f"at {at}"


def _short(path: str) -> str:
    return path[len(_PROJECT):] if path.startswith(_PROJECT) else path


_PR_SET_PDEATHSIG = 1
GROUP_TIMEOUT_MARGIN_S = 120.0


def _child(rank: int, world_size: int, device: str, port: int, timeout_s: float,
           fn: Callable, args: tuple, results, parent_pid: int | None, shm_prefix: str,
           board: ActivityBoard, env: dict[str, str]) -> None:
    board.write(rank, STARTUP)
    if parent_pid is None:
        _release_fork_server()
    # a fork server's child (parent_pid None) watches the server, which exits with the launcher
    _die_with_parent(os.getppid() if parent_pid is None else parent_pid, shm_prefix,
                     lambda where: board.beat(rank, where))
    # the launcher's environment as it is now (a fork server's is the one it started with)
    os.environ.clear()
    os.environ.update(env)
    os.environ.update({
        "RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank),
        "LOCAL_WORLD_SIZE": str(world_size), "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port), "HARNESS_SPAWNED": "1", shm.PREFIX_ENV: shm_prefix,
    })
    backend = "nccl" if device == "cuda" else "gloo"
    ctx = RankContext(rank, world_size, rank, device, backend, board)
    if device == "cpu":  # ranks share the cores: oversubscribed thread pools thrash
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    try:
        # the launcher stops a rank overdue in a point; the group's own timeout is only a backstop,
        # later, so that a peer's collective timing out never takes the blame from the rank it waits for
        _init_group(ctx, f"tcp://127.0.0.1:{port}", timeout_s + GROUP_TIMEOUT_MARGIN_S)
        board.write(rank, "")            # started: no activity named yet (still the startup allowance)
        value = fn(ctx, *args)
        board.write(rank, "returning its result")
        results.put((rank, "ok", value))
    except BaseException as exc:  # report every failure to the parent, then exit non-zero
        detail = traceback.format_exc()
        results.put((rank, "error", f"{type(exc).__name__}: {exc}".strip(), detail))
        raise SystemExit(1)
    finally:
        try:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:
            pass


def launch(fn: Callable[..., Any], args: tuple = (), *, world_size: int, device: str = "cpu",
           timeout_s: float = 3600.0, on_overdue: Callable[[LaunchError], None] | None = None,
           env: dict[str, str] | None = None) -> list[Any]:
    """Run ``fn(ctx, *args)`` on ``world_size`` ranks; return per-rank results in rank order.
    ``timeout_s``: the longest a rank may stay in one activity (module doc). ``env``: variables set
    in every rank before its process group forms.

    Under torchrun the current process is one rank: the group is formed from the
    environment (``env`` is the caller's to check) and only this rank's result is returned
    (others are ``None``); a rank overdue in an activity calls ``on_overdue`` with the error, then
    ends (module doc).
    """
    if world_size < 1:
        raise LaunchError("world size must be >= 1")
    if under_torchrun():
        return _launch_in_place(fn, args, device, timeout_s, on_overdue)

    if device == "cuda":
        import torch

        visible = torch.cuda.device_count()
        if world_size > visible:
            raise LaunchError(f"asked for {world_size} GPU ranks, {visible} GPUs visible")
    ctx, served = _start_context(device)
    results = ctx.Queue()
    port = free_port()
    shm.remove_orphans()
    prefix = shm.new_launch_prefix()
    board = ActivityBoard(ctx, world_size)
    rank_env = {**os.environ, **(env or {}), LAUNCHER_PID_ENV: str(os.getpid())}
    procs = [ctx.Process(target=_child, args=(r, world_size, device, port, timeout_s, fn, args, results,
                                              None if served else os.getpid(), prefix, board, rank_env),
                         name=f"harness-rank{r}", daemon=False) for r in range(world_size)]
    collected: dict[int, Any] = {}
    errors: dict[int, tuple[str, str]] = {}  # insertion order = arrival order
    started = timing.now()
    try:
        for p in procs:
            p.start()
        while True:
            try:
                item = results.get(timeout=0.2)
                if item[1] == "ok":
                    collected[item[0]] = item[2]
                else:
                    errors[item[0]] = (item[2], item[3])
            except queue.Empty:
                pass
            codes = [p.exitcode for p in procs]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed or errors:
                # give the queue a moment to deliver the failing rank's message
                _drain(results, collected, errors, 1.0)
                rank, culprit = _culprit([p.exitcode for p in procs], errors)
                activities = board.read()
                doing = f" during {activities[rank]}" if rank in activities else ""
                raise LaunchError(f"{culprit}{doing}", culprit=culprit, rank=rank, activities=activities,
                                  ) from _RemoteTraceback(errors.get(rank, ("", ""))[1])
            if all(c == 0 for c in codes):
                _drain(results, collected, errors, 0.5)
                missing = [r for r in range(world_size) if r not in collected]
                if missing:
                    raise LaunchError(f"ranks {missing} exited cleanly but returned nothing")
                return [collected[r] for r in range(world_size)]
            late = overdue(board.states(), [r for r, c in enumerate(codes) if c is None], timing.now(),
                           timeout_s, started)
            if late is not None:
                raise late
    finally:
        _stop(procs)
        shm.remove_segments(prefix)


# what every rank imports before its first line of work: a fork server holds them imported
FORK_SERVER_PRELOAD = ["torch", "torch.distributed", "numpy", "harness.launcher", "harness.experiment"]
RANK_START_ENV = "HARNESS_RANK_START"
LAUNCHER_PID_ENV = "HARNESS_LAUNCHER_PID"     # a rank's parent may be the fork server


def _start_context(device: str):
    """How ranks start, and whether through a fork server. CPU ranks fork from a server that has
    imported torch once (``FORK_SERVER_PRELOAD``): a rank starts in a fraction of a second instead
    of importing torch anew, seconds a rank on a busy machine. GPU ranks, and any rank with
    ``HARNESS_RANK_START=spawn``, start as fresh interpreters: nothing CUDA reads at import (its
    visible devices, NCCL's settings) comes from a server started under another environment."""
    import torch.multiprocessing as mp

    if device != "cpu" or os.environ.get(RANK_START_ENV, "forkserver") == "spawn":
        return mp.get_context("spawn"), False
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(FORK_SERVER_PRELOAD)
    return ctx, True


def _release_fork_server() -> None:
    """A fork server runs while any process holds its "alive" pipe, and hands that pipe to every
    child: a rank closes its copy, so that the server ends with the launcher and the rank (its
    parent gone) with the server."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    alive = getattr(server, "_forkserver_alive_fd", None)      # CPython's name for it (3.8-3.14)
    if alive is not None:
        os.close(alive)
        server._forkserver_alive_fd = None


def _culprit(codes: list[int | None], errors: dict[int, tuple[str, str]]) -> tuple[int, str]:
    """The rank that ended the launch, and how. A rank that died without a word (a signal, a hard
    exit) is the cause: its peers' errors are then only lost connections. Otherwise the first
    report to arrive is the cause; later ones are usually its consequences."""
    silent = [r for r, c in enumerate(codes) if c not in (None, 0) and r not in errors]
    if silent:
        rank = min(silent, key=lambda r: (codes[r] > 0, r))          # killed by a signal first
        code = codes[rank]
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return rank, f"rank {rank} died ({name})"
        return rank, f"rank {rank} exited with code {code}"
    rank = next(iter(errors))
    message = (errors[rank][0].splitlines() or [""])[0]
    return rank, f"rank {rank} failed: {message}"


class _RemoteTraceback(Exception):
    def __str__(self):
        return "\n" + (self.args[0] if self.args else "")


def _drain(results, collected, errors, wait_s: float) -> None:
    end = timing.now() + wait_s
    while timing.now() < end:
        try:
            item = results.get(timeout=0.05)
        except queue.Empty:
            continue
        if item[1] == "ok":
            collected[item[0]] = item[2]
        else:
            errors[item[0]] = (item[2], item[3])


def _stop(procs) -> None:
    procs = [p for p in procs if p.pid is not None]      # a failed start leaves the rest unstarted
    for p in procs:
        if p.is_alive():
            p.terminate()
    end = timing.now() + 5
    for p in procs:
        p.join(timeout=max(0.0, end - timing.now()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(timeout=2)


def _launch_in_place(fn, args, device, timeout_s, on_overdue=None):
    import multiprocessing

    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    backend = "nccl" if device == "cuda" else "gloo"
    os.environ.setdefault(shm.PREFIX_ENV, shm.node_prefix())
    shm.remove_orphans()
    watch = _self_watch(os.environ[shm.PREFIX_ENV])
    # until the group (and its store) forms, this rank watches its own startup on a board of its own
    board = ActivityBoard(multiprocessing.get_context("spawn"), world)
    board.write(rank, STARTUP)
    started = timing.now()
    watch.launch = (board, rank, timeout_s, started, on_overdue)
    ctx = RankContext(rank, world, local, device, backend, board)
    created = not dist.is_initialized()
    shared = None
    try:
        if created:
            # the watch ends an overdue point first; the group's timeout is a backstop
            _init_group(ctx, None, timeout_s + GROUP_TIMEOUT_MARGIN_S)
        shared = _store_board(world)
        if shared is not None:
            shared.write(rank, "")       # started: no activity named yet (still the startup allowance)
            ctx = dataclasses.replace(ctx, board=shared)
            watch.launch = (shared, rank, timeout_s, started, on_overdue)
        ctx = with_topology(ctx, gather_topology(ctx))
        board.write(rank, "")
        value = fn(ctx, *args)
    finally:
        watch.launch = None
        if shared is not None:
            shared.write(rank, DONE)
        if created and dist.is_initialized():
            dist.destroy_process_group()
    out = [None] * world
    out[rank] = value
    return out


_LAUNCHES = [0]          # launches of ranks in this process: every rank counts the same


def _store_board(world: int) -> StoreBoard | None:
    """A :class:`StoreBoard` over the job's store (a client of its own: the main thread's collectives
    never wait on it), or None where there is none to reach."""
    import datetime as dt

    import torch.distributed as dist

    _LAUNCHES[0] += 1
    try:
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                              timeout=dt.timedelta(seconds=30))
    except Exception:                         # noqa: BLE001 - each rank then watches itself alone
        return None
    run = os.environ.get("TORCHELASTIC_RUN_ID", "job")
    return StoreBoard(store, f"harness-board/{run}/{_LAUNCHES[0]}", world)


def gather_topology(ctx: RankContext) -> Topology:
    """The nodes of the group's ranks (torchrun's ``GROUP_RANK``; 0 elsewhere) and their hosts
    (collective)."""
    import torch.distributed as dist

    mine = (int(os.environ.get("GROUP_RANK", "0")), socket.gethostname())
    every: list = [None] * ctx.world_size
    dist.all_gather_object(every, mine)
    numbers = {node: i for i, node in enumerate(sorted({node for node, _ in every}))}
    hosts = {numbers[node]: host for node, host in every}
    return Topology(tuple(numbers[node] for node, _ in every), tuple(hosts[i] for i in range(len(numbers))))


def with_topology(ctx: RankContext, topology: Topology) -> RankContext:
    """``ctx`` knowing the nodes of its ranks, with a process group per node where there are
    several (collective: every rank makes every node's group, in the same order)."""
    import torch.distributed as dist

    if len(topology.node_of) != ctx.world_size:
        raise LaunchError(f"a topology of {len(topology.node_of)} ranks for a group of {ctx.world_size}")
    groups = tuple(dist.new_group(list(topology.ranks_of(n))) for n in range(topology.nodes)) \
        if topology.nodes > 1 else ()
    return dataclasses.replace(ctx, topology=topology, node_groups=groups)
