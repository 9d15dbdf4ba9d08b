"""`wholegraph_lib`: the real pylibwholegraph (RAPIDS cuGraph-GNN WholeGraph) as the anchor.

The harness's own gathers are compared against the library in the same run. This module
wraps it without changing what it does:

- **Communicator** (impls/core/wholegraph.py, shared with the sampler). ``communicator(rank)``
  calls ``pylibwholegraph.torch.initialize.init`` (``wholememory_init`` + the library's world
  info; it does *not* touch torch.distributed,
  unlike ``init_torch_env*``) and then ``pylibwholegraph.torch.comm.get_global_communicator("nccl")``,
  which creates the WholeMemory communicator by broadcasting a ``wholememory_unique_id``
  over the torch.distributed group the launcher already formed. Once per process; later
  tables reuse it. ``shutdown()`` (collective) finalizes the library.
- **Storage.** ``api="embedding"`` (default): ``pylibwholegraph.torch.create_embedding`` with
  no cache policy, gathered through ``WholeMemoryEmbedding.gather`` (``EmbeddingGatherForward``),
  the path WholeGraph's GNN training uses. ``api="tensor"``: a plain WholeMemory matrix from
  ``create_wholememory_tensor`` gathered through ``WholeMemoryTensor.gather``
  (``wholememory_gather_op``). Both end in ``wholememory_gather``: one mapped-memory kernel for
  ``continuous`` / ``chunked``, bucket + NCCL alltoallv + local gather + alltoallv + reorder
  inside the library for ``distributed`` (collective: every rank calls ``gather`` in step; a
  rank with no ids takes part with one dummy id and returns no rows).
- **Row split.** The library's own plan: without an explicit entry partition every rank owns
  ``ceil(num_rows / world)`` rows, the last ranks fewer (``wholememory_equal_entry_partition_plan``,
  exposed as ``wholememory_binding.equal_partition_plan``). The embedding API pads each row to
  a 16-byte multiple (the local view is a strided window; the library hides the padding).
  Each rank fills exactly the rows ``get_local_tensor()`` hands it, with the closed form of
  those global row ids, so correctness never depends on the split matching ``RowPartition``.
"""

from __future__ import annotations

import torch

from harness.errors import HarnessError, SkipPoint
from harness.needs import Needs
from harness.registry import Variant, register_impl
from impls.core.layout import RowPartition, TableSpec, check_ids, closed_form_rows
from impls.core.wholegraph import check_mode_location, communicator, library_version, memory_of, release

APIS = ("embedding", "tensor")
FILL_CHUNK_BYTES = 64 << 20                          # bound on the closed-form scratch per step


def equal_split(num_rows: int, world_size: int) -> int:
    """Rows per rank in the library's default plan (``ceil(num_rows / world_size)``)."""
    import pylibwholegraph.binding.wholememory_binding as wmb

    return int(wmb.equal_partition_plan(num_rows, world_size))


