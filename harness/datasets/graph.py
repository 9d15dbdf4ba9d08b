"""The in-memory (usually memory-mapped) graph every loader and generator returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class Graph:
    """A node-classification graph in CSR form.

    ``indptr`` (int64, ``num_nodes + 1``) and ``indices`` (int32 below 2**31 nodes, else int64)
    hold each node's out-neighbours (for symmetric graphs: all neighbours), sorted, without
    duplicates.  ``features`` is ``num_nodes x feature_dim`` (float32 / float16; bfloat16 is stored
    as its uint16 bit pattern, see :meth:`feature_tensor`).  ``labels`` is int64 with -1 for
    unlabelled nodes (or a 0/1 matrix for multi-label sets).  Arrays loaded from a cache are
    copy-on-write memory maps: zero-copy, and writing to them never touches the file.
    """

    name: str
    num_nodes: int
    num_edges: int
    indptr: np.ndarray
    indices: np.ndarray
    features: np.ndarray | None
    labels: np.ndarray | None
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    is_standin: bool
    scale: float
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def feature_dim(self) -> int:
        return 0 if self.features is None else int(self.features.shape[1])

    @property
    def row_bytes(self) -> int:
        """Bytes of one feature row as stored (0 without features)."""
        return 0 if self.features is None else self.feature_dim * int(self.features.dtype.itemsize)

    @property
    def feature_dtype(self) -> str | None:
        if self.features is None:
            return None
        return self.meta.get("feature_dtype") or str(self.features.dtype)

    @property
    def num_classes(self) -> int | None:
        if "num_classes" in self.meta and self.meta["num_classes"] is not None:
            return int(self.meta["num_classes"])
        if self.labels is None or self.labels.size == 0:
            return None
        if self.labels.ndim == 2:
            return int(self.labels.shape[1])
        return int(self.labels.max()) + 1

    @property
    def symmetric(self) -> bool | None:
        return self.meta.get("symmetric")

    def degrees(self) -> np.ndarray:
        """Out-degree of every node (the degree, for symmetric graphs)."""
        return np.diff(self.indptr)

    def neighbors(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node]: self.indptr[node + 1]]

    def feature_tensor(self):
        """Features as a torch tensor sharing memory with the array (bfloat16 restored)."""
        import torch

        if self.features is None:
            return None
        tensor = torch.from_numpy(self.features)
        if self.feature_dtype == "bfloat16":
            tensor = tensor.view(torch.bfloat16)
        return tensor

    def tensors(self) -> dict[str, Any]:
        """Every array as a torch tensor, without copying."""
        import torch

        out = {"indptr": torch.from_numpy(self.indptr), "indices": torch.from_numpy(self.indices),
               "train_idx": torch.from_numpy(self.train_idx), "val_idx": torch.from_numpy(self.val_idx),
               "test_idx": torch.from_numpy(self.test_idx)}
        if self.features is not None:
            out["features"] = self.feature_tensor()
        if self.labels is not None:
            out["labels"] = torch.from_numpy(self.labels)
        return out

    def describe(self) -> str:
        kind = f"stand-in (scale {self.scale:g})" if self.is_standin else "real"
        feats = f"{self.feature_dim} x {self.feature_dtype}" if self.features is not None else "none"
        sym = {True: "symmetric", False: "directed", None: "?"}[self.symmetric]
        return (f"{self.name} [{kind}]: {self.num_nodes:,} nodes, {self.num_edges:,} {sym} edges, "
                f"features {feats}, classes {self.num_classes}, "
                f"split {len(self.train_idx):,}/{len(self.val_idx):,}/{len(self.test_idx):,}")
