"""ICS'22's cost model of loading input features (Sec. 3.1, Eq. 3-6), and a per-link variant.

Eq. 3: GPU i reads S_i; R_i = S_i minus its own buffer B_i. With C_gpu < C_cpu (NVLink) it
fetches R_i & B_gpu from peers and the rest from the host:
    C_i = C_cpu |R_i \\ B_gpu| + C_gpu |R_i & B_gpu|,
otherwise everything remote from the host: C_i = C_cpu |R_i|. Eq. 4 minimizes max_i E[C_i];
Eq. 6 rewrites it as C_cpu E|S| - (C_cpu - C_gpu) E|S & B_gpu| - min_i C_gpu E|S_i & B_i|.

B_gpu is, for GPU i, the union of the buffers it can read (its own and its NVLink neighbors'):
on '(2+2)GPU' a GPU reads only its pair, as in the paper's experiments.

C_gpu and C_cpu are seconds per node read. The defaults come from the ICS'22 workstation's
bandwidths (V100 on NVSwitch: 6 NVLink 2.0 bricks = 150 GB/s; PCIe 3.0 x16 about 12 GB/s
effective) times the row size; the ratio C_gpu / C_cpu = 0.08 is close to the alpha = 0 the
paper uses on its all-connected configurations. Feed measured values with
:meth:`CostModel.from_gather`, e.g. from the gather experiments' GB/s on the machine at hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from impls.core.topology import ICS22_NVSWITCH_GBPS, PCIE3_GBPS, Topology

from .result import Placement

GB = 1e9


@dataclass(frozen=True)
class CostModel:
    """Per-node read costs (seconds): peer GPU, host, and local (zero in the paper)."""

    c_gpu: float
    c_cpu: float
    c_local: float = 0.0
    source: str = ""

    @classmethod
    def from_bandwidths(cls, row_bytes: int, gpu_gbps: float = ICS22_NVSWITCH_GBPS,
                        cpu_gbps: float = PCIE3_GBPS, local_gbps: float | None = None,
                        source: str = "") -> "CostModel":
        local = 0.0 if local_gbps is None else row_bytes / (local_gbps * GB)
        return cls(row_bytes / (gpu_gbps * GB), row_bytes / (cpu_gbps * GB), local,
                   source or f"{row_bytes} B rows at {gpu_gbps:g} GB/s peer, {cpu_gbps:g} GB/s host")

    @classmethod
    def from_gather(cls, row_bytes: int, peer_gather_gbps: float, host_gather_gbps: float,
                    local_gather_gbps: float | None = None) -> "CostModel":
        """From measured gather bandwidths (GB/s of rows delivered) on the machine at hand."""
        return cls.from_bandwidths(row_bytes, peer_gather_gbps, host_gather_gbps, local_gather_gbps,
                                   source="measured gather bandwidths")

    @property
    def alpha(self) -> float:
        """C_gpu / C_cpu: Algorithm 1's alpha (Eq. 7)."""
        return self.c_gpu / self.c_cpu

    def read_cost(self, local, peer, host):
        """Eq. 3 for counts of nodes read locally, from peers (R_i & B_gpu) and from the host."""
        local, peer, host = (np.asarray(x, dtype=np.float64) for x in (local, peer, host))
        if self.c_gpu < self.c_cpu:
            return self.c_cpu * host + self.c_gpu * peer + self.c_local * local
        return self.c_cpu * (host + peer) + self.c_local * local


def expected_costs(placement: Placement, p: np.ndarray, cost: CostModel) -> np.ndarray:
    """E[C_i] (Eq. 3) of every GPU when node j is in S_i with probability p_j."""
    p = np.asarray(p, dtype=np.float64)
    out = np.empty(placement.num_gpus)
    for gpu in range(placement.num_gpus):
        local = placement.stored_mask([gpu])
        reach = placement.reachable_mask(gpu)
        out[gpu] = cost.read_cost(p[local].sum(), p[reach & ~local].sum(), p[~reach].sum())
    return out


def eq6_terms(placement: Placement, p: np.ndarray, cost: CostModel) -> dict:
    """The three terms of Eq. 6 for a group of fully connected GPUs (all see the same B_gpu)."""
    p = np.asarray(p, dtype=np.float64)
    b_gpu = placement.stored_mask()
    own = [p[placement.stored_mask([g])].sum() for g in range(placement.num_gpus)]
    return {"all_reads": cost.c_cpu * p.sum(),
            "gpu_union": (cost.c_cpu - cost.c_gpu) * p[b_gpu].sum(),
            "min_local": min(cost.c_gpu * x for x in own),
            "objective": cost.c_cpu * p.sum() - (cost.c_cpu - cost.c_gpu) * p[b_gpu].sum()
                         - min(cost.c_gpu * x for x in own)}


@dataclass(frozen=True)
class LinkModel:
    """Time to read rows over each link at the topology's bandwidths.

    ``overlap='max'``: all sources are read concurrently (one gather kernel over a pointer table,
    as XGNN's and WholeGraph's), so a batch takes as long as its slowest link; ``'sum'``: one
    source after another (Eq. 3's additive form with per-link costs).
    """

    topology: Topology
    row_bytes: int
    overlap: str = "max"

    def __post_init__(self):
        if self.overlap not in ("max", "sum"):
            raise ValueError("overlap must be 'max' or 'sum'")

    def seconds_per_row(self, gpu: int) -> np.ndarray:
        """Per source (GPUs 0..n-1, then the host): seconds per row read by ``gpu``; inf: no path."""
        n = self.topology.num_gpus
        out = np.full(n + 1, np.inf)
        for src in range(n):
            bw = self.topology.bandwidth(src, gpu)
            if bw > 0:
                out[src] = self.row_bytes / (bw * GB)
        out[n] = self.row_bytes / (self.topology.pcie_gbps * GB)
        return out

    def batch_time(self, gpu: int, reads: np.ndarray) -> np.ndarray:
        """Seconds for each batch; ``reads``: (batches, n + 1) rows per source."""
        per_row = self.seconds_per_row(gpu)
        reads = np.atleast_2d(reads).astype(np.float64)
        if np.any(reads[:, ~np.isfinite(per_row)] > 0):
            raise ValueError(f"GPU {gpu} reads from a GPU it has no link to")
        times = reads * np.where(np.isfinite(per_row), per_row, 0.0)
        return times.max(axis=1) if self.overlap == "max" else times.sum(axis=1)
