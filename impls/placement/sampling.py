"""Neighbor samplers over a CSR graph, vectorized, and ICS'22's locality-aware sampling.

- :class:`NodeWiseSampler`: uniform sampling without replacement of ``fanouts[h]`` neighbors per
  node at hop h (GraphSAGE style; used for pre-sampling hotness and XGNN's workloads).
- :class:`LayerWiseSampler`: ICS'22's setting (Sec. 5.1: "layer-wise neighbor sampling", 8192
  nodes per layer): each layer draws every candidate j (the neighbors of the layer above)
  independently with probability q_j (Eq. 1, xi_j ~ Bernoulli(q_j)) and weighs it by 1/q_j, an
  unbiased estimate of each target's neighbor mean.
- :class:`LocalityBoost` + :func:`las_probabilities` + :func:`build_locality_sets`: ICS'22 Sec. 4
  (Eq. 8 and the Q'_l sets): multiply q_j by s for candidates in Q'_l and renormalize so the
  expected sample count is unchanged; the estimator still divides by the q actually used, so it
  stays unbiased whatever s is.
- :class:`ScaleController`: ICS'22 Algorithm 2 (lt, ut, MAXS), adapting s once per epoch.

Layers are numbered as in ICS'22: layer 1 is the input layer (whose features are loaded), layer
L the one next to the output; a sampler walks from the batch (the output nodes) down to layer 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def expand(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every CSR entry of ``nodes``: (position of the owner in ``nodes``, neighbor id)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    starts = np.asarray(indptr[nodes], dtype=np.int64)
    lens = np.asarray(indptr[nodes + 1], dtype=np.int64) - starts
    total = int(lens.sum())
    owner = np.repeat(np.arange(len(nodes), dtype=np.int64), lens)
    if total == 0:
        return owner, np.empty(0, dtype=np.int64)
    # position inside each row = global position - start of the row's run in the output
    run_start = np.cumsum(lens) - lens
    offsets = np.arange(total, dtype=np.int64) - np.repeat(run_start, lens)
    return owner, np.asarray(indices[np.repeat(starts, lens) + offsets], dtype=np.int64)


def positions_in(ids: np.ndarray, universe: np.ndarray) -> np.ndarray:
    """Index of each of ``ids`` in the (unsorted, duplicate-free) array ``universe``."""
    sorter = np.argsort(universe, kind="stable")
    return sorter[np.searchsorted(universe, ids, sorter=sorter)]


@dataclass
class Block:
    """One sampled layer: ``dst`` nodes aggregate from ``src`` nodes (``src[:len(dst)] == dst``).

    Edge e goes from ``src[edge_src[e]]`` to ``dst[edge_dst[e]]`` with ``weight[e]``: the
    per-edge factor of the neighbor-mean estimate (1 / (deg * q) for the layer-wise sampler,
    1 / sampled-count for the node-wise one).
    """

    layer: int
    dst: np.ndarray
    src: np.ndarray
    edge_dst: np.ndarray
    edge_src: np.ndarray
    weight: np.ndarray


@dataclass
class Sample:
    """Blocks from the output side (layer L) down to the input layer (layer 1)."""

    seeds: np.ndarray
    blocks: list[Block]

    @property
    def input_nodes(self) -> np.ndarray:
        """The nodes whose input features a GPU loads for this mini-batch."""
        return self.blocks[-1].src if self.blocks else self.seeds


def _make_block(layer, targets, owner, nbr, keep, weight) -> Block:
    sampled = nbr[keep]
    new = np.setdiff1d(np.unique(sampled), targets, assume_unique=False)
    src = np.concatenate([targets, new])
    return Block(layer, targets, src, owner[keep], positions_in(sampled, src), weight[keep])


class NodeWiseSampler:
    """Uniform neighbor sampling without replacement, ``fanouts`` from the seeds outward.

    A node with degree <= fanout keeps every neighbor. Selection: one random key per CSR entry
    and the ``fanout`` smallest keys of each row (a sort of owner + key), so every subset of the
    row of that size is equally likely.
    """

    def __init__(self, fanouts: tuple[int, ...]):
        self.fanouts = tuple(int(f) for f in fanouts)
        self.num_layers = len(self.fanouts)

    def sample(self, indptr, indices, seeds, rng: np.random.Generator) -> Sample:
        targets = np.asarray(seeds, dtype=np.int64)
        blocks = []
        for hop, fanout in enumerate(self.fanouts):
            owner, nbr = expand(indptr, indices, targets)
            if fanout < 0 or len(nbr) == 0:
                keep = np.ones(len(nbr), dtype=bool)
            else:
                order = np.argsort(owner + rng.random(len(nbr)), kind="stable")
                row_start = np.searchsorted(owner, np.arange(len(targets)))
                rank = np.empty(len(nbr), dtype=np.int64)
                rank[order] = np.arange(len(nbr)) - row_start[owner[order]]
                keep = rank < fanout
            counts = np.bincount(owner[keep], minlength=len(targets))
            weight = 1.0 / np.maximum(counts[owner], 1)
            blocks.append(_make_block(self.num_layers - hop, targets, owner, nbr, keep, weight))
            targets = blocks[-1].src
        return Sample(np.asarray(seeds, dtype=np.int64), blocks)


# --- ICS'22 locality-aware sampling (Sec. 4) ------------------------------------------------

def las_probabilities(q: np.ndarray, boosted: np.ndarray, scale: float) -> np.ndarray:
    """Eq. 8: q_j * s for j in Q_l, q_j otherwise, renormalized to the same sum.

    The paper writes the factor as 1/M with M = sum(q) / (sum_Q s q + sum_notQ q), which would
    not keep the sum; its text ("the normalization factor ensures sum q_new = sum q") fixes the
    intent, implemented here: multiply by sum(q) / (sum_Q s q + sum_notQ q). A probability that
    would exceed 1 is capped and the remainder spread over the others (water filling), so the
    expected sample count stays sum(q) whenever that is possible.
    """
    q = np.asarray(q, dtype=np.float64)
    if scale == 1.0 or not np.any(boosted):
        return q
    target = float(q.sum())
    raw = np.where(boosted, scale * q, q)
    capped = np.zeros(len(q), dtype=bool)
    out = raw
    for _ in range(len(q) + 1):
        free_mass = raw[~capped].sum()
        if free_mass <= 0:
            break
        factor = (target - np.count_nonzero(capped)) / free_mass
        out = np.where(capped, 1.0, raw * factor)
        over = ~capped & (out > 1.0)
        if not over.any():
            break
        capped |= over
    return np.minimum(out, 1.0)


def locality_vectors(indptr, indices, stored: np.ndarray, num_layers: int) -> list[np.ndarray]:
    """v_1 .. v_L of ICS'22 Sec. 4: v_1 = B as a 0/1 vector, v_{l+1} = v_l A.

    "v_2[i] being the number of paths with one edge from node-i to the nodes in B". The worked
    example (v_2 = [1,3,4,3,2,1]) counts a node's own membership too, i.e. A includes self loops
    (A + I, as in its Fig. 2). A node samples from its CSR row, so v_{l+1}[i] sums v_l over i's
    row and i itself (one sparse matrix-vector product per layer).
    """
    import scipy.sparse as sp

    n = len(stored)
    adj = sp.csr_matrix((np.ones(len(indices), dtype=np.float64), indices, indptr), shape=(n, n))
    vectors = [np.asarray(stored, dtype=np.float64)]
    for _ in range(1, num_layers):
        vectors.append(adj @ vectors[-1] + vectors[-1])
    return vectors


def build_locality_sets(indptr, indices, stored: np.ndarray, num_layers: int,
                        max_size: int | None) -> list[np.ndarray]:
    """Q'_1 .. Q'_L as boolean masks: Q'_1 = B; Q'_l = the ``max_size`` nodes with the largest v_l.

    Nodes with v_l = 0 never enter Q'_l (they have no path to B); ties keep the lower node id.
    """
    vectors = locality_vectors(indptr, indices, stored, num_layers)
    return [np.asarray(stored, dtype=bool).copy()] + [top_k_mask(v, max_size) for v in vectors[1:]]


def top_k_mask(values: np.ndarray, k: int | None) -> np.ndarray:
    positive = np.flatnonzero(values > 0)
    if k is None or k >= len(positive):
        chosen = positive
    else:
        order = np.lexsort((positive, -values[positive]))   # value desc, id asc
        chosen = positive[order[:k]]
    mask = np.zeros(len(values), dtype=bool)
    mask[chosen] = True
    return mask


@dataclass
class LocalityBoost:
    """Q'_l masks for one GPU (index l-1) and the current scale factor s."""

    sets: list[np.ndarray]
    scale: float = 1.0

    def adjust(self, q: np.ndarray, candidates: np.ndarray, layer: int) -> np.ndarray:
        if self.scale == 1.0 or layer - 1 >= len(self.sets):
            return q
        return las_probabilities(q, self.sets[layer - 1][candidates], self.scale)