def fill_local_rows(wm_tensor, spec: TableSpec, device: torch.device) -> tuple[int, int]:
    """Write the closed form of this rank's rows into its part of ``wm_tensor``.

    Uses the library's own split (``get_local_tensor``: a device view, also for host
    memory, as the library's tests do). Returns (first global row, row count).
    ``library_entry_range`` reads the library's bookkeeping for the same thing.
    """
    local, start = wm_tensor.get_local_tensor(host_view=False)
    start, count = int(start), int(local.shape[0])
    step = max(1, FILL_CHUNK_BYTES // (spec.row_elems * 8))
    for lo in range(0, count, step):
        hi = min(count, lo + step)
        ids = torch.arange(start + lo, start + hi, device=device, dtype=torch.int64)
        local[lo:hi].copy_(closed_form_rows(ids, spec.row_elems, spec.torch_dtype))
    del local
    return start, count


def library_entry_range(wm_tensor) -> tuple[int, int] | None:
    """(local entry start, local entry count) as the library records them, or None."""
    try:
        return (int(wm_tensor.wmb_tensor.get_local_entry_start()),
                int(wm_tensor.wmb_tensor.get_local_entry_count()))
    except Exception:  # not every (sub)tensor answers; the local view is authoritative
        return None


class WholeGraphGather:
    """One WholeMemory table per rank group; collective constructor and ``close``."""

    def __init__(self, rank, spec: TableSpec, mode: str = "continuous", location: str = "device",
                 api: str = "embedding", gather_sms: int = -1):
        wm_location = check_mode_location(mode, location)
        if api not in APIS:
            raise HarnessError(f"wholegraph_lib api must be one of {', '.join(APIS)}, not '{api}'")
        self.spec, self.mode, self.location, self.api = spec, mode, location, api
        self.rank = rank
        self.device = rank.torch_device()
        self.comm = communicator(rank)
        if not self.comm.support_type_location(mode, wm_location):
            raise SkipPoint(f"pylibwholegraph {library_version()} does not support {mode} memory in "
                            f"{location} memory on this communicator")
        self._emb = None
        with torch.cuda.device(self.device):
            if api == "embedding":
                from pylibwholegraph.torch.embedding import create_embedding

                self._emb = create_embedding(self.comm, mode, wm_location, spec.torch_dtype,
                                             [spec.num_rows, spec.row_elems], gather_sms=gather_sms)
                self._tensor = self._emb.get_embedding_tensor()
            else:
                from pylibwholegraph.torch.tensor import create_wholememory_tensor

                self._tensor = create_wholememory_tensor(self.comm, mode, wm_location,
                                                         [spec.num_rows, spec.row_elems],
                                                         spec.torch_dtype, None)
            self.local_start, self.local_count = fill_local_rows(self._tensor, spec, self.device)
            self.entry_range = library_entry_range(self._tensor)   # cross-check, reported by tests
            torch.cuda.synchronize(self.device)
        self.comm.barrier()  # every rank's rows are written before anyone reads them
        self.rows_per_rank = equal_split(spec.num_rows, rank.world_size)

    @property
    def split_matches_row_partition(self) -> bool:
        """Whether the library's rows for this rank are ``RowPartition``'s (informational)."""
        lo, hi = RowPartition(self.spec.num_rows, self.rank.world_size).bounds(self.rank.rank)
        return (self.local_start, self.local_count) == (lo, hi - lo)

    def gather(self, ids: torch.Tensor, check: bool = True) -> torch.Tensor:
        if self._tensor is None:
            raise HarnessError("wholegraph_lib gather after close()")
        if check:
            check_ids(ids, self.spec.num_rows)
        if ids.dtype not in (torch.int32, torch.int64):
            ids = ids.to(torch.int64)
        ids = ids.reshape(-1).to(self.device).contiguous()  # the library takes int32 or int64
        if ids.numel() == 0:
            if self.mode != "distributed":
                return torch.empty((0, self.spec.row_elems), dtype=self.spec.torch_dtype, device=self.device)
            # distributed gathers are collective: take part with one dummy row, return none of it
            return self._gather(torch.zeros(1, dtype=ids.dtype, device=self.device))[:0]
        return self._gather(ids)

    def _gather(self, ids: torch.Tensor) -> torch.Tensor:
        with torch.cuda.device(self.device):
            if self._emb is not None:
                return self._emb.gather(ids)
            return self._tensor.gather(ids)

    def describe(self) -> str:
        where = memory_of(self.location)
        if self.mode == "distributed":
            how = "the library's NCCL alltoallv gather"
        elif self.location == "device":
            how = "one mapped-memory gather kernel (local + NVLink P2P reads)"
        else:
            how = "one mapped-memory gather kernel (zero-copy reads of host memory)"
        api = "WholeMemoryEmbedding" if self.api == "embedding" else "WholeMemoryTensor"
        end = self.local_start + self.local_count
        return (f"pylibwholegraph {library_version()} {api}, {self.mode} in {where}; {how}; "
                f"rank {self.rank.rank} owns rows [{self.local_start}, {end}) "
                f"(library split, ceil(N/W) = {self.rows_per_rank} per rank)")

    def close(self) -> None:
        """Collective: waits for every rank's reads, then frees the table."""
        if self._tensor is None:
            return
        release(self.comm, self.device, () if self._emb is not None else (self._tensor,), self._emb)
        self._emb = self._tensor = None


@register_impl("gather", "wholegraph_lib", needs=Needs(devices=("cuda",), packages=("pylibwholegraph",)),
               summary="real pylibwholegraph WholeMemory embedding: continuous / chunked / distributed, "
                       "device or host memory",
               label="WholeGraph", family="WholeGraph", order=40, traits=("library",), variants=(
                   Variant("continuous", {"mode": "continuous"}, "WholeGraph continuous", traits=frozenset({"peer_read"})),
                   Variant("chunked", {"mode": "chunked"}, "WholeGraph chunked", traits=frozenset({"peer_read"})),
                   Variant("distributed", {"mode": "distributed"}, "WholeGraph distributed",
                           traits=frozenset({"collective"}))))
def make(rank, spec: TableSpec, mode: str = "continuous", location: str = "device",
         api: str = "embedding", gather_sms: int = -1, **_):
    return WholeGraphGather(rank, spec, mode=mode, location=location, api=api, gather_sms=gather_sms)
