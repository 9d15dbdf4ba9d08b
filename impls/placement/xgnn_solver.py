"""XGNN's Placement Solver (VLDB'24 Sec. 4.2, Fig. 8): place logical partitions on GPUs.

There are as many logical partitions as GPUs; GPU g starts with partition g. Walking the GPUs in
order, the solver collects the partitions a GPU cannot read from itself or an NVLink neighbor
and stores each of them on one GPU of that closed neighborhood, branching over the candidates
that ChooseNbrs keeps:

- R1 balance (highest priority): the candidates storing the fewest partitions;
- R2 less replication: among those, the ones where the copy serves the most GPUs that still lack
  the partition ("stores it to the neighbor GPUs where it is most needed"), and then a GPU that
  needs the partition itself ("the GPU which needs to access that partition by itself has higher
  priority").

Every complete plan is kept; R3 (bandwidth) then picks the plan with the highest
MinBandwidth = min_i a_i, a_i = min_j Bandwidth_ij / AccessCnt_ij over the GPUs j (itself
included, at local bandwidth) that worker i reads. Final plans are first ranked by their largest
per-GPU partition count and total copies, since the balance rule has the highest priority and
ChooseNbrs applies it only locally; MinBandwidth decides among equally balanced plans.

Each worker reads a partition locally when it holds one, else from a neighbor holding it; the
neighbor is chosen greedily (partitions with the fewest holders first, then the holder with the
most bandwidth per partition already assigned), which is what AccessCnt counts.

Partitions are bitmasks and identical search states are visited once, so the 8-GPU DGX-1 case
takes milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.timing import now
from impls.core.topology import Topology


@dataclass(frozen=True)
class SolverPlan:
    topology: Topology
    store: tuple[tuple[int, ...], ...]    # partitions stored on each GPU
    source: np.ndarray                    # (workers, partitions): GPU each worker reads it from
    access_count: np.ndarray              # (workers, GPUs): partitions each worker reads from each GPU
    min_bandwidth: float                  # GB/s per partition on the worst link (R3)
    plans_found: int
    states_visited: int
    search_time_s: float

    @property
    def max_partitions_per_gpu(self) -> int:
        return max(len(s) for s in self.store)

    @property
    def extra_partitions(self) -> list[int]:
        return [len(s) - 1 for s in self.store]

    def reaches_everything(self) -> bool:
        """Every worker reads every partition from itself or an NVLink neighbor."""
        n = self.topology.num_gpus
        for w in range(n):
            reach = set()
            for g in self.topology.closed_neighborhood(w):
                reach.update(self.store[g])
            if reach != set(range(n)):
                return False
        return True

    def table(self) -> list[dict]:
        """XGNN Fig. 7's right-hand table: per worker, the GPU each partition is read from."""
        labels = self.topology.labels
        return [{"worker": f"W{w}", **{f"P{p}": labels[int(self.source[w, p])]
                                      for p in range(self.source.shape[1])}}
                for w in range(self.source.shape[0])]


def _popcount(x: int) -> int:
    return x.bit_count()


