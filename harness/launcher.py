"""One process per device: spawned by the harness on one node, or formed under torchrun.

``launch(fn, args, world_size=..., device=...)`` runs ``fn(rank_ctx, *args)`` on every
rank inside an initialized ``torch.distributed`` process group (NCCL on GPUs, gloo
on CPU) and returns the list of per-rank return values. Every child's exit code is
checked; a failing rank or a timeout stops all ranks and raises ``LaunchError``
naming the rank and its last error line, instead of hanging.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from .errors import LaunchError


@dataclass(frozen=True)
class RankContext:
    rank: int
    world_size: int
    local_rank: int
    device: str          # cpu | cuda
    backend: str         # gloo | nccl

    @property
    def is_main(self) -> bool:
        return self.rank == 0

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
            dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
        return [float(v) for v in t]


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


def _child(rank: int, world_size: int, device: str, port: int, timeout_s: float,
           fn: Callable, args: tuple, results) -> None:
    os.environ.update({
        "RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank),
        "LOCAL_WORLD_SIZE": str(world_size), "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port), "HARNESS_SPAWNED": "1",
    })
    backend = "nccl" if device == "cuda" else "gloo"
    ctx = RankContext(rank, world_size, rank, device, backend)
    if device == "cpu":  # ranks share the cores: oversubscribed thread pools thrash
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    try:
        _init_group(ctx, f"tcp://127.0.0.1:{port}", timeout_s)
        value = fn(ctx, *args)
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
           timeout_s: float = 3600.0) -> list[Any]:
    """Run ``fn(ctx, *args)`` on ``world_size`` ranks; return per-rank results in rank order.

    Under torchrun the current process is one rank: the group is formed from the
    environment and only this rank's result is returned (others are ``None``).
    """
    if world_size < 1:
        raise LaunchError("world size must be >= 1")
    if under_torchrun():
        return _launch_in_place(fn, args, device, timeout_s)

    import torch.multiprocessing as mp

    if device == "cuda":
        import torch

        visible = torch.cuda.device_count()
        if world_size > visible:
            raise LaunchError(f"asked for {world_size} GPU ranks, {visible} GPUs visible")
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_child, args=(r, world_size, device, port, timeout_s, fn, args, results),
                         name=f"harness-rank{r}", daemon=False) for r in range(world_size)]
    for p in procs:
        p.start()
    collected: dict[int, Any] = {}
    errors: dict[int, tuple[str, str]] = {}  # insertion order = arrival order
    deadline = time.monotonic() + timeout_s
    try:
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
                # the first report to arrive is the cause; later ones are usually its
                # consequences (peers losing their connection to the failed rank)
                codes = [p.exitcode for p in procs]
                rank = next(iter(errors)) if errors else failed[0][0]
                code = codes[rank]
                message = errors.get(rank, ("exited without a message", ""))[0]
                raise LaunchError(f"rank {rank} failed (exit code {code}): {message}",
                                  ) from _RemoteTraceback(errors.get(rank, ("", ""))[1])
            if all(c == 0 for c in codes):
                _drain(results, collected, errors, 0.5)
                missing = [r for r in range(world_size) if r not in collected]
                if missing:
                    raise LaunchError(f"ranks {missing} exited cleanly but returned nothing")
                return [collected[r] for r in range(world_size)]
            if time.monotonic() > deadline:
                raise LaunchError(f"ranks did not finish within {timeout_s:.0f} s "
                                  f"(still running: {[r for r, c in enumerate(codes) if c is None]})")
    finally:
        _stop(procs)


class _RemoteTraceback(Exception):
    def __str__(self):
        return "\n" + (self.args[0] if self.args else "")


def _drain(results, collected, errors, wait_s: float) -> None:
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            item = results.get(timeout=0.05)
        except queue.Empty:
            continue
        if item[1] == "ok":
            collected[item[0]] = item[2]
        else:
            errors[item[0]] = (item[2], item[3])


def _stop(procs) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    end = time.monotonic() + 5
    for p in procs:
        p.join(timeout=max(0.0, end - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(timeout=2)


def _launch_in_place(fn, args, device, timeout_s):
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    backend = "nccl" if device == "cuda" else "gloo"
    ctx = RankContext(rank, world, local, device, backend)
    created = not dist.is_initialized()
    if created:
        _init_group(ctx, None, timeout_s)
    try:
        value = fn(ctx, *args)
    finally:
        if created and dist.is_initialized():
            dist.destroy_process_group()
    out = [None] * world
    out[rank] = value
    return out
