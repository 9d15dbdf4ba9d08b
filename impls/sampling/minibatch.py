"""Multi-hop mini-batch sampling: a sampler and an append-unique composed into Blocks.

``sample_blocks(sampler, unique, seeds, fanouts)`` samples hop by hop (WholeGraph III-C:
"multi-layer sub-graph sampling can be done by simply stacking multiple single-layer
sub-graph sampling"): hop h samples ``fanouts[h]`` neighbors of the current targets
(``fanouts[0]`` applies to the seeds, as PyG's ``num_neighbors`` and DGL's fanouts do),
append-unique puts the targets first and relabels the neighbors, and the unique nodes are
the next hop's targets. Returns blocks outermost hop first (``blocks[0]`` feeds layer 0,
``blocks[-1]`` has the seeds as its destination nodes), in the format of impls/core/blocks.py.

A ``weighted`` sampler (random_walk.py: PinSAGE's visit counts) gives every sampled edge a weight;
it is attached to the block as its ``edge_weight`` (impls.models.ops.set_edge_weight).
"""

from __future__ import annotations

import torch

from impls.core.blocks import set_edge_weight

from impls.core.blocks import Block


def sample_blocks(sampler, unique, seeds, fanouts, *, seed: int | None = None, generator=None,
                  check: bool = True) -> list[Block]:
    """Blocks of one mini-batch. ``seeds`` must be distinct. With ``seed``, hop h uses seed
    ``seed * 1_000_003 + h``, so a fixed seed fixes the whole mini-batch."""
    targets = torch.as_tensor(seeds).reshape(-1)
    id_bound = getattr(sampler, "id_bound", None)    # sizes append-unique's table by the graph
    blocks: list[Block] = []
    for hop, fanout in enumerate(fanouts):
        hop_seed = None if seed is None else int(seed) * 1_000_003 + hop
        weights = None
        if getattr(sampler, "weighted", False):
            offsets, neighbors, weights = sampler.sample_weighted(targets, int(fanout), seed=hop_seed,
                                                                  generator=generator, check=check and hop == 0)
        else:
            offsets, neighbors = sampler.sample(targets, int(fanout), seed=hop_seed, generator=generator,
                                                check=check and hop == 0)
        targets = targets.to(neighbors.device, torch.int64)
        unique_ids, local, dup = unique.append_unique(targets, neighbors, check=check and hop == 0,
                                                      id_bound=id_bound)
        block = Block(indptr=offsets, indices=local, src_ids=unique_ids, num_dst=int(targets.numel()),
                      dup_count=dup)
        if weights is not None:
            set_edge_weight(block, weights)
        blocks.append(block)
        targets = unique_ids
    return blocks[::-1]


def sampled_edges(blocks: list[Block]) -> int:
    return sum(b.num_edges for b in blocks)
