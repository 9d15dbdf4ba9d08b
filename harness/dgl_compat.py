"""DGL 2.x under the torch we run: import it without its graphbolt extension.

DGL's PyPI wheels (2.1.0: CPU builds, cp311/cp312 manylinux) ship ``dgl.graphbolt`` with its C++
library compiled for torch 2.0-2.2 only (``dgl/graphbolt/libgraphbolt_pytorch_<torch>.so``), and
``dgl/graphbolt/__init__.py`` raises FileNotFoundError when no library matches the running torch.
``import dgl`` reaches it through ``dgl.dataloading`` -> ``dgl.distributed``, whose
``dist_graph``, ``partition`` and ``graph_services`` modules do ``from .. import graphbolt as gb``
and use ``gb`` only inside the functions of graphbolt-backed distributed training. What the
harness uses (``dgl.graph``, ``dgl.dataloading.NeighborSampler``/``DataLoader``, ``dgl.nn``,
``dgl.sampling``) never touches graphbolt.

:func:`import_dgl` therefore checks, before importing, whether the installed DGL has a graphbolt
library for this torch. If it has (or has no graphbolt at all: DGL 1.x), DGL is imported as it is.
If not, one placeholder module is registered as ``dgl.graphbolt`` in ``sys.modules`` (the only
change: DGL's own files and every other module stay as they are), so the three ``from .. import
graphbolt`` statements bind it; any attribute read on it raises AttributeError naming the reason.
``status()`` says which happened; ``python -m harness env`` prints it.

The placeholder lives in this process's ``sys.modules``: loader worker processes that are forked
inherit it, processes started by spawn or forkserver would import DGL afresh and fail, so DGL
loaders with workers are started by fork (impls/pipelines/dgl_host.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

_STATE: dict = {}


class _Graphbolt(types.ModuleType):
    """Stands in for ``dgl.graphbolt`` when its library was not built for this torch."""

    def __init__(self, reason: str):
        super().__init__("dgl.graphbolt", reason)
        self.__reason = reason

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"dgl.graphbolt.{name} is not available: {self.__reason}")


def _graphbolt_missing() -> str | None:
    """Why DGL's graphbolt cannot load under this torch (then it must be kept from loading), or
    None when the installed DGL has a library for it or has no graphbolt."""
    import torch

    spec = importlib.util.find_spec("dgl")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "graphbolt"
    if not (folder / "__init__.py").exists():
        return None
    version = torch.__version__.split("+", 1)[0]
    suffix = {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")
    prefix = "graphbolt_pytorch_" if sys.platform == "win32" else "libgraphbolt_pytorch_"
    if (folder / f"{prefix}{version}{suffix}").exists():
        return None
    built = sorted(p.name[len(prefix):-len(suffix)] for p in folder.glob(f"{prefix}*{suffix}"))
    span = f"{built[0]}-{built[-1]}" if built else "no version"
    return f"DGL's graphbolt is built for torch {span} only, not {version}; the harness uses none of it"


def import_dgl():
    """``dgl``, imported with graphbolt kept from loading where it cannot (module doc). Raises
    ImportError (one line) where DGL is not installed or does not import even so."""
    if "dgl" in sys.modules and "error" not in _STATE:
        return sys.modules["dgl"]
    if "error" in _STATE:
        raise ImportError(_STATE["error"])
    if importlib.util.find_spec("dgl") is None:
        raise ImportError("package 'dgl' is not installed")
    reason = _graphbolt_missing()
    if reason and "dgl.graphbolt" not in sys.modules:
        sys.modules["dgl.graphbolt"] = _Graphbolt(reason)
        _STATE["shim"] = reason
    try:
        dgl = importlib.import_module("dgl")
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        _STATE["error"] = f"package 'dgl' does not import: {first}"
        raise ImportError(_STATE["error"]) from exc
    return dgl


def status() -> str | None:
    """One line for ``harness env``: the DGL version and whether the graphbolt shim is active;
    None where DGL is not installed."""
    if importlib.util.find_spec("dgl") is None:
        return None
    try:
        dgl = import_dgl()
    except ImportError as exc:
        return str(exc)
    if "shim" in _STATE:
        return f"DGL {dgl.__version__} (graphbolt not loaded: {_STATE['shim']})"
    return f"DGL {dgl.__version__}"


def shim_active() -> bool:
    return "shim" in _STATE


def layers_unavailable(device) -> str | None:
    """Why DGL cannot run message passing on ``device`` here (a CPU build on a CUDA device), or None:
    its layers, and its sampler on GPU tensors."""
    import torch

    device = torch.device(device)
    try:
        dgl = import_dgl()
    except ImportError as exc:
        return str(exc)
    if device.type != "cuda":
        return None
    try:
        dgl.graph((torch.tensor([0]), torch.tensor([0]))).to(device)
    except Exception as exc:            # DGLError from a CPU build: "Device API cuda is not enabled"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
        return f"DGL {dgl.__version__} is a CPU build ({first})"
    return None
