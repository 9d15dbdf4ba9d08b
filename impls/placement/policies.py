"""The placement policies ICS'22 and XGNN compare, on one interface.

``policy.place(problem) -> Placement``. A :class:`PlacementProblem` carries the graph (CSR), the
training nodes, a hotness estimate (any of :mod:`.hotness`), the topology and the buffer size
(nodes per GPU). Partitioning baselines (naive, random, metis, pagraph, hash_modulo) give each GPU
one partition; when the partition is larger than the buffer, the rest of it is read from the host.

Which part of a partition a GPU buffers (``buffer_fill``): ICS'22 gives DGL (METIS) a GPU buffer of
the most frequently accessed nodes, so ``metis`` keeps its hottest nodes (PaGraph, in pagraph.py,
caches its partition's highest-out-degree nodes, PaGraph's own policy). For NAIVE and RAND it states nothing, but its
numbers only fit a buffer filled without hotness: on '4GPU' with 0.1N buffers its placement reads
72% more nodes locally and 51% fewer from the CPU than NAIVE (reddit), and 2.4-4.0x less loading
time than RAND on papers100M, while hottest-first buffers of random parts hold nearly the same
global hot set as Algorithm 1 with alpha = 0. So ``naive``, ``random`` and ``hash_modulo``
(WholeGraph has no hotness) buffer their partition's first nodes in partition order (id order;
the permuted order for RAND). Either policy takes ``buffer_fill`` to override.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.timing import now
from impls.core.topology import Topology

from . import ics22
from .result import Lookup, Placement


@dataclass
class PlacementProblem:
    indptr: np.ndarray
    indices: np.ndarray
    train_idx: np.ndarray
    hotness: np.ndarray
    topology: Topology
    buffer_size: int
    num_layers: int = 3
    seed: int = 0
    symmetric: bool | None = None     # True: the CSR is symmetric without self loops (METIS input as is)

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    def __post_init__(self):
        if len(self.hotness) != self.num_nodes:
            raise ValueError("hotness needs one value per node")
        if self.buffer_size < 0:
            raise ValueError("buffer size must be >= 0")


def hottest_first(nodes: np.ndarray, hotness: np.ndarray) -> np.ndarray:
    """``nodes`` ordered by hotness, descending (ties: lower id first)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    return nodes[np.lexsort((nodes, -hotness[nodes]))]


BUFFER_FILLS = ("hottest", "partition_order")


def buffers_from_parts(parts: list[np.ndarray], hotness: np.ndarray, buffer_size: int,
                       fill: str = "hottest") -> list[np.ndarray]:
    """Each GPU buffers ``buffer_size`` nodes of its partition: the hottest, or the first ones."""
    if fill not in BUFFER_FILLS:
        raise ValueError(f"buffer_fill must be one of {', '.join(BUFFER_FILLS)}")
    if fill == "partition_order":
        return [np.asarray(part, dtype=np.int64)[:buffer_size] for part in parts]
    return [hottest_first(part, hotness)[:buffer_size] for part in parts]


class Policy:
    name = ""

    def place(self, problem: PlacementProblem) -> Placement:
        raise NotImplementedError

    def _result(self, problem, buffers, started, **kw) -> Placement:
        meta = kw.pop("meta", {})
        meta["place_s"] = now() - started
        return Placement(self.name, problem.topology, problem.num_nodes, buffers, problem.buffer_size,
                         meta=meta, **kw)


def _problem_key(problem: PlacementProblem) -> tuple:
    """Identifies the graph, training set and GPU count of a problem (not the buffer size)."""
    return (id(problem.indptr), id(problem.indices), len(problem.indices), len(problem.train_idx),
            problem.topology.num_gpus, problem.num_layers, problem.seed)


class PartitionPolicy(Policy):
    """A partitioner giving GPU g partition g; ``local_training`` splits training nodes alike.

    The partition does not depend on the buffer size, so one policy object remembers it per
    graph and GPU count (experiments sweep buffer sizes; METIS need not run again).
    """

    local_training = False
    default_fill = "partition_order"

    def __init__(self, buffer_fill: str | None = None):
        self.buffer_fill = buffer_fill or self.default_fill
        if self.buffer_fill not in BUFFER_FILLS:
            raise ValueError(f"buffer_fill must be one of {', '.join(BUFFER_FILLS)}")
        self._memo: dict = {}

    def partition(self, problem: PlacementProblem) -> list[np.ndarray]:
        raise NotImplementedError

    def place(self, problem: PlacementProblem) -> Placement:
        started = now()
        key = _problem_key(problem)
        if key not in self._memo:
            t0 = now()
            self._memo[key] = (self.partition(problem), now() - t0)
        parts, partition_s = self._memo[key]
        buffers = buffers_from_parts(parts, problem.hotness, problem.buffer_size, self.buffer_fill)
        train_parts = None
        if self.local_training:
            owner = np.full(problem.num_nodes, -1, dtype=np.int64)
            for g, part in enumerate(parts):
                owner[part] = g
            train = np.asarray(problem.train_idx, dtype=np.int64)
            train_parts = [train[owner[train] == g] for g in range(len(parts))]
        return self._result(problem, buffers, started, train_parts=train_parts,
                            meta={"partition_sizes": [len(p) for p in parts], "partition_s": partition_s,
                                  "buffer_fill": self.buffer_fill})


