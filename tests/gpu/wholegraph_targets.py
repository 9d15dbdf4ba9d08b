"""Rank functions for the pylibwholegraph tests (module level: spawned ranks import them by name).

Every function runs inside harness.launcher on CUDA ranks, returns plain dicts (picklable)
and finalizes the library at the end. Loops are identical on every rank, so the collective
calls (construction, distributed gathers/samples, close) stay in step.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from harness.errors import HarnessError, SkipPoint
from impls.core import wholegraph
from impls.core.layout import RowPartition, TableSpec, closed_form_rows


def _random_ids(num_rows: int, n_ids: int, seed: int, device) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, num_rows, (n_ids,), generator=gen)
    ids[: n_ids // 4] = ids[n_ids // 4: n_ids // 2]       # duplicates on purpose
    ids[0], ids[-1] = 0, num_rows - 1                     # first row, last row (short shard)
    return ids.to(device)


def _expect_refused(fn, what: str) -> None:
    try:
        fn()
    except HarnessError as exc:
        assert "out of range" in str(exc), str(exc)
    else:
        raise AssertionError(f"{what} was not refused")


def check_gather_mode(ctx, mode: str, cases: list, n_ids: int, seed: int) -> dict:
    """For each case (location, api, num_rows, row_elems, dtype): build a wholegraph_lib table,
    gather random ids with duplicates (int64 and int32), an empty list and out-of-range ids;
    compare rows with the closed form. Returns per-case facts (split, description) or a skip."""
    from impls.gather import wholegraph_lib as wg

    device = ctx.torch_device()
    results: dict = {}
    for location, api, num_rows, row_elems, dtype in cases:
        key = f"{location}/{api}/{num_rows}x{row_elems}/{dtype}"
        spec = TableSpec(num_rows, row_elems, dtype)
        try:
            g = wg.make(ctx, spec, mode=mode, location=location, api=api)
        except SkipPoint as exc:
            results[key] = {"skipped": str(exc)}
            continue
        try:
            ids = _random_ids(num_rows, n_ids, seed + 97 * ctx.rank, device)
            expect = closed_form_rows(ids, row_elems, spec.torch_dtype)
            rows = g.gather(ids)
            assert rows.device == device, f"{key}: rows on {rows.device}, not {device}"
            assert rows.dtype == spec.torch_dtype and tuple(rows.shape) == (n_ids, row_elems), \
                f"{key}: got {rows.dtype} {tuple(rows.shape)}"
            assert torch.equal(rows, expect), f"{key}: wrong rows ({int((rows != expect).any(1).sum())} differ)"
            rows32 = g.gather(ids.to(torch.int32))
            assert torch.equal(rows32, expect), f"{key}: wrong rows for int32 ids"
            unchecked = g.gather(ids, check=False)
            assert torch.equal(unchecked, expect), f"{key}: wrong rows with check=False"
            empty = g.gather(torch.empty(0, dtype=torch.int64, device=device))
            assert tuple(empty.shape) == (0, row_elems) and empty.dtype == spec.torch_dtype, \
                f"{key}: empty gather gave {empty.dtype} {tuple(empty.shape)}"
            _expect_refused(lambda: g.gather(torch.tensor([0, num_rows], device=device)), "id == num_rows")
            _expect_refused(lambda: g.gather(torch.tensor([-1], device=device)), "a negative id")
            # the library's split: ranks' row ranges tile [0, num_rows) in rank order
            splits: list = [None] * ctx.world_size
            dist.all_gather_object(splits, (g.local_start, g.local_count))
            start = 0
            for r, (s, c) in enumerate(splits):
                assert s == start, f"{key}: rank {r} starts at row {s}, expected {start} ({splits})"
                start += c
            assert start == num_rows, f"{key}: ranks hold {start} rows of {num_rows} ({splits})"
            lo, hi = RowPartition(num_rows, ctx.world_size).bounds(ctx.rank)
            results[key] = {"rows": int(rows.shape[0]), "split": splits,
                            "matches_row_partition": (g.local_start, g.local_count) == (lo, hi - lo),
                            "rows_per_rank": g.rows_per_rank, "entry_range": g.entry_range,
                            "describe": g.describe()}
        finally:
            g.close()
    wholegraph.shutdown()
    return results


def make_graph(num_nodes: int, fanout: int, seed: int, col_dtype: torch.dtype):
    """A CSR whose neighbor lists hold distinct ids, with degrees 0, 1, fanout, fanout + 1 and a
    spread up to 3 x fanout; identical on every rank (fixed seed, CPU)."""
    gen = torch.Generator().manual_seed(seed)
    deg = torch.randint(0, 3 * fanout + 1, (num_nodes,), generator=gen)
    deg[:4] = torch.tensor([0, 1, fanout, fanout + 1])
    deg.clamp_(max=num_nodes)
    lists = [torch.randperm(num_nodes, generator=gen)[: int(d)] for d in deg]
    indptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
    indptr[1:] = torch.cumsum(deg, 0)
    indices = torch.cat(lists).to(col_dtype)
    return indptr, indices


def _check_samples(indptr, indices, seeds, fanout, offsets, sampled, edges=None, centers=None) -> tuple[int, int]:
    """Per seed: min(degree, fanout) distinct entries of its own list; all of it when degree <= fanout
    (fanout <= 0: always all). Returns (sampled entries, seeds that got their full list)."""
    offsets, sampled, seeds = offsets.cpu().to(torch.int64), sampled.cpu().to(torch.int64), seeds.cpu()
    indptr, indices = indptr.to(torch.int64), indices.to(torch.int64)
    assert offsets.shape == (seeds.numel() + 1,), f"offsets shape {tuple(offsets.shape)}"
    assert int(offsets[0]) == 0 and bool((offsets[1:] >= offsets[:-1]).all()), "offsets not a CSR"
    assert int(offsets[-1]) == sampled.numel(), f"offsets end {int(offsets[-1])} != {sampled.numel()} samples"
    full = 0
    for i, s in enumerate(seeds.tolist()):
        a, b = int(indptr[s]), int(indptr[s + 1])
        nbrs = indices[a:b].tolist()
        got = sampled[int(offsets[i]):int(offsets[i + 1])].tolist()
        want = len(nbrs) if fanout <= 0 else min(len(nbrs), fanout)
        assert len(got) == want, f"seed {s}: {len(got)} samples, degree {len(nbrs)}, fanout {fanout}"
        assert len(set(got)) == len(got), f"seed {s}: repeated neighbors {got}"
        assert set(got) <= set(nbrs), f"seed {s}: {sorted(set(got) - set(nbrs))} not neighbors"
        if want == len(nbrs):
            assert sorted(got) == sorted(nbrs), f"seed {s}: degree <= fanout but not every neighbor"
            full += 1
        if edges is not None:
            pos = edges.cpu()[int(offsets[i]):int(offsets[i + 1])].to(torch.int64)
            assert bool(((pos >= a) & (pos < b)).all()), f"seed {s}: edge ids outside [{a}, {b})"
            assert indices[pos].tolist() == got, f"seed {s}: edge ids do not point at the samples"
            cen = centers.cpu()[int(offsets[i]):int(offsets[i + 1])]
            assert bool((cen == i).all()), f"seed {s}: center_localid != {i}"
    return sampled.numel(), full


def check_sampler(ctx, mode: str, location: str, num_nodes: int, fanout: int, n_seeds: int,
                  seed: int) -> dict:
    """wholegraph_lib sampler on small CSRs (int32 and int64 ids): neighbors within each seed's
    list, no repeats, everything when degree <= fanout; fixed random_seed reproduces; empty seed
    list; out-of-range seeds refused."""
    from impls.sampling import wholegraph_lib as ws

    device = ctx.torch_device()
    results: dict = {}
    for col_dtype in (torch.int32, torch.int64):
        key = str(col_dtype).split(".")[-1]
        indptr, indices = make_graph(num_nodes, fanout, seed, col_dtype)
        try:
            sampler = ws.make(ctx, indptr, indices, mode=mode, location=location, seed=seed + ctx.rank)
        except SkipPoint as exc:
            results[key] = {"skipped": str(exc)}
            continue
        try:
            gen = torch.Generator().manual_seed(seed + 1 + 13 * ctx.rank)
            seeds = torch.randint(0, num_nodes, (n_seeds,), generator=gen)
            seeds[:4] = torch.arange(4)                          # degrees 0, 1, fanout, fanout + 1
            seeds[4:8] = seeds[8:12]                             # duplicated seeds
            seeds = seeds.to(device)
            offsets, sampled = sampler.sample(seeds, fanout)
            assert offsets.dtype == torch.int32 and sampled.dtype == col_dtype, \
                f"{key}: offsets {offsets.dtype}, ids {sampled.dtype}"
            assert offsets.device == device and sampled.device == device
            n_sampled, n_full = _check_samples(indptr, indices, seeds, fanout, offsets, sampled)
            seeds32 = seeds.to(torch.int32)
            _check_samples(indptr, indices, seeds32, fanout, *sampler.sample(seeds32, fanout))
            off_e, ids_e, centers, edges = sampler.sample_with_edges(seeds, fanout, random_seed=1234)
            _check_samples(indptr, indices, seeds, fanout, off_e, ids_e, edges=edges, centers=centers)
            again = sampler.sample(seeds, fanout, random_seed=1234)
            assert torch.equal(again[0], off_e) and torch.equal(again[1], ids_e), \
                f"{key}: the same random_seed gave different samples"
            _check_samples(indptr, indices, seeds, -1, *sampler.sample(seeds, -1))   # fanout <= 0: all
            e_off, e_ids = sampler.sample(torch.empty(0, dtype=torch.int64, device=device), fanout)
            assert e_off.tolist() == [0] and e_ids.numel() == 0, f"{key}: empty seeds gave {e_off.tolist()}"
            _expect_refused(lambda: sampler.sample(torch.tensor([num_nodes], device=device), fanout),
                            "seed == num_nodes")
            results[key] = {"sampled": n_sampled, "full_lists": n_full, "seeds": n_seeds,
                            "row_split": sampler.row_split, "describe": sampler.describe()}
        finally:
            sampler.close()
    wholegraph.shutdown()
    return results
