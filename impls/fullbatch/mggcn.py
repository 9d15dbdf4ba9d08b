"""MG-GCN: full-batch GCN training over the ranks of one node (Balin, Sancak, Catalyurek).

Every rank holds one row block of F = Â^T and of B = Â (cut into P column tiles), of X, and of
every dense intermediate; the weights are replicated.  Each SpMM runs in stages (Sec. 4.1, Fig. 3):
every rank i accumulates ``C^i += A^{ij} H^j`` over the blocks H^j of every rank j, its own first
while the others arrive.  How the blocks move (the paper's broadcasts, or copies out of the peers'
memory), in which order and on which streams is staged.py's job; this module drives the layers.

Forward and backward are written out by hand (Eqs. 5-11) because the staged broadcast must run
in both passes and every intermediate must land in the planned buffers (buffers.py).  The order
of GeMM and SpMM follows the layer widths (Sec. 4.4, model.layer_order); the first layer never
forms dL/dX, so its backward SpMM is skipped whenever that SpMM only feeds dL/dX, i.e. when the
layer aggregates first (exact).  When the first layer multiplies first, its weight gradient
X^T (Â G) needs that SpMM; ``first_layer_backward="identity"`` drops it the way MG-GCN's code
does (replacing Â by I in that product; not the model's gradient), the default keeps it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from harness.timing import DeviceClock

from .buffers import FLOAT_BYTES, Arena, BufferPlan
from .model import GEMM_FIRST, ModelConfig, init_weights, orders
from .problem import RankShare
from .profiling import OpProfiler, StageTimeline
from .staged import TRANSPORTS, BroadcastTransport, InlineLanes, PeerCopyTransport, StagedSpmm, StreamLanes

FIRST_LAYER_BACKWARD = ("exact", "identity")


def csr_to_torch(tile, device):
    """A host CSR tile as a torch sparse CSR tensor (int32 indices: cuSPARSE's fast path)."""
    import torch

    index_dtype = torch.int32 if max(tile.shape[1], tile.nnz) < 2**31 else torch.int64
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Sparse CSR tensor support is in beta.*")
        return torch.sparse_csr_tensor(
            torch.from_numpy(tile.indptr).to(device=device, dtype=index_dtype),
            torch.from_numpy(tile.indices).to(device=device, dtype=index_dtype),
            torch.from_numpy(tile.data.astype("float32", copy=False)).to(device),
            size=tile.shape, device=device, check_invariants=False)


def tile_bytes(tile) -> int:
    index_bytes = 4 if max(tile.shape[1], tile.nnz) < 2**31 else 8
    return (tile.shape[0] + 1) * index_bytes + tile.nnz * (index_bytes + FLOAT_BYTES)


@dataclass
class MemoryReport:
    buffer_count: int
    planned_buffer_bytes: int      # the L+3 buffers (reuse) or 0 (fresh)
    engine_peak_bytes: int         # dense intermediates held at the epoch's peak (counted, not measured)
    static_bytes: int              # tiles of F and B, X, labels, W, dW, Adam state
    loss_workspace_bytes: int      # transient tensors of the loss layer (train rows x classes)


class MGGCN:
    """One rank's MG-GCN trainer. Build on every rank of an initialized process group."""

    def __init__(self, share: RankShare, model: ModelConfig, *, device="cpu", seed: int = 0,
                 overlap: bool = True, reuse_buffers: bool = True, first_layer_backward: str = "exact",
                 transport: str | None = None, local_first: bool = True, profile_ops: bool = False,
                 record_timeline: bool = False, streams=None):
        """``transport``: how the blocks move (staged.TRANSPORTS; default ``peer`` where the
        buffers are shared, ``broadcast`` with fresh allocations); ``local_first``: multiply the
        local block while the first remote ones arrive (False: the paper's stage order, broadcast
        only); ``streams``: the module providing CUDA streams and events (tests: fake streams)."""
        import torch

        if first_layer_backward not in FIRST_LAYER_BACKWARD:
            raise ValueError(f"first_layer_backward must be one of {FIRST_LAYER_BACKWARD}")
        transport = transport or ("peer" if reuse_buffers else "broadcast")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}")
        if transport == "peer" and not reuse_buffers:
            raise ValueError("peer copies read the peers' shared buffers: fresh allocations per "
                             "intermediate need transport='broadcast'")
        self.torch = torch
        self.device = torch.device(device)
        self.rank, self.world = share.rank, share.world
        self._check_group()
        self.share = share
        self.model = model
        self.dims = model.dims(share.features.shape[1], share.num_classes)
        self.orders = orders(self.dims)
        self.layers = len(self.dims) - 1
        self.first_layer_backward = first_layer_backward
        self.part_rows = share.part_rows
        self.rows = share.rows
        self.overlap = overlap and self.world > 1
        self.transport_name = transport if self.world > 1 else "none"

        self.forward_tiles = [csr_to_torch(t, self.device) for t in share.forward_tiles]
        self.backward_tiles = [csr_to_torch(t, self.device) for t in share.backward_tiles]
        self.tile_nnz = [int(t.nnz) for t in share.forward_tiles]
        self.train_rows = torch.from_numpy(share.train_rows).to(self.device)
        self.train_labels = torch.from_numpy(share.labels[share.train_rows]).to(self.device)
        self.num_train_total = max(1, share.num_train_total)

        self.weights = init_weights(self.dims, seed, self.device)
        sizes = [w.numel() for w in self.weights]
        self.grad_flat = torch.zeros(sum(sizes), dtype=torch.float32, device=self.device)
        offsets = [0]
        for size in sizes:
            offsets.append(offsets[-1] + size)
        self.grads = [self.grad_flat[a:b].view_as(w) for a, b, w in zip(offsets, offsets[1:], self.weights)]
        for w, g in zip(self.weights, self.grads):
            w.grad = g   # the optimizer reads the all-reduced gradient in place
        self.optimizer = torch.optim.Adam(self.weights, lr=model.lr)

        on_streams = self.overlap and (self.device.type == "cuda" or streams is not None)
        shared = self.world > 1 and transport == "peer"
        if shared:
            self.transport = PeerCopyTransport(self.rank, self.world, self.part_rows, self.device)
        else:
            # gloo's asynchronous broadcast stands in for the communication stream on CPU ranks
            self.transport = BroadcastTransport(asynchronous=self.overlap and not on_streams)
        # peer copies find a block at the offset the local rows have: the same layout on every rank
        rows_max = max(self.part_rows)
        self.plan = BufferPlan(tuple(self.dims), rows_max if shared else self.rows, rows_max, self.world)
        self.arena = Arena(self.plan, self.device, reuse=reuse_buffers,
                           allocate=(lambda n: self.transport.allocate(n, self.device)) if reuse_buffers else None)
        features = torch.from_numpy(share.features)
        flat_x = self.transport.allocate(max((rows_max if shared else self.rows) * self.dims[0], 1), self.device)
        self.X = flat_x[:features.numel()].view(self.rows, self.dims[0])
        self.X.copy_(features)
        self.lanes = StreamLanes(self.device, streams) if on_streams else InlineLanes()
        self.comm_stream = self.lanes.comm if isinstance(self.lanes, StreamLanes) else None
        self.clock = DeviceClock(self.device)
        self.ops = OpProfiler(self.clock, profile_ops)
        self.timeline = StageTimeline(self.clock, record_timeline)
        self.stages = StagedSpmm(rank=self.rank, world=self.world, part_rows=self.part_rows,
                                 transport=self.transport, lanes=self.lanes, overlap=self.overlap,
                                 local_first=local_first, arena=self.arena, timeline=self.timeline)
        self.spmm_log: list[str] = []      # which SpMMs the last epoch ran ("fwd0", "bwd2", ...)
        self._saved_out: list = [None] * self.layers   # H' of each layer (input of the next)
        self._saved_aggregate: list = [None] * self.layers   # AH of SpMM-first layers
        self._loss_sum = None
        self._spmm_widths: dict[str, set] = {"forward": set(), "backward": set()}

    def _check_group(self) -> None:
        import torch.distributed as dist

        if self.world > 1:
            if not (dist.is_available() and dist.is_initialized()):
                raise RuntimeError("MG-GCN over several ranks needs an initialized process group")
            if dist.get_world_size() != self.world or dist.get_rank() != self.rank:
                raise RuntimeError(f"share is for rank {self.rank}/{self.world}, process group is "
                                   f"rank {dist.get_rank()}/{dist.get_world_size()}")

    # --- one epoch -----------------------------------------------------------------------------
    def train_epoch(self) -> None:
        """Forward, softmax cross-entropy, backward, gradient all-reduce, Adam step."""
        self.spmm_log.clear()
        self.timeline.start()
        logits = self.forward()
        grad = self.loss_and_gradient(logits)
        self.backward(grad)
        self.reduce_gradients()
        with self.ops.op("adam"):
            self.optimizer.step()
        self.arena.end_epoch()

    def compute_gradients(self):
        """Forward, loss and backward without the update; returns (loss, logits, dW) copies (tests)."""
        self.spmm_log.clear()
        logits = self.forward()
        kept = logits.detach().clone()     # the loss gradient overwrites the logits buffer
        grad = self.loss_and_gradient(logits)
        self.backward(grad)
        self.reduce_gradients()
        result = (self.loss_value(), kept, [g.detach().clone() for g in self.grads])
        self.arena.end_epoch()
        return result

    def loss_value(self) -> float:
        """The mean training loss of the last forward pass, over all ranks."""
        import torch.distributed as dist

        total = self._loss_sum.detach().clone().double()
        if self.world > 1:
            dist.all_reduce(total)
        return float(total) / self.num_train_total

    # --- forward (Eqs. 5-7) ---------------------------------------------------------------------
    def forward(self):
        torch = self.torch
        h = self.X
        for l in range(self.layers):
            d_in, d_out = self.dims[l], self.dims[l + 1]
            if self.orders[l] == GEMM_FIRST:
                hw = self.arena.tensor("HW", l, self.rows, d_out)
                with self.ops.op("gemm"):
                    torch.mm(h, self.weights[l], out=hw)
                ahw = self.arena.tensor("AHW", l, self.rows, d_out)
                self.staged_spmm(self.forward_tiles, hw, ahw, f"fwd{l}")
            else:
                ah = self.arena.tensor("AH", l, self.rows, d_in)
                self.staged_spmm(self.forward_tiles, h, ah, f"fwd{l}")
                self._saved_aggregate[l] = ah
                ahw = self.arena.tensor("AHW", l, self.rows, d_out)
                with self.ops.op("gemm"):
                    torch.mm(ah, self.weights[l], out=ahw)
            if l < self.layers - 1:
                h = self.arena.tensor("H", l, self.rows, d_out)   # = ahw's buffer when reusing
                with self.ops.op("activation"):
                    torch.clamp_min(ahw, 0.0, out=h)
            else:
                h = ahw
            self._saved_out[l] = h
        return h

    # --- loss -----------------------------------------------------------------------------------
    def loss_and_gradient(self, logits):
        """Softmax cross-entropy over the training rows (mean over all ranks' training vertices).

        Returns dL/dlogits, written over the logits buffer when buffers are reused.
        """
        torch = self.torch
        with self.ops.op("loss"):
            picked_logits = logits.index_select(0, self.train_rows)
            log_norm = torch.logsumexp(picked_logits, dim=1, keepdim=True)
            target = self.train_labels.unsqueeze(1)
            self._loss_sum = (log_norm - picked_logits.gather(1, target)).sum()
            # d(mean CE)/dz = (softmax(z) - onehot(y)) / N_train
            probs = picked_logits.sub_(log_norm).exp_()
            probs.scatter_add_(1, target, torch.full_like(target, -1.0, dtype=probs.dtype))
            probs.mul_(1.0 / self.num_train_total)
            grad = self.arena.tensor("logits_G", self.layers - 1, self.rows, self.dims[-1])
            grad.zero_()
            grad.index_copy_(0, self.train_rows, probs)
        return grad

    # --- backward (Eqs. 8-11) -------------------------------------------------------------------
    def backward(self, grad) -> None:
        torch = self.torch
        for l in reversed(range(self.layers)):
            d_in, d_out = self.dims[l], self.dims[l + 1]
            h_in = self.X if l == 0 else self._saved_out[l - 1]
            if l < self.layers - 1:
                # Eq. 8: AHW_G = H'_G * relu'(AHW); relu' read from H' itself (H' > 0 iff AHW > 0)
                ahw_grad = self.arena.tensor("AHW_G", l, self.rows, d_out)
                with self.ops.op("activation"):
                    relu_backward(grad, self._saved_out[l], ahw_grad)
                grad = ahw_grad
            if self.orders[l] == GEMM_FIRST:
                if l == 0 and self.first_layer_backward == "identity":
                    hw_grad = grad      # MG-GCN's code: Â replaced by I here (not the exact gradient)
                else:
                    hw_grad = self.arena.tensor("HW_G", l, self.rows, d_out)
                    self.staged_spmm(self.backward_tiles, grad, hw_grad, f"bwd{l}")   # Eq. 9
                with self.ops.op("gemm"):
                    torch.mm(h_in.t(), hw_grad, out=self.grads[l])                   # Eq. 10
                    if l > 0:
                        h_grad = self.arena.tensor("H_G", l, self.rows, d_in)
                        torch.mm(hw_grad, self.weights[l].t(), out=h_grad)          # Eq. 11
                        grad = h_grad
            else:
                # AHW = (F H) W: dW = (F H)^T G; dH = B (G W^T).  The first layer needs no dH,
                # so its SpMM is skipped (Sec. 4.4).
                with self.ops.op("gemm"):
                    torch.mm(self._saved_aggregate[l].t(), grad, out=self.grads[l])
                    if l > 0:
                        # after dW: in the last layer G_AH takes over the buffer AH was in
                        ah_grad = self.arena.tensor("G_AH", l, self.rows, d_in)
                        torch.mm(grad, self.weights[l].t(), out=ah_grad)
                if l > 0:
                    h_grad = self.arena.tensor("H_G", l, self.rows, d_in)
                    self.staged_spmm(self.backward_tiles, ah_grad, h_grad, f"bwd{l}")
                    grad = h_grad

    def reduce_gradients(self) -> None:
        """Sum the ranks' partial dW (each rank's rows contribute) into the replicated gradient."""
        if self.world > 1:
            import torch.distributed as dist

            with self.ops.op("allreduce"):
                dist.all_reduce(self.grad_flat)

    # --- the staged SpMM (Sec. 4.1 and 4.3) ----------------------------------------------------
    def staged_spmm(self, tiles, local_rows, out, tag: str) -> None:
        """out = sum_j tiles[j] @ H^j, where H^j are rank j's rows (this rank's: ``local_rows``)."""
        self.spmm_log.append(tag)
        self._spmm_widths["forward" if tiles is self.forward_tiles else "backward"].add(local_rows.shape[1])
        with self.ops.op("spmm"):
            self.stages(tiles, local_rows, out, tag)

    # --- reports --------------------------------------------------------------------------------
    def memory_report(self) -> MemoryReport:
        tiles = sum(tile_bytes(t) for t in self.share.forward_tiles + self.share.backward_tiles)
        dense = FLOAT_BYTES * (self.X.numel() + 4 * self.grad_flat.numel())  # W, dW, Adam m and v
        labels = 8 * (self.train_rows.numel() + self.train_labels.numel())
        loss = FLOAT_BYTES * 3 * self.train_rows.numel() * self.dims[-1]
        return MemoryReport(self.plan.count if self.arena.reuse else 0,
                            self.plan.total_bytes if self.arena.reuse else 0,
                            self.arena.peak_bytes, tiles + dense + labels, loss)

    def measure_library_workspaces(self) -> dict[str, int]:
        """Bytes cuSPARSE and cuBLAS take from the caching allocator beyond their operands (GPU only).

        Neither library's workspace has a shape a buffer plan could name: cuSPARSE's SpMM takes a
        transient one per call, cuBLAS keeps one per handle and stream once it has run a GEMM.
        The probe runs every (tile, width) the last epochs multiplied, alone, and one GEMM after
        dropping cuBLAS's workspaces, and returns the largest allocation of each.  It resets
        the peak-memory counter, so call it after the peak of interest has been read.
        """
        torch = self.torch
        if self.device.type != "cuda":
            return {"cusparse": 0, "cublas": 0}

        def transient(run, *operands) -> int:
            torch.cuda.synchronize(self.device)
            base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            run(*operands)
            torch.cuda.synchronize(self.device)
            return torch.cuda.max_memory_allocated(self.device) - base

        zeros = lambda r, c: torch.zeros(r, c, dtype=torch.float32, device=self.device)  # noqa: E731
        cusparse = 0
        for kind, tiles in (("forward", self.forward_tiles), ("backward", self.backward_tiles)):
            for width in sorted(self._spmm_widths[kind]):
                for stage, tile in enumerate(tiles):
                    if tile._nnz():
                        cusparse = max(cusparse, transient(lambda o, t, r: o.addmm_(t, r), zeros(self.rows, width),
                                                           tile, zeros(self.part_rows[stage], width)))
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        cublas = transient(lambda a, w, o: torch.mm(a, w, out=o), zeros(self.rows, self.dims[0]),
                           zeros(self.dims[0], self.dims[1]), zeros(self.rows, self.dims[1]))
        return {"cusparse": cusparse, "cublas": cublas}

    def collect_op_times(self) -> dict[str, float]:
        return self.ops.collect()

    def collect_timeline(self):
        return self.timeline.collect()

    def close(self) -> None:
        """Drop every device tensor this rank holds (saved views keep whole buffers alive)."""
        self.forward_tiles = self.backward_tiles = None
        self._saved_out = [None] * self.layers
        self._saved_aggregate = [None] * self.layers
        self.arena = self.stages = None
        self.X = None
        self.comm_stream = self.lanes = None
        if self.transport is not None:
            if self.device.type == "cuda":
                self.torch.cuda.synchronize(self.device)   # no copy may read a region being freed
            self.transport.close()
            self.transport = None


def relu_backward(grad, activation, out) -> None:
    """out = grad where activation > 0, else 0; in place when ``out`` is the activation's own buffer.

    One pass (reads both, writes one: autograd's own ReLU backward kernel), no temporary mask the
    size of the layer.
    """
    import torch

    torch.ops.aten.threshold_backward.grad_input(grad, activation, 0, grad_input=out)
