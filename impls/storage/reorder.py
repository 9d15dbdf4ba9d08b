"""Node reordering by hotness: XGNN's Partitioner step 1 ("the graph will be reordered by custom
policies, like degree policy. The most frequently accessed nodes have a high priority to be stored
in GPU memory", section 4.3), and the feature order of DGL+C's and Quiver's caches.

``Reordering.order[i]`` is the original id of the node with new id (hot rank) i; ``rank[v]`` the
new id of original node v. Policies:

- ``degree`` (default): in-degree, how many neighbour lists name the node, i.e. how often a
  uniform sampler can reach it (PaGraph, XGNN's default);
- ``presample``: GNNLab's pre-sampling (impls/placement/hotness.presample_hotness): input-layer
  appearances over a few epochs of mini-batches;
- ``none``: the identity (ablations), or pass any hotness array.

Ties keep the lower original id first, so the order is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

POLICIES = ("degree", "presample", "none")


@dataclass(frozen=True)
class Reordering:
    order: np.ndarray      # int64 [N]: original id of new id i
    rank: np.ndarray       # int64 [N]: new id of original id v
    policy: str

    @property
    def num_nodes(self) -> int:
        return int(self.order.size)

    def to_new(self, ids):
        """New ids of original ids (numpy array or tensor, same kind and device back)."""
        return _take(self.rank, ids)

    def to_old(self, ids):
        return _take(self.order, ids)

    def is_identity(self) -> bool:
        return bool(np.array_equal(self.order, np.arange(self.order.size)))


def _take(table: np.ndarray, ids):
    if isinstance(ids, torch.Tensor):
        out = torch.from_numpy(table)[ids.detach().cpu().to(torch.int64)]
        return out.to(ids.device)
    return table[np.asarray(ids, dtype=np.int64)]


def from_hotness(hotness: np.ndarray, policy: str = "custom") -> Reordering:
    """Hottest first; ties by lower original id (a stable sort of -hotness)."""
    hot = np.asarray(hotness, dtype=np.float64)
    order = np.argsort(-hot, kind="stable").astype(np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size, dtype=np.int64)
    return Reordering(order, rank, policy)


def identity(num_nodes: int) -> Reordering:
    ids = np.arange(num_nodes, dtype=np.int64)
    return Reordering(ids, ids.copy(), "none")


def in_degree(indptr, indices, num_nodes: int | None = None) -> np.ndarray:
    n = (len(indptr) - 1) if num_nodes is None else num_nodes
    return np.bincount(np.asarray(indices), minlength=n).astype(np.float64)


def reorder(indptr, indices, policy="degree", *, train_idx=None, fanouts=None, batch_size: int = 6000,
            epochs: int = 1, seed: int = 0) -> Reordering:
    """The reordering of ``policy`` (a name of POLICIES, or a hotness array)."""
    n = len(indptr) - 1
    if not isinstance(policy, str):
        hot = np.asarray(policy)
        if hot.shape != (n,):
            raise ValueError(f"a hotness array needs {n} entries, not {hot.shape}")
        return from_hotness(hot, "custom")
    if policy == "none":
        return identity(n)
    if policy == "degree":
        return from_hotness(in_degree(indptr, indices, n), "degree")
    if policy == "presample":
        from impls.placement import NodeWiseSampler, presample_hotness

        if train_idx is None or fanouts is None:
            raise ValueError("presample hotness needs train_idx and fanouts")
        hot = presample_hotness(indptr, indices, train_idx, NodeWiseSampler(tuple(fanouts)), batch_size,
                                epochs, seed)
        return from_hotness(hot, "presample")
    raise ValueError(f"unknown reordering policy '{policy}' (known: {', '.join(POLICIES)})")
