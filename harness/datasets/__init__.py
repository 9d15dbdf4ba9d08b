"""Datasets: every graph the four papers use, real loaders, and synthetic stand-ins.

    from harness import datasets
    datasets.get("PA")                      # registry entry: published counts, tables, aliases
    g = datasets.load("products", scale=0.01, seed=0)   # stand-in, generated and cached on demand
    g = datasets.load("ogbn-products", data_root="/data")  # real if converted/present, else stand-in
    datasets.degree_stats(g)
    datasets.paper_table("xgnn.table3"); datasets.registry_table("xgnn.table3")

Modules: registry (published facts, catalog.toml), paper_tables (the papers' dataset tables),
plan / rng / backends / kernels_numba / edges / generators (stand-ins), cache (on-disk format),
loaders (real formats), stats (degree statistics), cli (``python -m harness data``).

The names below are imported from their modules on first use (module ``__getattr__``), so that
importing ``harness.datasets.cli`` to build the harness's parser costs no numpy.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import HarnessError

if TYPE_CHECKING:
    from .graph import Graph

Progress = Callable[[str, float], None]

# name -> the module of this package that defines it
_LAZY = {
    "CacheWarning": "cache", "data_root": "cache", "generate": "generators", "plan_for": "generators",
    "write_standin": "generators", "Graph": "graph", "compare_table": "paper_tables", "paper_table": "paper_tables",
    "registry_table": "paper_tables", "table_caption": "paper_tables", "GENERATOR_VERSION": "plan",
    "DatasetSpec": "registry", "get": "registry", "is_registered": "registry", "list_datasets": "registry",
    "resolve": "registry", "table_ids": "registry", "degree_stats": "stats",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CacheWarning", "DatasetSpec", "Graph", "GENERATOR_VERSION", "compare_table", "data_root",
    "degree_stats", "generate", "get", "list_datasets", "load", "paper_table", "prepare",
    "prepare_real", "registry_table", "resolve", "scale_for_edges", "source", "standin_path", "table_caption",
    "table_ids",
]


def standin_path(name: str, scale: float = 1.0, seed: int = 0,
                 data_root: str | os.PathLike | None = None, **overrides: Any) -> Path:
    """Where the stand-in for these arguments is (or would be) cached."""
    from . import cache as _cache
    from .generators import plan_for
    from .plan import GENERATOR_VERSION

    plan = plan_for(name, scale, seed, **overrides)
    return _cache.standin_dir(data_root, plan.name, plan.scale, plan.seed, GENERATOR_VERSION,
                              plan.key_digest())


def prepare(name: str, scale: float = 1.0, seed: int = 0, data_root: str | os.PathLike | None = None,
            *, device: str = "auto", progress: Progress | None = None, rebuild: bool = False,
            **overrides: Any) -> Path:
    """Generate and cache a stand-in (no-op when a valid cache exists); returns its directory.

    ``overrides``: ``symmetric``, ``feature_dim``, ``feature_dtype``, ``id_order``.
    """
    from . import cache as _cache
    from .backends import select_backend
    from .generators import plan_for, write_standin
    from .plan import GENERATOR_VERSION

    plan = plan_for(name, scale, seed, **overrides)
    directory = _cache.standin_dir(data_root, plan.name, plan.scale, plan.seed, GENERATOR_VERSION,
                                   plan.key_digest())
    return _cache.get_or_build(
        directory, lambda writer: write_standin(plan, writer, select_backend(device), progress),
        rebuild=rebuild)


def prepare_real(name: str, data_root: str | os.PathLike | None = None, *,
                 symmetrize: bool | None = None, device: str = "auto",
                 progress: Progress | None = None, rebuild: bool = False) -> Path:
    """Convert a real dataset found under the data root into the cache; returns its directory.

    HarnessError naming every path searched (and how to obtain the data) when it is absent.
    """
    from . import cache as _cache
    from . import loaders
    from .registry import get

    spec = get(name)
    directory = _cache.real_dir(data_root, spec.name)

    def build(writer):
        found = next(((layout, marker) for layout, marker in loaders.candidate_paths(spec, data_root)
                      if layout != "cache" and marker.exists()), None)
        if found is None:
            raise HarnessError(loaders.missing_message(spec, data_root))
        return loaders.convert_real(spec, *found, writer, symmetrize=symmetrize, device=device,
                                    progress=progress)

    return _cache.get_or_build(directory, build, rebuild=rebuild)


def scale_for_edges(name: str, max_edges: float) -> float:
    """The largest scale <= 1 at which the stand-in of ``name`` stores at most ``max_edges`` edges."""
    from .registry import get

    spec = get(name)
    stored = spec.standin.stored_edges if spec.standin else spec.edges
    return min(1.0, max_edges / max(stored, 1))


def stored_bytes(name: str, scale: float = 1.0) -> float:
    """Bytes the stand-in of ``name`` at ``scale`` stores: CSR (int64 offsets, int32 ids) and
    features; an estimate for planning, made without generating anything."""
    from .registry import get

    spec = get(name)
    nodes = spec.nodes * scale
    edges = (spec.standin.stored_edges if spec.standin else spec.edges) * scale
    itemsize = 2 if spec.feature_dtype in ("float16", "bfloat16") else 4
    return 8 * nodes + 4 * edges + nodes * spec.feature_dim * itemsize


def epoch_batches(name: str, scale: float, batch_size: int, ranks: int = 1) -> int:
    """Mini-batches of ``batch_size`` seeds each rank trains per epoch when the training split of
    ``name`` at ``scale`` is shared out over ``ranks``."""
    from .registry import get

    spec = get(name)
    train = spec.split.counts(max(1, int(round(spec.nodes * scale))), spec.nodes)[0]
    return max(1, -(-train // (max(1, ranks) * max(1, batch_size))))


def real_available(name: str, data_root: str | os.PathLike | None = None) -> bool:
    """True when the real dataset is cached or present in a readable layout under the data root."""
    from . import loaders
    from .registry import get

    return loaders.find_real(get(name), data_root) is not None


def source(name: str, scale: float, data_root: str | os.PathLike | None = None) -> str:
    """What :func:`load` reads for ``name`` at ``scale``, in words: the real data (at scale 1.0,
    where it is under the data root or converted in the cache) or a stand-in, saying where real data
    is present but not read at this scale."""
    from . import loaders
    from .registry import get

    found = loaders.find_real(get(name), data_root)
    where = "converted in the cache" if found and found[0] == "cache" else \
        (f"{found[0]} files under {found[1].parent}" if found else "")
    if found and scale == 1.0:
        return f"real ({where})"
    text = f"stand-in at scale {scale:g}"
    return text + (f"; the real data ({where}) is read at --scale 1 only" if found else "")


def load(name: str, scale: float = 1.0, seed: int = 0, data_root: str | os.PathLike | None = None,
         prefer_real: bool = True, *, require_real: bool = False, device: str = "auto",
         progress: Progress | None = None, **overrides: Any) -> Graph:
    """A dataset as a (memory-mapped) :class:`Graph`.

    At scale 1.0 with ``prefer_real``, the real dataset is used when it is cached or present
    under the data root (converted once); otherwise the stand-in for (scale, seed) is loaded,
    generated and cached first if needed (``graph.is_standin`` says which).  ``require_real``
    raises a HarnessError naming the paths searched instead of falling back.  Names that are not
    in the registry load datasets converted with ``python -m harness data convert``.
    """
    from . import cache as _cache
    from .registry import get, is_registered, resolve

    if not is_registered(name):
        directory = _cache.real_dir(data_root, name)
        if (directory / "manifest.json").exists():
            return _cache.open_graph(directory)
        resolve(name)  # raises the unknown-dataset error
    spec = get(name)
    if require_real and scale != 1.0:
        raise HarnessError(f"real {spec.name} exists only at scale 1.0 (asked for {scale:g})")
    if require_real or (prefer_real and scale == 1.0 and real_available(spec.name, data_root)):
        return _open(prepare_real(spec.name, data_root, device=device, progress=progress))
    return _open(prepare(spec.name, scale, seed, data_root, device=device, progress=progress,
                         **overrides))


def _open(directory: Path) -> "Graph":
    from . import cache as _cache

    return _cache.open_graph(directory, verify=False)  # get_or_build verified it
