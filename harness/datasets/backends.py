"""Where generator and edge-pipeline kernels run: numba on the CPU, torch on a GPU (or CPU).

Both backends implement the same operations with the same integer arithmetic (see rng.py), so a
graph generated on a GPU equals the one generated on a CPU.  ``TorchBackend`` is the reference
and the only one a GPU machine needs; ``NumbaBackend`` is the fast CPU path (fused, parallel
loops, no temporaries).  Edge-key buckets are numpy arrays, or device tensors when a GPU has
room for all of them (edges.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import HarnessError
from . import rng
from .plan import TOTAL, StandinPlan

SENTINEL = np.iinfo(np.int64).max
_SAMPLE_STREAMS = ("mix", "src_piece", "src_pos", "dst_piece", "dst_pos")


class Backend:
    """Interface; see the two implementations below."""

    name = "abstract"
    device = "cpu"
    # Draws per generation chunk and keys per bucket: small enough to bound device memory.
    chunk_draws = 1 << 22
    bucket_keys = 1 << 40
    feature_chunk_values = 1 << 24

    def sample_keys(self, plan: StandinPlan, start: int, count: int) -> Any: ...
    def from_host(self, keys: np.ndarray) -> Any: ...
    def sort_keys(self, keys: Any) -> Any: ...
    def copy_into(self, keys: Any, out: np.ndarray) -> None: ...
    def length(self, keys: Any) -> int: ...
    def positions(self, sorted_keys: Any, values: np.ndarray) -> list[int]: ...
    def dedup(self, keys) -> int: ...
    def trim_histogram(self, keys, n, symmetric, key, shift, nbins) -> np.ndarray: ...
    def trim_collect(self, keys, n, symmetric, key, shift, wanted_bin, capacity) -> np.ndarray: ...
    def to_csr(self, keys, n, row_lo, nrows, symmetric, key, threshold,
               indices_out) -> tuple[int, np.ndarray]: ...
    def features_block(self, plan: StandinPlan, row0: int, rows: int, labels: np.ndarray) -> Any: ...
    def labels(self, plan: StandinPlan) -> np.ndarray: ...
    def split_order(self, plan: StandinPlan) -> np.ndarray: ...

    def synchronize(self) -> None:
        pass

    def alloc_keys(self, count: int, on_device: bool = False):
        """A key buffer: host numpy, or (``on_device``) a device array the backend can sort."""
        return np.empty(count, dtype=np.int64)

    def fits_on_device(self, nbytes: int) -> bool:
        """Whether edge buckets of ``nbytes`` can stay in device memory for the whole build."""
        return False

    def staging(self, nbytes: int):
        """Reusable host buffers for device-to-host feature copies (None: not needed)."""
        return None

    def describe(self) -> str:
        return f"{self.name} on {self.device}"


def _host_labels(plan: StandinPlan, ids: np.ndarray) -> np.ndarray:
    x = ids
    if plan.id_order == "shuffled":
        x = (plan.glob_inv * (ids - plan.glob_add)) % plan.num_nodes
    return np.searchsorted(plan.comm_offset, x, side="right").astype(np.int64) - 1


class NumbaBackend(Backend):
    name = "numba"
    device = "cpu"
    chunk_draws = 1 << 22
    feature_chunk_values = 1 << 24

    def __init__(self):
        from . import kernels_numba

        self.k = kernels_numba

    def sample_keys(self, plan, start, count):
        out = np.empty(count * (2 if plan.symmetric else 1), dtype=np.int64)
        keys = np.array([plan.keys[s] for s in _SAMPLE_STREAMS], dtype=np.uint64)
        self.k.sample_edge_keys(
            np.int64(start), np.int64(count), np.int64(plan.num_nodes), plan.symmetric, keys,
            np.int64(plan.intra_threshold32), plan.thresholds_in, plan.thresholds_out,
            plan.guide_in, plan.guide_out, np.int64(plan.pieces_per_comm), plan.piece_lo,
            plan.piece_size, plan.comm_offset,
            plan.comm_mult, plan.comm_add, plan.id_order == "shuffled", np.int64(plan.glob_mult),
            np.int64(plan.glob_add), out)
        return out

    def from_host(self, keys):
        return keys

    def sort_keys(self, keys):
        keys.sort()
        return keys

    def copy_into(self, keys, out):
        out[...] = keys

    def length(self, keys):
        return len(keys)

    def positions(self, sorted_keys, values):
        return np.searchsorted(sorted_keys, values).tolist()

    def dedup(self, keys):
        keys.sort()
        return int(self.k.compact_sorted_unique(keys))

    def trim_histogram(self, keys, n, symmetric, key, shift, nbins):
        import numba

        return self.k.trim_histogram(keys, np.int64(n), symmetric, np.uint64(key), np.int64(shift),
                                     np.int64(nbins), np.int64(numba.get_num_threads()))

    def trim_collect(self, keys, n, symmetric, key, shift, wanted_bin, capacity):
        import numba

        return self.k.trim_collect(keys, np.int64(n), symmetric, np.uint64(key), np.int64(shift),
                                   np.int64(wanted_bin), np.int64(capacity),
                                   np.int64(numba.get_num_threads()))

    def to_csr(self, keys, n, row_lo, nrows, symmetric, key, threshold, indices_out):
        counts = np.zeros(nrows, dtype=np.int64)
        mask = np.empty(0, dtype=np.bool_)
        if threshold is not None:
            import numba

            mask = np.empty(len(keys), dtype=np.bool_)
            self.k.keep_mask(keys, np.int64(n), symmetric, np.uint64(key), np.int64(threshold),
                             np.int64(numba.get_num_threads()), mask)
        written = self.k.compact_to_csr(keys, mask, threshold is not None, np.int64(n),
                                        np.int64(row_lo), indices_out, counts)
        return int(written), counts

    def features_block(self, plan, row0, rows, labels):
        out = np.empty((rows, plan.feature_dim), dtype=np.float32)
        self.k.features_block(np.int64(row0), np.int64(rows), np.int64(plan.feature_dim),
                              labels.astype(np.int64, copy=False), plan.centroids,
                              np.uint64(plan.keys["features"]), out)
        return out

    def labels(self, plan):
        return _host_labels(plan, np.arange(plan.num_nodes, dtype=np.int64))

    def split_order(self, plan):
        h = rng.hash_np(plan.keys["split"], np.arange(plan.num_nodes, dtype=np.int64))
        return np.argsort(h, kind="stable").astype(np.int64)


class TorchBackend(Backend):
    """The same kernels as tensor expressions; on CUDA this is the GPU generator."""

    name = "torch"

    def __init__(self, device: str = "cpu"):
        import torch

        self.torch = torch
        self.device = device
        if device.startswith("cuda"):
            free, _total = torch.cuda.mem_get_info(torch.device(device))
            # ~80 bytes of temporaries per draw, ~24 per key while sorting (values + indices).
            self.chunk_draws = int(min(1 << 28, max(1 << 20, free // 160)))
            self.bucket_keys = int(min(1 << 30, max(1 << 22, free // 48)))
            self.feature_chunk_values = int(min(1 << 28, max(1 << 20, free // 96)))
        else:
            self.chunk_draws = 1 << 20
            self.feature_chunk_values = 1 << 22

    # -- bit twiddling on int64 tensors (two's complement wraps like uint64) --------------------
    def _i64(self, value: int):
        return self.torch.tensor(rng.signed(value), dtype=self.torch.int64, device=self.device)

    def _mix(self, key: int, counter):
        t = self.torch
        z = counter * rng.signed(rng.GOLDEN) + rng.signed(key)
        z = (z ^ ((z >> 30) & ((1 << 34) - 1))) * rng.signed(rng.MIX1)
        z = (z ^ ((z >> 27) & ((1 << 37) - 1))) * rng.signed(rng.MIX2)
        return z ^ ((z >> 31) & ((1 << 33) - 1))

    def _unit(self, h):
        return ((h >> 11) & ((1 << 53) - 1)).to(self.torch.float64) * rng.TWO_POW_M53

    def _tables(self, plan: StandinPlan) -> dict[str, Any]:
        cached = getattr(plan, "_torch_tables", None)
        if cached is not None and cached["device"] == self.device:
            return cached
        as_t = lambda a: self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device)  # noqa: E731
        tables = {"device": self.device, "t_in": as_t(plan.thresholds_in),
                  "t_out": as_t(plan.thresholds_out), "piece_lo": as_t(plan.piece_lo),
                  "piece_size": as_t(plan.piece_size), "offset": as_t(plan.comm_offset),
                  "mult": as_t(plan.comm_mult), "add": as_t(plan.comm_add),
                  "centroids": as_t(plan.centroids)}
        plan._torch_tables = tables
        return tables

    def _pick(self, thresholds, lo, span, h, h_pos, tb):
        """Piece and rank for draws in [lo, lo + span) of ``thresholds`` (lo/span: tensors or
        ints; the global range is passed as ints so no draw-sized constants are allocated)."""
        t = self.torch
        span_f = span.to(t.float64) if isinstance(span, t.Tensor) else float(span)
        x = t.floor(self._unit(h) * span_f).to(t.int64)
        x = t.minimum(x, span - 1 if isinstance(span, t.Tensor) else self._i64(span - 1)) + lo
        p = t.searchsorted(thresholds, x, right=True) - 1
        del x
        size = tb["piece_size"][p]
        r = t.minimum(t.floor(self._unit(h_pos) * size.to(t.float64)).to(t.int64), size - 1)
        return p, tb["piece_lo"][p] + r

    def _node(self, plan, c, r, tb):
        size = tb["offset"][c + 1] - tb["offset"][c]
        x = tb["offset"][c] + (tb["mult"][c] * r + tb["add"][c]) % size
        if plan.id_order == "shuffled":
            x = (plan.glob_mult * x + plan.glob_add) % plan.num_nodes
        return x

    def sample_keys(self, plan, start, count):
        t = self.torch
        tb = self._tables(plan)
        B = plan.pieces_per_comm
        k = t.arange(start, start + count, dtype=t.int64, device=self.device)
        intra = (self._mix(plan.keys["mix"], k) & 0xFFFFFFFF) < plan.intra_threshold32
        u = t.empty_like(k)
        v = t.empty_like(k)
        # Intra and inter draws use different tables: evaluate each on its own subset.
        for is_intra, thresholds in ((True, tb["t_in"]), (False, tb["t_out"])):
            idx = (intra if is_intra else ~intra).nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            kk = k[idx]
            p, r = self._pick(thresholds, 0, TOTAL, self._mix(plan.keys["src_piece"], kk),
                              self._mix(plan.keys["src_pos"], kk), tb)
            c = p // B
            del p
            u[idx] = self._node(plan, c, r, tb)
            del r
            if is_intra:
                lo = thresholds[c * B]
                span = thresholds[(c + 1) * B] - lo
            else:
                lo, span = 0, TOTAL
            del c
            p2, r2 = self._pick(thresholds, lo, span, self._mix(plan.keys["dst_piece"], kk),
                                self._mix(plan.keys["dst_pos"], kk), tb)
            del kk, lo, span
            v[idx] = self._node(plan, p2 // B, r2, tb)
            del p2, r2, idx
        del k, intra
        n = plan.num_nodes
        loop = u == v
        if not plan.symmetric:
            return t.where(loop, SENTINEL, u * n + v)
        keys = t.empty(2 * count, dtype=t.int64, device=self.device)
        keys[0::2] = t.where(loop, SENTINEL, u * n + v)
        keys[1::2] = t.where(loop, SENTINEL, v * n + u)
        return keys

    def from_host(self, keys):
        return self.torch.from_numpy(np.ascontiguousarray(keys)).to(self.device)

    def sort_keys(self, keys):
        if self.device == "cpu":
            # numpy's vectorized sort is ~10x faster than torch's on CPU.
            array = keys.numpy()
            array.sort()
            return keys
        return self.torch.sort(keys).values

    def copy_into(self, keys, out):
        target = out if isinstance(out, self.torch.Tensor) else self.torch.from_numpy(out)
        target.copy_(keys)   # one copy, no staging array

    def alloc_keys(self, count, on_device=False):
        if on_device:
            return self.torch.empty(count, dtype=self.torch.int64, device=self.device)
        return np.empty(count, dtype=np.int64)

    def fits_on_device(self, nbytes):
        if not self.device.startswith("cuda"):
            return False
        free, _total = self.torch.cuda.mem_get_info(self.torch.device(self.device))
        # Sorting a bucket takes ~3x its size (values, indices, scratch); drawing a chunk ~100 B/draw.
        working = 3 * 16 * self.bucket_keys + 100 * self.chunk_draws
        return nbytes + working < 0.9 * free

    def staging(self, nbytes):
        if not self.device.startswith("cuda"):
            return None
        return _PinnedPool(self.torch, nbytes)

    def length(self, keys):
        return keys.numel()

    def positions(self, sorted_keys, values):
        t = self.torch
        return t.searchsorted(sorted_keys, t.from_numpy(values).to(sorted_keys.device)).cpu().tolist()

    def dedup(self, keys):
        """Sort a bucket in place and compact its distinct non-SENTINEL keys to the front."""
        t = self.torch
        if isinstance(keys, t.Tensor):          # a device-resident bucket
            unique = t.unique_consecutive(t.sort(keys).values)
            unique = unique[unique != SENTINEL]
            keys[: unique.numel()].copy_(unique)
            return unique.numel()
        if self.device == "cpu":
            keys.sort()
            if len(keys) == 0:
                return 0
            keep = np.empty(len(keys), dtype=bool)
            keep[0] = True
            np.not_equal(keys[1:], keys[:-1], out=keep[1:])
            keep &= keys != SENTINEL
            unique = keys[keep]
            keys[: len(unique)] = unique
            return len(unique)
        unique = t.unique_consecutive(t.sort(t.from_numpy(keys).to(self.device)).values)
        unique = unique[unique != SENTINEL]
        t.from_numpy(keys[: unique.numel()]).copy_(unique)
        return unique.numel()

    def _trim_hash(self, key, canonical):
        return (self._mix(key, canonical) >> 1) & ((1 << 63) - 1)

    def _device_keys(self, keys):
        if isinstance(keys, self.torch.Tensor):
            return keys
        return self.torch.from_numpy(keys).to(self.device)

    def trim_histogram(self, keys, n, symmetric, key, shift, nbins):
        t = self.torch
        hist = t.zeros(nbins, dtype=t.int64, device=self.device)
        for part in self._parts(keys):
            if symmetric:
                part = part[part // n <= part % n]
            hist += t.bincount(self._trim_hash(key, part) >> shift, minlength=nbins)
        return hist.cpu().numpy()

    def trim_collect(self, keys, n, symmetric, key, shift, wanted_bin, capacity):
        t = self.torch
        found = []
        for part in self._parts(keys):
            if symmetric:
                part = part[part // n <= part % n]
            h = self._trim_hash(key, part)
            found.append(h[(h >> shift) == wanted_bin].cpu())
        return t.cat(found).numpy() if found else np.empty(0, dtype=np.int64)

    def to_csr(self, keys, n, row_lo, nrows, symmetric, key, threshold, indices_out):
        t = self.torch
        counts = t.zeros(nrows, dtype=t.int64, device=self.device)
        written = 0
        for part in self._parts(keys):
            if threshold is not None:
                s, d = part // n, part % n
                canonical = t.minimum(s, d) * n + t.maximum(s, d) if symmetric else part
                part = part[self._trim_hash(key, canonical) < threshold]
            counts += t.bincount(part // n - row_lo, minlength=nrows)
            dst = (part % n).to(self.torch.int32 if indices_out.dtype == np.int32 else t.int64)
            t.from_numpy(indices_out[written: written + dst.numel()]).copy_(dst.cpu())
            written += dst.numel()
        return written, counts.cpu().numpy()

    def _parts(self, keys: np.ndarray):
        step = max(1, self.bucket_keys)
        for lo in range(0, len(keys), step):
            yield self._device_keys(keys[lo: lo + step])

    def features_block(self, plan, row0, rows, labels):
        t = self.torch
        tb = self._tables(plan)
        dim = plan.feature_dim
        base = row0 * dim
        e = t.arange(base, base + rows * dim, dtype=t.int64, device=self.device)
        h = self._mix(plan.keys["features"], e >> 1)
        half = t.where((e & 1) == 0, (h >> 32) & 0xFFFFFFFF, h & 0xFFFFFFFF)
        del h, e
        z = (((half.to(t.float64) + 0.5) * rng.TWO_POW_M32 - 0.5) * rng.NOISE_SCALE).to(t.float32)
        del half
        lab = t.from_numpy(np.ascontiguousarray(labels, dtype=np.int64)).to(self.device)
        z = z.view(rows, dim) + tb["centroids"][lab]
        return z

    def labels(self, plan):
        t = self.torch
        tb = self._tables(plan)
        ids = t.arange(plan.num_nodes, dtype=t.int64, device=self.device)
        if plan.id_order == "shuffled":
            ids = (plan.glob_inv * (ids - plan.glob_add)) % plan.num_nodes
        return (t.searchsorted(tb["offset"], ids, right=True) - 1).cpu().numpy()

    def split_order(self, plan):
        t = self.torch
        ids = t.arange(plan.num_nodes, dtype=t.int64, device=self.device)
        h = (self._mix(plan.keys["split"], ids) >> 1) & ((1 << 63) - 1)
        # Ties are impossible in practice (63-bit hashes); stable keeps the order defined anyway.
        return t.sort(h, stable=True).indices.cpu().numpy()

    def synchronize(self):
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize()


class _PinnedPool:
    """Three rotating page-locked buffers: one being filled from the GPU, one queued, one being
    written to disk; pinned copies run at PCIe speed instead of through a pageable bounce."""

    def __init__(self, torch, nbytes: int, count: int = 3):
        self.buffers = [torch.empty(nbytes, dtype=torch.uint8, pin_memory=True) for _ in range(count)]
        self.turn = 0

    def next(self):
        buffer = self.buffers[self.turn % len(self.buffers)]
        self.turn += 1
        return buffer


def select_backend(device: str = "auto") -> Backend:
    """``auto``: CUDA when visible, else numba, else torch on CPU.  Or 'cuda', 'cuda:1', 'cpu',
    'numba', 'torch-cpu'."""
    device = (device or "auto").lower()
    if device in ("auto", "cuda") or device.startswith("cuda:"):
        try:
            import torch

            if torch.cuda.is_available():
                return TorchBackend("cuda" if device == "auto" else device)
        except ImportError:
            pass
        if device != "auto":
            raise HarnessError(f"device '{device}' requested but no CUDA GPU is visible")
        device = "cpu"
    if device in ("cpu", "numba"):
        try:
            return NumbaBackend()
        except ImportError:
            if device == "numba":
                raise HarnessError("device 'numba' requested but numba is not installed") from None
            return TorchBackend("cpu")
    if device == "torch-cpu":
        return TorchBackend("cpu")
    raise HarnessError(f"unknown device '{device}' (auto, cpu, numba, torch-cpu, cuda, cuda:N)")
