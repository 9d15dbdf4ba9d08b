"""The mini-batch block format every sampler produces and every model layer consumes.

A mini-batch of an L-layer model is L blocks, outermost hop first (``blocks[0]`` feeds
layer 0, ``blocks[-1]`` produces the seeds' outputs). In a block, destination nodes are
the first ``num_dst`` of its source nodes (append-unique puts targets first, WholeGraph
III-C-2), so a layer's output for dst node i sits at row i of the next layer's input.

``indptr`` / ``indices`` are a CSR over destination nodes: the sampled in-neighbors of
dst node i are ``indices[indptr[i]:indptr[i+1]]``, as local source ids in
``[0, num_src)``. ``src_ids`` maps local source ids to global node ids (the ids whose
features are gathered for blocks[0]). ``dup_count[j]`` counts how many sampled edges of
this block point at local source j (WholeGraph's append-unique reports it; backward
passes of gather-style layers use it to size their accumulation).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Block:
    indptr: torch.Tensor          # int64 [num_dst + 1]
    indices: torch.Tensor         # int64 [nnz], local source ids
    src_ids: torch.Tensor         # int64 [num_src], global ids; src_ids[:num_dst] are the dst nodes
    num_dst: int
    dup_count: torch.Tensor | None = None   # int32/int64 [num_src]

    @property
    def num_src(self) -> int:
        return int(self.src_ids.numel())

    @property
    def num_edges(self) -> int:
        return int(self.indices.numel())

    def to(self, device) -> "Block":
        return Block(self.indptr.to(device), self.indices.to(device), self.src_ids.to(device),
                     self.num_dst, None if self.dup_count is None else self.dup_count.to(device))

    def edge_dst(self) -> torch.Tensor:
        """Destination (local) id of every edge, in CSR order."""
        counts = self.indptr[1:] - self.indptr[:-1]
        return torch.repeat_interleave(torch.arange(self.num_dst, device=self.indptr.device), counts)

    def global_edges(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(global src, global dst) of every sampled edge: what the block reconstructs."""
        return self.src_ids[self.indices], self.src_ids[self.edge_dst()]

    def edge_index(self) -> torch.Tensor:
        """PyG-style ``[2, nnz]`` (source row, destination row) in local ids."""
        return torch.stack([self.indices, self.edge_dst()])

    def validate(self) -> None:
        assert self.indptr.numel() == self.num_dst + 1, "indptr length"
        assert int(self.indptr[0]) == 0 and int(self.indptr[-1]) == self.num_edges, "indptr bounds"
        assert self.num_dst <= self.num_src, "dst nodes are a prefix of src nodes"
        if self.num_edges:
            assert int(self.indices.min()) >= 0 and int(self.indices.max()) < self.num_src, "local ids"


EDGE_WEIGHT_ATTR = "edge_weight"     # per-edge weights a sampler attaches (PinSAGE's visit counts)


def set_edge_weight(block, weight: torch.Tensor):
    """Attach per-edge weights (``[nnz]``, CSR edge order) to ``block``; returns the block."""
    if weight.dim() != 1 or weight.numel() != block.num_edges:
        raise ValueError(f"edge_weight must have shape [{block.num_edges}], got {tuple(weight.shape)}")
    setattr(block, EDGE_WEIGHT_ATTR, weight)
    return block


def edge_weight_of(block) -> torch.Tensor | None:
    return getattr(block, EDGE_WEIGHT_ATTR, None)
