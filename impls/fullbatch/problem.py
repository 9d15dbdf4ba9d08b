"""The full-batch training problem: a graph, MG-GCN's normalized adjacency, and its 1D row partition.

MG-GCN (Eq. 1-2) trains ``H' = sigma(Â^T H W)`` with ``Â_uv = A_uv / sum_w A_wv``: every vertex
takes the mean of its in-neighbours.  We call the forward operator ``F = Â^T`` (row v holds v's
in-neighbours u with weight 1/indeg(v)) and the backward operator ``B = Â = F^T`` (Eq. 9 multiplies
the gradient by Â).  Both are stored, row-partitioned: rank i keeps rows ``p(i)..p(i+1)`` of F and of
B, cut by the same partition vector into P column tiles ``F^{ij}`` (MG-GCN Sec. 4.1, Fig. 2), so at
stage j it multiplies ``F^{ij}`` by the rows of H that rank j broadcasts.

Everything here is vectorized over the edge arrays (numpy only: scipy is not in the GPU image's package list);
nothing loops over edges. The graph is a :class:`harness.datasets.Graph` with float32 features and
int64 training ids (``harness.graphs.load(ctx, dataset, scale, "fullbatch")``, or :func:`random_graph`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.datasets.graph import Graph


@dataclass
class CsrMatrix:
    """A CSR matrix on the host: row pointers, column indices (ascending within a row), values."""

    indptr: np.ndarray     # int64, rows + 1
    indices: np.ndarray    # int32 (int64 beyond 2^31 columns)
    data: np.ndarray       # float32
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def row_ids(self) -> np.ndarray:
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    def toarray(self) -> np.ndarray:
        dense = np.zeros(self.shape, dtype=np.float64)
        dense[self.row_ids(), self.indices] = self.data
        return dense


def random_graph(num_nodes: int, avg_degree: float, feature_dim: int, num_classes: int, seed: int = 0,
                 *, train_fraction: float = 0.6, isolated: int = 0) -> Graph:
    """A small random directed graph for tests: uniform edges, no duplicates or self loops.

    ``isolated`` vertices get no in- or out-edges at all (Eq. 2 divides by an in-degree of 0 for
    them unless self loops are added); labels are planted from a random projection of the
    features so that training has something to learn.
    """
    rng = np.random.default_rng(seed)
    m = int(num_nodes * avg_degree)
    src = rng.integers(0, num_nodes, m)
    dst = rng.integers(0, num_nodes, m)
    keep = src != dst
    if isolated:
        lonely = rng.choice(num_nodes, isolated, replace=False)
        keep &= ~(np.isin(src, lonely) | np.isin(dst, lonely))
    pairs = np.unique(src[keep].astype(np.int64) * num_nodes + dst[keep])   # sorted, no duplicates
    src, dst = pairs // num_nodes, pairs % num_nodes
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=num_nodes), out=indptr[1:])
    features = rng.standard_normal((num_nodes, feature_dim)).astype(np.float32)
    labels = np.argmax(features @ rng.standard_normal((feature_dim, num_classes)), axis=1)
    train = np.sort(rng.choice(num_nodes, max(1, int(train_fraction * num_nodes)), replace=False))
    none = np.empty(0, dtype=np.int64)
    return Graph(f"random-{num_nodes}-{seed}", num_nodes, int(indptr[-1]), indptr, dst.astype(np.int32), features,
                 labels.astype(np.int64), train.astype(np.int64), none, none, is_standin=False, scale=1.0,
                 meta={"num_classes": num_classes})


# --- normalized adjacency (MG-GCN Eq. 2) --------------------------------------------------------

def _edge_arrays(g: Graph, self_loops: bool) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of every edge u -> v, with a self loop added to vertices that lack one."""
    index_dtype = np.int32 if g.num_nodes < 2**31 else np.int64
    src = np.repeat(np.arange(g.num_nodes, dtype=index_dtype), np.diff(g.indptr))
    dst = np.asarray(g.indices, dtype=index_dtype)
    if self_loops:
        has_loop = np.zeros(g.num_nodes, dtype=bool)
        has_loop[src[src == dst]] = True
        missing = np.flatnonzero(~has_loop).astype(index_dtype)
        src = np.concatenate([src, missing])
        dst = np.concatenate([dst, missing])
    return src, dst