class Naive(PartitionPolicy):
    """ICS'22 NAIVE: "evenly divides graph nodes according to their indices"."""

    name = "naive"

    def partition(self, problem):
        return np.array_split(np.arange(problem.num_nodes, dtype=np.int64), problem.topology.num_gpus)


class RandomPartition(PartitionPolicy):
    """ICS'22 RAND: a random permutation of the nodes, then naive partitioning."""

    name = "random"

    def partition(self, problem):
        perm = np.random.default_rng(problem.seed).permutation(problem.num_nodes)
        return np.array_split(perm, problem.topology.num_gpus)


class HashModulo(PartitionPolicy):
    """WholeGraph: node v lives on GPU v mod n.

    SC'22 Sec. III: "We partition the nodes of the graph to different GPUs according to the node
    ID hash value"; the identity hash modulo n is the hash here, so every GPU holds 1/n.

    WholeGraph assumes everything fits in GPU memory; with a smaller buffer the first nodes of
    each GPU's share stay on it and the rest is read from the host.
    """

    name = "hash_modulo"

    def partition(self, problem):
        ids = np.arange(problem.num_nodes, dtype=np.int64)
        n = problem.topology.num_gpus
        return [ids[g::n] for g in range(n)]


class Metis(PartitionPolicy):
    """METIS k-way partitioning (pymetis), one part per GPU, as DGL does.

    DGL's distributed training splits the training nodes by partition (``node_split``), so each
    GPU trains on the training nodes of its own part: ``local_training``.
    """

    name = "metis"
    local_training = True
    default_fill = "hottest"

    def partition(self, problem):
        membership = metis_membership(problem.indptr, problem.indices, problem.topology.num_gpus,
                                      seed=problem.seed, symmetric=problem.symmetric)
        return [np.flatnonzero(membership == g) for g in range(problem.topology.num_gpus)]

    def preprocessing(self, indptr, indices, train_idx, parts: int, num_layers: int, seed: int = 0,
                      symmetric: bool | None = None):
        """METIS k-way into ``parts``, given the CSR in its own index type (converted here, before
        the step a timer measures: 'Our' reads the CSR as stored)."""
        indptr, indices = metis_index_arrays(indptr, indices)
        return lambda: metis_membership(indptr, indices, parts, seed=seed, symmetric=symmetric)


def metis_input(indptr, indices) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric CSR without self loops, as METIS requires (directed graphs get both directions)."""
    import scipy.sparse as sp

    n = len(indptr) - 1
    adj = sp.csr_matrix((np.ones(len(indices), dtype=np.int8), indices, indptr), shape=(n, n))
    sym = (adj + adj.T).tocsr()
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    return sym.indptr, sym.indices


def metis_index_arrays(indptr, indices) -> tuple[np.ndarray, np.ndarray]:
    """The CSR in METIS's own index type, which pymetis takes without a copy (any other it copies)."""
    import pymetis

    dtype = pymetis.zero_copy_dtype() if hasattr(pymetis, "zero_copy_dtype") else None
    return np.asarray(indptr, dtype=dtype), np.asarray(indices, dtype=dtype)


def metis_membership(indptr, indices, num_parts: int, *, seed: int = 0, symmetric: bool | None = None) -> np.ndarray:
    """Part of every node; ``symmetric=True`` skips the symmetrization (the CSR must be symmetric)."""
    import pymetis

    if num_parts == 1:
        return np.zeros(len(indptr) - 1, dtype=np.int64)
    if not symmetric:
        indptr, indices = metis_input(indptr, indices)
    options = pymetis.Options(seed=seed)
    if hasattr(pymetis, "CSRAdjacency"):
        graph = pymetis.CSRAdjacency(adj_starts=indptr, adjacent=indices)
        _, parts = pymetis.part_graph(num_parts, graph, recursive=False, options=options)
    else:  # pymetis < 2025.2
        _, parts = pymetis.part_graph(num_parts, xadj=indptr, adjncy=indices, recursive=False,
                                      options=options)
    return np.asarray(parts, dtype=np.int64)


