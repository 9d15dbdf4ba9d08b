"""The pylibwholegraph library in this process: its version, its one global communicator over the
torch.distributed group, and its shutdown. The real WholeGraph gather (impls.gather) and sampler
and append-unique (impls.sampling) share the library's process-wide state."""

from __future__ import annotations

import os

import torch

from harness.errors import HarnessError, SkipPoint

MODES = ("continuous", "chunked", "distributed")
LOCATIONS = {"device": "cuda", "host": "cpu"}        # ours -> the library's location names

_STATE: dict = {}   # per process: {"key": (rank, world), "comm": WholeMemoryCommunicator}


def library_version() -> str:
    import pylibwholegraph

    commit = getattr(pylibwholegraph, "__git_commit__", "") or ""
    return f"{pylibwholegraph.__version__}" + (f" ({commit[:10]})" if commit else "")


def communicator(rank):
    """The library's global communicator over the current torch.distributed group.

    Collective on first use (every rank must call it); idempotent afterwards.
    """
    import torch.distributed as dist

    if rank.device != "cuda":
        raise HarnessError("wholegraph_lib runs on CUDA ranks only (use --device cuda)")
    if not (dist.is_available() and dist.is_initialized()):
        raise HarnessError("wholegraph_lib needs an initialized torch.distributed group "
                           "(run it through harness.launcher)")
    key = (dist.get_rank(), dist.get_world_size())
    if _STATE:
        if _STATE["key"] != key:
            raise HarnessError(f"pylibwholegraph was initialized in this process as rank {_STATE['key'][0]} "
                               f"of {_STATE['key'][1]}, now asked for rank {key[0]} of {key[1]}; "
                               "call impls.core.wholegraph.shutdown() between runs")
        return _STATE["comm"]
    try:  # the top-level package imports even where libwholegraph.so cannot load; the binding cannot
        import pylibwholegraph.binding.wholememory_binding  # noqa: F401
    except ImportError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise SkipPoint(f"pylibwholegraph is installed but its native library does not load: {first}") from None
    from pylibwholegraph.torch import comm as wg_comm
    from pylibwholegraph.torch import initialize as wg_init

    torch.cuda.set_device(rank.local_rank)
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", key[1]))
    wg_init.init(key[0], key[1], rank.local_rank, local_size,
                 wm_log_level=os.environ.get("HARNESS_WHOLEGRAPH_LOG", "warn"))
    comm = wg_comm.get_global_communicator("nccl")
    if comm.get_rank() != key[0] or comm.get_size() != key[1]:
        raise HarnessError(f"pylibwholegraph communicator is rank {comm.get_rank()} of {comm.get_size()}, "
                           f"torch.distributed says rank {key[0]} of {key[1]}")
    _STATE.update(key=key, comm=comm)
    return comm


def shutdown() -> None:
    """Collective: finalize the library in this process (after every table is closed).

    Leaves torch.distributed alone (``pylibwholegraph.torch.finalize`` would destroy it).
    """
    if not _STATE:
        return
    import pylibwholegraph.binding.wholememory_binding as wmb
    from pylibwholegraph.torch import comm as wg_comm

    torch.cuda.synchronize()
    wmb.finalize()
    wg_comm.reset_communicators()
    _STATE.clear()


def check_mode_location(mode: str, location: str) -> str:
    if mode not in MODES:
        raise HarnessError(f"wholegraph_lib mode must be one of {', '.join(MODES)}, not '{mode}'")
    if location not in LOCATIONS:
        raise HarnessError(f"wholegraph_lib location must be device or host, not '{location}'")
    return LOCATIONS[location]