def in_degree_weights(dst: np.ndarray, num_nodes: int) -> np.ndarray:
    """1 / sum_w A_wv for every vertex v (Eq. 2's denominator); 0 where v has no in-edge."""
    indeg = np.bincount(dst, minlength=num_nodes).astype(np.float64)
    with np.errstate(divide="ignore"):
        inv = np.where(indeg > 0, 1.0 / indeg, 0.0)
    return inv.astype(np.float32)


def aggregation_matrix(g: Graph, self_loops: bool = True) -> CsrMatrix:
    """The forward operator F = Â^T as one global CSR (single device, tests)."""
    src, dst = _edge_arrays(g, self_loops)
    inverse_indegree = in_degree_weights(dst, g.num_nodes)
    bounds = np.array([0, g.num_nodes], dtype=np.int64)
    return _row_block_tiles(dst, src, bounds, 0, row_weight=inverse_indegree)[0]


# --- partition vector and permutation -----------------------------------------------------------

def uniform_partition(num_nodes: int, parts: int) -> np.ndarray:
    """MG-GCN's partition vector p (Eq. 13): P+1 boundaries, parts differing by at most one row."""
    if parts < 1 or parts > num_nodes:
        raise ValueError(f"cannot cut {num_nodes} rows into {parts} parts")
    return (np.arange(parts + 1, dtype=np.int64) * num_nodes) // parts


def random_permutation(num_nodes: int, seed: int) -> np.ndarray:
    """``new_id[old_id]``: MG-GCN Sec. 5.2's random relabelling that balances the tiles' nonzeros."""
    return np.random.default_rng(np.random.SeedSequence([seed, 0x5E12])).permutation(num_nodes)


# The vertex orders a share can be cut in:
#   original      the input graph's ids;
#   random        MG-GCN Sec. 5.2: a uniformly random relabelling, then the cut;
#   random_parts  the same random relabelling decides which part each vertex lands in (so every
#                 tile A^{ij} holds the nonzeros it holds under ``random``: the paper's balance),
#                 but inside each part the vertices keep their input order, so the SpMM keeps the
#                 locality the input order has (``random`` scatters every row's neighbours over the
#                 whole of each H^j: one rank on products 3x256 ran 1.35x slower permuted).
VERTEX_ORDERS = ("original", "random", "random_parts")
# how the partition vector cuts the (relabelled) rows: MG-GCN's uniform rows (Eq. 13), or equal
# nonzeros of F and B per part
PARTITIONS = ("rows", "nnz")


def nnz_partition(row_cost: np.ndarray, parts: int) -> np.ndarray:
    """P+1 boundaries that give every part about the same total ``row_cost`` (nonzeros per row),
    each part at least one row."""
    n = len(row_cost)
    if parts < 1 or parts > n:
        raise ValueError(f"cannot cut {n} rows into {parts} parts")
    prefix = np.concatenate([[0], np.cumsum(row_cost, dtype=np.float64)])   # cost of rows [0, i)
    targets = prefix[-1] * np.arange(1, parts) / parts
    cut = np.searchsorted(prefix, targets)                    # first i with prefix[i] >= target
    below = np.maximum(cut - 1, 0)
    closer = np.abs(prefix[below] - targets) <= np.abs(prefix[np.minimum(cut, n)] - targets)
    cut = np.where(closer, below, cut)
    bounds = np.concatenate([[0], cut, [n]]).astype(np.int64)
    for k in range(1, parts):                                  # strictly rising, room for the rest
        bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), n - (parts - k))
    return bounds


