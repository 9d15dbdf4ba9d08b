"""Tiered row layouts: which rows of a hot-ordered table live on which GPU, the rest on the host.

Rows are numbered in hot order (row 0 is the hottest node, impls/storage/reorder.py). The first
``gpu_rows`` rows are split into ``num_parts`` logical partitions by modulo: row i belongs to
partition ``i mod P`` at position ``i // P`` (XGNN 4.3: "divided into N partitions for N GPUs
based on the result of node ID modulo N. And the new node ID is equal to the old node ID divided
by N"). GPU g stores the partitions ``store[g]``, one slot of ``part_rows`` rows each; worker w
reads partition p from GPU ``source[w][p]``. Rows from ``gpu_rows`` on are in host memory, row i
at host offset ``i - gpu_rows``.

The three designs of XGNN's comparison are three choices of (P, store, source):

- GGMS (XGNN): P = number of GPUs; without replication GPU g stores partition g and every worker
  reads it there; with XGNN's placement solver (impls/placement/xgnn_solver.py) a GPU may also
  store copies of partitions that some of its neighbours cannot reach directly.
- replicated (DGL+C's feature cache, DGL's topology): P = 1, every GPU stores it and reads its own.
- clique (Quiver): P = clique size, member k of every clique stores partition k, and a worker reads
  its own clique's members only (the clique is "a features cache pool", XGNN section 2.3).

:meth:`TierLayout.locate` is the access function of XGNN Fig. 5 (tier, owner GPU, local offset);
:meth:`TierLayout.physical` folds it into one row index of the concatenation of every GPU's buffer
(``rows_per_gpu`` rows each, padded) followed by the host rows: the index the gather and sampling
kernels read through their part-pointer tables (part = index // rows_per_gpu, the last part, the
host, takes everything past the GPU buffers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from impls.core import cuda

from .gpu import KERNELS

LOCAL_GPU, REMOTE_GPU, HOST = 0, 1, 2
TIERS = ("local_gpu", "remote_gpu", "host")
KINDS = ("ggms", "replicated", "clique", "host")


def rows_for_ratio(ratio: float, num_rows: int) -> int:
    """Rows a ratio of ``num_rows`` stands for (rounded to the nearest row, 1.0 = every row)."""
    if not 0.0 <= float(ratio) <= 1.0:
        raise ValueError(f"a ratio must lie in [0, 1], not {ratio}")
    return min(num_rows, int(np.floor(float(ratio) * num_rows + 0.5)))


@dataclass(frozen=True)
class TierLayout:
    """Placement of ``num_rows`` hot-ordered rows over ``num_gpus`` GPUs and the host."""

    num_rows: int
    gpu_rows: int
    num_gpus: int
    num_parts: int
    store: tuple[tuple[int, ...], ...]      # partitions each GPU stores, in slot order
    source: tuple[tuple[int, ...], ...]     # source[w][p]: GPU worker w reads partition p from
    kind: str = "ggms"
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if not 0 <= self.gpu_rows <= self.num_rows:
            raise ValueError(f"gpu_rows {self.gpu_rows} outside [0, {self.num_rows}]")
        if self.num_gpus < 1 or self.num_parts < 1:
            raise ValueError("a layout needs at least one GPU and one partition")
        if len(self.store) != self.num_gpus or len(self.source) != self.num_gpus:
            raise ValueError("store and source need one entry per GPU")
        for g, parts in enumerate(self.store):
            if len(set(parts)) != len(parts) or any(not 0 <= p < self.num_parts for p in parts):
                raise ValueError(f"GPU {g} stores invalid partitions {parts}")
        for w, row in enumerate(self.source):
            if len(row) != self.num_parts:
                raise ValueError(f"worker {w} needs a source for each of {self.num_parts} partitions")
            for p, g in enumerate(row):
                if not 0 <= g < self.num_gpus or p not in self.store[g]:
                    raise ValueError(f"worker {w} reads partition {p} from GPU {g}, which does not store it")
        object.__setattr__(self, "_tables", {})

    # --- sizes ------------------------------------------------------------------------
    @property
    def part_rows(self) -> int:
        """Rows of one partition slot (the first partitions may have one row more than the last)."""
        return -(-self.gpu_rows // self.num_parts)

    @property
    def max_slots(self) -> int:
        return max(len(s) for s in self.store)

    @property
    def rows_per_gpu(self) -> int:
        """Buffer rows of every GPU (the largest store, padded: symmetric allocations)."""
        return self.max_slots * self.part_rows if self.gpu_rows else 0

    @property
    def host_rows(self) -> int:
        return self.num_rows - self.gpu_rows

    @property
    def physical_rows(self) -> int:
        """Rows of the physical index space: every GPU buffer, then the host rows."""
        return self.num_gpus * self.rows_per_gpu + self.host_rows

    @property
    def host_base(self) -> int:
        return self.num_gpus * self.rows_per_gpu

    @property
    def ratio(self) -> float:
        return self.gpu_rows / self.num_rows if self.num_rows else 0.0

    def copies(self) -> int:
        """Copies of the GPU rows kept over all GPUs (1: partitioned, num_gpus: replicated)."""
        return sum(len(s) for s in self.store) // self.num_parts

    def reads_peers(self) -> bool:
        """True when some worker reads a partition from another GPU (peer mappings needed)."""
        return self.gpu_rows > 0 and any(g != w for w, row in enumerate(self.source) for g in row)

    def partition_size(self, p: int) -> int:
        return len(range(p, self.gpu_rows, self.num_parts))

    # --- ids ----------------------------------------------------------------------------
    def partition_rows(self, p: int) -> np.ndarray:
        return np.arange(p, self.gpu_rows, self.num_parts, dtype=np.int64)

    def buffer_row_ids(self, gpu: int) -> np.ndarray:
        """Row id at each of GPU ``gpu``'s ``rows_per_gpu`` buffer positions (-1: padding)."""
        out = np.full(self.rows_per_gpu, -1, dtype=np.int64)
        for slot, p in enumerate(self.store[gpu]):
            rows = self.partition_rows(p)
            out[slot * self.part_rows: slot * self.part_rows + len(rows)] = rows
        return out

    def host_row_ids(self) -> np.ndarray:
        return np.arange(self.gpu_rows, self.num_rows, dtype=np.int64)

    def physical_row_ids(self) -> np.ndarray:
        """Row id at every physical index (GPU buffers in GPU order, then the host; -1: padding)."""
        parts = [self.buffer_row_ids(g) for g in range(self.num_gpus)] if self.rows_per_gpu else []
        return np.concatenate(parts + [self.host_row_ids()])

    def _table(self, worker: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(GPU, slot and physical base of each partition) for ``worker``, cached per device."""
        key = (worker, str(device))
        tables = self._tables  # type: ignore[attr-defined]
        if key not in tables:
            src = np.asarray(self.source[worker], dtype=np.int64)
            slot = np.array([self.store[g].index(p) for p, g in enumerate(src)], dtype=np.int64)
            base = src * self.rows_per_gpu + slot * self.part_rows
            tables[key] = tuple(torch.from_numpy(a).to(device) for a in (src, slot, base))
        return tables[key]

    def locate(self, ids: torch.Tensor, worker: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """XGNN Fig. 5's request forwarding for ``worker``: (tier, owner GPU or -1, local offset).

        ``tier``: LOCAL_GPU, REMOTE_GPU or HOST; ``offset``: the row within the owner's buffer
        (slot * part_rows + i // P) or within the host rows (i - gpu_rows).
        """
        ids = ids.to(torch.int64)
        src, slot, _ = self._table(worker, ids.device)
        hot = ids < self.gpu_rows
        part = torch.remainder(ids, self.num_parts)
        pos = torch.div(ids, self.num_parts, rounding_mode="floor")
        owner = torch.where(hot, src[part], torch.full_like(ids, -1))
        offset = torch.where(hot, slot[part] * self.part_rows + pos, ids - self.gpu_rows)
        tier = torch.where(hot, torch.where(owner == worker, LOCAL_GPU, REMOTE_GPU), HOST)
        return tier, owner, offset

    def physical(self, ids: torch.Tensor, worker: int) -> torch.Tensor:
        """Physical row index of every id as ``worker`` reads it (one modulo and one division; one
        kernel launch where the sampling kernels run, five torch operations elsewhere)."""
        if self.gpu_rows == 0 or not cuda.kernel_device_ok(ids.device):
            return self.physical_reference(ids, worker)
        ids = ids.to(torch.int64).contiguous()
        _, _, base = self._table(worker, ids.device)
        out = torch.empty_like(ids)
        if ids.numel():
            KERNELS.launch(ids.device, "tiers.cu", "tier_physical", cuda.grid_for(ids.device, ids.numel()), 256,
                       (cuda.ptr(ids), np.int64(ids.numel()), cuda.ptr(base), np.int64(self.num_parts),
                        np.int64(self.gpu_rows), np.int64(self.host_base), cuda.ptr(out)))
        return out

    def physical_reference(self, ids: torch.Tensor, worker: int) -> torch.Tensor:
        """:meth:`physical` as torch operations (CPU ranks; the kernel's reference in tests)."""
        ids = ids.to(torch.int64)
        if self.gpu_rows == 0:
            return ids
        _, _, base = self._table(worker, ids.device)
        part = torch.remainder(ids, self.num_parts)
        hot_index = base[part] + torch.div(ids, self.num_parts, rounding_mode="floor")
        if self.gpu_rows == self.num_rows:
            return hot_index
        return torch.where(ids < self.gpu_rows, hot_index, ids - self.gpu_rows + self.host_base)

    def tier_of_physical(self, index: torch.Tensor, worker: int) -> torch.Tensor:
        """Tier of physical indices read by ``worker`` (the counters' cheap path)."""
        if self.rows_per_gpu == 0:
            return torch.full_like(index, HOST)
        owner = torch.div(index, self.rows_per_gpu, rounding_mode="floor")
        return torch.where(index >= self.host_base, HOST,
                           torch.where(owner == worker, LOCAL_GPU, REMOTE_GPU))

    def describe(self) -> str:
        if self.gpu_rows == 0:
            return f"all {self.num_rows} rows in host memory"
        how = {"ggms": f"modulo {self.num_parts} partitions", "replicated": "replicated on every GPU",
               "clique": f"modulo {self.num_parts} within each clique", "host": "host"}[self.kind]
        extra = "" if self.copies() == 1 else f", {self.copies()} copies"
        return (f"{self.gpu_rows}/{self.num_rows} rows ({100 * self.ratio:.1f}%) on GPUs, {how}{extra}; "
                f"{self.host_rows} on the host")


# --- the three designs ---------------------------------------------------------------------

def ggms_layout(num_rows: int, gpu_rows: int, num_gpus: int, plan=None) -> TierLayout:
    """GGMS: modulo partitions over the GPUs; ``plan`` (xgnn_solver.SolverPlan) places copies."""
    if plan is None:
        store = tuple((g,) for g in range(num_gpus))
        source = tuple(tuple(range(num_gpus)) for _ in range(num_gpus))
        meta = {"placement": "modulo"}
    else:
        if plan.topology.num_gpus != num_gpus:
            raise ValueError(f"solver plan for {plan.topology.num_gpus} GPUs, layout for {num_gpus}")
        store = tuple(tuple(int(p) for p in s) for s in plan.store)
        source = tuple(tuple(int(g) for g in row) for row in np.asarray(plan.source))
        meta = {"placement": "solver", "topology": plan.topology.name,
                "min_bandwidth_gbps": plan.min_bandwidth}
    return TierLayout(num_rows, gpu_rows, num_gpus, num_gpus, store, source, "ggms", meta)


def replicated_layout(num_rows: int, gpu_rows: int, num_gpus: int) -> TierLayout:
    """The same ``gpu_rows`` hottest rows on every GPU, each worker reading its own copy."""
    store = tuple((0,) for _ in range(num_gpus))
    source = tuple((w,) for w in range(num_gpus))
    return TierLayout(num_rows, gpu_rows, num_gpus, 1, store, source, "replicated")


def clique_layout(num_rows: int, gpu_rows: int, cliques: list[list[int]]) -> TierLayout:
    """Quiver: each clique of k GPUs holds the ``gpu_rows`` hottest rows, row i on member i mod k."""
    sizes = {len(c) for c in cliques}
    if len(sizes) != 1:
        raise ValueError(f"cliques must have one size, not {sorted(sizes)}")
    k = sizes.pop()
    num_gpus = sum(len(c) for c in cliques)
    if sorted(g for c in cliques for g in c) != list(range(num_gpus)):
        raise ValueError(f"cliques {cliques} must cover GPUs 0..{num_gpus - 1} once")
    store: list = [None] * num_gpus
    source: list = [None] * num_gpus
    for clique in cliques:
        for member, g in enumerate(clique):
            store[g] = (member,)
            source[g] = tuple(clique)
    return TierLayout(num_rows, gpu_rows, num_gpus, k, tuple(store), tuple(source), "clique",
                      {"cliques": [list(c) for c in cliques]})


def host_layout(num_rows: int, num_gpus: int) -> TierLayout:
    """Every row in host memory (Quiver's topology, DGL-Host)."""
    return TierLayout(num_rows, 0, num_gpus, 1, tuple((0,) for _ in range(num_gpus)),
                      tuple((w,) for w in range(num_gpus)), "host")
