"""What a stand-in will be, decided on the host before any edge is drawn.

The model is a degree-corrected planted partition (a Chung-Lu graph with communities):

* Nodes fall into ``num_classes`` equal communities; a node's community is its label.
* Inside a community, the node of rank ``r`` (of ``s``) has weight
  ``w(r) = ((r + 0.5)/s + eps) ** -alpha * (1 - (r + 0.5)/s) ** beta`` with ``alpha = 1/(gamma-1)``,
  so the degree tail is a power law ``P(deg > x) ~ x ** -(gamma-1)``, ``beta`` thins the low end
  like real graphs' bodies, and ``eps`` is solved so the top node's expected degree is the target
  maximum.  Weights are scaled so the mean expected degree is ``stored_edges / nodes``.
* Each draw is an intra-community draw (probability ``F_in``; both ends from one community) or an
  inter draw (both ends from the whole graph).  Each node's weight is split between the two kinds
  so that its expected degree stays proportional to its weight, while no node's expected number of
  intra-community neighbours exceeds ``INTRA_CAP`` of its community (hubs of small communities
  spill over to inter edges instead of saturating their community).
* Sampling a node proportional to weight is a search over ``pieces``: rank ranges, geometric in
  size from both ends of each community, with integer cumulative thresholds (``TOTAL = 2**52``),
  then a uniform rank inside the piece.  No per-node tables, so a 111M-node graph needs a few MiB
  of tables on the GPU.
* Ranks map to node ids by an affine bijection inside the community block (``blocked`` order:
  communities are contiguous id ranges, hubs scattered within) and, for ``shuffled`` order, by a
  second affine bijection over all ids.

Duplicates and self loops are dropped after drawing.  The number of draws comes from the expected
number of distinct pairs (:func:`expected_distinct`), summed over piece pairs; the edge pipeline
then tops up if short and thins by edge hash to the exact target.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import HarnessError
from . import rng
from .registry import DatasetSpec

GENERATOR_VERSION = 1
TOTAL = 1 << 52
INTRA_CAP = 0.3          # max expected intra-community degree, as a fraction of the community
GLOBAL_CAP = 0.5         # max expected degree, as a fraction of all nodes
HEAD_SINGLETONS = 16     # the top ranks of a community are pieces of one node
PIECE_GROWTH = 1.04      # neighbouring pieces differ by <= 4% in size, so weights are ~flat in one
MIN_COMMUNITY = 4
GUIDE_BITS = 16          # cut-point table: the top bits of a draw point near its piece
ID_ORDERS = ("blocked", "shuffled")
FEATURE_DTYPES = ("float32", "float16", "bfloat16")


@dataclass
class StandinPlan:
    name: str
    scale: float
    seed: int
    num_nodes: int
    stored_edges: int           # directed CSR entries after symmetrization
    symmetric: bool
    target_pairs: int           # undirected edges (symmetric) or directed edges to keep
    num_classes: int
    feature_dim: int
    feature_dtype: str
    feature_signal: float
    homophily: float
    gamma: float
    body_beta: float
    max_degree: int
    id_order: str
    split_sizes: tuple[int, int, int]
    random_features: bool
    keys: dict[str, int]
    # sampling tables
    comm_offset: np.ndarray = field(repr=False)
    comm_mult: np.ndarray = field(repr=False)
    comm_add: np.ndarray = field(repr=False)
    pieces_per_comm: int = 0
    piece_lo: np.ndarray = field(default=None, repr=False)
    piece_size: np.ndarray = field(default=None, repr=False)
    thresholds_in: np.ndarray = field(default=None, repr=False)
    thresholds_out: np.ndarray = field(default=None, repr=False)
    guide_in: np.ndarray = field(default=None, repr=False)
    guide_out: np.ndarray = field(default=None, repr=False)
    intra_fraction: float = 0.0
    intra_threshold32: int = 0
    glob_mult: int = 1
    glob_add: int = 0
    glob_inv: int = 1
    centroids: np.ndarray = field(default=None, repr=False)
    draws: int = 0
    expected_max_degree: float = 0.0
    profile_eps: float = 0.0

    @property
    def num_communities(self) -> int:
        return len(self.comm_offset) - 1

    def params(self) -> dict[str, Any]:
        """Everything that determines the output; hashed into the cache key."""
        return {
            "generator_version": GENERATOR_VERSION, "name": self.name, "scale": self.scale,
            "seed": self.seed, "num_nodes": self.num_nodes, "stored_edges": self.stored_edges,
            "symmetric": self.symmetric, "num_classes": self.num_classes,
            "feature_dim": self.feature_dim, "feature_dtype": self.feature_dtype,
            "feature_signal": self.feature_signal, "homophily": self.homophily,
            "gamma": self.gamma, "body_beta": self.body_beta, "max_degree": self.max_degree,
            "id_order": self.id_order, "split_sizes": list(self.split_sizes),
            "random_features": self.random_features,
        }

    def key_digest(self) -> str:
        blob = json.dumps(self.params(), sort_keys=True).encode()
        return hashlib.blake2b(blob, digest_size=6).hexdigest()


# ---------------------------------------------------------------------------------------------
# degree profile
# ---------------------------------------------------------------------------------------------

def rank_boundaries(size: int) -> np.ndarray:
    """Piece boundaries over ranks [0, size): singletons at the top, geometric toward the middle
    from both ends (the low end's (1-x)**beta factor varies fast there too)."""
    head = list(range(min(HEAD_SINGLETONS, size) + 1))
    while head[-1] < size:
        head.append(max(head[-1] + 1, math.ceil(head[-1] * PIECE_GROWTH)))
    head_arr = np.array(head, dtype=np.int64)
    half = size // 2
    front = head_arr[head_arr <= half]
    back = size - head_arr[head_arr <= size - half]
    return np.unique(np.concatenate([front, back, [0, size]]))


def _piece_mean_weights(lo: np.ndarray, size: np.ndarray, s: int, eps: float, alpha: float,
                        beta: float, samples: int = 24) -> np.ndarray:
    """Mean of w(r) over each piece's ranks: exact for small pieces, midpoint samples otherwise."""
    j = np.arange(samples)
    exact = size[:, None] <= samples
    ranks = np.where(exact, lo[:, None] + j[None, :],
                     lo[:, None] + (j[None, :] + 0.5) * size[:, None] / samples - 0.5)
    valid = np.where(exact, j[None, :] < size[:, None], True)
    x = (ranks + 0.5) / s
    w = (x + eps) ** -alpha * np.clip(1.0 - x, 0.0, None) ** beta
    return np.where(valid, w, 0.0).sum(axis=1) / np.maximum(np.where(exact, size[:, None], samples)[:, 0], 1)


def solve_profile(s: int, peak_to_mean: float, alpha: float, beta: float) -> float:
    """eps such that w(0) / mean(w) over a community of ``s`` ranks equals ``peak_to_mean``."""
    bounds = rank_boundaries(s)
    lo, size = bounds[:-1], np.diff(bounds)

    def ratio(eps: float) -> float:
        mean = (_piece_mean_weights(lo, size, s, eps, alpha, beta) * size).sum() / s
        top = (0.5 / s + eps) ** -alpha * (1 - 0.5 / s) ** beta
        return top / mean

    lo_e, hi_e = math.log(1e-15), math.log(1e8)
    if ratio(math.exp(lo_e)) <= peak_to_mean:
        return math.exp(lo_e)
    for _ in range(80):
        mid = 0.5 * (lo_e + hi_e)
        if ratio(math.exp(mid)) > peak_to_mean:
            lo_e = mid
        else:
            hi_e = mid
    return math.exp(hi_e)


# ---------------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------------

def _coprime_multiplier(size: int, h: int) -> int:
    if size <= 2:
        return 1
    a = (h % (size - 1)) + 1
    while math.gcd(a, size) != 1:
        a = a % (size - 1) + 1
    return a


def make_plan(spec: DatasetSpec, scale: float = 1.0, seed: int = 0, *,
              symmetric: bool | None = None, feature_dim: int | None = None,
              feature_dtype: str | None = None, id_order: str = "blocked",
              feature_signal: float | None = None) -> StandinPlan:
    """Decide every parameter of ``spec``'s stand-in at ``scale`` (1.0 = published size);
    ``feature_signal`` overrides the catalog's class-centroid norm (a stronger planted feature
    signal, for experiments that train on the features)."""
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise HarnessError(f"scale must be a positive number, got {scale!r}")
    if id_order not in ID_ORDERS:
        raise HarnessError(f"id_order must be one of {', '.join(ID_ORDERS)}, got '{id_order}'")
    settings = spec.standin
    sym = settings.symmetric if symmetric is None else bool(symmetric)
    dtype = feature_dtype or spec.feature_dtype
    if dtype not in FEATURE_DTYPES:
        raise HarnessError(f"feature dtype must be one of {', '.join(FEATURE_DTYPES)}, got '{dtype}'")
    dim = int(feature_dim if feature_dim is not None else spec.feature_dim)
    if dim < 1:
        raise HarnessError(f"feature dimension must be >= 1, got {dim}")
    classes = settings.num_classes

    n = int(round(spec.nodes * scale))
    stored = settings.stored_edges
    if symmetric is not None and sym != settings.symmetric:
        # The published count is the one to keep when the caller flips the default.
        stored = spec.published_stored_edges if sym else spec.edges
    stored = int(round(stored * scale))
    if sym:
        stored -= stored % 2
    if n < MIN_COMMUNITY * classes:
        raise HarnessError(
            f"scale {scale:g} gives {spec.name} {n} nodes, too few for its {classes} classes "
            f"(need >= {MIN_COMMUNITY * classes}: scale >= {MIN_COMMUNITY * classes / spec.nodes:.2g})")
    if n >= 2**31:
        raise HarnessError(f"{spec.name} at scale {scale:g} has {n} nodes; stand-ins support < 2^31")
    mean = stored / n
    if stored < 1 or mean > GLOBAL_CAP * (n - 1):
        raise HarnessError(f"scale {scale:g} gives {spec.name} {n} nodes and {stored} edges: "
                           f"mean degree {mean:.1f} is not a sparse graph; use a larger scale")

    alpha = 1.0 / (settings.gamma - 1.0)
    beta = settings.body_beta
    max_degree = settings.max_degree * scale ** alpha
    max_degree = min(max(max_degree, 2.0 * mean), GLOBAL_CAP * n)

    keys = rng.stream_keys(seed)
    K = classes
    sizes = np.full(K, n // K, dtype=np.int64)
    sizes[: n % K] += 1
    offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    scramble = rng.hash_np(keys["id_scramble"], np.arange(2 * K + 2, dtype=np.int64)).tolist()
    mult = np.array([_coprime_multiplier(int(s), scramble[2 * c]) for c, s in enumerate(sizes)],
                    dtype=np.int64)
    add = np.array([scramble[2 * c + 1] % int(s) for c, s in enumerate(sizes)], dtype=np.int64)

    per_comm = [rank_boundaries(int(s)) for s in sizes]
    B = max(len(b) - 1 for b in per_comm)
    piece_lo = np.zeros((K, B), dtype=np.int64)
    piece_size = np.zeros((K, B), dtype=np.int64)
    for c, bounds in enumerate(per_comm):
        piece_lo[c, : len(bounds) - 1] = bounds[:-1]
        piece_size[c, : len(bounds) - 1] = np.diff(bounds)

    plan = StandinPlan(
        name=spec.name, scale=float(scale), seed=int(seed), num_nodes=n, stored_edges=stored,
        symmetric=sym, target_pairs=stored // 2 if sym else stored, num_classes=classes,
        feature_dim=dim, feature_dtype=dtype,
        feature_signal=settings.feature_signal if feature_signal is None else float(feature_signal),
        homophily=settings.homophily, gamma=settings.gamma, body_beta=beta,
        max_degree=int(round(max_degree)), id_order=id_order,
        split_sizes=spec.split.counts(n, spec.nodes), random_features=spec.random_features,
        keys=keys, comm_offset=offset, comm_mult=mult, comm_add=add, pieces_per_comm=B,
        piece_lo=piece_lo.ravel(), piece_size=piece_size.ravel())
    # A hub's draws repeat neighbours (mostly other hubs), so its distinct degree falls short of
    # its expected draws: raise the top weight until the expected *distinct* degree hits the max.
    peak = max_degree
    for _ in range(10):
        _set_weights(plan, sizes, peak, mean, alpha, beta)
        plan.draws = draws_for_target(plan)
        top = expected_top_degree(plan)
        plan.expected_max_degree = top
        if abs(top - max_degree) <= 0.02 * max_degree or peak >= GLOBAL_CAP * n:
            break
        peak = min(peak * max_degree / max(top, 1.0), GLOBAL_CAP * n)
    if id_order == "shuffled":
        plan.glob_mult = _coprime_multiplier(n, scramble[2 * K])
        plan.glob_add = scramble[2 * K + 1] % n
        plan.glob_inv = pow(plan.glob_mult, -1, n) if n > 1 else 1
    plan.centroids = class_centroids(keys["centroids"], classes, dim, plan.feature_signal)
    return plan


def _set_weights(plan: StandinPlan, sizes: np.ndarray, peak: float, mean: float, alpha: float,
                 beta: float) -> None:
    """Sampling tables for a profile whose top expected draw count is ``peak``."""
    K, B = len(sizes), plan.pieces_per_comm
    eps = solve_profile(int(sizes[0]), peak / mean, alpha, beta)
    piece_lo = plan.piece_lo.reshape(K, B)
    piece_size = plan.piece_size.reshape(K, B)
    weight = np.zeros((K, B), dtype=np.float64)
    for c in range(K):
        used = piece_size[c] > 0
        weight[c, used] = _piece_mean_weights(piece_lo[c, used], piece_size[c, used], int(sizes[c]),
                                              eps, alpha, beta)
    # Expected draws per node, normalized to the mean degree.
    total = mean * plan.num_nodes
    degree = weight * (total / (weight * piece_size).sum())
    if degree[:, 0].max() < peak and K * peak < 0.5 * total:
        # Small communities cannot reach the peak through the power law alone (eps hit 0):
        # give each community's top node the peak and rescale the rest to keep the mean.
        degree[:, 0] = peak
        rest = (degree[:, 1:] * piece_size[:, 1:]).sum()
        degree[:, 1:] *= (total - K * peak) / rest
    intra_part = np.minimum(plan.homophily * degree, INTRA_CAP * sizes[:, None])
    w_in = intra_part * piece_size
    w_out = (degree - intra_part) * piece_size
    f_in = w_in.sum() / (w_in.sum() + w_out.sum())
    plan.thresholds_in = _thresholds(w_in.ravel())
    plan.thresholds_out = _thresholds(w_out.ravel())
    plan.guide_in = guide_table(plan.thresholds_in)
    plan.guide_out = guide_table(plan.thresholds_out)
    plan.intra_fraction = float(f_in)
    plan.intra_threshold32 = int(round(f_in * 2**32))
    plan.profile_eps = eps


def _thresholds(weights: np.ndarray) -> np.ndarray:
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    if cum[-1] <= 0:
        return np.zeros(len(cum), dtype=np.int64)
    t = np.round(cum / cum[-1] * TOTAL).astype(np.int64)
    t[-1] = TOTAL
    return np.maximum.accumulate(t)


def guide_table(thresholds: np.ndarray) -> np.ndarray:
    """For each value of a draw's top GUIDE_BITS bits, the first piece it can land in, so the
    CPU search starts next to its answer instead of bisecting 10^4-10^5 thresholds."""
    starts = np.arange((1 << GUIDE_BITS) + 1, dtype=np.int64) << (52 - GUIDE_BITS)
    pieces = np.searchsorted(thresholds, starts, side="right") - 1
    return np.clip(pieces, 0, len(thresholds) - 2).astype(np.int64)


def class_centroids(key: int, classes: int, dim: int, signal: float) -> np.ndarray:
    """Class centroids with norm ~``signal`` (noise has unit variance per dimension)."""
    z = rng.normal_np(key, np.arange(classes * dim, dtype=np.int64)).reshape(classes, dim)
    return (z * (signal / math.sqrt(dim))).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# how many draws give the target number of distinct pairs
# ---------------------------------------------------------------------------------------------

def _piece_probabilities(plan: StandinPlan) -> tuple[np.ndarray, ...]:
    """Community 0's pieces: sizes and per-node pick probabilities (global and in-community)."""
    B = plan.pieces_per_comm
    size = plan.piece_size[:B].astype(np.float64)
    mass_in = np.diff(plan.thresholds_in).astype(np.float64) / TOTAL
    mass_out = np.diff(plan.thresholds_out).astype(np.float64) / TOTAL
    keep = size > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        p_in = np.where(keep, mass_in[:B] / size, 0.0)
        p_out = np.where(keep, mass_out[:B] / size, 0.0)
        comm_in = mass_in[:B].sum()
        p_in_local = p_in / comm_in if comm_in > 0 else p_in * 0
    return size[keep], p_in[keep], p_in_local[keep], p_out[keep]


def expected_distinct(plan: StandinPlan, draws: float) -> float:
    """Expected distinct non-loop pairs (unordered if symmetric) after ``draws`` draws."""
    size, p_in, p_in_local, p_out = _piece_probabilities(plan)
    K = plan.num_communities
    f_in = plan.intra_fraction
    f_out = 1.0 - f_in
    outer = np.outer(size, size)
    if plan.symmetric:
        q_intra = f_in * (np.outer(p_in, p_in_local) + np.outer(p_in_local, p_in)) \
            + 2.0 * f_out * np.outer(p_out, p_out)
        pairs = np.triu(outer, 1) + np.diag(size * (size - 1) / 2.0)
        q_inter = 2.0 * f_out * np.outer(p_out, p_out)
        inter_blocks = K * (K - 1) / 2.0
        inter_pairs = outer
    else:
        q_intra = f_in * np.outer(p_in, p_in_local) + f_out * np.outer(p_out, p_out)
        pairs = outer - np.diag(size)
        q_inter = f_out * np.outer(p_out, p_out)
        inter_blocks = K * (K - 1.0)
        inter_pairs = outer
    intra = (pairs * -np.expm1(-draws * q_intra)).sum()
    inter = (inter_pairs * -np.expm1(-draws * q_inter)).sum()
    return K * intra + inter_blocks * inter


def draws_for_target(plan: StandinPlan, target: int | None = None) -> int:
    """Draws whose expected distinct pair count reaches ``target`` (default: the plan's)."""
    target = plan.target_pairs if target is None else target
    lo, hi = float(target), float(target) * 2
    while expected_distinct(plan, hi) < target:
        hi *= 2
        if hi > 1000.0 * target:
            raise HarnessError(f"{plan.name}: cannot place {target} distinct edges among "
                               f"{plan.num_nodes} nodes with this degree profile; lower the scale "
                               f"or the density")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if expected_distinct(plan, mid) < target:
            lo = mid
        else:
            hi = mid
    return int(math.ceil(hi * 1.003)) + 64


def expected_top_degree(plan: StandinPlan) -> float:
    """Expected distinct neighbours of the heaviest node (community 0's top rank) after
    ``plan.draws`` draws."""
    size, p_in, p_in_local, p_out = _piece_probabilities(plan)
    K = plan.num_communities
    f_in, f_out = plan.intra_fraction, 1.0 - plan.intra_fraction
    factor = 2.0 if plan.symmetric else 1.0   # directed: out-neighbours only
    if plan.symmetric:
        q_intra = f_in * (p_in[0] * p_in_local + p_in_local[0] * p_in) + 2.0 * f_out * p_out[0] * p_out
    else:
        q_intra = f_in * p_in[0] * p_in_local + f_out * p_out[0] * p_out
    q_inter = factor * f_out * p_out[0] * p_out
    others = size.copy()
    others[0] -= 1                              # not itself
    intra = (others * -np.expm1(-plan.draws * q_intra)).sum()
    inter = (K - 1) * (size * -np.expm1(-plan.draws * q_inter)).sum()
    return float(intra + inter)


def marginal_yield(plan: StandinPlan, draws: float) -> float:
    """Expected new distinct pairs per extra draw at ``draws`` draws (for top-up rounds)."""
    step = max(1.0, draws * 1e-3)
    return max((expected_distinct(plan, draws + step) - expected_distinct(plan, draws)) / step, 1e-6)
