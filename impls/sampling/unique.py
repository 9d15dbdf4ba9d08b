"""Interface `unique`: append-unique of one hop (WholeGraph III-C-2, Fig. 5).

    u = make(rank_or_device, **options)
    unique_ids, local_neighbors, dup_count = u.append_unique(targets, neighbors)

``targets`` (distinct node ids) come first in ``unique_ids`` in their order; the nodes of
``neighbors`` that are not targets follow, once each, in an order fixed by the inputs (each
implementation documents it); ``local_neighbors[j]`` is the position of ``neighbors[j]`` in
``unique_ids`` (int64); ``dup_count[k]`` counts the entries of ``neighbors`` equal to
``unique_ids[k]`` (int32). Ids must be >= 0. ``append_unique(..., id_bound=N)`` promises every id
is < N (the graph's node count; ``check`` verifies it): the hash table is then sized by
min(inputs, N) instead of the inputs alone.

- ``hash_append``: WholeGraph's hash table (kernels/unique.cu; numba on CPU): new nodes are
  numbered by bucket counts and an exclusive prefix sum over buckets, in (home slot, id)
  order, which depends only on the inputs and the table size (CPU and GPU agree). Option
  ``max_load`` (default 0.5): the table's largest fill, which sets its size.
- ``dense_append``: a direct-mapped id table instead of a hash table (kernels/unique_dense.cu;
  torch on CPU): one generation-tagged slot per node id below ``id_bound`` (the graph's node
  count) and a bitmap of new nodes, kept between calls, five launches and one read-back a call;
  new nodes in ascending id, so the output equals ``sort``'s.
  Without ``id_bound`` it takes the largest id + 1 (one read-back more). The workspace belongs to
  the object: one call at a time per object (a second thread or stream needs its own).
- ``sort``: the sort-based reference (torch.unique, as PyG/DGL do): new nodes in ascending id.
- ``wholegraph_lib``: pylibwholegraph's ``append_unique`` (its order; dup_count by bincount).
"""

from __future__ import annotations

import numpy as np
import torch

from harness.errors import HarnessError
from harness.needs import Needs
from harness.registry import register_impl

from impls.core import cuda

from . import rng
from .gpu import KERNELS
from .csr import where_of


def _ids(x, device) -> torch.Tensor:
    if (isinstance(x, torch.Tensor) and x.dtype == torch.int64 and x.device == device and x.dim() == 1
            and x.is_contiguous()):
        return x                  # the sampler's output as it comes: no conversion on the hot path
    x = torch.as_tensor(x)
    if x.dtype not in (torch.int32, torch.int64):
        raise HarnessError(f"node ids must be int32 or int64, not {x.dtype}")
    return x.reshape(-1).to(device=device, dtype=torch.int64).contiguous()


def _check(targets, neighbors, id_bound: int | None = None) -> None:
    for name, t in (("targets", targets), ("neighbors", neighbors)):
        if t.numel() and int(t.min()) < 0:
            raise HarnessError(f"append-unique {name} must be >= 0")
        if id_bound is not None and t.numel() and int(t.max()) >= id_bound:
            raise HarnessError(f"append-unique {name} reach {int(t.max())}, not below id_bound {id_bound}")


def _overflow(id_bound) -> HarnessError:
    return HarnessError(f"append-unique hash table full: more distinct ids than id_bound={id_bound} allows "
                        "(an id at or above the bound)")


