"""PaGraph (Lin et al., SoCC'20) as a placement policy, as ICS'22 Sec. 5.1 describes and compares it.

Its partitioning: "PaGraph partitions a graph based on training nodes. It iterates over all training
nodes and checks the connections between a node and the nodes in previous iterations. Based on the
connections, PaGraph assigns the node to a partition so that the best load balance is achieved.
Once it gets a partitioning of the training nodes, it assigns all other nodes in L-hop neighbor
of training nodes to each partition." For training node v with L-hop in-neighborhood IN(v), partition
i scores |TV_i & IN(v)| * (TV_avg - |TV_i|) / |PV_i| (TV_i: its training nodes, PV_i: its nodes,
TV_avg: training nodes per partition); v joins the best and IN(v) is added to PV_i. Each step
touches the whole L-hop neighborhood of v, which on real graphs is a sizable fraction of N: O(N^2)
overall (ICS'22 Table 2: 4753 s on products, none of papers100M in five hours).

- :func:`pagraph_partition`: that loop as written, one breadth-first closure per training node
  (ICS'22 Table 2 times it); it stops at a time cap and reports how far it got.
- :func:`pagraph_partition_bitset`: the same partition (identical output, tested), with every
  training node's closure computed at once as bit rows (numba): L passes over the edges OR-ing
  64 training nodes per word, then one popcount per partition and step. Still quadratic in time
  and memory (N x T bits), but fast enough to place the measured stand-ins in seconds, so PaGraph
  stands in every loading run and loss curve where the paper has it.
- Its cache (:class:`PaGraph`): every GPU keeps the highest-out-degree nodes of its own partition
  (PaGraph's static cache policy; out-degree = how many nodes' neighbor lists hold the node, i.e.
  how often sampling can reach it), reads nothing from peer GPUs ("PaGraph does not use the
  interconnection among GPUs", ICS'22) and trains each GPU on its own training nodes (local
  shuffling).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from harness.timing import now

from .policies import Policy, PlacementProblem, _problem_key, buffers_from_parts
from .sampling import expand


class PlacementTimeout(Exception):
    """A partitioner ran past its time cap; carries how far it got."""

    def __init__(self, policy: str, cap_s: float, done: int, total: int, elapsed_s: float):
        self.policy, self.cap_s, self.done, self.total, self.elapsed_s = policy, cap_s, done, total, elapsed_s
        projected = elapsed_s * total / max(done, 1)
        self.projected_s = projected
        when = (f"at the time cap of {cap_s:g} s" if elapsed_s >= cap_s else
                f"after {elapsed_s:.1f} s, its projection being over {EARLY_STOP_FACTOR:g}x the time cap of {cap_s:g} s")
        super().__init__(f"{policy} partitioning stopped {when} after "
                         f"{done:,} of {total:,} training nodes (projected total {projected:,.0f} s)")


# Every training node costs about the same (one L-hop closure of a random node), so once a tenth
# of the cap has passed the projection is reliable: a run projected far past the cap stops then
# instead of spending the whole cap for the same skipped row (8 such caps cut a device call short).
EARLY_STOP_FACTOR = 4.0
EARLY_STOP_MIN_NODES = 64


def lhop_neighborhood(indptr, indices, node: int, hops: int, scratch: np.ndarray | None = None) -> np.ndarray:
    """Every node within ``hops`` CSR steps of ``node``, itself included (BFS order).

    ``scratch``: an all-False boolean array of one entry per node, reused across calls (it is
    left all-False again), which saves allocating and sorting per call.
    """
    visited = np.zeros(len(indptr) - 1, dtype=bool) if scratch is None else scratch
    frontier = np.array([node], dtype=np.int64)
    visited[node] = True
    found = [frontier]
    for _ in range(hops):
        _, nbr = expand(indptr, indices, frontier)
        nbr = nbr[~visited[nbr]]
        if len(nbr) == 0:
            break
        visited[nbr] = True                 # duplicates in nbr set the same flag
        frontier = np.flatnonzero(np.bincount(nbr - nbr.min())) + nbr.min() if len(nbr) > 64 else np.unique(nbr)
        found.append(frontier)
    reached = np.concatenate(found)
    visited[reached] = False
    return reached


@dataclass
class PaGraphPartition:
    train_parts: list[np.ndarray]     # TV_i
    node_parts: list[np.ndarray]      # PV_i (training nodes plus their L-hop neighborhoods)
    elapsed_s: float


def pagraph_partition(indptr, indices, train_idx, num_parts: int, hops: int,
                      time_cap_s: float | None = None, check_every: int = 16) -> PaGraphPartition:
    n = len(indptr) - 1
    train = np.asarray(train_idx, dtype=np.int64)
    tv_avg = len(train) / num_parts
    train_part = np.full(n, -1, dtype=np.int64)          # partition of each assigned training node
    in_part = np.zeros((num_parts, n), dtype=bool)        # PV_i membership
    tv_size = np.zeros(num_parts, dtype=np.int64)
    pv_size = np.zeros(num_parts, dtype=np.int64)
    scratch = np.zeros(n, dtype=bool)
    start = now()
    for done, v in enumerate(train):
        if time_cap_s is not None and done % check_every == 0 and done:
            elapsed = now() - start
            hopeless = (done >= EARLY_STOP_MIN_NODES and elapsed >= time_cap_s / 10
                        and elapsed * len(train) / done > EARLY_STOP_FACTOR * time_cap_s)
            if elapsed > time_cap_s or hopeless:
                raise PlacementTimeout("PaGraph", time_cap_s, done, len(train), elapsed)
        neighborhood = lhop_neighborhood(indptr, indices, int(v), hops, scratch)
        # connections to the training nodes of previous iterations, per partition
        shared = np.bincount(train_part[neighborhood] + 1, minlength=num_parts + 1)[1:]
        score = shared * (tv_avg - tv_size) / np.maximum(pv_size, 1)
        best_score = score.max()
        ties = np.flatnonzero(score == best_score)
        best = int(ties[np.argmin(tv_size[ties])])        # ties: the partition with fewest training nodes
        train_part[v] = best
        tv_size[best] += 1
        new = neighborhood[~in_part[best, neighborhood]]
        in_part[best, new] = True
        pv_size[best] += len(new)
    train_parts = [train[train_part[train] == i] for i in range(num_parts)]
    node_parts = [np.flatnonzero(in_part[i]) for i in range(num_parts)]
    return PaGraphPartition(train_parts, node_parts, now() - start)


# --- the same partition from bit rows (numba) --------------------------------------------------

BITSET_MAX_BYTES = 8 << 30        # beyond this, bit rows of every closure do not pay: the loop above runs
_CHUNK = 1024                     # training nodes placed between two looks at the clock

_U1 = np.uint64(1)
_M1, _M2, _M4 = np.uint64(0x5555555555555555), np.uint64(0x3333333333333333), np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(cache=True, inline="always")
def _popcount(x):
    x = x - ((x >> _U1) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@njit(cache=True, parallel=True)
def _closure_hop(indptr, indices, old, new):
    """new[w] |= old[x] for every x and every w in x's CSR row (one more hop for every training
    node at once); threads own blocks of 8 words (a cache line), so no two write the same word."""
    n, words = old.shape
    blocks = (words + 7) // 8
    for blk in prange(blocks):
        lo = blk * 8
        hi = min(words, lo + 8)
        for x in range(n):
            nonzero = False
            for k in range(lo, hi):
                if old[x, k] != 0:
                    nonzero = True
            if not nonzero:
                continue
            for e in range(indptr[x], indptr[x + 1]):
                w = indices[e]
                for k in range(lo, hi):
                    new[w, k] |= old[x, k]


@njit(cache=True, parallel=True)
def _transpose_bits(by_node, num_train, out):
    """out[j] bit i of word b = by_node[64 b + i] bit j of word j // 64 (training node j's closure
    as one bit row over the nodes), 64 x 64 tiles at a time."""
    n, words = by_node.shape
    node_words = out.shape[1]
    for b in prange(node_words):
        tile = np.zeros(64, dtype=np.uint64)
        for k in range(words):
            any_set = False
            for i in range(64):
                node = b * 64 + i
                tile[i] = by_node[node, k] if node < n else np.uint64(0)
                if tile[i] != 0:
                    any_set = True
            if not any_set:
                continue
            for j in range(64):
                row = k * 64 + j
                if row >= num_train:
                    break
                word = np.uint64(0)
                shift = np.uint64(j)
                for i in range(64):
                    word |= ((tile[i] >> shift) & _U1) << np.uint64(i)
                out[row, b] = word


@njit(cache=True)
def _greedy(closures, train, tv_avg, start, stop, part_of, assigned, in_part, tv_size, pv_size):
    """PaGraph's assignment of training nodes ``start:stop`` (the loop of pagraph_partition, with
    |TV_i & IN(v)| and |IN(v) - PV_i| as popcounts of bit rows)."""
    parts, words = assigned.shape
    scores = np.empty(parts, dtype=np.float64)
    for j in range(start, stop):
        v = train[j]
        row = closures[j]
        for i in range(parts):
            shared = 0
            for b in range(words):
                shared += int(_popcount(row[b] & assigned[i, b]))
            scores[i] = shared * (tv_avg - tv_size[i]) / max(pv_size[i], 1)
        top = scores.max()
        best = -1
        for i in range(parts):            # ties: the partition with fewest training nodes, then the first
            if scores[i] == top and (best < 0 or tv_size[i] < tv_size[best]):
                best = i
        word, bit = v >> 6, _U1 << np.uint64(v & 63)
        if part_of[v] >= 0:
            assigned[part_of[v], word] &= ~bit
        part_of[v] = best
        assigned[best, word] |= bit
        tv_size[best] += 1
        added = 0
        for b in range(words):
            fresh = row[b] & ~in_part[best, b]
            added += int(_popcount(fresh))
            in_part[best, b] |= fresh
        pv_size[best] += added


def bitset_bytes(num_nodes: int, num_train: int) -> int:
    """Memory the bit rows of every training node's closure take at their peak (two hop buffers)."""
    return 2 * num_nodes * ((num_train + 63) // 64) * 8


def closure_bits(indptr, indices, train, hops: int) -> np.ndarray:
    """(len(train), ceil(N / 64)) uint64: row j holds, bit per node, the nodes within ``hops`` CSR
    steps of training node train[j] (itself included), as lhop_neighborhood gives them."""
    n = len(indptr) - 1
    t = len(train)
    words = (t + 63) // 64
    by_node = np.zeros((n, words), dtype=np.uint64)
    j = np.arange(t)
    np.bitwise_or.at(by_node, (train, j >> 6), np.left_shift(np.uint64(1), (j & 63).astype(np.uint64)))
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    for _ in range(hops):
        grown = by_node.copy()
        _closure_hop(indptr, indices, by_node, grown)
        by_node = grown
    out = np.zeros((t, (n + 63) // 64), dtype=np.uint64)
    _transpose_bits(by_node, t, out)
    return out


def _nodes_of(bits: np.ndarray, n: int) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(bits.view(np.uint8), bitorder="little")[:n])


def pagraph_partition_bitset(indptr, indices, train_idx, num_parts: int, hops: int,
                             time_cap_s: float | None = None, closures: np.ndarray | None = None) -> PaGraphPartition:
    """:func:`pagraph_partition`'s partition from bit rows of every closure (see the module
    docstring); the same time cap and early stop, looked at every 1024 training nodes.
    ``closures``: :func:`closure_bits` of the same graph, training nodes and hops, computed already
    (they do not depend on the number of parts)."""
    n = len(indptr) - 1
    train = np.asarray(train_idx, dtype=np.int64)
    start = now()
    if closures is None:
        closures = closure_bits(indptr, indices, train, hops)
    words = closures.shape[1]
    part_of = np.full(n, -1, dtype=np.int64)
    assigned = np.zeros((num_parts, words), dtype=np.uint64)
    in_part = np.zeros((num_parts, words), dtype=np.uint64)
    tv_size = np.zeros(num_parts, dtype=np.int64)
    pv_size = np.zeros(num_parts, dtype=np.int64)
    tv_avg = len(train) / num_parts
    for lo in range(0, len(train), _CHUNK):
        elapsed = now() - start
        if time_cap_s is not None and lo:
            hopeless = (lo >= EARLY_STOP_MIN_NODES and elapsed >= time_cap_s / 10
                        and elapsed * len(train) / lo > EARLY_STOP_FACTOR * time_cap_s)
            if elapsed > time_cap_s or hopeless:
                raise PlacementTimeout("PaGraph", time_cap_s, lo, len(train), elapsed)
        _greedy(closures, train, tv_avg, lo, min(lo + _CHUNK, len(train)), part_of, assigned, in_part, tv_size,
                pv_size)
    if time_cap_s is not None and now() - start > time_cap_s:
        raise PlacementTimeout("PaGraph", time_cap_s, len(train), len(train), now() - start)
    train_parts = [train[part_of[train] == i] for i in range(num_parts)]
    node_parts = [_nodes_of(in_part[i], n) for i in range(num_parts)]
    return PaGraphPartition(train_parts, node_parts, now() - start)


# --- the policy ------------------------------------------------------------------------------------

PAGRAPH_FILLS = ("out_degree", "hottest", "partition_order")


def out_degree(indices, num_nodes: int) -> np.ndarray:
    """How many nodes' neighbor lists hold each node: how often sampling can reach it (PaGraph's
    cache key; the row length for a symmetric graph)."""
    return np.bincount(np.asarray(indices, dtype=np.int64), minlength=num_nodes)


def highest_first(nodes: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``nodes`` by ``key``, descending (ties: lower id first)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    return nodes[np.lexsort((nodes, -key[nodes]))]


class PaGraph(Policy):
    """PaGraph: training-node partitioning, a per-GPU cache of its partition's highest-out-degree
    nodes, no reads between GPUs, local shuffling.

    ``method``: 'bitset' (:func:`pagraph_partition_bitset`; the loop where the bit rows would
    exceed BITSET_MAX_BYTES) or 'loop' (:func:`pagraph_partition`). ``buffer_fill``: 'out_degree'
    (PaGraph's cache), 'hottest' (ICS'22's wording: "buffers the most frequently accessed nodes of
    each partition", by the problem's hotness) or 'partition_order'.
    """

    name = "pagraph"

    def __init__(self, time_cap_s: float | None = None, buffer_fill: str = "out_degree", method: str = "bitset"):
        if buffer_fill not in PAGRAPH_FILLS:
            raise ValueError(f"PaGraph's buffer_fill must be one of {', '.join(PAGRAPH_FILLS)}")
        if method not in ("bitset", "loop"):
            raise ValueError("PaGraph's method must be 'bitset' or 'loop'")
        self.time_cap_s, self.buffer_fill, self.method = time_cap_s, buffer_fill, method
        self._memo: dict = {}          # partition (or its timeout) per graph and GPU count
        self._closures: dict = {}      # closure_bits per graph (any GPU count)

    def preprocessing(self, indptr, indices, train_idx, parts: int, num_layers: int, seed: int = 0,
                      symmetric: bool | None = None):
        """PaGraph's own partitioning loop (:func:`pagraph_partition`) under the time cap: the step
        returns its partition, which times itself (``elapsed_s``), or raises PlacementTimeout."""
        return lambda: pagraph_partition(indptr, indices, train_idx, parts, num_layers, self.time_cap_s)

    def partition(self, problem: PlacementProblem) -> PaGraphPartition:
        key = _problem_key(problem)
        if key not in self._memo:
            bitset = self.method == "bitset" and \
                bitset_bytes(problem.num_nodes, len(problem.train_idx)) <= BITSET_MAX_BYTES
            args = (problem.indptr, problem.indices, problem.train_idx, problem.topology.num_gpus, problem.num_layers,
                    self.time_cap_s)
            try:
                if bitset:
                    graph = key[:4] + key[5:]          # the problem key without the GPU count
                    if graph not in self._closures:
                        self._closures = {graph: closure_bits(problem.indptr, problem.indices,
                                                              np.asarray(problem.train_idx, dtype=np.int64),
                                                              problem.num_layers)}
                    self._memo[key] = pagraph_partition_bitset(*args, closures=self._closures[graph])
                else:
                    self._memo[key] = pagraph_partition(*args)
            except PlacementTimeout as timeout:
                self._memo[key] = timeout
        part = self._memo[key]
        if isinstance(part, PlacementTimeout):
            raise part
        return part

    def place(self, problem):
        started = now()
        part = self.partition(problem)
        if self.buffer_fill == "out_degree":
            degree = out_degree(problem.indices, problem.num_nodes)
            buffers = [highest_first(nodes, degree)[:problem.buffer_size] for nodes in part.node_parts]
        else:
            buffers = buffers_from_parts(part.node_parts, problem.hotness, problem.buffer_size, self.buffer_fill)
        # "PaGraph does not use the interconnection among GPUs" (ICS'22 Sec. 5.1)
        return self._result(problem, buffers, started, peer_reads=False, train_parts=part.train_parts,
                            meta={"partition_sizes": [len(p) for p in part.node_parts],
                                  "partition_s": part.elapsed_s, "buffer_fill": self.buffer_fill})