def vertex_order(order: str, num_nodes: int, parts: int, seed: int, row_cost: np.ndarray | None = None,
                 partition: str = "rows") -> tuple[np.ndarray, np.ndarray]:
    """``(new_id[old_id], bounds)`` for ``order`` (VERTEX_ORDERS) cut by ``partition`` (PARTITIONS).

    ``row_cost[old_id]``: the nonzeros a vertex's rows hold (needed for ``partition="nnz"``).
    """
    if order not in VERTEX_ORDERS:
        raise ValueError(f"vertex order must be one of {VERTEX_ORDERS}, got '{order}'")
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}, got '{partition}'")
    new_id = (np.arange(num_nodes, dtype=np.int64) if order == "original"
              else random_permutation(num_nodes, seed).astype(np.int64))
    if partition == "rows":
        bounds = uniform_partition(num_nodes, parts)
    else:
        if row_cost is None:
            raise ValueError("an nnz partition needs every vertex's row cost")
        cost_by_new = np.empty(num_nodes, dtype=np.float64)
        cost_by_new[new_id] = row_cost
        bounds = nnz_partition(cost_by_new, parts)
    if order == "random_parts":
        part = np.searchsorted(bounds, new_id, side="right") - 1
        grouped = np.argsort(part, kind="stable")         # old ids by part, ascending inside each
        new_id = np.empty(num_nodes, dtype=np.int64)
        new_id[grouped] = np.arange(num_nodes)
    return new_id, bounds


def check_partition(bounds: np.ndarray, num_nodes: int, parts: int) -> np.ndarray:
    bounds = np.asarray(bounds, dtype=np.int64)
    if bounds.shape != (parts + 1,) or bounds[0] != 0 or bounds[-1] != num_nodes \
            or np.any(np.diff(bounds) <= 0):
        raise ValueError(f"partition vector must rise strictly from 0 to {num_nodes} in {parts} parts")
    return bounds


# --- one rank's share ---------------------------------------------------------------------------

@dataclass
class RankShare:
    """What rank ``rank`` of ``world`` holds: its rows of F and B as P column tiles, X, labels.

    Row r of this rank is vertex ``bounds[rank] + r`` in the (possibly relabelled) numbering;
    ``old_ids[r]`` is its id in the input graph.
    """

    rank: int
    world: int
    bounds: np.ndarray
    old_ids: np.ndarray
    forward_tiles: list[CsrMatrix]        # F^{rank, j}, rows_rank x rows_j
    backward_tiles: list[CsrMatrix]       # B^{rank, j}
    features: np.ndarray                  # rows_rank x d0 float32
    labels: np.ndarray                    # rows_rank int64
    train_rows: np.ndarray                # local row numbers of training vertices
    num_train_total: int
    num_classes: int
    order: str                            # VERTEX_ORDERS
    partition: str = "rows"               # PARTITIONS

    @property
    def permuted(self) -> bool:
        return self.order != "original"

    @property
    def rows(self) -> int:
        return int(self.bounds[self.rank + 1] - self.bounds[self.rank])

    @property
    def part_rows(self) -> list[int]:
        return np.diff(self.bounds).astype(int).tolist()

    def tile_nnz(self) -> list[int]:
        return [int(t.nnz) for t in self.forward_tiles]


def _row_block_tiles(rows: np.ndarray, cols: np.ndarray, bounds: np.ndarray, rank: int, *,
                     row_weight: np.ndarray | None = None,
                     col_weight: np.ndarray | None = None) -> list[CsrMatrix]:
    """CSR tiles of row block ``rank`` (entries at global ``rows``, ``cols``), cut by column blocks.

    The value of an entry depends only on its row (``row_weight[row]``: F, 1/indeg of the row
    vertex) or only on its column (``col_weight[col]``: B), so sorting the (row, col) keys alone
    orders everything; a stable pass by column block then cuts the tiles, rows still sorted.
    """
    n = int(bounds[-1])
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    keys = (rows.astype(np.int64) - lo) * n + cols
    keys.sort()
    local_rows, cols = np.divmod(keys, n)
    del keys
    parts = len(bounds) - 1
    if parts == 1:
        order, starts = None, np.array([0, len(cols)])
    else:
        block = (np.searchsorted(bounds, cols, side="right") - 1).astype(np.int16 if parts < 2**15 else np.int32)
        order = np.argsort(block, kind="stable")      # radix sort: O(nnz), keeps (row, col) order
        starts = np.concatenate([[0], np.cumsum(np.bincount(block, minlength=parts))])
        del block
    tiles = []
    for j in range(parts):
        if order is None:
            tile_rows, tile_cols = local_rows, cols
        else:
            pick = order[starts[j]:starts[j + 1]]
            tile_rows, tile_cols = local_rows[pick], cols[pick]
        width = int(bounds[j + 1] - bounds[j])
        indptr = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(np.bincount(tile_rows, minlength=hi - lo), out=indptr[1:])
        values = row_weight[tile_rows + lo] if row_weight is not None else col_weight[tile_cols]
        index_dtype = np.int32 if width < 2**31 else np.int64
        tiles.append(CsrMatrix(indptr, (tile_cols - bounds[j]).astype(index_dtype),
                               values.astype(np.float32), (hi - lo, width)))
    return tiles


