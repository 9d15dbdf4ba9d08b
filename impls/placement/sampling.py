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
from numba import njit


@njit(cache=True)
def _first_sightings(ids, slot, seen):
    """Appends each id not marked in ``slot`` to ``seen`` and marks it; returns how many."""
    count = 0
    for x in ids:
        if slot[x] < 0:
            slot[x] = 0
            seen[count] = x
            count += 1
    return count


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


@dataclass
class SampledLayer:
    """One sampled layer: ``dst`` nodes aggregate from ``src`` nodes (``src[:len(dst)] == dst``).

    (The project-wide ``impls.core.blocks.Block`` is the same thing as a torch CSR without
    weights; :meth:`Sample.to_blocks` converts.)

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
    """Sampled layers from the output side (layer L) down to the input layer (layer 1)."""

    seeds: np.ndarray
    blocks: list[SampledLayer]

    @property
    def input_nodes(self) -> np.ndarray:
        """The nodes whose input features a GPU loads for this mini-batch."""
        return self.blocks[-1].src if self.blocks else self.seeds

    def to_blocks(self):
        """The project's shared format (``impls.core.blocks.Block``, input layer first) and,
        per block, the edge weights in its CSR order (the shared format has no weights; LAS's
        unbiased estimate needs them)."""
        import torch

        from impls.core.blocks import Block as SharedBlock

        out, weights = [], []
        for block in reversed(self.blocks):
            # edges come grouped by dst already (expand walks the targets in order); keep it stable
            order = np.argsort(block.edge_dst, kind="stable")
            counts = np.bincount(block.edge_dst, minlength=len(block.dst))
            indptr = np.concatenate([[0], np.cumsum(counts)])
            out.append(SharedBlock(torch.from_numpy(indptr.astype(np.int64)),
                                   torch.from_numpy(block.edge_src[order].astype(np.int64)),
                                   torch.from_numpy(block.src.astype(np.int64)), len(block.dst)))
            weights.append(torch.from_numpy(block.weight[order]))
        return out, weights


class IdTable:
    """De-duplication and id -> position maps without sorting the inputs, over a reusable table of N slots.

    A mini-batch touches few nodes of a large graph: one pass over the ids marks the first sight of
    each (numba), only the distinct ids are sorted, and the slots are reset afterwards, so a call
    costs O(ids + distinct log distinct) whatever N is (the earlier flag-array scan was O(N) per
    call, which made the replay grow with the square of the stand-in's scale).
    """

    def __init__(self, num_nodes: int):
        self.slot = np.full(num_nodes, -1, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.slot)

    def unique(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted distinct ids and, for each input id, its index among them (np.unique's output)."""
        ids = np.asarray(ids, dtype=np.int64)
        seen = np.empty(len(ids), dtype=np.int64)
        uniq = np.sort(seen[:_first_sightings(ids, self.slot, seen)])
        self.slot[uniq] = np.arange(len(uniq))
        inverse = self.slot[ids]
        self.slot[uniq] = -1
        return uniq, inverse

    def extend(self, front: np.ndarray, more: np.ndarray, positions: bool = True):
        """``front`` followed by the ids of ``more`` not in it, and each of ``more``'s position."""
        self.slot[front] = np.arange(len(front))
        fresh = more[self.slot[more] < 0]
        if len(fresh):
            fresh = self.unique(fresh)[0]
        src = np.concatenate([front, fresh])
        self.slot[fresh] = np.arange(len(front), len(src))
        where = self.slot[more] if positions else None
        self.slot[src] = -1
        return src, where


def _table(sampler, indptr) -> IdTable:
    n = len(indptr) - 1
    table = getattr(sampler, "_ids", None)
    if table is None or len(table) != n:
        table = sampler._ids = IdTable(n)
    return table


def _make_block(table: IdTable, layer, targets, owner, nbr, keep, weight, edges: bool) -> SampledLayer:
    sampled = nbr[keep]
    src, where = table.extend(targets, sampled, positions=edges)
    if not edges:
        empty = np.empty(0, dtype=np.int64)
        return SampledLayer(layer, targets, src, empty, empty, np.empty(0))
    return SampledLayer(layer, targets, src, owner[keep], where, weight[keep])


class NodeWiseSampler:
    """Uniform neighbor sampling without replacement, ``fanouts`` from the seeds outward.

    A node with degree <= fanout keeps every neighbor. Selection: one random key per CSR entry
    and the ``fanout`` smallest keys of each row (a sort of owner + key), so every subset of the
    row of that size is equally likely.
    """

    def __init__(self, fanouts: tuple[int, ...]):
        self.fanouts = tuple(int(f) for f in fanouts)
        self.num_layers = len(self.fanouts)

    def sample(self, indptr, indices, seeds, rng: np.random.Generator, edges: bool = True) -> Sample:
        """``edges=False`` skips the per-edge arrays (a replay needs only the node sets)."""
        table = _table(self, indptr)
        targets = np.asarray(seeds, dtype=np.int64)
        blocks = []
        for hop, fanout in enumerate(self.fanouts):
            owner, nbr = expand(indptr, indices, targets)
            keep = np.ones(len(nbr), dtype=bool)
            degree = np.bincount(owner, minlength=len(targets))
            if fanout >= 0 and np.any(degree > fanout):
                # rows longer than the fanout: keep the `fanout` smallest random keys of each
                big = np.flatnonzero(degree[owner] > fanout)
                order = big[np.argsort(owner[big] + rng.random(len(big)), kind="stable")]
                first = np.searchsorted(owner[order], owner[order], side="left")
                keep[big] = False
                keep[order[np.arange(len(order)) - first < fanout]] = True
            weight = None
            if edges:
                counts = np.bincount(owner[keep], minlength=len(targets))
                weight = 1.0 / np.maximum(counts[owner], 1)
            blocks.append(_make_block(table, self.num_layers - hop, targets, owner, nbr, keep, weight, edges))
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

    def sample(self, indptr, indices, seeds, rng: np.random.Generator, edges: bool = True) -> Sample:
        """``edges=False`` skips the per-edge arrays (a replay needs only the node sets)."""
        table = _table(self, indptr)
        targets = np.asarray(seeds, dtype=np.int64)
        blocks = []
        for step in range(self.num_layers):
            layer = self.num_layers - step              # ICS'22 numbering: 1 = input layer
            owner, nbr = expand(indptr, indices, targets)
            candidates, inverse = table.unique(nbr)
            q = self.probabilities(candidates, layer, self.layer_nodes[step])
            drawn = rng.random(len(candidates)) < q
            keep = drawn[inverse]
            weight = None
            if edges:
                degree = np.bincount(owner, minlength=len(targets)).astype(np.float64)
                weight = 1.0 / (degree[owner] * q[inverse])
            blocks.append(_make_block(table, layer, targets, owner, nbr, keep, weight, edges))
            targets = blocks[-1].src
        return Sample(np.asarray(seeds, dtype=np.int64), blocks)


def aggregate_mean_estimate(block: SampledLayer, features: np.ndarray) -> np.ndarray:
    """sum_j w_ij x_j per dst node: the sampled estimate of each dst node's neighbor mean."""
    out = np.zeros((len(block.dst), features.shape[1]))
    np.add.at(out, block.edge_dst, features[block.src[block.edge_src]] * block.weight[:, None])
    return out


def ratio_weights(block: SampledLayer) -> np.ndarray:
    """The ratio (self-normalized) form of Eq. 1's estimate: target i's weights w_ij = 1 / (deg_i q_j)
    divided by their sum over the neighbours it sampled, i.e. sum_j x_j / q_j over sum_j 1 / q_j.

    Eq. 1's form is unbiased but, with the few neighbours per target a layer of a few thousand nodes
    leaves on a graph of millions, its weights swing by the inverse of q (a target with one sampled
    neighbour at q = 0.04 weighs it 25 / deg): trained on it, the model sits at chance (issue 34).
    The ratio form is what layer-wise samplers train with (LADIES normalizes the sampled rows): its
    weights of one target sum to 1, and dividing by q still undoes LAS's boost, so it is unbiased as
    the sampled neighbours grow. A target that sampled no neighbour aggregates zero, as in Eq. 1.
    """
    if len(block.edge_dst) == 0:
        return block.weight
    total = np.bincount(block.edge_dst, weights=block.weight, minlength=len(block.dst))
    return block.weight / total[block.edge_dst]
