"""Our samplers: `path_doubling` (WholeGraph Alg. 1), `reservoir`, `khop_batched` (XGNN).

Interface (every sampler of this package, `pyg`/`dgl` included)::

    s = make(rank_or_device, indptr, indices, **options)
    offsets, neighbors = s.sample(seeds, fanout, seed=None, generator=None)
    s.describe(); s.close()

``offsets`` is int64 ``[len(seeds) + 1]`` (CSR over the seeds, ``offsets[0] == 0``),
``neighbors`` int64 global ids: ``neighbors[offsets[i]:offsets[i + 1]]`` were drawn for
``seeds[i]`` without replacement, ``min(degree, fanout)`` of them; a seed with degree <=
fanout gets its whole list in CSR order; ``fanout <= 0`` takes every neighbor. Outputs live
on the sampler's device. Repeated seeds are sampled independently.

Randomness: draw j of batch position b is a counter-based hash of (key, b, j) (impls/sampling/
rng.py), so a call's output is a function of (graph, seeds, fanout, seed) alone: identical on
CPU and GPU, for every grid size. ``seed`` fixes a call; else ``generator`` (torch.Generator)
gives one; else the sampler's own stream, seeded by the factory option ``seed``.

Options: ``store`` (local | split | sharded, see csr.py), ``engine`` (auto | numba | kernel: kernels
run on CUDA, or on CPU under the tests' emulator), ``count_remote`` (count the requests the
kernels issue to rows owned by other ranks; ``remote_stats()``), ``count_world`` /
``count_rank`` (the counting partition), ``sector_bytes`` (32), ``seed``.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from harness.errors import HarnessError
from harness.needs import Needs
from harness.registry import register_impl

from impls.core import cuda

from . import rng
from .gpu import KERNELS
from .csr import SamplingCSR

MAX_FANOUT = 1024


class _Sampler:
    name = ""
    algorithm = ""

    def __init__(self, where, indptr, indices, *, store: str = "local", engine: str = "auto",
                 count_remote: bool = False, count_world: int | None = None, count_rank: int | None = None,
                 sector_bytes: int = 32, seed: int | None = 0, csr=None, **_):
        # csr: a prebuilt CSR object with SamplingCSR's interface (impls/storage/tiered.TieredCSR)
        self.csr = csr if csr is not None else SamplingCSR(where, indptr, indices, store=store,
                                                           count_world=count_world, count_rank=count_rank,
                                                           sector_bytes=sector_bytes)
        self.device = self.csr.device
        if engine == "auto":
            engine = "kernel" if self.device.type == "cuda" else "numba"
        if engine not in ("kernel", "numba"):
            raise HarnessError(f"engine must be auto, kernel or numba, not '{engine}'")
        if engine == "kernel" and not cuda.kernel_device_ok(self.device):
            raise HarnessError("the kernel engine needs a CUDA device (or the tests' emulator)")
        if engine == "numba" and self.device.type != "cpu":
            raise HarnessError("the numba engine runs on the CPU device only")
        if engine == "numba" and (store == "sharded" or self.csr.indptr_np is None):
            raise HarnessError("the numba engine reads a local CSR")
        self.engine = engine
        self.count_remote = bool(count_remote)
        self._rng = random.Random(seed)
        self._host_counts = np.zeros(4, dtype=np.int64)

    # --- public -------------------------------------------------------------------------
    def sample(self, seeds, fanout: int, *, seed: int | None = None, generator=None,
               check: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        seeds = torch.as_tensor(seeds)
        if seeds.dtype not in (torch.int32, torch.int64):
            raise HarnessError(f"seeds must be int32 or int64, not {seeds.dtype}")
        seeds = seeds.reshape(-1).to(device=self.device, dtype=torch.int64).contiguous()
        if check:
            self.csr.check_seeds(seeds)
        fanout = int(fanout)
        if fanout > MAX_FANOUT:
            raise HarnessError(f"fanout {fanout} > {MAX_FANOUT} is not supported")
        key = rng.stream_key(rng.resolve_seed(seed, generator, self._rng))
        if fanout <= 0:
            return self._take_all(seeds)
        if self.engine == "numba":
            return self._sample_numba(seeds, fanout, key)
        return self._sample_kernel(seeds, fanout, key)

    @property
    def id_bound(self) -> int:
        """Every id this sampler returns is below this (the CSR's rows: the kernels index indptr by
        the neighbor ids of the next hop, so ids at or past it are already out of contract)."""
        return int(self.csr.num_nodes)

    def remote_stats(self) -> dict:
        """Requests counted since the last reset (count_remote=True): sectors and bytes."""
        c = self._host_counts.copy() if self.engine == "numba" else self.csr.counters.cpu().numpy()
        sb = self.csr.sector_bytes
        return {"remote_sectors": int(c[0]), "remote_bytes": int(c[0]) * sb, "remote_useful_bytes": int(c[1]),
                "all_sectors": int(c[2]), "all_bytes": int(c[2]) * sb, "all_useful_bytes": int(c[3])}

    def reset_counters(self) -> None:
        self._host_counts[:] = 0
        self.csr.counters.zero_()

    def describe(self) -> str:
        how = ("CUDA kernel" if self.device.type == "cuda" else "CUDA kernel (emulated)") \
            if self.engine == "kernel" else "numba on CPU"
        return f"{self.algorithm}; {how}; {self.csr.describe()}"

    def close(self) -> None:
        self.csr.close()

    # --- paths --------------------------------------------------------------------------
    def _take_all(self, seeds):
        if self.csr.indptr_t is None:
            raise HarnessError("fanout <= 0 (all neighbors) needs a local or split store")
        indptr = self.csr.indptr_t
        start = indptr[seeds]
        deg = indptr[seeds + 1] - start
        offsets = torch.zeros(seeds.numel() + 1, dtype=torch.int64, device=self.device)
        torch.cumsum(deg, 0, out=offsets[1:])
        total = int(offsets[-1])
        posn = torch.repeat_interleave(start - offsets[:-1], deg, output_size=total) + \
            torch.arange(total, device=self.device)
        return offsets, self.csr.indices_t[posn].to(torch.int64)

    def _sample_numba(self, seeds, fanout, key):
        from . import cpu

        s = seeds.numpy()
        counts = np.empty(s.size + 1, dtype=np.int64)
        cpu.row_counts(self.csr.indptr_np, s, fanout, counts)
        offsets = np.cumsum(counts)
        out = np.empty(int(offsets[-1]), dtype=np.int64)
        self._numba(cpu, s, fanout, np.uint64(key), offsets, out)
        return torch.from_numpy(offsets), torch.from_numpy(out)

    def _sample_kernel(self, seeds, fanout, key):
        n = seeds.numel()
        counts = torch.empty(n + 1, dtype=torch.int64, device=self.device)
        desc = self.csr.desc(self.count_remote)
        KERNELS.launch(self.device, "sampling.cu", "row_counts", cuda.grid_for(self.device, n), 256,
                   (cuda.ptr(desc), cuda.ptr(seeds), np.int64(n), np.int32(fanout), cuda.ptr(counts)))
        offsets = torch.cumsum(counts, 0)
        total = int(offsets[-1])
        out = torch.empty(total, dtype=torch.int64, device=self.device)
        if n:
            self._kernel(seeds, n, fanout, np.uint64(key), offsets, out, desc)
        return offsets, out

    def _suffix(self) -> str:
        return "i32" if self.csr.id_bytes == 4 else "i64"

    def _count_groups(self, cpu, s, offsets, pos, fanout, G, mode):
        res = np.zeros(4, dtype=np.int64)
        cpu.count_group_requests(self.csr.indptr_np, s, offsets, pos, fanout, G, mode,
                                 self.csr.count_part.rows_per_rank, self.csr.count_rank, self.csr.vstart,
                                 self.csr.id_bytes, self.csr.shift, res)
        self._host_counts += res


class PathDoublingSampler(_Sampler):
    name = "path_doubling"
    algorithm = ("WholeGraph Algorithm 1: per target, M = fanout threads draw r[i] = random(N-1-i), "
                 "one sort of packed (r << 32 | i) keys, chain update, path doubling, result assembly")

    @staticmethod
    def group_size(fanout: int) -> int:
        return rng.next_pow2(fanout)

    def _numba(self, cpu, s, fanout, key, offsets, out):
        pos = np.empty_like(out)
        cpu.path_doubling(self.csr.indptr_np, self.csr.indices_np, s, fanout, key, offsets, out, pos)
        if self.count_remote:
            self._count_groups(cpu, s, offsets, pos, fanout, self.group_size(fanout), 0)

    def _kernel(self, seeds, n, fanout, key, offsets, out, desc):
        G = self.group_size(fanout)
        block = max(G, 128)
        gpb = block // G
        grid = cuda.grid_for(self.device, n, gpb, waves=16)
        KERNELS.launch(self.device, "sampling.cu", f"path_doubling_{self._suffix()}", grid, block,
                   (cuda.ptr(desc), cuda.ptr(seeds), np.int64(n), np.int32(fanout), np.int32(G), key,
                    cuda.ptr(offsets), cuda.ptr(out)), shared_mem=block * 12)


class ReservoirSampler(_Sampler):
    name = "reservoir"
    algorithm = ("reservoir sampling, one thread per target iterating every neighbor position "
                 "(the GNNLab/TSOTA KHop XGNN starts from)")

    def _numba(self, cpu, s, fanout, key, offsets, out):
        reads = np.empty(s.size, dtype=np.int64)
        cpu.reservoir(self.csr.indptr_np, self.csr.indices_np, s, fanout, key, offsets, out, reads)
        if self.count_remote:
            res = np.zeros(4, dtype=np.int64)
            cpu.count_thread_requests(s, reads, self.csr.count_part.rows_per_rank, self.csr.count_rank,
                                      self.csr.id_bytes, res)
            self._host_counts += res

    def _kernel(self, seeds, n, fanout, key, offsets, out, desc):
        block = 128
        grid = cuda.grid_for(self.device, n, block)
        KERNELS.launch(self.device, "sampling.cu", f"reservoir_{self._suffix()}", grid, block,
                   (cuda.ptr(desc), cuda.ptr(seeds), np.int64(n), np.int32(fanout), key,
                    cuda.ptr(offsets), cuda.ptr(out)))


class KHopBatchedSampler(_Sampler):
    name = "khop_batched"
    algorithm = ("XGNN KHop: random positions de-duplicated in a shared-memory hash set per target, "
                 "sorted, then read by the warp in batched coalesced requests")

    def __init__(self, where, indptr, indices, *, variant: str = "batched", **options):
        if variant not in ("batched", "original"):
            raise HarnessError(f"khop_batched variant must be batched or original, not '{variant}'")
        super().__init__(where, indptr, indices, **options)
        self.variant = variant
        if variant == "original":
            self.algorithm = "original KHop: " + ReservoirSampler.algorithm

    @staticmethod
    def group_size(fanout: int) -> int:
        return min(32, rng.next_pow2(fanout))

    def _numba(self, cpu, s, fanout, key, offsets, out):
        if self.variant == "original":
            return ReservoirSampler._numba(self, cpu, s, fanout, key, offsets, out)
        G, H = self.group_size(fanout), rng.next_pow2(2 * fanout)
        pos = np.empty_like(out)
        cpu.khop_batched(self.csr.indptr_np, self.csr.indices_np, s, fanout, G, H, key, offsets, out, pos)
        if self.count_remote:
            self._count_groups(cpu, s, offsets, pos, fanout, G, 1)

    def _kernel(self, seeds, n, fanout, key, offsets, out, desc):
        if self.variant == "original":
            return ReservoirSampler._kernel(self, seeds, n, fanout, key, offsets, out, desc)
        G, H = self.group_size(fanout), rng.next_pow2(2 * fanout)
        block = 128 if fanout <= 64 else 32
        gpb = block // G
        grid = cuda.grid_for(self.device, n, gpb, waves=16)
        KERNELS.launch(self.device, "sampling.cu", f"khop_batched_{self._suffix()}", grid, block,
                   (cuda.ptr(desc), cuda.ptr(seeds), np.int64(n), np.int32(fanout), np.int32(G), np.int32(H),
                    key, cuda.ptr(offsets), cuda.ptr(out)), shared_mem=gpb * (H + 2 * fanout) * 4)


_NEEDS = Needs(cuda_packages=("cupy",), note="numba on CPU")


@register_impl("sampling", "path_doubling", needs=_NEEDS,
               summary="WholeGraph Alg. 1: parallel sampling without replacement by path doubling, "
                       "M threads per target (CuPy kernel; numba on CPU)",
               label="ours: path_doubling", order=10, traits=("paper", "blocks"))
def make_path_doubling(where, indptr, indices, **options):
    return PathDoublingSampler(where, indptr, indices, **options)


@register_impl("sampling", "reservoir", needs=_NEEDS,
               summary="reservoir sampling, one thread per target (CuPy kernel; numba on CPU)",
               label="ours: reservoir", order=11, traits=("blocks",))
def make_reservoir(where, indptr, indices, **options):
    return ReservoirSampler(where, indptr, indices, **options)


@register_impl("sampling", "khop_batched", needs=_NEEDS,
               summary="XGNN KHop: shared-memory de-duplicated positions, batched coalesced reads, "
                       "remote-byte counting; variant=original is the reservoir KHop",
               label="ours: khop_batched", order=12, traits=("blocks",))
def make_khop_batched(where, indptr, indices, **options):
    return KHopBatchedSampler(where, indptr, indices, **options)
