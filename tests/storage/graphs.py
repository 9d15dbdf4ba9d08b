"""Small random graphs with skewed degrees and a plain reference for the tiered stores."""

from __future__ import annotations

import numpy as np
import torch


def skewed_graph(num_nodes: int = 400, seed: int = 0, max_degree: int = 40, feat_dim: int = 6,
                 id_dtype=np.int32):
    """CSR with power-law-ish degrees (some zero), hubs among the neighbours, float features."""
    rng = np.random.default_rng(seed)
    deg = np.minimum((rng.pareto(1.5, num_nodes) * 3).astype(np.int64), max_degree)
    deg[rng.choice(num_nodes, num_nodes // 10, replace=False)] = 0
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    weights = 1.0 / (1.0 + np.arange(num_nodes)) ** 0.8
    weights = weights[rng.permutation(num_nodes)]
    indices = rng.choice(num_nodes, int(indptr[-1]), p=weights / weights.sum()).astype(id_dtype)
    features = torch.from_numpy(rng.standard_normal((num_nodes, feat_dim)).astype(np.float32))
    return {"indptr": indptr, "indices": indices, "features": features}


def plain_neighbors(graph, old_ids: np.ndarray) -> list[np.ndarray]:
    ip, ix = graph["indptr"], graph["indices"]
    return [ix[ip[v]:ip[v + 1]] for v in old_ids]
