"""Measuring one gather point on every rank: shared by wholegraph.fig8 and wholegraph.gather.

Every rank gathers its own random ids concurrently. The time of an iteration is the
slowest rank's (barrier-bracketed); bandwidth per rank is gathered bytes / that time
(AlgoBW), and BusBW = AlgoBW x (n-1)/n, the share that crosses the links (WholeGraph
IV-C-1, after nccl-tests' convention).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from harness import registry
from harness.errors import SkipPoint
from harness.experiment import Measurement
from harness.ranks import agree
from harness.timing import CacheFlush, CpuTimer, RepeatBudget, TorchCudaTimer, measure_collective
from impls.core.layout import TableSpec, closed_form_rows

GB = 1e9


def measure_gather(point, cfg, rank, budget: RepeatBudget, link_counters: bool = False) -> list[Measurement]:
    """The point's rows, timed as ``budget`` says (warm-ups and repeats: counts at least, time
    budgets on top). ``link_counters``: on GPUs, also run the point back to back for half a second
    with NVML's NVLink counters read around it (payload vs protocol bytes on the links;
    extra["nvlink"])."""
    p = point.params
    world = rank.world_size
    device = rank.torch_device()
    timer = TorchCudaTimer() if device.type == "cuda" else CpuTimer()
    made = registry.get_impl("gather", point.impl)
    if made.has("ceiling"):
        return ceiling_measurements(made.factory(), rank, p, budget, link_counters and device.type == "cuda")

    spec = TableSpec(p["num_rows"], p["row_elems"], p["dtype"])
    variant = made.variant_of(p)
    options = {**(variant.options if variant else {}), **{k: p[k] for k in ("launch", "capacity") if p.get(k)}}
    gatherer = made.factory(rank, spec, **options)
    try:
        ids = gather_ids(p.get("ids", "random"), spec.num_rows, p["ids_per_rank"], world, rank.rank,
                         cfg.seed).to(device)
        rows = gatherer.gather(ids)  # bounds-checked
        correct = torch.equal(rows, closed_form_rows(ids, spec.row_elems, spec.torch_dtype))
        del rows
        if not agree(rank, correct):
            raise RuntimeError("gathered rows differ from the closed form on at least one rank")
        flush = CacheFlush([device] if device.type == "cuda" else ())
        gathered = p["ids_per_rank"] * spec.row_bytes
        # a repeat that reads less than 4 caches' worth could be served by the last one's lines
        cold = gathered < 4 * flush.cache_bytes
        stats, spread = measure_collective(lambda: gatherer.gather(ids, check=False), timer=timer, budget=budget,
                                           flush=flush if cold else None)
        where = gatherer.describe()
        steps = None
        if hasattr(gatherer, "profile"):  # one more call with per-step events (after timing)
            gatherer.profile = True
            gatherer.gather(ids, check=False)
            steps = {k: round(v, 4) for k, v in gatherer.step_ms.items()}
        traffic = None
        if link_counters and device.type == "cuda":
            traffic = gather_traffic(gatherer, ids, spec, rank, stats.median)
    finally:
        gatherer.close()
    nbytes = p["ids_per_rank"] * spec.row_bytes
    algbw = stats.rate(nbytes / GB)
    extra = {"placement": where, "rank_median_ms": [spread.min * 1e3, spread.avg * 1e3, spread.max * 1e3],
             "gathered_over_l2": round(gathered / flush.cache_bytes, 3), "flush_mib": flush.extra()["flush_mib"] if cold else 0,
             **budget.extra()}
    if steps:
        extra["steps_ms"] = steps
    if traffic:
        extra["nvlink"] = traffic
    out = [Measurement("time", "ms", stats.scaled(1e3), better="lower", extra=extra),
           Measurement("algbw", "GB/s", algbw, better="higher")]
    if world > 1:
        out.append(Measurement("busbw", "GB/s", algbw.scaled((world - 1) / world), better="higher"))
    return out


def ceiling_measurements(ceiling, rank, params: dict, budget: RepeatBudget, link_counters: bool) -> list[Measurement]:
    """A ceiling's reading as rows: its bandwidth (and BusBW where it says so); none on a rank that
    did not time it."""
    reading = ceiling.measure(rank, params, budget, link_counters=link_counters)
    if reading.seconds is None:
        return []
    bw = reading.seconds.rate(reading.nbytes / GB)
    out = [Measurement(reading.metric, "GB/s", bw, better="higher", extra=reading.extra)]
    if reading.busbw and rank.world_size > 1:
        out.append(Measurement("busbw", "GB/s", bw.scaled((rank.world_size - 1) / rank.world_size), better="higher"))
    return out


def gather_traffic(gatherer, ids, spec, rank, seconds_per_call: float) -> dict:
    """NVLink counters of this rank's device while every rank gathers back to back; payload is
    the rows this rank reads from other ranks (owners by the even row split)."""
    from impls.gather.link_counters import link_traffic
    from impls.core.layout import RowPartition

    remote = int((RowPartition(spec.num_rows, rank.world_size).owner(ids) != rank.rank).sum())
    dist.barrier()
    traffic = link_traffic(lambda: gatherer.gather(ids, check=False), rank.torch_device(),
                           payload_bytes=remote * spec.row_bytes, per_call_s=seconds_per_call)
    dist.barrier()
    return traffic


def gather_ids(order: str, num_rows: int, count: int, world: int, rank: int, seed: int) -> torch.Tensor:
    """The ids one rank gathers: uniformly random, or ``owner_streams``: the k-th id in owner
    k mod world's range (rows split evenly, in order), row (start + k div world) of it, each rank
    starting elsewhere, so every owner's rows are read in sequence."""
    if order == "random":
        gen = torch.Generator().manual_seed(seed * 1_000_003 + rank)
        return torch.randint(0, num_rows, (count,), generator=gen)
    if order != "owner_streams":
        raise ValueError(f"unknown id order '{order}'")
    per_owner = max(1, num_rows // world)
    k = torch.arange(count, dtype=torch.int64)
    start = rank * (per_owner // max(1, world))
    return (k % world) * per_owner + (start + k // world) % per_owner


def require_row_fit(num_rows: int) -> None:
    if num_rows >= 1 << 32:
        raise SkipPoint("tables of 2**32 rows or more exceed the 32-bit gather kernel")
