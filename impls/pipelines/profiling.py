"""Opt-in profile of one training epoch: where the GPU waits on the host.

``HARNESS_PROFILE_DIR=DIR`` makes rank 0 of every pipeline profile one epoch
(``HARNESS_PROFILE_EPOCH``, default 1) with ``torch.profiler`` and write
``DIR/<pipeline>-<dataset>-<model>-e<epoch>.txt``: the operators by self device time and by self
host time, and the host calls that stall a GPU pipeline (stream and device synchronizations,
device-to-host copies, ``.item()``-style reads) with their counts per mini-batch. A Chrome trace
(``.json``) is written beside it when ``HARNESS_PROFILE_TRACE=1``. ``HARNESS_PROFILE_RANKS``
(``0`` by default, ``all``, or a comma list such as ``1,3``) picks the profiled ranks: rank 0
waiting in an all-reduce points at a slower rank, whose own profile says why. Ranks other than 0
add ``-r<rank>`` to the file name. Unpicked ranks run unprofiled.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

STALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
          "cudaMemcpyAsync", "aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::tolist")


def profile_target(pipeline, epoch: int) -> Path | None:
    """The report path when this rank should profile this epoch, else None."""
    root = os.environ.get("HARNESS_PROFILE_DIR")
    me = getattr(pipeline, "me", 0)
    if not root or not rank_selected(me, os.environ.get("HARNESS_PROFILE_RANKS", "0")):
        return None
    if epoch != int(os.environ.get("HARNESS_PROFILE_EPOCH", "1")):
        return None
    cfg = pipeline.config
    graph = getattr(getattr(pipeline, "graph", None), "name", "data")
    name = f"{pipeline.name}-{graph}-{getattr(cfg, 'model', 'model')}-e{epoch}"
    if me:
        name += f"-r{me}"
    return Path(root) / (name.replace("/", "_") + ".txt")


def rank_selected(rank: int, spec: str) -> bool:
    spec = spec.strip().lower()
    if spec == "all":
        return True
    try:
        return rank in {int(part) for part in spec.split(",") if part.strip()}
    except ValueError:
        raise ValueError(f"HARNESS_PROFILE_RANKS must be 'all' or a comma list of ranks, not {spec!r}") from None


@contextlib.contextmanager
def epoch_profile(pipeline, epoch: int, breakdown):
    target = profile_target(pipeline, epoch)
    if target is None:
        yield
        return
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if pipeline.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, record_shapes=False) as prof:
        yield
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(summarize(prof, pipeline, epoch, breakdown, pipeline.device.type == "cuda"))
    if os.environ.get("HARNESS_PROFILE_TRACE") == "1":
        prof.export_chrome_trace(str(target.with_suffix(".json")))


def summarize(prof, pipeline, epoch: int, breakdown, cuda: bool) -> str:
    events = prof.key_averages()
    batches = max(1, int(getattr(pipeline, "_last_epoch_batches", 0) or 0))
    lines = [f"# {pipeline.name}: epoch {epoch} (breakdown={breakdown}), rank {getattr(pipeline, 'me', 0)}", ""]
    lines.append("## host calls that make the GPU wait (count, per mini-batch when known, host ms)")
    for ev in events:
        if any(ev.key.startswith(s) for s in STALLS):
            lines.append(f"{ev.key:40} {ev.count:8d} {ev.count / batches:8.1f}/batch "
                         f"{ev.cpu_time_total / 1e3:10.2f} ms")
    launches = sum(ev.count for ev in events if ev.key in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"))
    lines += ["", f"kernel launches: {launches} ({launches / batches:.0f} per mini-batch)", ""]
    sort = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    lines.append(f"## operators by {sort}")
    lines.append(events.table(sort_by=sort, row_limit=30))
    lines.append("## operators by self_cpu_time_total")
    lines.append(events.table(sort_by="self_cpu_time_total", row_limit=30))
    return "\n".join(lines)