def solve(topology: Topology) -> SolverPlan:
    """Run the pruning search of XGNN Fig. 8 on ``topology``; returns the chosen plan."""
    start = now()
    n = topology.num_gpus
    closed = [topology.closed_neighborhood(g) for g in range(n)]
    served_by = [[h for h in range(n) if g in closed[h]] for g in range(n)]  # who reads GPU g
    store = [1 << g for g in range(n)]                                        # lines 2-4
    reach = [0] * n                        # partitions each worker reads (kept up to date)
    for g in range(n):
        for h in served_by[g]:
            reach[h] |= store[g]
    results: dict[tuple[int, ...], None] = {}
    seen: set = set()
    visited = 0

    def choose_nbrs(part: int, gpu: int) -> list[int]:               # lines 20-23
        bit = 1 << part
        best, chosen = None, []
        for nb in closed[gpu]:
            w1 = _popcount(store[nb])                                 # R1 balance
            w2 = sum(1 for h in served_by[nb] if not reach[h] & bit)  # R2 utilization
            key = (w1, -w2, -int(not reach[nb] & bit))                # R2: needs it itself
            if best is None or key < best:
                best, chosen = key, [nb]
            elif key == best:
                chosen.append(nb)
        return chosen

    def search(gpu: int, p_idx: int, p_list: tuple[int, ...] | None) -> None:   # lines 8-19
        nonlocal visited
        if gpu == n:
            results[tuple(store)] = None
            return
        if p_list is None:
            p_list = tuple(p for p in range(n) if not reach[gpu] >> p & 1)
        key = (gpu, p_idx, p_list, tuple(store))
        if key in seen:
            return
        seen.add(key)
        visited += 1
        if p_idx < len(p_list):
            part = p_list[p_idx]
            bit = 1 << part
            if reach[gpu] & bit:                 # an earlier copy of this GPU's list covers it
                search(gpu, p_idx + 1, p_list)
                return
            for nb in choose_nbrs(part, gpu):
                saved = [reach[h] for h in served_by[nb]]
                store[nb] |= bit
                for h in served_by[nb]:
                    reach[h] |= bit
                search(gpu, p_idx + 1, p_list)
                store[nb] &= ~bit
                for h, old in zip(served_by[nb], saved):
                    reach[h] = old
        else:
            search(gpu + 1, 0, None)

    search(0, 0, None)
    # R1 over whole plans first (cheap), then R3 only among the best-balanced ones
    balance = {}
    for masks in results:
        sizes = [m.bit_count() for m in masks]
        balance[masks] = (max(sizes), sum(sizes))
    fewest = min(balance.values())
    bandwidth = [[topology.bandwidth(g, w) for g in range(n)] for w in range(n)]
    best = None
    memo: dict = {}
    for masks in (m for m, b in balance.items() if b == fewest):
        source, counts, min_bw = _access_plan(bandwidth, masks, closed, memo)
        if best is None or min_bw > best[3]:
            best = (masks, source, counts, min_bw)
    masks, source, counts, min_bw = best
    source, counts = np.asarray(source, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    store_t = tuple(tuple(p for p in range(n) if m >> p & 1) for m in masks)
    return SolverPlan(topology, store_t, source, counts, float(min_bw), len(results), visited,
                      now() - start)


def _access_plan(bandwidth: list[list[float]], masks, closed, memo: dict | None = None) -> tuple[list, list, float]:
    """Which GPU each worker reads each partition from, AccessCnt, and MinBandwidth (R3).

    ``bandwidth[w][g]``: GB/s for worker w reading GPU g (local bandwidth for g == w). A worker's
    assignment depends only on what its closed neighborhood stores, which many candidate plans
    share, so ``memo`` keeps it per (worker, neighborhood contents). Plain lists: numpy's
    per-element overhead would dominate at this size.
    """
    n = len(masks)
    sources, counts = [], []
    min_bw = float("inf")
    for w in range(n):
        key = (w, tuple(masks[g] for g in closed[w]))
        if memo is not None and key in memo:
            source, count, worker_bw = memo[key]
        else:
            source, count, worker_bw = _worker_plan(bandwidth[w], masks, closed[w], w, n)
            if memo is not None:
                memo[key] = (source, count, worker_bw)
        sources.append(source)
        counts.append(count)
        min_bw = min(min_bw, worker_bw)
    return sources, counts, min_bw


def _worker_plan(row_bw: list[float], masks, reachable: list[int], w: int, n: int):
    holders_of = [[g for g in reachable if masks[g] >> p & 1] for p in range(n)]
    source = [w if masks[w] >> p & 1 else -1 for p in range(n)]
    count = [0] * n
    count[w] = _popcount(masks[w])
    for p in sorted((p for p in range(n) if source[p] < 0), key=lambda p: len(holders_of[p])):
        best_g = max(holders_of[p], key=lambda g: row_bw[g] / (count[g] + 1))
        source[p] = best_g
        count[best_g] += 1
    return source, count, min(row_bw[g] / c for g, c in enumerate(count) if c)
