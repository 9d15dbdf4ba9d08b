"""`pinsage_walk`: PinSAGE's neighbour sampling by random walks with restart (Ying et al. 2018, 3.4).

For every target, ``random_walks`` walks of ``walk_length`` steps start at the target; after each
step a walk restarts at the target with probability ``restart_prob`` (DGL's PinSAGESampler and
RandomWalkNeighborSampler: "random walks with restarts"), and a node without neighbours ends it.
The ``fanout`` most visited nodes (the target itself excluded; ties: the earlier first visit) are
the target's neighbours, and their visit counts its importance weights: PinSAGEConv's weighted
mean (impls/models/layers.py). XGNN's setting (6.1): 4 walks of length 3, the top 5, per layer.

Interface: the samplers' (samplers.py), plus weights::

    s = make(rank_or_device, indptr, indices, random_walks=4, walk_length=3, restart_prob=0.5)
    offsets, neighbors, weights = s.sample_weighted(seeds, fanout)     # weights: float32 [nnz]
    offsets, neighbors = s.sample(seeds, fanout)
    s.weighted == True          # impls.sampling.minibatch.sample_blocks attaches the weights

Same randomness contract as the other samplers: output is a function of (graph, seeds, fanout,
seed), identical on CPU (numba, cpu.random_walk_topk) and GPU (kernels/random_walk.cu). On a
tiered store (impls/storage/tiered.py) the walks move in hot-order ids and read every row through
the store's layout (``layout``/``worker``: the physical index of XGNN's GGMS, local GPU, peer GPU
or pinned host); ``rows_read`` of the last call lists the physical row of every step, for the
store's per-tier counters.
"""

from __future__ import annotations

import numpy as np
import torch

from harness.errors import HarnessError
from harness.registry import register_impl

from impls.core import cuda

from . import rng
from .gpu import KERNELS
from .samplers import _NEEDS, MAX_FANOUT, _Sampler

MAX_WALKS = 16           # kernels/random_walk.cu RW_MAX_WALKS
MAX_VISITS = 64          # RW_MAX_VISITS: random_walks x walk_length


class RandomWalkSampler(_Sampler):
    name = "pinsage_walk"
    weighted = True

    def __init__(self, where, indptr, indices, *, random_walks: int = 4, walk_length: int = 3,
                 restart_prob: float = 0.5, layout=None, worker: int = 0, **options):
        R, L, p = int(random_walks), int(walk_length), float(restart_prob)
        if not 1 <= R <= MAX_WALKS:
            raise HarnessError(f"random_walks must lie in [1, {MAX_WALKS}], not {R}")
        if L < 1 or R * L > MAX_VISITS:
            raise HarnessError(f"walk_length must be >= 1 with random_walks x walk_length <= {MAX_VISITS}, "
                               f"not {R} x {L}")
        if not 0.0 <= p <= 1.0:
            raise HarnessError(f"restart_prob must lie in [0, 1], not {p}")
        super().__init__(where, indptr, indices, **options)
        if self.count_remote:
            raise HarnessError("pinsage_walk does not count remote sectors (a tiered store counts tiers)")
        self.random_walks, self.walk_length, self.restart_prob = R, L, p
        self.restart_thr = np.uint64(min(int(round(p * 2 ** 32)), 2 ** 32))
        self.layout, self.worker = layout, int(worker)
        if layout is not None and layout.gpu_rows:
            base = layout._table(self.worker, self.device)[2]
            self._physical = (base, layout.num_parts, layout.gpu_rows, layout.host_base)
        else:
            self._physical = (torch.zeros(1, dtype=torch.int64, device=self.device), 1, 0, 0)
        self._base_np = self._physical[0].cpu().numpy()
        self.num_ids = layout.num_rows if layout is not None else self.csr.num_nodes
        self.rows_read: torch.Tensor | None = None
        self.algorithm = (f"PinSAGE random walks: {R} walks of {L} steps with restart probability {p:g} per "
                          f"target, the top-k visited nodes by visit count as weighted neighbours")

    # --- public -------------------------------------------------------------------------
    def sample_weighted(self, seeds, fanout: int, *, seed: int | None = None, generator=None,
                        check: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        seeds = torch.as_tensor(seeds)
        if seeds.dtype not in (torch.int32, torch.int64):
            raise HarnessError(f"seeds must be int32 or int64, not {seeds.dtype}")
        seeds = seeds.reshape(-1).to(device=self.device, dtype=torch.int64).contiguous()
        if check and seeds.numel():
            lo, hi = (int(x) for x in torch.aminmax(seeds))
            if lo < 0 or hi >= self.num_ids:
                raise HarnessError(f"seed out of range: seeds span [{lo}, {hi}], graph has {self.num_ids} nodes")
        K = int(fanout)
        if not 1 <= K <= MAX_FANOUT:
            raise HarnessError(f"pinsage_walk needs a fanout (top-k) in [1, {MAX_FANOUT}], not {K}")
        key = np.uint64(rng.stream_key(rng.resolve_seed(seed, generator, self._rng)))
        n, R, L = seeds.numel(), self.random_walks, self.walk_length
        out = torch.empty((n, K), dtype=torch.int64, device=self.device)
        weight = torch.empty((n, K), dtype=torch.float32, device=self.device)
        counts = torch.empty(n, dtype=torch.int64, device=self.device)
        rows = torch.empty((n, R * L), dtype=torch.int64, device=self.device)
        base, P, gpu_rows, host_base = self._physical
        if n and self.engine == "numba":
            from . import cpu

            cpu.random_walk_topk(self.csr.indptr_np, self.csr.indices_np, seeds.numpy(), R, L, self.restart_thr,
                                 K, key, self._base_np, P, gpu_rows, host_base, out.numpy(), weight.numpy(),
                                 counts.numpy(), rows.numpy())
        elif n:
            KERNELS.launch(self.device, "random_walk.cu", f"random_walk_topk_{self._suffix()}", cuda.grid_for(self.device, n, 128),
                       128, (cuda.ptr(self.csr.desc(False)), cuda.ptr(seeds), np.int64(n), np.int32(R), np.int32(L),
                             self.restart_thr, np.int32(K), key, cuda.ptr(base), np.int64(P), np.int64(gpu_rows),
                             np.int64(host_base), cuda.ptr(out), cuda.ptr(weight), cuda.ptr(counts), cuda.ptr(rows)))
        offsets = torch.zeros(n + 1, dtype=torch.int64, device=self.device)
        torch.cumsum(counts, 0, out=offsets[1:])
        keep = out >= 0                       # the top entries are a prefix of every row
        self.rows_read = rows
        return offsets, out[keep], weight[keep]

    def sample(self, seeds, fanout: int, *, seed: int | None = None, generator=None,
               check: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        offsets, neighbors, _ = self.sample_weighted(seeds, fanout, seed=seed, generator=generator, check=check)
        return offsets, neighbors


@register_impl("sampling", "pinsage_walk", needs=_NEEDS,
               summary="PinSAGE: random walks with restart per target, top-k visited nodes weighted by visit "
                       "count (CuPy kernel; numba on CPU)",
               label="ours: pinsage_walk", order=13, traits=("walks",))
def make_pinsage_walk(where, indptr, indices, **options):
    return RandomWalkSampler(where, indptr, indices, **options)