def rank_share(g: Graph, rank: int, world: int, *, order: str, seed: int = 0,
               self_loops: bool = True, partition: str = "rows",
               bounds: np.ndarray | None = None) -> RankShare:
    """Build rank ``rank``'s tiles of F and B and its rows of X (MG-GCN Sec. 4.1, 1D rows).

    ``order`` (VERTEX_ORDERS) relabels the vertices (same seed on every rank) before the cut by
    ``partition`` (PARTITIONS); ``bounds`` replaces the partition vector (input order only).
    """
    n = g.num_nodes
    src, dst = _edge_arrays(g, self_loops)
    inverse_indegree = in_degree_weights(dst, n)
    if bounds is not None:
        if order != "original":
            raise ValueError("an explicit partition vector cuts the input order only")
        new_id, bounds = np.arange(n, dtype=np.int64), check_partition(bounds, n, world)
    else:
        # a vertex's row of F holds its in-edges, its row of B its out-edges
        cost = np.bincount(dst, minlength=n) + np.bincount(src, minlength=n) if partition == "nnz" else None
        new_id, bounds = vertex_order(order, n, world, seed, cost, partition)
    if order != "original":
        new_id = new_id.astype(src.dtype)
        src, dst = new_id[src], new_id[dst]
        old_ids = np.empty(n, dtype=np.int64)
        old_ids[new_id] = np.arange(n)
        inverse_indegree = inverse_indegree[old_ids]       # indexed by new id
    else:
        old_ids = np.arange(n, dtype=np.int64)
    lo, hi = bounds[rank], bounds[rank + 1]
    # F = Â^T: entry (v, u) = A_uv / indeg(v) for edge u -> v; B = F^T: entry (u, v), same weight
    mine = (dst >= lo) & (dst < hi)
    forward = _row_block_tiles(dst[mine], src[mine], bounds, rank, row_weight=inverse_indegree)
    mine = (src >= lo) & (src < hi)
    backward = _row_block_tiles(src[mine], dst[mine], bounds, rank, col_weight=inverse_indegree)
    del src, dst, mine

    local_old = old_ids[lo:hi]
    # gather this rank's feature rows in ascending old-id order (a memory map reads each page once)
    by_old_id = np.argsort(local_old, kind="stable")
    features = np.empty((len(local_old), g.feature_dim), dtype=np.float32)
    features[by_old_id] = np.asarray(g.features[local_old[by_old_id]], dtype=np.float32)
    labels = np.asarray(g.labels[local_old], dtype=np.int64)
    is_train = np.zeros(n, dtype=bool)
    is_train[np.asarray(g.train_idx)] = True
    train_rows = np.flatnonzero(is_train[local_old] & (labels >= 0))
    total = int((is_train & (np.asarray(g.labels) >= 0)).sum())
    return RankShare(rank, world, bounds, local_old, forward, backward, features, labels,
                     train_rows.astype(np.int64), total, g.num_classes, order, partition)


def nnz_imbalance(tile_nnz_by_rank: list[list[int]]) -> dict[str, float]:
    """Load-balance summary of a partition: per-rank row-block nnz and per-stage tile nnz."""
    grid = np.asarray(tile_nnz_by_rank, dtype=np.float64)   # [rank, stage]
    per_rank = grid.sum(axis=1)
    per_stage_max = grid.max(axis=0)
    return {
        "rank_nnz_max_over_mean": float(per_rank.max() / max(per_rank.mean(), 1.0)),
        # a stage lasts as long as its heaviest tile: sum of stage maxima over the ideal
        "stage_nnz_max_sum_over_ideal": float(per_stage_max.sum() / max(grid.sum() / grid.shape[0], 1.0)),
    }
