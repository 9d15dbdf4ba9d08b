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