@dataclass
class ScaleController:
    """ICS'22 Algorithm 2: adjust s from the ratio r of loading time to total time of an epoch."""

    lt: float = 0.15
    ut: float = 0.2
    max_scale: float = 8.0
    scale: float = 1.0
    previous: float = 1.0
    fixed: bool = False
    history: list = field(default_factory=list)

    def update(self, ratio: float) -> float:
        if not self.fixed:
            if self.scale >= self.max_scale:
                self.fixed = True
            elif ratio > self.ut:
                self.previous, self.scale = self.scale, self.scale * 2
            elif ratio < self.lt and self.scale != 1:
                self.scale = (self.scale + self.previous) / 2
            else:
                self.fixed = True
        self.history.append((float(ratio), float(self.scale), self.fixed))
        return self.scale


class LayerWiseSampler:
    """ICS'22's layer-wise sampler with optional locality-aware boosting.

    At layer l the candidates are the union of the neighbors of the layer above; each is drawn
    independently with q_j = min(1, layer_nodes / #candidates) (uniform, so ``layer_nodes`` are
    drawn in expectation), then boosted by ``boost`` (Eq. 8). The layer keeps the targets (their
    own features feed GraphSAGE's self term) plus the drawn candidates; edge weights
    1 / (deg_i q_j) make sum_j w_ij x_j an unbiased estimate of node i's neighbor mean (Eq. 1).
    """

    def __init__(self, layer_nodes: int | tuple[int, ...], num_layers: int, boost: LocalityBoost | None = None):
        self.num_layers = int(num_layers)
        sizes = (layer_nodes,) * self.num_layers if np.isscalar(layer_nodes) else tuple(layer_nodes)
        if len(sizes) != self.num_layers:
            raise ValueError("one layer size per layer")
        self.layer_nodes = tuple(int(s) for s in sizes)
        self.boost = boost

    def probabilities(self, candidates: np.ndarray, layer: int, size: int) -> np.ndarray:
        q = np.full(len(candidates), min(1.0, size / max(1, len(candidates))))
        return self.boost.adjust(q, candidates, layer) if self.boost is not None else q

    def sample(self, indptr, indices, seeds, rng: np.random.Generator) -> Sample:
        targets = np.asarray(seeds, dtype=np.int64)
        blocks = []
        for step in range(self.num_layers):
            layer = self.num_layers - step              # ICS'22 numbering: 1 = input layer
            owner, nbr = expand(indptr, indices, targets)
            candidates, inverse = np.unique(nbr, return_inverse=True)
            q = self.probabilities(candidates, layer, self.layer_nodes[step])
            drawn = rng.random(len(candidates)) < q
            keep = drawn[inverse]
            degree = np.bincount(owner, minlength=len(targets)).astype(np.float64)
            weight = 1.0 / (degree[owner] * q[inverse])
            blocks.append(_make_block(layer, targets, owner, nbr, keep, weight))
            targets = blocks[-1].src
        return Sample(np.asarray(seeds, dtype=np.int64), blocks)


def aggregate_mean_estimate(block: Block, features: np.ndarray) -> np.ndarray:
    """sum_j w_ij x_j per dst node: the sampled estimate of each dst node's neighbor mean."""
    out = np.zeros((len(block.dst), features.shape[1]))
    np.add.at(out, block.edge_dst, features[block.src[block.edge_src]] * block.weight[:, None])
    return out
