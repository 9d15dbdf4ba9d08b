"""Synthetic stand-ins: deterministic graphs shaped like the papers' datasets, at any scale.

``generate(name, scale, seed)`` returns an in-memory :class:`Graph`; ``write_standin`` streams
one into a cache directory (what ``load``/``prepare`` use).  What a stand-in matches, at scale 1.0:

* node count exactly, stored edge count exactly (thinned to the target after de-duplication; the
  published count, or what the paper stored after symmetrizing);
* degree skew: a power-law tail with the dataset's ``gamma``, the published maximum degree where
  known (scaled as ``scale ** (1/(gamma-1))`` below 1.0), a low-degree body; see plan.py;
* symmetry as the paper used it, no self loops, no duplicate edges, sorted neighbour lists;
* feature dimension and dtype, class count, and split sizes (published counts or fractions);
* learnable labels: label = planted community; ``homophily`` of edges stay inside it, and
  features are unit-variance uniform noise plus a class centroid of norm ``feature_signal`` (2.0 for
  datasets with real features, 1.0 where the papers used random ones: those features alone
  barely beat chance, the graph carries the signal, as with truly random features plus a label
  signal, so accuracy curves still mean something).

Generation runs on the GPU when one is visible (torch), else on the CPU (numba, or torch).  Every
random bit is a counter-based hash (rng.py), so the output does not depend on the device or on
the chunk sizes, which only bound memory: the GPU path draws ``chunk_draws`` edges at a time and
sorts one bucket of rows at a time, and the CPU path runs the same loop (tests force tiny chunks
and many buckets and check the result is unchanged).
"""

from __future__ import annotations

import math
import queue
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import HarnessError
from ..timing import now
from .backends import Backend, select_backend
from .cache import CacheWriter
from .edges import EdgeBuckets
from .graph import Graph
from .plan import GENERATOR_VERSION, StandinPlan, make_plan, marginal_yield
from .registry import get

Progress = Callable[[str, float], None]
MAX_ROUNDS = 8


def plan_for(name: str, scale: float = 1.0, seed: int = 0, **overrides: Any) -> StandinPlan:
    return make_plan(get(name), scale, seed, **overrides)


