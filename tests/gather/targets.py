"""Rank functions for gather tests (module level: spawned ranks import them by name)."""

from __future__ import annotations

import torch

from harness import registry
from harness.timing import RepeatBudget
from impls.core.layout import RowPartition, TableSpec, closed_form_rows

from ..helpers import assert_refuses_out_of_range


def check_gather(ctx, impl: str, options: dict, num_rows: int, row_elems: int, dtypes: list[str],
                 n_ids: int, seed: int) -> dict:
    """Each rank gathers random ids with duplicates, an empty list and every dtype;
    rows are checked against the closed form locally, and the gatherer against the interface's
    contract. Returns counts of checked rows."""
    made = registry.get_impl("gather", impl)
    device = ctx.torch_device()
    checked = {}
    for dtype in dtypes:
        spec = TableSpec(num_rows, row_elems, dtype)
        gatherer = made.factory(ctx, spec, **options)
        try:
            assert isinstance(gatherer, registry.contract_of(made)), f"{impl}: not a {registry.contract_of(made)}"
            gen = torch.Generator().manual_seed(seed + 97 * ctx.rank)
            ids = torch.randint(0, num_rows, (n_ids,), generator=gen)
            ids[: n_ids // 4] = ids[n_ids // 4: n_ids // 2]          # duplicates on purpose
            ids[-1] = num_rows - 1                                   # the last row, maybe a short shard
            ids = ids.to(device)
            rows = gatherer.gather(ids)
            expect = closed_form_rows(ids, row_elems, spec.torch_dtype)
            assert rows.dtype == spec.torch_dtype and rows.shape == (n_ids, row_elems)
            assert torch.equal(rows.cpu(), expect.cpu()), f"{impl} {dtype}: wrong rows"
            empty = gatherer.gather(torch.empty(0, dtype=torch.int64, device=device))
            assert empty.shape == (0, row_elems)
            assert_refuses_out_of_range(gatherer.gather, torch.tensor([0, num_rows], device=device), "not refused")
            checked[dtype] = int(rows.shape[0])
        finally:
            gatherer.close()
    return checked


def gather_against_the_table(ctx, variants: list[tuple[str, dict]], num_rows: int, row_elems: int,
                             n_ids: int, seed: int) -> dict[str, int]:
    """``gather(ids)`` equals ``features[ids]``, features being the whole table every store fills
    (row i's closed form), for random ids that reach every rank's shard, the last rows included.
    Returns the rows checked per variant."""
    features = closed_form_rows(torch.arange(num_rows), row_elems, torch.float32)
    gen = torch.Generator().manual_seed(seed + ctx.rank)
    ids = torch.cat([torch.randint(0, num_rows, (n_ids,), generator=gen), torch.arange(num_rows)])
    checked = {}
    for impl, options in variants:
        gatherer = registry.get_impl("gather", impl).factory(ctx, TableSpec(num_rows, row_elems), **options)
        try:
            rows = gatherer.gather(ids.to(ctx.torch_device())).cpu()
            assert torch.equal(rows, features[ids]), f"{impl} {options}: rows differ from features[ids]"
            checked[f"{impl} {options}"] = int(ids.numel())
        finally:
            gatherer.close()
    return checked


def ceiling_repeats(ctx, impl: str, options: dict, nbytes: int) -> int:
    """A ceiling measured through its contract with two repeats: the repeats it timed (on the ranks
    that time; 0 elsewhere)."""
    ceiling = registry.get_impl("gather", impl).factory()
    reading = ceiling.measure(ctx, {ceiling.size_param: nbytes, **options}, RepeatBudget(warmup=0, repeats=2))
    return reading.seconds.repeats if reading.seconds is not None else 0


def check_adversarial(ctx, variants: list, num_rows: int, row_elems: int, dtypes: list[str], seed: int) -> dict:
    """Every rank gathers, in step, id lists built to break a gather, each compared with the closed
    form, for every (impl, options) of ``variants`` and every dtype: heavy duplicates; every id on
    owner 0; every id its own; nothing on every rank, then on rank 0 only; descending over every
    owner; the last row and every shard's first and last rows, reversed and repeated; more ids on
    the last rank than ``options['capacity']`` (when given) while the others gather few. Returns, per
    variant ("impl options"), the rows checked per case and the gatherer's description."""
    device, world, me = ctx.torch_device(), ctx.world_size, ctx.rank
    results = {}
    for impl, options in variants:
        name = f"{impl} {options}"
        for dtype in dtypes:
            spec = TableSpec(num_rows, row_elems, dtype)
            gatherer = registry.get_impl("gather", impl).factory(ctx, spec, **options)
            try:
                rpp = getattr(gatherer, "rows_per_rank", RowPartition(num_rows, world).rows_per_rank)
                gen = torch.Generator().manual_seed(seed + 101 * me)
                mine = (min(me * rpp, num_rows), min((me + 1) * rpp, num_rows))
                edges = sorted({num_rows - 1, 0} | {min(num_rows - 1, b) for r in range(world)
                                                   for b in (r * rpp, (r + 1) * rpp - 1)})
                capacity = options.get("capacity")
                cases = {
                    "duplicates": torch.cat([torch.full((300,), num_rows // 2),
                                             torch.randint(0, 7, (200,), generator=gen)]),
                    "one_owner": torch.randint(0, min(rpp, num_rows), (400,), generator=gen),
                    "own_rows": torch.randint(*mine, (250,), generator=gen) if mine[1] > mine[0] else torch.empty(0),
                    "empty": torch.empty(0),
                    "empty_on_rank0": torch.empty(0) if me == 0 else torch.randint(0, num_rows, (300,), generator=gen),
                    "descending": torch.randint(0, num_rows, (500,), generator=gen).sort(descending=True).values,
                    "edges": torch.tensor(edges[::-1] * 4),
                }
                if capacity:
                    many = me == world - 1
                    cases["over_capacity"] = torch.randint(0, num_rows, (3 * capacity if many else 50,), generator=gen)
                checked = {}
                for case, ids in cases.items():
                    ids = ids.to(torch.int64).to(device)
                    rows = gatherer.gather(ids)
                    expect = closed_form_rows(ids, row_elems, spec.torch_dtype)
                    assert rows.dtype == spec.torch_dtype and rows.shape == (ids.numel(), row_elems), \
                        f"{name} {dtype} {case}: {rows.dtype} {tuple(rows.shape)}"
                    assert torch.equal(rows.cpu(), expect.cpu()), f"{name} {dtype} {case}: wrong rows on rank {me}"
                    checked[case] = int(ids.numel())
                results[name] = {"checked": checked, "describe": gatherer.describe()}
            finally:
                gatherer.close()
    return results


def device_memory_after_rounds(ctx, impl: str, options: dict, rounds: int) -> tuple[int, int]:
    """(free device bytes before, after) ``rounds`` gatherers of a 1 GB table were built, used and
    closed one after another, counted from after a first round (which also sets up the process
    group's communicators and the kernels): what a close leaves allocated adds up over a run's points."""
    device = ctx.torch_device()

    def one_round(seed: int) -> None:
        spec = TableSpec(2_000_000, 128)
        gatherer = registry.get_impl("gather", impl).factory(ctx, spec, **options)
        try:
            ids = torch.randint(0, spec.num_rows, (100_000,), generator=torch.Generator().manual_seed(seed)).to(device)
            assert torch.equal(gatherer.gather(ids), closed_form_rows(ids, spec.row_elems, spec.torch_dtype))
        finally:
            gatherer.close()
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()

    one_round(0)
    before = torch.cuda.mem_get_info(device)[0]
    for r in range(rounds):
        one_round(r + 1)
    return before, torch.cuda.mem_get_info(device)[0]


def reads_across_nodes(ctx, node_of: list[int] | None, node_aware: list[bool], num_rows: int, row_elems: int,
                       n_ids: int, seed: int) -> dict:
    """``p2p_shared`` (chunked, reads counted) on ranks that span nodes: ``node_of`` gives the node of
    each rank under the harness's launcher (one host: nodes emulated in one launch, sharing its
    shared-memory files); None keeps the nodes the launch found (torchrun's). Every rank gathers
    random ids over every shard and the last row; the rows must equal the closed form (the simple
    reference), for each ``node_aware`` setting in turn. Returns, per setting, the rows each path
    served per owner rank, the rows this rank asked of each owner and the owners on other nodes whose
    rows came through a mapping (what must stay empty), or the error that building it raised."""
    from harness.launcher import Topology, with_topology
    from impls.gather.p2p_shared import SharedMemoryGather      # alone: the registry imports every impl

    if node_of is not None:
        ctx = with_topology(ctx, Topology(tuple(node_of), ("one-host",) * (max(node_of) + 1)))
    spec = TableSpec(num_rows, row_elems)
    gen = torch.Generator().manual_seed(seed + ctx.rank)
    ids = torch.cat([torch.randint(0, num_rows, (n_ids,), generator=gen), torch.tensor([num_rows - 1])])
    asked = torch.bincount(RowPartition(num_rows, ctx.world_size).owner(ids), minlength=ctx.world_size).tolist()
    out = {"node": ctx.node, "nodes": ctx.nodes, "local_world_size": ctx.local_world_size, "asked": asked,
           "topology": ctx.topology_record()}
    for aware in node_aware:
        try:
            gatherer = SharedMemoryGather(ctx, spec, "chunked", node_aware=aware, count_reads=True)
        except Exception as exc:  # noqa: BLE001 - what the test looks at (every rank fails alike)
            out[aware] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        try:
            rows = gatherer.gather(ids)
            assert torch.equal(rows, closed_form_rows(ids, row_elems, spec.torch_dtype)), "rows differ from the closed form"
            reads = gatherer.store.reads
            out[aware] = {"mapped": reads.rows["mapped"], "nccl": reads.rows["nccl"],
                          "from_other_nodes_mapped": reads.mapped_from_other_nodes(ctx),
                          "describe": gatherer.describe()}
        finally:
            gatherer.close()
    return out
