"""GNN layer ops over a sampled :class:`~impls.core.blocks.Block` (WholeGraph III-C-4).

Everything here is plain torch: no Python loop over nodes or edges, so the same code is fast
on GPUs (one kernel per op) and runs on CPU in CI.

The ops
-------
``gspmm(g, x, w)``
    g-SpMM over the block CSR: ``out[i] = sum_{e=(j->i)} w[e] * x[j]`` for every dst node i.
    ``x`` is ``[num_src, F]`` or ``[num_src, H, C]`` (per-head features); ``w`` is ``None``
    (all ones), ``[nnz]`` or ``[nnz, H]`` (one weight per edge and head, GAT), in the block's
    CSR edge order.  Differentiable in ``x`` and ``w``.
``gsddmm_dot(g, a, b)`` (the backward of ``gspmm`` in ``w``)
    g-SDDMM: ``out[e] = <a[dst_e], b[src_e]>`` (per head for 3-D inputs).
``edge_softmax(g, scores, self_scores)``
    softmax of edge scores over the in-edges of every dst node, optionally together with one
    extra (self-loop) score per dst node that has no edge in the CSR.

Forward and backward implementations (``BlockGraph(block, impl=..., backward=...)``)
------------------------------------------------------------------------------------
``impl="sparse"``
    the forward is one ``torch.sparse`` CSR x dense product (cuSPARSE SpMM on GPUs, a
    threaded CSR kernel on CPU): no ``[nnz, F]`` message tensor is built.  torch's CSR format
    requires the columns of a row to be sorted, which a sampler need not give, so the block is
    put in that order once (one argsort, skipped on CPU when the rows are already sorted).
``impl="segment"``
    gathers the source rows of every edge and reduces them per destination with
    ``torch.segment_reduce`` over the CSR offsets (no atomics, deterministic); the message
    tensor is built in row-aligned chunks of about ``chunk_elems`` elements, so memory stays
    bounded on the 15M-edge outer blocks of a [30,30,30] sample.
``impl="auto"`` (default)
    ``sparse`` everywhere: on CPU about 15x faster than gather + reduce; on an H200
    (experiments/kit/layers.py, GraphSAGE outer block 460K x 2M, 13.8M edges, width 100) 12.1 ms
    against 27.7-33.3 ms for the segment variants, and the products epoch of Table V 0.96 s against 1.21 s.

The backward in ``x`` is a g-SpMM over the *transposed* CSR (messages flow from the dst
nodes back to the source nodes that fed them).  Three ways:

``backward="atomic"``
    scatter-add over the forward CSR (``index_add_``; atomics on GPUs): WholeGraph's way of
    avoiding the transpose.
``backward="dup_split"``
    WholeGraph's duplicate-count optimization (paper III-C-4): a source that was sampled once
    (``dup_count == 1``) receives exactly one message, so its row is written with a plain store
    (``index_copy_``); only sources sampled several times go through the atomic add.  The split
    of the edges is computed once per block (one host sync for its size).
``backward="transpose"``
    builds the transposed CSR, whose row lengths *are* the duplicate counts
    (``indptr_T = cumsum(dup_count)``, no histogram pass) plus one stable argsort of the
    edges by source, and runs a g-SpMM on it (sparse product or segment reduction): no
    atomics, deterministic.
``backward="auto"``: ``transpose`` with ``impl="sparse"``, ``atomic`` with ``impl="segment"``.

The backward in per-edge weights is a g-SDDMM (``BlockGraph(..., sddmm=...)``):
``"sampled"`` runs ``torch.sparse.sampled_addmm`` on the sorted CSR, per head (cuSPARSE SDDMM
on GPUs, which reads the dense rows in place); ``"gather"`` builds the two gathered
``[nnz, H, C]`` operands in chunks and reduces their product (any dtype); ``"auto"`` is
``sampled`` with ``impl="sparse"`` for float32/float64 and ``gather`` otherwise.  On CPU the
sampled SDDMM alone is 2-4x faster than the gathered one (600K edges, 4 heads of 64); on
4xH200 it takes the products GAT epoch of Table V from 7.35 s (gathered) to 5.79 s, and the
hidden-layer bench step (16K x 480K block, fanout 30) from 12.0 to 10.9 ms.

Where ``Block.dup_count`` is missing it is computed with one ``bincount`` over the edges.

Edge weights on a block
-----------------------
A sampler that produces edge weights (PinSAGE's random-walk visit counts) attaches them to
the block as the attribute ``edge_weight`` (float tensor ``[nnz]`` in CSR edge order) with
:func:`impls.core.blocks.set_edge_weight`; :func:`impls.core.blocks.edge_weight_of` reads it (``None`` when absent).  The Block
dataclass is not changed: the attribute is set on the instance and ``Block.to()`` does not
carry it (call ``set_edge_weight(block.to(dev), w.to(dev))``).
"""