class Clique(Policy):
    """Quiver: within each fully connected clique, the hottest nodes spread without duplicates.

    A clique of k GPUs caches the k * BSIZE hottest nodes, hot-rank r on member r mod k; every
    clique holds the same set (each is "a features cache pool independently", XGNN Sec. 2).
    """

    name = "clique"

    def place(self, problem):
        started = now()
        order = hottest_first(np.arange(problem.num_nodes), problem.hotness)
        buffers: list = [None] * problem.topology.num_gpus
        cliques = problem.topology.cliques()
        for clique in cliques:
            k = len(clique)
            cached = order[:k * problem.buffer_size]
            for i, g in enumerate(clique):
                buffers[g] = cached[i::k]
        return self._result(problem, buffers, started, meta={"cliques": cliques})


class CliqueOpt(Policy):
    """ICS'22 Algorithm 1 in every fully connected group (its Rule 2; XGNN's "CliqueOpt").

    ``alpha`` stands for C_gpu / C_cpu (Eq. 7). ICS'22 Sec. 5.1 uses 0.2 on '(2+2)GPU' and
    '(2*4)GPU' and 0 on '2GPU', '4GPU', '8GPU'.
    """

    name = "clique_opt"

    def __init__(self, alpha: float = 0.0):
        self.alpha = float(alpha)

    def place(self, problem):
        started = now()
        order = ics22.sort_nodes(problem.hotness)
        buffers: list = [None] * problem.topology.num_gpus
        cliques = problem.topology.cliques()
        info = {}
        for clique in cliques:
            group, info = ics22.algorithm1(problem.hotness, len(clique), problem.buffer_size, self.alpha, order)
            for g, buf in zip(clique, group):
                buffers[g] = buf
        return self._result(problem, buffers, started,
                            meta={"alpha": self.alpha, "cliques": cliques, **info})

    def preprocessing(self, indptr, indices, train_idx, parts: int, num_layers: int, seed: int = 0,
                      symmetric: bool | None = None):
        """ICS'22's preprocessing: the L-hop reach estimate of p (``num_layers`` SpMVs), then
        Algorithm 1 over ``parts`` GPUs whose buffers together hold every node."""
        from .hotness import lhop_hotness

        buffer = -(-(len(indptr) - 1) // parts)

        def step():
            reach = lhop_hotness(indptr, indices, train_idx, num_layers, symmetric=symmetric)
            return ics22.algorithm1(reach, parts, buffer, alpha=self.alpha)
        return step


class XGNNSolver(Policy):
    """XGNN GGMS features: hottest nodes split modulo n into logical partitions, placed by the solver.

    Partition p holds hot-ranks p, p + n, p + 2n, ... (XGNN Sec. 4.3: modulo partitioning of the
    reordered ids). A GPU storing k partitions gives each BSIZE / k slots, so all partitions have
    BSIZE // k_max nodes and n * (BSIZE // k_max) nodes are cached in total.
    """

    name = "xgnn_solver"

    def search(self, topology):
        """The solver's plan for ``topology``: which partitions each GPU stores (XGNN Fig. 8)."""
        from .xgnn_solver import solve

        return solve(topology)

    def place(self, problem):
        started = now()
        plan = self.search(problem.topology)
        n = problem.topology.num_gpus
        part_size = problem.buffer_size // plan.max_partitions_per_gpu
        order = hottest_first(np.arange(problem.num_nodes), problem.hotness)[:n * part_size]
        partitions = [order[p::n] for p in range(n)]
        buffers = [np.concatenate([partitions[p] for p in plan.store[g]]) if plan.store[g] else
                   np.empty(0, dtype=np.int64) for g in range(n)]
        partition_of = np.full(problem.num_nodes, -1, dtype=np.int64)
        partition_of[order] = np.arange(len(order)) % n

        def lookup(placement: Placement, gpu: int) -> Lookup:
            dev_num = np.full(placement.num_nodes, -1, dtype=np.int16)
            buf_pos = np.arange(placement.num_nodes, dtype=np.int64)
            cached = partition_of >= 0
            src = plan.source[gpu][partition_of[cached]]
            dev_num[cached] = src
            nodes = np.flatnonzero(cached)
            for g in np.unique(src):
                mine = src == g
                buf_pos[nodes[mine]] = placement.slots(int(g))[nodes[mine]]
            return Lookup(gpu, dev_num, buf_pos)

        return self._result(problem, buffers, started, lookup_fn=lookup,
                            meta={"store": [list(s) for s in plan.store], "partition_size": part_size,
                                  "search_s": plan.search_time_s, "plans_found": plan.plans_found,
                                  "min_bandwidth_gbps": plan.min_bandwidth})
