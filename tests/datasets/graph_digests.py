"""Checksums of every graph view, per dataset, against digests stored in graph_digests.json.

Each registered dataset's stand-in is loaded at a small scale (the smallest scale, from about 2e4
stored edges up, whose stand-in can exist: classes need nodes, and a graph must stay sparse), and
every field a view promises is hashed (dtype, shape and bytes of an array; repr of a value). The
stored digests were taken through the four loaders and two direct ``datasets.load`` calls that
``harness.graphs.load`` replaced (c00d5cc); a view whose bits change shows here by dataset and
field. "placement" is what the placement experiments read of the host view (it was their loader's).

A deliberate change of the generator (its ``GENERATOR_VERSION``) changes every digest:
``python -m tests.datasets.graph_digests`` rewrites the file (then say why in the commit).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

DIGESTS = Path(__file__).with_name("graph_digests.json")
EDGES = 2e4                     # the stand-ins' size: about this many stored edges
UNIFORM = ("uniform:20000:50", 0.1)

# what each view promises, field by field
FIELDS = {
    "host": ("name", "num_nodes", "num_edges", "indptr", "indices", "features", "labels", "train_idx",
             "val_idx", "test_idx", "is_standin", "scale", "num_classes", "symmetric", "feature_dtype"),
    "structure": ("name", "num_nodes", "indptr", "indices", "train_idx"),
    "fullbatch": ("name", "num_nodes", "num_edges", "indptr", "indices", "features", "labels", "train_idx",
                  "num_classes", "feature_dim", "is_standin", "scale"),
    "placement": ("name", "scale", "seed", "num_nodes", "indptr", "indices", "train_idx", "val_idx", "test_idx",
                  "features", "labels", "symmetric", "is_standin", "description", "feature_dim", "row_bytes"),
}
LOADED_AS = {"host": "host", "structure": "structure", "fullbatch": "fullbatch", "placement": "host"}


def small_scale(name: str) -> float:
    """The smallest scale, from about EDGES stored edges up in steps of 1.5x, at which the
    stand-in of ``name`` can be planned (two significant digits)."""
    from harness import datasets
    from harness.datasets.generators import plan_for
    from harness.errors import HarnessError

    scale = datasets.scale_for_edges(name, EDGES)
    while True:
        try:
            plan_for(name, float(f"{scale:.2g}"), 0)
            return float(f"{scale:.2g}")
        except HarnessError:
            scale *= 1.5


def value_digest(value) -> str:
    h = hashlib.blake2b(digest_size=8)
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        h.update(f"{array.dtype.str}{array.shape}".encode())
        h.update(array.view(np.uint8).reshape(-1).data if array.size else b"")
    else:
        h.update(repr(value).encode())
    return h.hexdigest()


def field_digests(values: dict) -> dict[str, str]:
    return {name: value_digest(value) for name, value in values.items()}


def view_fields(graph, view: str) -> dict:
    """The fields ``view`` promises, read from a graph of that view."""
    out = {}
    for name in FIELDS[view]:
        if name == "description":
            value = graph.describe()
        elif name == "seed":                        # the seed the stand-in was generated with
            value = graph.meta["seed"]
        else:
            value = getattr(graph, name)
        if view == "placement" and name == "symmetric":
            value = bool(value)
        out[name] = value
    return out


def expected(view: str, name: str) -> dict[str, str] | None:
    stored = json.loads(DIGESTS.read_text())
    return stored["views"][view].get(name)


def current_digests() -> dict:
    """Every view of every dataset's stand-in (and the uniform graph), read with
    ``harness.graphs.load`` at seed 0."""
    from harness import datasets, graphs
    from harness.config import RunConfig
    from harness.datasets.plan import GENERATOR_VERSION
    from harness.experiment import RunContext

    ctx = RunContext(RunConfig(device="cpu", seed=0))
    scales = {spec.name: small_scale(spec.name) for spec in datasets.list_datasets()}
    views = {view: {} for view in FIELDS}
    for name, scale in scales.items():
        for view in FIELDS:
            try:
                views[view][name] = field_digests(view_fields(graphs.load(ctx, name, scale, LOADED_AS[view]), view))
            except ValueError as exc:              # full-batch training needs single-label classes
                views[view][name] = {"error": f"{type(exc).__name__}: {exc}"}
    uniform, scale = UNIFORM
    views["structure"][uniform] = field_digests(view_fields(graphs.load(ctx, uniform, scale, "structure"), "structure"))
    return {"generator_version": GENERATOR_VERSION, "edges": EDGES, "scales": {**scales, uniform: scale},
            "views": views}


def write(digests: dict) -> None:
    DIGESTS.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    write(current_digests())
