"""PaGraph's training-node partitioning (Lin et al., SoCC'20), as ICS'22 Sec. 5.1 describes it.

"PaGraph partitions a graph based on training nodes. It iterates over all training nodes and
checks the connections between a node and the nodes in previous iterations. Based on the
connections, PaGraph assigns the node to a partition so that the best load balance is achieved.
Once it gets a partitioning of the training nodes, it assigns all other nodes in L-hop neighbor
of training nodes to each partition."

For training node v with L-hop in-neighborhood IN(v), PaGraph scores partition i as
|TV_i & IN(v)| * (TV_avg - |TV_i|) / |PV_i| (TV_i: its training nodes, PV_i: its nodes, TV_avg:
training nodes per partition), takes the best and adds IN(v) to PV_i. Each step touches the
whole L-hop neighborhood of v, which on real graphs is a sizable fraction of N: O(N^2) overall
(ICS'22 Table 2: 4753 s on products, none of papers100M in five hours). The loop stops at a time
cap and reports how far it got, so a benchmark records a timeout instead of hanging.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.timing import now

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
