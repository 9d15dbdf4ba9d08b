"""Random blocks, dense references of the block adjacency, a planted-label graph and a small
uniform neighbor sampler that produces Blocks (targets first, append-unique, dup_count)."""

from __future__ import annotations

import torch

from impls.core.blocks import Block


def random_block(gen: torch.Generator, num_dst: int, num_src: int, max_deg: int, *,
                 self_loops: bool = True, multi_edges: bool = True, with_dup: bool = True,
                 sorted_rows: bool = False) -> Block:
    """Random block: some dst nodes without edges, unsorted rows, optional self loops and
    repeated neighbors (multi-edges)."""
    deg = torch.randint(0, max_deg + 1, (num_dst,), generator=gen)
    deg[0] = 0                                    # always one dst node without edges
    deg[-1] = max_deg
    indptr = torch.zeros(num_dst + 1, dtype=torch.int64)
    indptr[1:] = deg.cumsum(0)
    nnz = int(indptr[-1])
    indices = torch.randint(0, num_src, (nnz,), generator=gen)
    dst = torch.repeat_interleave(torch.arange(num_dst), deg)
    if self_loops and nnz:
        pick = torch.rand(nnz, generator=gen) < 0.08
        indices[pick] = dst[pick]
    if not self_loops:
        loop = indices == dst
        indices[loop] = (indices[loop] + 1) % num_src
    if multi_edges and nnz > 3:
        # repeat a neighbor inside the longest row
        s = int(indptr[-2])
        indices[s + 1] = indices[s]
    if sorted_rows:
        key = dst * num_src + indices
        indices = indices[torch.argsort(key)]
    dup = torch.bincount(indices, minlength=num_src) if with_dup else None
    block = Block(indptr, indices, torch.randperm(num_src, generator=gen) + 1000, num_dst, dup)
    block.validate()
    return block


def adjacency(block: Block, weights: torch.Tensor | None = None, dtype=torch.float32) -> torch.Tensor:
    """Dense [num_dst, num_src] adjacency with edge multiplicities (or summed weights)."""
    a = torch.zeros(block.num_dst, block.num_src, dtype=dtype)
    w = torch.ones(block.num_edges, dtype=dtype) if weights is None else weights.to(dtype)
    a.index_put_((block.edge_dst(), block.indices), w, accumulate=True)
    return a


def with_one_self_loop(a: torch.Tensor) -> torch.Tensor:
    """Sampled self loops replaced by exactly one per dst node."""
    a = a.clone()
    n = a.shape[0]
    a[torch.arange(n), torch.arange(n)] = 1.0
    return a


# --- a planted-label graph and a uniform sampler ---------------------------------------------

def planted_graph(num_nodes: int = 600, num_classes: int = 4, feat_dim: int = 16, avg_deg: int = 10,
                  p_in: float = 0.85, noise: float = 1.5, seed: int = 0):
    """Undirected graph whose edges mostly join nodes of the same class, and features that are
    a weak class signal under heavy noise (a node alone is hard to classify, its neighborhood
    is not).  Returns (indptr, indices, features, labels)."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (num_nodes,), generator=gen)
    by_class = [torch.nonzero(labels == c).view(-1) for c in range(num_classes)]
    m = num_nodes * avg_deg // 2
    src = torch.randint(0, num_nodes, (m,), generator=gen)
    same = torch.rand(m, generator=gen) < p_in
    dst = torch.randint(0, num_nodes, (m,), generator=gen)
    for c in range(num_classes):
        rows = torch.nonzero(same & (labels[src] == c)).view(-1)
        pick = torch.randint(0, by_class[c].numel(), (rows.numel(),), generator=gen)
        dst[rows] = by_class[c][pick]
    keep = src != dst
    s = torch.cat([src[keep], dst[keep]])
    d = torch.cat([dst[keep], src[keep]])
    key = torch.unique(d * num_nodes + s)                 # CSR of in-neighbors, no multi-edges
    d, s = key // num_nodes, key % num_nodes
    indptr = torch.zeros(num_nodes + 1, dtype=torch.int64)
    indptr[1:] = torch.bincount(d, minlength=num_nodes).cumsum(0)
    feats = torch.randn(num_nodes, feat_dim, generator=gen) * noise
    feats[torch.arange(num_nodes), labels] += 1.0
    return indptr, s, feats, labels


def sample_block(indptr: torch.Tensor, indices: torch.Tensor, targets: torch.Tensor, fanout: int,
                 gen: torch.Generator) -> Block:
    """Up to ``fanout`` in-neighbors per target, uniformly without replacement; targets first,
    new neighbors appended in ascending id order; local ids; duplicate counts."""
    num_nodes = indptr.numel() - 1
    start = indptr[targets]
    deg = indptr[targets + 1] - start
    t = targets.numel()
    seg = torch.repeat_interleave(torch.arange(t), deg)
    offs = torch.zeros(t, dtype=torch.int64)
    offs[1:] = deg.cumsum(0)[:-1]
    total = int(deg.sum())
    pos = torch.arange(total) - offs[seg]
    cand = indices[start[seg] + pos]
    order = torch.argsort(seg.to(torch.float64) + torch.rand(total, generator=gen, dtype=torch.float64))
    rank = torch.arange(total) - offs[seg[order]]
    keep = order[rank < fanout]
    nbrs, dst = cand[keep], seg[keep]
    counts = torch.bincount(dst, minlength=t)
    b_indptr = torch.zeros(t + 1, dtype=torch.int64)
    b_indptr[1:] = counts.cumsum(0)
    local = torch.full((num_nodes,), -1, dtype=torch.int64)
    local[targets] = torch.arange(t)
    new = torch.unique(nbrs[local[nbrs] < 0])
    local[new] = torch.arange(t, t + new.numel())
    src_ids = torch.cat([targets, new])
    loc = local[nbrs]
    return Block(b_indptr, loc, src_ids, t, torch.bincount(loc, minlength=src_ids.numel()))


def sample_blocks(indptr, indices, seeds, fanouts, gen) -> list[Block]:
    """Blocks of one mini-batch, outermost hop first; ``fanouts[0]`` is the seeds' hop."""
    blocks = []
    nodes = seeds
    for f in fanouts:
        b = sample_block(indptr, indices, nodes, f, gen)
        blocks.insert(0, b)
        nodes = b.src_ids
    return blocks