class HashAppendUnique:
    name = "hash_append"

    def __init__(self, where, engine: str = "auto", max_load: float = 0.5, **_):
        self.device, _ = where_of(where)
        if not 0.0 < float(max_load) <= 0.9:
            raise HarnessError(f"max_load must be in (0, 0.9], not {max_load}")
        self.max_load = float(max_load)   # the table's largest fill; fixes H, hence the new nodes' order
        if engine == "auto":
            engine = "kernel" if self.device.type == "cuda" else "numba"
        if engine == "kernel" and not cuda.kernel_device_ok(self.device):
            raise HarnessError("the kernel engine needs a CUDA device (or the tests' emulator)")
        if engine == "numba" and self.device.type != "cpu":
            raise HarnessError("the numba engine runs on the CPU device only")
        self.engine = engine

    def append_unique(self, targets, neighbors, check: bool = True, id_bound: int | None = None):
        targets, neighbors = _ids(targets, self.device), _ids(neighbors, self.device)
        if check:
            _check(targets, neighbors, id_bound)
        nt, nn = targets.numel(), neighbors.numel()
        H = rng.table_slots(nt + nn, id_bound, self.max_load)
        if self.engine == "numba":
            from . import cpu

            unique_out = np.empty(nt + nn, dtype=np.int64)
            local = np.empty(nn, dtype=np.int64)
            dup = np.zeros(nt + nn, dtype=np.int32)
            new = int(cpu.hash_append_unique(targets.numpy(), neighbors.numpy(), H, unique_out, local, dup))
            if new < 0:
                raise _overflow(id_bound)
            return (torch.from_numpy(unique_out[:nt + new]), torch.from_numpy(local),
                    torch.from_numpy(dup[:nt + new]))
        dev = self.device
        ws = torch.full((H + H // 2 + 2,), -1, dtype=torch.int64, device=dev)   # keys | values (u32) | tail
        keys, vals, tail = ws[:H], ws[H:H + H // 2].view(torch.int32), ws[H + H // 2:]
        zeros = torch.zeros(1 + H // 32 + nt + nn, dtype=torch.int32, device=dev)
        overflow, counts, dup = zeros[:1], zeros[1:1 + H // 32], zeros[1 + H // 32:]
        ids = torch.empty(H, dtype=torch.int32, device=dev)
        unique_out = torch.empty(nt + nn, dtype=torch.int64, device=dev)
        local = torch.empty(nn, dtype=torch.int64, device=dev)
        mask = np.uint64(H - 1)
        KERNELS.launch(dev, "unique.cu", "au_insert", cuda.grid_for(dev, nt + nn), 256,
                   (cuda.ptr(targets), np.int64(nt), cuda.ptr(neighbors), np.int64(nn), cuda.ptr(keys),
                    cuda.ptr(vals), cuda.ptr(counts), mask, cuda.ptr(unique_out), cuda.ptr(local), cuda.ptr(overflow)))
        inclusive = torch.cumsum(counts, 0)
        block = 256 if H >= 256 else 64
        KERNELS.launch(dev, "unique.cu", "au_assign", min(H // block, cuda.sm_count(dev) * 8), block,
                   (cuda.ptr(keys), cuda.ptr(vals), cuda.ptr(counts), cuda.ptr(inclusive), mask, np.int64(nt),
                    cuda.ptr(ids), cuda.ptr(unique_out), cuda.ptr(overflow), cuda.ptr(tail)))
        if nn:
            KERNELS.launch(dev, "unique.cu", "au_lookup", cuda.grid_for(dev, nn), 256,
                       (np.int64(nn), cuda.ptr(ids), cuda.ptr(local), cuda.ptr(dup), cuda.ptr(overflow)))
        new, lost = tail.tolist()
        if lost:
            raise _overflow(id_bound)
        return unique_out[:nt + new], local, dup[:nt + new]

    def describe(self) -> str:
        how = ("CUDA kernels" if self.device.type == "cuda" else "CUDA kernels (emulated)") \
            if self.engine == "kernel" else "numba on CPU"
        load = "" if self.max_load == 0.5 else f", tables filled to at most {self.max_load:g}"
        return ("hash-table append-unique (WholeGraph Fig. 5): open addressing, bucket counts, "
                f"exclusive prefix sum{load}; {how}")


DENSE_MAX_BOUND = 2**31 - 1      # local ids are u32; the workspace is 8.125 bytes per id


class DenseAppendUnique:
    name = "dense_append"

    def __init__(self, where, engine: str = "auto", **_):
        self.device, _ = where_of(where)
        if engine == "auto":
            engine = "kernel" if self.device.type == "cuda" else "torch"
        if engine == "kernel" and not cuda.kernel_device_ok(self.device):
            raise HarnessError("the kernel engine needs a CUDA device (or the tests' emulator)")
        if engine not in ("kernel", "torch"):
            raise HarnessError(f"dense_append's engine is auto, kernel or torch, not '{engine}'")
        self.engine = engine
        self._slot = self._bits = self._counts = self._ctl = None    # the kernels' workspace
        self._gen = 0

    @staticmethod
    def _bound(targets, neighbors, id_bound) -> int:
        if id_bound is None:
            top = max([int(t.max()) for t in (targets, neighbors) if t.numel()], default=0)
            id_bound = top + 1
        if not 0 < int(id_bound) <= DENSE_MAX_BOUND:
            raise HarnessError(f"dense_append needs ids below {DENSE_MAX_BOUND:,} (a table of one slot per id), "
                               f"not a bound of {int(id_bound):,}")
        return int(id_bound)

    def append_unique(self, targets, neighbors, check: bool = True, id_bound: int | None = None):
        targets, neighbors = _ids(targets, self.device), _ids(neighbors, self.device)
        if check:
            _check(targets, neighbors, id_bound)
        bound = self._bound(targets, neighbors, id_bound)
        if self.engine == "torch":
            return self._torch(targets, neighbors, bound)
        return self._kernels(targets, neighbors, bound)

    def _torch(self, targets, neighbors, bound):
        nt = targets.numel()
        if (nt and int(targets.max()) >= bound) or (neighbors.numel() and int(neighbors.max()) >= bound):
            raise _overflow(bound)
        empty = torch.iinfo(torch.int64).max
        slot = torch.full((bound,), empty, dtype=torch.int64)
        slot.scatter_reduce_(0, targets, torch.arange(nt), "amin")
        new = torch.unique(neighbors[slot[neighbors] == empty])       # ascending
        slot[new] = nt + torch.arange(new.numel())
        local = slot[neighbors]
        unique_ids = torch.cat([targets, new])
        return unique_ids, local, torch.bincount(local, minlength=unique_ids.numel()).to(torch.int32)

    def _workspace(self, bound: int):
        """slot (generation-tagged), bits, per-parity chunk counts and read-back words; the
        generation advances every call (module doc of kernels/unique_dense.cu)."""
        words = -(-bound // 32)
        nchunks = -(-words // _DM_CHUNK_WORDS)
        if self._slot is None or self._slot.numel() < bound or self._gen >= _DM_MAX_GEN:
            dev = self.device
            self._slot = torch.zeros(bound, dtype=torch.int64, device=dev)       # generation 0: empty
            self._bits = torch.zeros(words, dtype=torch.int32, device=dev)
            self._counts = torch.zeros(nchunks, dtype=torch.int32, device=dev)
            self._ctl = torch.zeros((2, 2), dtype=torch.int64, device=dev)
            self._gen = 0
        self._gen += 1
        return words, nchunks

    def _kernels(self, targets, neighbors, bound):
        dev = self.device
        nt, nn = targets.numel(), neighbors.numel()
        cap = nt + min(nn, bound)                # the most nodes the output can hold
        words, nchunks = self._workspace(bound)
        gen, parity = self._gen, self._gen & 1
        counts, ctl, other_ctl = self._counts, self._ctl[parity], self._ctl[1 - parity]
        unique_out = torch.empty(cap, dtype=torch.int64, device=dev)
        local = torch.empty(nn, dtype=torch.int64, device=dev)
        dup = torch.empty(cap, dtype=torch.int32, device=dev)
        slot, bits, g = cuda.ptr(self._slot), cuda.ptr(self._bits), np.uint64(gen)
        src = "unique_dense.cu"
        KERNELS.launch(dev, src, "dm_mark_targets", cuda.grid_for(dev, max(nt, cap)), 256,
                   (cuda.ptr(targets), np.int64(nt), np.int64(bound), g, slot, cuda.ptr(unique_out), cuda.ptr(dup),
                    np.int64(cap), cuda.ptr(ctl), cuda.ptr(other_ctl)))
        if nn:
            KERNELS.launch(dev, src, "dm_mark_neighbors", cuda.grid_for(dev, nn), 256,
                       (cuda.ptr(neighbors), np.int64(nn), np.int64(bound), g, slot, bits, cuda.ptr(ctl)))
        grid = min(nchunks, cuda.sm_count(dev) * 8)
        KERNELS.launch(dev, src, "dm_count", grid, 256, (bits, np.int64(words), np.int64(nchunks), cuda.ptr(counts)))
        KERNELS.launch(dev, src, "dm_assign", grid, 256,
                   (bits, np.int64(words), np.int64(nchunks), cuda.ptr(counts), np.int64(nt), g, slot,
                    cuda.ptr(unique_out), cuda.ptr(ctl)))
        if nn:
            KERNELS.launch(dev, src, "dm_lookup", cuda.grid_for(dev, nn), 256,
                       (cuda.ptr(neighbors), np.int64(nn), slot, cuda.ptr(local), cuda.ptr(dup), cuda.ptr(ctl)))
        new, lost = ctl.tolist()
        if lost:
            raise _overflow(bound)
        return unique_out[:nt + new], local, dup[:nt + new]

    def describe(self) -> str:
        if self.engine == "torch":
            return "direct-mapped append-unique (one slot per node id, new nodes in ascending id); torch on CPU"
        how = "CUDA kernels" if self.device.type == "cuda" else "CUDA kernels (emulated)"
        return ("direct-mapped append-unique: one generation-tagged slot per node id and a bitmap of new nodes, "
                f"kept between calls; chunked bitmap scan, new nodes in ascending id; five launches; {how}")


_DM_CHUNK_WORDS = 1024     # DM_CHUNK in kernels/unique_dense.cu
_DM_MAX_GEN = 2**32 - 1    # slot entries carry the call's generation in their upper 32 bits


class SortUnique:
    name = "sort"

    def __init__(self, where, **_):
        self.device, _ = where_of(where)

    def append_unique(self, targets, neighbors, check: bool = True, id_bound: int | None = None):
        targets, neighbors = _ids(targets, self.device), _ids(neighbors, self.device)
        if check:
            _check(targets, neighbors, id_bound)
        nt = targets.numel()
        uniq, inverse = torch.unique(torch.cat([targets, neighbors]), return_inverse=True)
        is_new = torch.ones(uniq.numel(), dtype=torch.bool, device=self.device)
        is_new[inverse[:nt]] = False
        local_of = torch.empty(uniq.numel(), dtype=torch.int64, device=self.device)
        local_of[inverse[:nt]] = torch.arange(nt, device=self.device)
        new_rank = torch.cumsum(is_new, 0) - 1
        local_of = torch.where(is_new, nt + new_rank, local_of)
        unique_ids = torch.cat([targets, uniq[is_new]])
        local = local_of[inverse[nt:]]
        dup = torch.bincount(local, minlength=unique_ids.numel()).to(torch.int32)
        return unique_ids, local, dup

    def describe(self) -> str:
        return "sort-based append-unique (torch.unique with inverse, as PyG and DGL relabel)"


class WholeGraphAppendUnique:
    """pylibwholegraph.torch.graph_ops.append_unique (the real library)."""
    name = "wholegraph_lib"

    def __init__(self, where, dup_count: bool = True, **_):
        self.device, rank = where_of(where)
        if self.device.type != "cuda":
            raise HarnessError("wholegraph_lib append_unique runs on CUDA devices only")
        if rank is not None:
            from impls.core.wholegraph import communicator

            communicator(rank)       # initializes the library (wholememory_init) once per process
        self.dup_count = dup_count

    def append_unique(self, targets, neighbors, check: bool = True, id_bound: int | None = None):
        from pylibwholegraph.torch.graph_ops import append_unique

        targets, neighbors = _ids(targets, self.device), _ids(neighbors, self.device)
        if check:
            _check(targets, neighbors, id_bound)
        with torch.cuda.device(self.device):
            uniq, mapping = append_unique(targets, neighbors, need_neighbor_raw_to_unique=True)
        local = mapping.to(torch.int64)
        dup = torch.bincount(local, minlength=uniq.numel()).to(torch.int32) if self.dup_count else None
        return uniq, local, dup

    def library_call(self, targets, neighbors):
        """The library's own call on these inputs (no checks, conversions or duplicate counts): what
        a timing of the library alone repeats."""
        from pylibwholegraph.torch.graph_ops import append_unique

        return lambda: append_unique(targets, neighbors, need_neighbor_raw_to_unique=True)

    def describe(self) -> str:
        from impls.core.wholegraph import library_version

        return f"pylibwholegraph {library_version()} append_unique (hash table in the library)"


@register_impl("unique", "hash_append", needs=Needs(cuda_packages=("cupy",), note="numba on CPU"),
               summary="WholeGraph hash-table append-unique: targets first, bucket counts + prefix sum "
                       "(CuPy kernels; numba on CPU)",
               label="ours: hash_append", order=10, traits=("paper",), labels={"short": "hash"})
def make_hash_append(where, **options):
    return HashAppendUnique(where, **options)


@register_impl("unique", "dense_append", needs=Needs(cuda_packages=("cupy",), note="torch on CPU"),
               summary="direct-mapped append-unique: one slot per node id (ids below the graph's node count), "
                       "new nodes in ascending id (CuPy kernels; torch on CPU)",
               label="ours: dense_append", order=11, colour="#9ecae1", labels={"short": "dense"})
def make_dense_append(where, **options):
    return DenseAppendUnique(where, **options)


@register_impl("unique", "sort", summary="sort-based append-unique reference (torch.unique)",
               label="torch.unique (sort)", family="torch", colour="#595959", order=30, traits=("reference",),
               labels={"short": "torch.unique"})
def make_sort(where, **options):
    return SortUnique(where, **options)


@register_impl("unique", "wholegraph_lib", needs=Needs(devices=("cuda",), packages=("pylibwholegraph",)),
               summary="real pylibwholegraph append_unique",
               label="WholeGraph append_unique", family="WholeGraph", order=40, traits=("library",))
def make_wholegraph_lib(where, **options):
    return WholeGraphAppendUnique(where, **options)
