"""`wholegraph_lib` sampler: pylibwholegraph's ``unweighted_sample_without_replacement``.

The CSR lives in WholeMemory, as in WholeGraph's ``GraphStructure``: ``csr_row_ptr`` int64
``[num_nodes + 1]`` and ``csr_col_ind`` int32 or int64 ``[num_edges]`` (the dtype of the
``indices`` passed in), each created with ``create_wholememory_tensor`` in the requested
memory type (``continuous`` / ``chunked`` / ``distributed``) and location, and filled by
every rank with its own slice under the library's equal split (``get_local_tensor``).
Every rank passes the same full CSR (CPU or GPU tensors); it only copies its share.

Output convention (the library's, returned unchanged):

- ``sample_offsets``: int32 ``[len(seeds) + 1]`` on the rank's GPU, ``sample_offsets[0] == 0``;
  ``sampled_ids[sample_offsets[i]:sample_offsets[i + 1]]`` are the neighbors drawn for
  ``seeds[i]`` (duplicated seeds are sampled independently);
- ``sampled_ids``: neighbor ids with the dtype of ``indices``; per seed
  ``min(degree, fanout)`` distinct CSR positions. A seed with degree <= fanout gets its
  whole neighbor list in CSR order; ``fanout <= 0`` means every neighbor.
- ``sample_with_edges`` also returns the library's ``center_localid`` (int32, index into
  ``seeds`` of each sampled entry) and ``edge_gid`` (int64 CSR position of each entry).

Randomness: each call takes ``random_seed`` (an unsigned 64-bit int); without one, the
sampler draws it from a ``random.Random(seed)`` stream, so a fixed factory ``seed`` makes a
run reproducible and the same ``random_seed`` gives identical output.

With ``mode="distributed"`` the library samples through NCCL: ``sample`` is collective
(every rank calls it in step; a rank with no seeds takes part with one dummy seed and gets
empty outputs). ``close()`` is collective in every mode.
"""

from __future__ import annotations

import random

import torch

from harness.errors import HarnessError, SkipPoint
from impls.core.wholegraph import check_mode_location, communicator, library_version, memory_of, release


def _fill_1d(wm_tensor, source: torch.Tensor, dtype: torch.dtype, device: torch.device) -> tuple[int, int]:
    local, start = wm_tensor.get_local_tensor(host_view=False)
    start, count = int(start), int(local.shape[0])
    if count:
        local.copy_(source[start:start + count].to(device=device, dtype=dtype))
    del local
    return start, count


