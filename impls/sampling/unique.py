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
- ``sort``: the sort-based reference (torch.unique, as PyG/DGL do): new nodes in ascending id.
- ``wholegraph_lib``: pylibwholegraph's ``append_unique`` (its order; dup_count by bincount).
"""

from __future__ import annotations

import numpy as np
import torch

from harness.errors import HarnessError
from harness.needs import Needs
from harness.registry import register_impl

from . import gpu, rng
from .csr import where_of


def _ids(x, device) -> torch.Tensor:
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
        if engine == "kernel" and not gpu.kernel_device_ok(self.device):
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
        gpu.launch(dev, "unique.cu", "au_insert", gpu.grid_for(dev, nt + nn), 256,
                   (gpu.ptr(targets), np.int64(nt), gpu.ptr(neighbors), np.int64(nn), gpu.ptr(keys),
                    gpu.ptr(vals), gpu.ptr(counts), mask, gpu.ptr(unique_out), gpu.ptr(local), gpu.ptr(overflow)))
        inclusive = torch.cumsum(counts, 0)
        block = 256 if H >= 256 else 64
        gpu.launch(dev, "unique.cu", "au_assign", min(H // block, gpu.sm_count(dev) * 8), block,
                   (gpu.ptr(keys), gpu.ptr(vals), gpu.ptr(counts), gpu.ptr(inclusive), mask, np.int64(nt),
                    gpu.ptr(ids), gpu.ptr(unique_out), gpu.ptr(overflow), gpu.ptr(tail)))
        if nn:
            gpu.launch(dev, "unique.cu", "au_lookup", gpu.grid_for(dev, nn), 256,
                       (np.int64(nn), gpu.ptr(ids), gpu.ptr(local), gpu.ptr(dup), gpu.ptr(overflow)))
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
            from impls.gather.wholegraph_lib import communicator

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

    def describe(self) -> str:
        from impls.gather.wholegraph_lib import library_version

        return f"pylibwholegraph {library_version()} append_unique (hash table in the library)"


@register_impl("unique", "hash_append", needs=Needs(cuda_packages=("cupy",), note="numba on CPU"),
               summary="WholeGraph hash-table append-unique: targets first, bucket counts + prefix sum "
                       "(CuPy kernels; numba on CPU)")
def make_hash_append(where, **options):
    return HashAppendUnique(where, **options)


@register_impl("unique", "sort", summary="sort-based append-unique reference (torch.unique)")
def make_sort(where, **options):
    return SortUnique(where, **options)


@register_impl("unique", "wholegraph_lib", needs=Needs(devices=("cuda",), packages=("pylibwholegraph",)),
               summary="real pylibwholegraph append_unique")
def make_wholegraph_lib(where, **options):
    return WholeGraphAppendUnique(where, **options)
