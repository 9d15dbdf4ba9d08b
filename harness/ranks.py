"""What the ranks of a point decide together.

Every helper takes this process's :class:`harness.launcher.RankContext` (or None: one process, no
group) and is collective: every rank of the group calls it at the same place, so a rank that
gives up never leaves the others waiting inside a collective. The group is the context's (its
``group``: a node's ranks in a ``node_view()``; else every rank).

- :func:`agree`: True on every rank when every rank says ok (all skip a point together);
- :func:`broadcast`: rank 0's value on every rank;
- :func:`all_gather`: every rank's value, in rank order, on every rank;
- :func:`barrier`: every rank of the group here;
- :func:`load_on_ranks`: rank 0 prepares, the others then open what it prepared;
- :func:`prepare_on_rank0`: rank 0 computes, every rank gets its result (the others waiting on the
  host where the group is a gloo one: :func:`host_group`).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from .errors import HarnessError, SkipPoint

T = TypeVar("T")


def _grouped(rank) -> bool:
    if rank is None or rank.world_size == 1:
        return False
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def agree(rank, ok: bool) -> bool:
    """True when every rank says ``ok`` (one all-reduce)."""
    if not _grouped(rank):
        return ok
    import torch
    import torch.distributed as dist

    flag = torch.tensor([0 if ok else 1], dtype=torch.int32, device=rank.torch_device())
    dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=rank.group)
    return int(flag.item()) == 0


def broadcast(rank, value: T, group=None) -> T:
    """Rank 0's ``value`` on every rank (any picklable object), over ``group`` (default: the
    context's; :func:`host_group`'s makes the others wait on the host, no kernel running)."""
    if not _grouped(rank):
        return value
    import torch.distributed as dist

    box = [value if rank.rank == 0 else None]
    dist.broadcast_object_list(box, src=rank.global_rank(0), group=rank.group if group is None else group)
    return box[0]


def all_gather(rank, value: Any) -> list:
    """Every rank's ``value``, in rank order, on every rank."""
    if not _grouped(rank):
        return [value]
    import torch.distributed as dist

    out = [None] * rank.world_size
    dist.all_gather_object(out, value, group=rank.group)
    return out


def barrier(rank) -> None:
    """Every rank of the group here."""
    if _grouped(rank):
        import torch.distributed as dist

        dist.barrier(group=rank.group)


def _first(rank, build: Callable[[], T], group=None):
    """``build()`` on rank 0 (or alone), and what every rank must do about its outcome:
    (value, skip reason, this rank's exception, rank 0's failure as text)."""
    value = skip = error = None
    if rank is None or rank.rank == 0:
        try:
            value = build()
        except (SkipPoint, HarnessError) as exc:    # e.g. a dataset that cannot exist at this scale
            skip = str(exc)
        except Exception as exc:                    # noqa: BLE001 - every rank leaves the point together
            error = exc
    skip, failed = broadcast(rank, (skip, None if error is None else f"{type(error).__name__}: {error}"), group)
    return value, skip, error, failed


def _settle(skip, error, failed) -> None:
    if skip:
        raise SkipPoint(skip)
    if error is not None:
        raise error
    if failed:
        raise RuntimeError(f"rank 0 failed to prepare the point: {failed}")


def load_on_ranks(rank, load: Callable[[], T]) -> T:
    """``load()`` on every rank, rank 0 first: it prepares what the others then open (a stand-in
    generated into the dataset cache, say), so the ranks never build the same files at once.

    Rank 0's :class:`HarnessError` or :class:`SkipPoint` (a dataset that cannot exist at this
    scale) skips the point on every rank with its message; any other failure there is an error on
    every rank."""
    value, skip, error, failed = _first(rank, load)
    _settle(skip, error, failed)
    return value if rank is None or rank.rank == 0 else load()


def prepare_on_rank0(rank, build: Callable[[], T], group=None) -> T:
    """``build()`` on rank 0 alone, its result on every rank (broadcast over ``group``): for work
    whose result the ranks share and must agree on (a placement and its replayed batches, a probe
    only rank 0 runs). Rank 0's skip or failure is every rank's, as in :func:`load_on_ranks`."""
    value, skip, error, failed = _first(rank, build, group)
    _settle(skip, error, failed)
    return broadcast(rank, value, group)


def host_group(rank, ctx=None):
    """A gloo group of every rank (cached in ``ctx``, a RunContext, when given): collectives on it
    wait on the host, so no rank runs a kernel on its GPU while it waits for another. Collective
    (every rank creates it at the same place); the context's own group in a node view (a group of
    the default one's ranks cannot be made from some of them alone), None without a group."""
    if not _grouped(rank):
        return None
    if rank.group is not None:
        return rank.group
    import torch.distributed as dist

    build = lambda: dist.new_group(backend="gloo")  # noqa: E731
    return ctx.cached(("host_group",), build) if ctx is not None else build()
