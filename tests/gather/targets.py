"""Rank functions for gather tests (module level: spawned ranks import them by name)."""

from __future__ import annotations

import torch

from harness import registry
from harness.errors import HarnessError
from impls.core.layout import TableSpec, closed_form_rows


def check_gather(ctx, impl: str, mode: str | None, num_rows: int, row_elems: int, dtypes: list[str],
                 n_ids: int, seed: int) -> dict:
    """Each rank gathers random ids with duplicates, an empty list and every dtype;
    rows are checked against the closed form locally. Returns counts of checked rows."""
    spec_factory = registry.get_impl("gather", impl).factory
    device = ctx.torch_device()
    checked = {}
    for dtype in dtypes:
        spec = TableSpec(num_rows, row_elems, dtype)
        options = {"mode": mode} if mode else {}
        gatherer = spec_factory(ctx, spec, **options)
        try:
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
            bad = torch.tensor([0, num_rows], device=device)
            try:
                gatherer.gather(bad)
            except HarnessError as exc:
                assert "out of range" in str(exc)
            else:
                raise AssertionError("an out-of-range id was not refused")
            checked[dtype] = int(rows.shape[0])
        finally:
            gatherer.close()
    return checked


def gather_against_the_table(ctx, variants: list[tuple[str, str | None]], num_rows: int, row_elems: int,
                             n_ids: int, seed: int) -> dict[str, int]:
    """``gather(ids)`` equals ``features[ids]``, features being the whole table every store fills
    (row i's closed form), for random ids that reach every rank's shard, the last rows included.
    Returns the rows checked per variant."""
    features = closed_form_rows(torch.arange(num_rows), row_elems, torch.float32)
    gen = torch.Generator().manual_seed(seed + ctx.rank)
    ids = torch.cat([torch.randint(0, num_rows, (n_ids,), generator=gen), torch.arange(num_rows)])
    checked = {}
    for impl, mode in variants:
        options = {"mode": mode} if mode else {}
        gatherer = registry.get_impl("gather", impl).factory(ctx, TableSpec(num_rows, row_elems), **options)
        try:
            rows = gatherer.gather(ids.to(ctx.torch_device())).cpu()
            assert torch.equal(rows, features[ids]), f"{impl} {mode}: rows differ from features[ids]"
            checked[f"{impl} {mode}"] = int(ids.numel())
        finally:
            gatherer.close()
    return checked


def alltoall_ceiling(ctx, nbytes: int) -> int:
    from impls.gather.ceiling import alltoall_seconds

    return alltoall_seconds(ctx, nbytes, warmup=0, repeats=2).repeats