def _storage(block, dtype: str, staging=None) -> np.ndarray:
    """A feature block (numpy or torch) as the host array to store for ``dtype``; device blocks
    are converted on the device and copied into a pinned ``staging`` buffer when given."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and isinstance(block, torch.Tensor):
        converted = block.to(torch.bfloat16 if dtype == "bfloat16" else getattr(torch, dtype))
        if dtype == "bfloat16":
            converted = converted.view(torch.int16)
        if staging is not None:
            nbytes = converted.numel() * converted.element_size()
            host = staging.next()[:nbytes].view(converted.dtype).view(converted.shape)
            host.copy_(converted)
        else:
            host = converted.cpu()
        array = host.numpy()
        return array.view(np.uint16) if dtype == "bfloat16" else array
    if dtype == "float32":
        return block
    if dtype == "float16":
        return block.astype(np.float16)
    import torch as _torch

    return _torch.from_numpy(block).to(_torch.bfloat16).view(_torch.int16).numpy().view(np.uint16)


class _BackgroundWriter:
    """Writes blocks to a file on a thread so the next block is computed meanwhile."""

    def __init__(self, path: Path):
        self.file = open(path, "wb")
        # One block queued, one being written, one being filled: matches the 3 staging buffers.
        self.queue: queue.Queue = queue.Queue(maxsize=1)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            block = self.queue.get()
            if block is None:
                return
            try:
                if self.error is None:
                    block.tofile(self.file)
            except BaseException as exc:  # surfaced by close()
                self.error = exc

    def write(self, block: np.ndarray) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put(block)

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        self.file.close()
        if self.error is not None:
            raise self.error


def _edges(plan: StandinPlan, backend: Backend, report: Progress) -> tuple[np.ndarray, np.ndarray, dict]:
    keys_per_draw = 2 if plan.symmetric else 1
    buckets = EdgeBuckets(plan.num_nodes, plan.symmetric, backend, plan.draws * keys_per_draw)
    start, draws, rounds = 0, plan.draws, 0
    while True:
        rounds += 1
        end = start + draws
        for chunk_start in range(start, end, backend.chunk_draws):
            count = min(backend.chunk_draws, end - chunk_start)
            buckets.add(backend.sample_keys(plan, chunk_start, count))
            report("edges", (chunk_start + count - start) / draws)
        report("dedup", 0.0)
        buckets.dedup()
        report("dedup", 1.0)
        if buckets.pairs >= plan.target_pairs:
            break
        if rounds >= MAX_ROUNDS:
            raise HarnessError(f"{plan.name}: only {buckets.pairs} of {plan.target_pairs} distinct "
                               f"edges after {end} draws; the degree profile is too dense")
        start = end
        missing = plan.target_pairs - buckets.pairs
        draws = int(math.ceil(missing / marginal_yield(plan, start) * 1.1)) + 1024
    total_draws = start + draws
    distinct = buckets.pairs
    threshold = buckets.thinning_threshold(plan.target_pairs, plan.keys["trim"])
    index_dtype = np.int32 if plan.num_nodes < 2**31 else np.int64
    indptr, indices = buckets.write_csr(threshold, plan.keys["trim"], index_dtype,
                                        lambda f: report("csr", f))
    stats = {"draws": int(total_draws), "rounds": rounds, "distinct_before_thinning": int(distinct),
             "buckets": buckets.num_buckets}
    buckets.release()
    return indptr, indices, stats


def write_standin(plan: StandinPlan, writer: CacheWriter, backend: Backend | None = None,
                  progress: Progress | None = None, feature_path: Path | None = None) -> dict[str, Any]:
    """Generate ``plan`` into ``writer``'s directory; returns the manifest metadata.

    ``feature_path`` writes the features elsewhere (benchmarks pass /dev/null to time generation
    without the disk); the cache then has no features.
    """
    backend = backend or select_backend("auto")
    report = progress or (lambda stage, fraction: None)
    timings: dict[str, float] = {}
    t0 = now()
    indptr, indices, edge_stats = _edges(plan, backend, report)
    backend.synchronize()
    timings["edges"] = now() - t0

    t1 = now()
    writer.add_array("indptr", indptr)
    writer.add_array("indices", indices)
    num_edges = int(indptr[-1])
    del indices, indptr
    labels = backend.labels(plan)
    writer.add_array("labels", labels)
    order = backend.split_order(plan)
    a, b, c = plan.split_sizes
    for field, part in (("train_idx", order[:a]), ("val_idx", order[a:a + b]),
                        ("test_idx", order[a + b:a + b + c])):
        writer.add_array(field, np.sort(part).astype(np.int64))
    del order
    timings["labels_splits"] = now() - t1

    t2 = now()
    target = feature_path or writer.path("features")
    rows_per_block = max(1, backend.feature_chunk_values // plan.feature_dim)
    staging = backend.staging(rows_per_block * plan.feature_dim * 4)
    sink = _BackgroundWriter(Path(target))
    try:
        for row0 in range(0, plan.num_nodes, rows_per_block):
            rows = min(rows_per_block, plan.num_nodes - row0)
            block = backend.features_block(plan, row0, rows, labels[row0:row0 + rows])
            sink.write(_storage(block, plan.feature_dtype, staging))
            report("features", (row0 + rows) / plan.num_nodes)
    finally:
        sink.close()
    if feature_path is None:
        writer.register("features", plan.feature_dtype, (plan.num_nodes, plan.feature_dim))
    backend.synchronize()
    timings["features"] = now() - t2

    return {
        "name": plan.name, "kind": "standin", "is_standin": True, "scale": plan.scale,
        "seed": plan.seed, "num_nodes": plan.num_nodes, "num_edges": num_edges,
        "symmetric": plan.symmetric, "feature_dim": plan.feature_dim,
        "feature_dtype": plan.feature_dtype, "num_classes": plan.num_classes,
        "generator": {**plan.params(), "backend": backend.describe(), "key": plan.key_digest(),
                      "intra_fraction": plan.intra_fraction,
                      "expected_max_degree": plan.expected_max_degree,
                      "planned_draws": plan.draws, **edge_stats,
                      "seconds": {k: round(v, 3) for k, v in timings.items()}},
    }


def generate(name: str, scale: float = 1.0, seed: int = 0, *, device: str = "auto",
             progress: Progress | None = None, **overrides: Any) -> Graph:
    """An in-memory stand-in (nothing cached): for tests and small scales.

    ``overrides``: ``symmetric``, ``feature_dim``, ``feature_dtype``, ``id_order``, ``feature_signal``.
    """
    plan = plan_for(name, scale, seed, **overrides)
    backend = select_backend(device)
    tmp = Path(tempfile.mkdtemp(prefix="harness-standin-"))
    try:
        writer = CacheWriter(tmp / "graph")
        meta = write_standin(plan, writer, backend, progress)
        arrays = {}
        for field, entry in writer.entries.items():
            dtype = np.uint16 if entry["dtype"] == "bfloat16" else np.dtype(entry["dtype"])
            arrays[field] = np.fromfile(writer.path(field), dtype=dtype).reshape(entry["shape"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Graph(name=plan.name, num_nodes=plan.num_nodes, num_edges=meta["num_edges"],
                 indptr=arrays["indptr"], indices=arrays["indices"],
                 features=arrays.get("features"), labels=arrays.get("labels"),
                 train_idx=arrays["train_idx"], val_idx=arrays["val_idx"],
                 test_idx=arrays["test_idx"], is_standin=True, scale=plan.scale, meta=meta)


__all__ = ["generate", "write_standin", "plan_for", "GENERATOR_VERSION"]