from __future__ import annotations

import warnings
from functools import cached_property

import torch

IMPLS = ("auto", "sparse", "segment")
BACKWARDS = ("auto", "atomic", "dup_split", "transpose")
SDDMMS = ("auto", "sampled", "gather")
DEFAULT_CHUNK_ELEMS = 1 << 27     # 512 MiB of float32 messages at most per chunk
_SAMPLED_DTYPES = (torch.float32, torch.float64)     # the dtypes cuSPARSE SDDMM takes


def _csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")
        warnings.filterwarnings("ignore", message=".*[Ss]parse invariant checks.*")
        return torch.sparse_csr_tensor(crow, col, values, size=size, check_invariants=False)


def _row_chunks(indptr: torch.Tensor, nnz: int, width: int, chunk_elems: int) -> list[tuple[int, int, int, int]]:
    """Row ranges ``(r0, r1, e0, e1)`` whose messages hold about ``chunk_elems`` elements.

    One chunk (and no host sync) when everything fits. Otherwise the cut rows are found on the
    device (``searchsorted`` of every multiple of the edge budget in the CSR offsets) and only
    the few cuts reach the host: one small sync instead of copying a 2M-entry offset array into
    a Python list every layer, which left the GPU idle. A chunk holds at most the budget plus
    one row's edges; a row longer than the budget is a chunk of its own.
    """
    rows = indptr.numel() - 1
    if nnz * max(width, 1) <= chunk_elems or rows <= 1:
        return [(0, rows, 0, nnz)]
    per_chunk = max(1, chunk_elems // max(width, 1))
    targets = torch.arange(per_chunk, nnz, per_chunk, device=indptr.device, dtype=indptr.dtype)
    cut = torch.searchsorted(indptr, targets, right=True) - 1
    cut = torch.cat([cut.new_zeros(1), cut.clamp_(0, rows), cut.new_full((1,), rows)])
    row_cuts, edge_cuts = torch.stack([cut, indptr.index_select(0, cut)]).tolist()
    chunks = []
    for i in range(len(row_cuts) - 1):
        r0, r1 = row_cuts[i], row_cuts[i + 1]
        if r1 > r0:
            chunks.append((r0, r1, edge_cuts[i], edge_cuts[i + 1]))
    return chunks


def _scale(msg: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    """``msg`` ([E, F] or [E, H, C]) times per-edge ``w`` ([E] or [E, H])."""
    if w is None:
        return msg
    if msg.dim() == 2:
        if w.dim() != 1:
            raise ValueError("per-head edge weights need [N, H, C] features")
        return msg * w.unsqueeze(-1)
    return msg * (w.unsqueeze(-1) if w.dim() == 2 else w.view(-1, 1, 1))


class BlockGraph:
    """One block plus the derived index tensors the ops need, each computed once, lazily.

    Build one per block per training step (the model does); layers and the autograd
    functions share it, so e.g. the transposed CSR is built at most once per block.
    """

    def __init__(self, block, impl: str = "auto", backward: str = "auto",
                 chunk_elems: int = DEFAULT_CHUNK_ELEMS, sddmm: str = "auto"):
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        if backward not in BACKWARDS:
            raise ValueError(f"backward must be one of {BACKWARDS}, got {backward!r}")
        if sddmm not in SDDMMS:
            raise ValueError(f"sddmm must be one of {SDDMMS}, got {sddmm!r}")
        self.block = block
        self.indptr = block.indptr
        self.indices = block.indices
        self.num_dst = int(block.num_dst)
        self.num_src = int(block.num_src)
        self.num_edges = int(block.indices.numel())
        self.device = block.indices.device
        if self.indptr.numel() != self.num_dst + 1:
            raise ValueError(f"block indptr has {self.indptr.numel()} entries for {self.num_dst} dst nodes")
        if impl == "auto":
            impl = "sparse"
        if backward == "auto":
            backward = "transpose" if impl == "sparse" else "atomic"
        self.impl = impl
        self.backward = backward
        self.sddmm = ("sampled" if impl == "sparse" else "gather") if sddmm == "auto" else sddmm
        self.chunk_elems = int(chunk_elems)
        self._ones: dict[torch.dtype, torch.Tensor] = {}

    # --- structure ----------------------------------------------------------------------

    @cached_property
    def in_degree(self) -> torch.Tensor:
        """Sampled in-degree of every dst node (row lengths), int64 ``[num_dst]``."""
        return self.indptr[1:] - self.indptr[:-1]

    @cached_property
    def edge_dst(self) -> torch.Tensor:
        """Local dst id of every edge in CSR order (no host sync: the size is known)."""
        return torch.repeat_interleave(
            torch.arange(self.num_dst, device=self.device), self.in_degree,
            output_size=self.num_edges)

    @cached_property
    def dup_count(self) -> torch.Tensor:
        """Edges of this block leaving each local source: the block's ``dup_count`` (the
        append-unique op's output) or one bincount when the sampler gave none."""
        dup = self.block.dup_count
        if dup is not None:
            if dup.numel() != self.num_src:
                raise ValueError(f"dup_count has {dup.numel()} entries for {self.num_src} sources")
            return dup.to(device=self.device, dtype=torch.int64)
        return torch.bincount(self.indices, minlength=self.num_src)

    @cached_property
    def self_loop(self) -> torch.Tensor:
        """bool ``[nnz]``: sampled edges i -> i (a node that is its own neighbor)."""
        return self.indices == self.edge_dst

    @cached_property
    def self_loop_count(self) -> torch.Tensor:
        """Sampled self-loop edges per dst node, int64 ``[num_dst]``."""
        counts = torch.zeros(self.num_dst, dtype=torch.int64, device=self.device)
        return counts.index_add_(0, self.edge_dst, self.self_loop.to(torch.int64))

    # --- sorted forward CSR (impl="sparse") -----------------------------------------------

    @cached_property
    def _fwd_perm(self) -> torch.Tensor | None:
        """Edge permutation that sorts columns within rows, or None when already sorted."""
        if self.num_edges == 0:
            return None
        if self.device.type == "cpu":
            ind = self.indices
            rising = ind[1:] >= ind[:-1]
            starts = torch.zeros(self.num_edges, dtype=torch.bool)
            starts[self.indptr[1:-1][self.indptr[1:-1] < self.num_edges]] = True
            if bool((rising | starts[1:]).all()):
                return None
        key = self.edge_dst * max(self.num_src, 1) + self.indices
        return torch.argsort(key)

    @cached_property
    def _fwd_cols(self) -> torch.Tensor:
        perm = self._fwd_perm
        return self.indices if perm is None else self.indices[perm]

    # --- transposed CSR (backward="transpose") ---------------------------------------------

    @cached_property
    def _t_perm(self) -> torch.Tensor:
        """Edges ordered by source (stable, so dst ids stay sorted within each source row)."""
        return torch.argsort(self.indices, stable=True)

    @cached_property
    def _t_indptr(self) -> torch.Tensor:
        """Row offsets of the transposed CSR: the cumulative duplicate counts."""
        ptr = torch.zeros(self.num_src + 1, dtype=torch.int64, device=self.device)
        torch.cumsum(self.dup_count, 0, out=ptr[1:])
        return ptr

    @cached_property
    def _t_cols(self) -> torch.Tensor:
        return self.edge_dst[self._t_perm]

    # --- WholeGraph's duplicate-count split (backward="dup_split") --------------------------

    @cached_property
    def _dup_split(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(edges whose source was sampled once, all other edges); one host sync."""
        once = self.dup_count.index_select(0, self.indices) == 1
        return once.nonzero().view(-1), (~once).nonzero().view(-1)

    # --- helpers ---------------------------------------------------------------------------

    def ones(self, dtype: torch.dtype) -> torch.Tensor:
        if dtype not in self._ones:
            self._ones[dtype] = torch.ones(self.num_edges, dtype=dtype, device=self.device)
        return self._ones[dtype]

    def segment_sum(self, values: torch.Tensor) -> torch.Tensor:
        """Sum of per-edge ``values`` ([nnz, ...]) over the in-edges of every dst node."""
        return torch.segment_reduce(values, "sum", lengths=self.in_degree, axis=0, unsafe=True)

    def segment_max(self, values: torch.Tensor) -> torch.Tensor:
        """Max of per-edge values per dst node; -inf for a dst node without edges."""
        out = torch.full((self.num_dst,) + tuple(values.shape[1:]), float("-inf"),
                         dtype=values.dtype, device=values.device)
        index = self.edge_dst.view((-1,) + (1,) * (values.dim() - 1)).expand_as(values)
        return out.scatter_reduce_(0, index, values, "amax", include_self=True)

    # --- g-SpMM kernels (no autograd) -------------------------------------------------------

    def spmm_forward(self, x: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
        out_shape = (self.num_dst,) + tuple(x.shape[1:])
        if self.num_edges == 0:
            return x.new_zeros(out_shape)
        if self.impl == "sparse":
            return self._sparse_mm(self.indptr, self._fwd_cols, self._fwd_perm, w, x,
                                   (self.num_dst, self.num_src))
        return self._segment_mm(self.indptr, self.indices, None, w, x,
                                self.num_dst)

    def spmm_backward(self, grad: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
        """``A^T @ grad``: the gradient of g-SpMM in its source features."""
        out_shape = (self.num_src,) + tuple(grad.shape[1:])
        if self.num_edges == 0:
            return grad.new_zeros(out_shape)
        grad = grad.contiguous()
        if self.backward == "transpose":
            if self.impl == "sparse":
                return self._sparse_mm(self._t_indptr, self._t_cols, self._t_perm, w, grad,
                                       (self.num_src, self.num_dst))
            return self._segment_mm(self._t_indptr, self._t_cols,
                                    self._t_perm, w, grad, self.num_src)
        out = grad.new_zeros(out_shape)
        if self.backward == "dup_split":
            once, many = self._dup_split
            for edges, scatter in ((once, "copy"), (many, "add")):
                self._scatter_edges(out, grad, w, edges, scatter)
            return out
        self._scatter_edges(out, grad, w, None, "add")
        return out

    def _sparse_mm(self, crow, cols, perm, w, x, size) -> torch.Tensor:
        """CSR (values = w permuted into CSR order) times dense x; per head for [E, H] w."""
        if w is not None and w.dim() == 2:                       # one sparse matrix per head
            outs = []
            for h in range(w.shape[1]):
                wh = w[:, h] if perm is None else w[:, h].index_select(0, perm)
                a = _csr(crow, cols, wh.contiguous(), size)
                outs.append(torch.sparse.mm(a, x[:, h].contiguous()))
            return torch.stack(outs, dim=1)
        vals = self.ones(x.dtype) if w is None else (w if perm is None else w.index_select(0, perm))
        a = _csr(crow, cols, vals.contiguous(), size)
        flat = x.reshape(x.shape[0], -1)
        return torch.sparse.mm(a, flat).view((size[0],) + tuple(x.shape[1:]))

    def _segment_mm(self, ptr, cols, perm, w, x, rows) -> torch.Tensor:
        """Gather ``x[cols]``, weight, reduce per row over CSR ``ptr``; row-aligned chunks."""
        width = x[0].numel() if x.shape[0] else 1
        chunks = _row_chunks(ptr, self.num_edges, width, self.chunk_elems)
        lengths = ptr[1:] - ptr[:-1]
        outs = []
        for r0, r1, e0, e1 in chunks:
            ids = cols[e0:e1]
            msg = x.index_select(0, ids)
            if w is not None:
                ew = w[e0:e1] if perm is None else w.index_select(0, perm[e0:e1])
                msg = _scale(msg, ew)
            outs.append(torch.segment_reduce(msg, "sum", lengths=lengths[r0:r1], axis=0,
                                             unsafe=True))
        return outs[0] if len(outs) == 1 else torch.cat(outs, 0)

    def _scatter_edges(self, out, grad, w, edges, how) -> None:
        """out[src_e] (+)= w_e * grad[dst_e] over ``edges`` (all when None), in edge chunks."""
        n = self.num_edges if edges is None else int(edges.numel())
        if n == 0:
            return
        width = grad[0].numel() if grad.shape[0] else 1
        step = max(1, self.chunk_elems // max(width, 1))
        for e0 in range(0, n, step):
            e1 = min(n, e0 + step)
            if edges is None:
                src, dst = self.indices[e0:e1], self.edge_dst[e0:e1]
                ew = None if w is None else w[e0:e1]
            else:
                sel = edges[e0:e1]
                src, dst = self.indices.index_select(0, sel), self.edge_dst.index_select(0, sel)
                ew = None if w is None else w.index_select(0, sel)
            msg = _scale(grad.index_select(0, dst), ew)
            if how == "copy":
                out.index_copy_(0, src, msg)
            else:
                out.index_add_(0, src, msg)

    def sddmm_dot(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """g-SDDMM: ``<a[dst_e], b[src_e]>`` for every edge (per head for [N, H, C])."""
        out_shape = (self.num_edges,) + tuple(a.shape[1:-1])
        if self.num_edges == 0:
            return a.new_empty(out_shape)
        if self.sddmm == "sampled" and a.dtype in _SAMPLED_DTYPES and b.dtype == a.dtype:
            return self._sampled_dot(a, b).view(out_shape)
        out = a.new_empty(out_shape)
        width = a[0].numel() if a.shape[0] else 1
        step = max(1, self.chunk_elems // max(width, 1))
        for e0 in range(0, self.num_edges, step):
            e1 = min(self.num_edges, e0 + step)
            ad = a.index_select(0, self.edge_dst[e0:e1])
            bs = b.index_select(0, self.indices[e0:e1])
            out[e0:e1] = (ad * bs).sum(-1)
        return out

    def _sampled_dot(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``A (.) (a @ b^T)`` per head with one sampled dense-dense product (cuSPARSE SDDMM
        on GPUs) on the sorted CSR: reads each row of ``a`` and ``b`` from the dense operands
        instead of building two ``[nnz, H, C]`` gathered copies. Returns ``[nnz, heads]`` in
        the block's edge order."""
        a3 = a.reshape(a.shape[0], -1, a.shape[-1])
        b3 = b.reshape(b.shape[0], -1, b.shape[-1])
        pattern = _csr(self.indptr, self._fwd_cols, self.ones(a.dtype), (self.num_dst, self.num_src))
        heads = []
        for h in range(a3.shape[1]):
            prod = torch.sparse.sampled_addmm(pattern, a3[:, h], b3[:, h].transpose(0, 1), beta=0.0)
            heads.append(prod.values())
        out = torch.stack(heads, dim=1)
        perm = self._fwd_perm
        return out if perm is None else torch.empty_like(out).index_copy_(0, perm, out)


class _GSpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, graph: BlockGraph, x: torch.Tensor, w: torch.Tensor | None):
        ctx.graph = graph
        ctx.w_shape = None if w is None else w.shape
        need_w = w is not None and ctx.needs_input_grad[2]
        ctx.save_for_backward(x if need_w else None, w)
        return graph.spmm_forward(x, w)

    @staticmethod
    def backward(ctx, grad_out):
        x, w = ctx.saved_tensors
        graph: BlockGraph = ctx.graph
        gx = gw = None
        if ctx.needs_input_grad[1]:
            gx = graph.spmm_backward(grad_out, w)
        if w is not None and ctx.needs_input_grad[2]:
            g = grad_out
            if w.dim() == 1 and g.dim() == 3:            # one weight shared by all heads
                g, x = g.reshape(g.shape[0], -1), x.reshape(x.shape[0], -1)
            gw = graph.sddmm_dot(g.contiguous(), x)
        return None, gx, gw


def gspmm(graph: BlockGraph, x: torch.Tensor, w: torch.Tensor | None = None) -> torch.Tensor:
    """g-SpMM over the block: ``out[i] = sum_{e=(j->i)} w[e] * x[j]`` (see module doc)."""
    if x.shape[0] != graph.num_src:
        raise ValueError(f"features have {x.shape[0]} rows, the block has {graph.num_src} sources")
    if w is not None and w.shape[0] != graph.num_edges:
        raise ValueError(f"edge weights have {w.shape[0]} rows, the block has {graph.num_edges} edges")
    return _GSpMM.apply(graph, x, w)


def gsddmm_dot(graph: BlockGraph, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """g-SDDMM ``<a[dst_e], b[src_e]>`` per edge; differentiable via gather (small inputs)."""
    if a.requires_grad or b.requires_grad:
        return (a.index_select(0, graph.edge_dst) * b.index_select(0, graph.indices)).sum(-1)
    return graph.sddmm_dot(a, b)


def edge_softmax(graph: BlockGraph, scores: torch.Tensor, self_scores: torch.Tensor | None = None,
                 ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Softmax of per-edge ``scores`` ([nnz] or [nnz, H]) over the in-edges of each dst node.

    ``self_scores`` ([num_dst] or [num_dst, H]) adds one score per dst node that is not an
    edge of the CSR (GAT's self loop); -inf scores get weight 0.  Returns (edge weights,
    self weights).  The max shift is detached: softmax does not depend on it.
    """
    with torch.no_grad():
        peak = graph.segment_max(scores)
        if self_scores is not None:
            peak = torch.maximum(peak, self_scores)
        peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    e = torch.exp(scores - peak.index_select(0, graph.edge_dst))
    denom = graph.segment_sum(e)
    e_self = None
    if self_scores is not None:
        e_self = torch.exp(self_scores - peak)
        denom = denom + e_self
    denom = torch.where(denom > 0, denom, torch.ones_like(denom))
    alpha = e / denom.index_select(0, graph.edge_dst)
    return alpha, (None if e_self is None else e_self / denom)


def as_graph(block_or_graph, **options) -> BlockGraph:
    return block_or_graph if isinstance(block_or_graph, BlockGraph) else BlockGraph(block_or_graph, **options)
