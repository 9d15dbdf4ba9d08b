"""MG-GCN: full-batch GCN training over the ranks of one node (Balin, Sancak, Catalyurek).

Every rank holds one row block of F = Â^T and of B = Â (cut into P column tiles), of X, and of
every dense intermediate; the weights are replicated.  Each SpMM runs in P stages (Sec. 4.1,
Fig. 3): at stage j rank j broadcasts its rows H^j and every rank i accumulates
``C^i += A^{ij} H^j``.  With overlap (Sec. 4.3) the broadcasts run on a communication stream
and the multiplies on the compute stream, through two receive buffers:

    comm stream:     bcast 0 | bcast 1 | bcast 2 ...        (bcast j+1 waits for multiply j-1:
    compute stream:            mult 0  | mult 1  | mult 2     it overwrites that stage's buffer)

CUDA events order the two streams (multiply j waits for "tile j arrived"; broadcast j+1 waits for
"slot of j-1 free").  On CPU ranks (gloo) the same schedule uses gloo's asynchronous broadcast:
stage j+1's broadcast is posted before stage j's multiply and waited on after it.  Without
overlap both run back to back on one stream, stage by stage.

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

from .buffers import FLOAT_BYTES, Arena, BufferPlan
from .model import GEMM_FIRST, ModelConfig, init_weights, orders
from .problem import RankShare
from .profiling import Clock, OpProfiler, StageTimeline

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
                 profile_ops: bool = False, record_timeline: bool = False):
        import torch

        if first_layer_backward not in FIRST_LAYER_BACKWARD:
            raise ValueError(f"first_layer_backward must be one of {FIRST_LAYER_BACKWARD}")
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

        self.forward_tiles = [csr_to_torch(t, self.device) for t in share.forward_tiles]
        self.backward_tiles = [csr_to_torch(t, self.device) for t in share.backward_tiles]
        self.tile_nnz = [int(t.nnz) for t in share.forward_tiles]
        self.X = torch.from_numpy(share.features).to(self.device)
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

        self.plan = BufferPlan(tuple(self.dims), self.rows, max(self.part_rows), self.world)
        self.arena = Arena(self.plan, self.device, reuse=reuse_buffers)
        self.overlap = overlap and self.world > 1
        self.comm_stream = (torch.cuda.Stream(self.device)
                            if self.overlap and self.device.type == "cuda" else None)
        self.clock = Clock(self.device)
        self.ops = OpProfiler(self.clock, profile_ops)
        self.timeline = StageTimeline(self.clock, record_timeline)
        self.spmm_log: list[str] = []      # which SpMMs the last epoch ran ("fwd0", "bwd2", ...)
        self._saved_out: list = [None] * self.layers   # H' of each layer (input of the next)
        self._saved_aggregate: list = [None] * self.layers   # AH of SpMM-first layers
        self._loss_sum = None
        self._received: list = []          # receive tiles of the running SpMM
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
        self._received = []
        self._out_written = False          # the first multiply overwrites ``out`` (beta = 0)
        with self.ops.op("spmm"):
            if self.world == 1:
                self._multiply_stage(tiles, 0, local_rows, out, tag)
            elif self.comm_stream is not None:
                self._stages_two_streams(tiles, local_rows, out, tag)
            elif self.overlap:
                self._stages_async(tiles, local_rows, out, tag)
            else:
                self._stages_serial(tiles, local_rows, out, tag)
        if not self._out_written:           # every tile was empty
            out.zero_()
        self.arena.release(self._received)     # no-op for the shared receive buffers

    def _multiply_stage(self, tiles, stage: int, rows_in, out, tag: str, stream=None) -> None:
        start = self.timeline.mark(stream)
        if tiles[stage]._nnz():
            # cuSPARSE SpMM on GPU: the first stage writes C (beta = 0, C not read, no zeroing pass),
            # later stages accumulate (beta = 1)
            out.addmm_(tiles[stage], rows_in, beta=1 if self._out_written else 0)
            self._out_written = True
        self.timeline.add(tag, stage, "compute", start, self.timeline.mark(stream))

    def _receive_buffer(self, stage: int, width: int, local_rows):
        """Where stage ``stage``'s tile is: this rank's own rows, or a receive buffer (double-buffered)."""
        if stage == self.rank:
            return local_rows
        tile = self.arena.tensor("BC1" if stage % 2 == 0 else "BC2", -1, self.part_rows[stage], width)
        self._received.append(tile)
        return tile

    def _stages_serial(self, tiles, local_rows, out, tag: str) -> None:
        import torch.distributed as dist

        width = local_rows.shape[1]
        for stage in range(self.world):
            tile = self._receive_buffer(stage, width, local_rows)
            start = self.timeline.mark()
            dist.broadcast(tile, src=stage)
            self.timeline.add(tag, stage, "comm", start, self.timeline.mark())
            self._multiply_stage(tiles, stage, tile, out, tag)

    def _stages_async(self, tiles, local_rows, out, tag: str) -> None:
        """CPU ranks: broadcast of stage j+1 in flight (gloo's thread) while stage j multiplies."""
        import torch.distributed as dist

        width = local_rows.shape[1]

        def post(stage):
            tile = self._receive_buffer(stage, width, local_rows)
            started = self.timeline.mark()
            return tile, dist.broadcast(tile, src=stage, async_op=True), started

        pending = post(0)
        for stage in range(self.world):
            tile, work, started = pending
            work.wait()
            self.timeline.add(tag, stage, "comm", started, self.timeline.mark())
            # stage+1 reuses the receive buffer of stage-1, whose multiply has returned
            if stage + 1 < self.world:
                pending = post(stage + 1)
            self._multiply_stage(tiles, stage, tile, out, tag)

    def _stages_two_streams(self, tiles, local_rows, out, tag: str) -> None:
        """GPUs: broadcasts on the communication stream, multiplies on the compute stream."""
        import torch.distributed as dist

        torch = self.torch
        compute = torch.cuda.current_stream(self.device)
        comm = self.comm_stream
        width = local_rows.shape[1]
        # the rows to send were written on the compute stream, and the previous SpMM's multiplies
        # read the receive buffers there: the first broadcast waits for both
        inputs_ready = torch.cuda.Event()
        inputs_ready.record(compute)
        comm.wait_event(inputs_ready)
        slot_free = [None, None]        # per receive buffer: "the multiply that read it is done"

        def post(stage):
            tile = self._receive_buffer(stage, width, local_rows)
            with torch.cuda.stream(comm):
                if slot_free[stage % 2] is not None:
                    comm.wait_event(slot_free[stage % 2])
                start = self.timeline.mark(comm)
                dist.broadcast(tile, src=stage)
                self.timeline.add(tag, stage, "comm", start, self.timeline.mark(comm))
                arrived = torch.cuda.Event()
                arrived.record(comm)
            return tile, arrived

        pending = post(0)
        for stage in range(self.world):
            tile, arrived = pending
            if stage + 1 < self.world:
                pending = post(stage + 1)     # waits for stage-1's multiply, overlaps stage's
            compute.wait_event(arrived)
            self._multiply_stage(tiles, stage, tile, out, tag, compute)
            done = torch.cuda.Event()
            done.record(compute)
            slot_free[stage % 2] = done
        # every broadcast has been waited on by the compute stream: later work is ordered after them

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
        self._received = []
        self.arena = None
        self.X = None
        self.comm_stream = None


def relu_backward(grad, activation, out) -> None:
    """out = grad * (activation > 0); in place when ``out`` is the activation's own buffer.

    ReLU outputs are >= 0, so sign() is exactly the 0/1 derivative: the in-place form needs no
    temporary mask the size of the layer.
    """
    if out.data_ptr() == activation.data_ptr():
        out.sign_().mul_(grad)
    else:
        import torch

        torch.mul(activation.sign(), grad, out=out)