class WholeGraphSampler:
    """Collective constructor: every rank builds the same CSR in WholeMemory together."""

    def __init__(self, rank, indptr: torch.Tensor, indices: torch.Tensor, mode: str = "continuous",
                 location: str = "device", seed: int | None = None):
        wm_location = check_mode_location(mode, location)
        if indptr.dim() != 1 or indptr.numel() < 2:
            raise HarnessError("wholegraph_lib sampler needs indptr of length num_nodes + 1 >= 2")
        if indices.dim() != 1 or indices.numel() < 1:
            raise HarnessError("wholegraph_lib sampler needs a graph with at least one edge")
        if int(indptr[0]) != 0 or int(indptr[-1]) != indices.numel():
            raise HarnessError(f"indptr must run from 0 to len(indices) = {indices.numel()}, "
                               f"not {int(indptr[0])}..{int(indptr[-1])}")
        self.mode, self.location = mode, location
        self.num_nodes, self.num_edges = indptr.numel() - 1, indices.numel()
        self.col_dtype = torch.int32 if indices.dtype == torch.int32 else torch.int64
        self.rank = rank
        self.device = rank.torch_device()
        self.comm = communicator(rank)
        if not self.comm.support_type_location(mode, wm_location):
            raise SkipPoint(f"pylibwholegraph {library_version()} does not support {mode} memory in "
                            f"{location} memory on this communicator")
        from pylibwholegraph.torch.tensor import create_wholememory_tensor

        self._row = self._col = None
        with torch.cuda.device(self.device):
            self._row = create_wholememory_tensor(self.comm, mode, wm_location, [self.num_nodes + 1],
                                                  torch.int64, None)
            self._col = create_wholememory_tensor(self.comm, mode, wm_location, [self.num_edges],
                                                  self.col_dtype, None)
            self.row_split = _fill_1d(self._row, indptr, torch.int64, self.device)
            self.col_split = _fill_1d(self._col, indices, self.col_dtype, self.device)
            torch.cuda.synchronize(self.device)
        self.comm.barrier()
        self._rng = random.Random(seed)

    def _seeds(self, seeds: torch.Tensor, check: bool) -> torch.Tensor:
        if self._row is None:
            raise HarnessError("wholegraph_lib sample after close()")
        if seeds.dtype not in (torch.int32, torch.int64):
            raise HarnessError(f"seeds must be int32 or int64, not {seeds.dtype}")
        seeds = seeds.reshape(-1).to(self.device).contiguous()
        if check and seeds.numel():
            lo, hi = (int(v) for v in torch.aminmax(seeds))
            if lo < 0 or hi >= self.num_nodes:
                raise HarnessError(f"seed out of range: seeds span [{lo}, {hi}], graph has {self.num_nodes} nodes")
        return seeds

    def _call(self, seeds, fanout, random_seed, with_edges):
        from pylibwholegraph.torch.wholegraph_ops import unweighted_sample_without_replacement

        if random_seed is None:
            random_seed = self._rng.getrandbits(64)
        with torch.cuda.device(self.device):
            return unweighted_sample_without_replacement(
                self._row.wmb_tensor, self._col.wmb_tensor, seeds, int(fanout), int(random_seed),
                need_center_local_output=with_edges, need_edge_output=with_edges)

    def _empty(self, with_edges: bool):
        out = [torch.zeros(1, dtype=torch.int32, device=self.device),
               torch.empty(0, dtype=self.col_dtype, device=self.device)]
        if with_edges:
            out += [torch.empty(0, dtype=torch.int32, device=self.device),
                    torch.empty(0, dtype=torch.int64, device=self.device)]
        return tuple(out)

    def _run(self, seeds, fanout, random_seed, check, with_edges):
        seeds = self._seeds(seeds, check)
        if seeds.numel() == 0:
            if self.mode == "distributed":   # collective: take part with one dummy seed, drop its samples
                self._call(torch.zeros(1, dtype=seeds.dtype, device=self.device), fanout, random_seed, with_edges)
            return self._empty(with_edges)
        out = self._call(seeds, fanout, random_seed, with_edges)
        # with no sampled entry the library may never allocate an output: give empty tensors
        filler = self._empty(with_edges)
        return tuple(t if t is not None else filler[i] for i, t in enumerate(out))

    def sample(self, seeds: torch.Tensor, fanout: int, *, random_seed: int | None = None,
               check: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """(sample_offsets int32 [n + 1], sampled_ids) in the library's convention (module doc)."""
        return self._run(seeds, fanout, random_seed, check, False)

    def sample_with_edges(self, seeds: torch.Tensor, fanout: int, *, random_seed: int | None = None,
                          check: bool = True):
        """(sample_offsets, sampled_ids, center_localid int32, edge_gid int64 CSR positions)."""
        return self._run(seeds, fanout, random_seed, check, True)

    def describe(self) -> str:
        where = memory_of(self.location)
        how = "mapped-memory kernel" if self.mode != "distributed" else "NCCL exchange inside the library"
        return (f"pylibwholegraph {library_version()} unweighted_sample_without_replacement on a CSR "
                f"({self.num_nodes} nodes, {self.num_edges} edges, {str(self.col_dtype).split('.')[-1]} ids) "
                f"in {self.mode} WholeMemory, {where}; {how}")

    def close(self) -> None:
        """Collective: waits for every rank, then frees the CSR."""
        if self._row is None:
            return
        release(self.comm, self.device, (self._col, self._row))
        self._row = self._col = None


def make(rank, indptr: torch.Tensor, indices: torch.Tensor, mode: str = "continuous",
         location: str = "device", seed: int | None = None, **_):
    return WholeGraphSampler(rank, indptr, indices, mode=mode, location=location, seed=seed)
