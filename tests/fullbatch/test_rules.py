"""MG-GCN's GeMM/SpMM order rule (Sec. 4.4), the L+3 buffer plan (Sec. 4.2), the first-layer skip."""

from __future__ import annotations

import pytest
import torch

from impls.fullbatch.buffers import Arena, BufferPlan
from impls.fullbatch.mggcn import MGGCN, relu_backward
from impls.fullbatch.model import GEMM_FIRST, SPMM_FIRST, ModelConfig, init_weights, layer_order, orders
from impls.fullbatch.problem import rank_share

from .reference import MODELS, DenseReference, assert_close_to_reference, make_test_graph


@pytest.mark.parametrize("d_in,d_out,expected", [
    (602, 16, GEMM_FIRST),     # Reddit layer 1: multiply down to 16 columns, then aggregate
    (16, 41, SPMM_FIRST),      # Reddit layer 2: aggregate the 16 columns, then widen
    (100, 256, SPMM_FIRST),    # Products layer 1
    (256, 256, GEMM_FIRST),    # tie: GeMM first, as MG-GCN's code
    (256, 47, GEMM_FIRST),
    (128, 208, SPMM_FIRST),    # Papers, the 4th model
    (1, 1, GEMM_FIRST),
])
def test_order_rule(d_in, d_out, expected):
    assert layer_order(d_in, d_out) == expected


def test_model_config():
    assert ModelConfig.parse("3x256").dims(100, 47) == [100, 256, 256, 47]
    assert ModelConfig.parse(" 2 x 16 ").label == "2x16"
    assert ModelConfig(3, 1, hidden_sizes=(4, 10)).dims(12, 9) == [12, 4, 10, 9]
    for bad in ("3", "x16", "3x0"):
        with pytest.raises(ValueError):
            ModelConfig.parse(bad)
    with pytest.raises(ValueError):
        ModelConfig(3, 8, hidden_sizes=(4,))


def test_initial_weights_are_seeded_and_glorot():
    a, b, c = init_weights([12, 20, 9], 0), init_weights([12, 20, 9], 0), init_weights([12, 20, 9], 1)
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and not torch.equal(a[0], c[0])
    assert a[0].abs().max() <= (6 / 32) ** 0.5


@pytest.mark.parametrize("dims,world,count,widths,shared", [
    # Products 3 x 256: layer 0 aggregates first and keeps AH (100 columns) beside its output
    ([100, 256, 256, 47], 4, 6, [256 + 100, 256, 256], 256),
    ([100, 256, 256, 47], 1, 4, [256 + 100, 256, 256], 256),   # one rank: no broadcast buffers
    # Reddit 2 x 16: the last layer aggregates first; its AH lives in the shared HW buffer
    ([602, 16, 41], 2, 5, [16, 41], 16),
    # a middle SpMM-first layer: output 10 wide (H_G is 4 wide) plus AH 4 wide
    ([12, 4, 10, 9], 3, 6, [4, 10 + 4, 10], 9),
])
def test_buffer_plan_is_l_plus_3(dims, world, count, widths, shared):
    plan = BufferPlan(tuple(dims), rows=100, rows_max=101, world=world)
    assert plan.count == count == len(dims) - 1 + (3 if world > 1 else 1)
    assert [plan.out_width(l) for l in range(len(dims) - 1)] == widths
    assert plan.shared_width == shared
    sizes = plan.sizes()
    if world > 1:
        assert sizes["BC1"] == sizes["BC2"] == 101 * shared
    assert plan.total_bytes == 4 * sum(sizes.values())


def test_arena_maps_roles_onto_the_papers_buffers():
    plan = BufferPlan((12, 4, 10, 9), rows=5, rows_max=6, world=2)
    arena = Arena(plan, "cpu", reuse=True)
    ptr = lambda t: t.data_ptr()  # noqa: E731
    # Eqs. 16-21: AHW, H' and AHW_G share the layer's buffer; HW and HW_G share the temporary
    assert ptr(arena.tensor("AHW", 1, 5, 10)) == ptr(arena.tensor("H", 1, 5, 10)) \
        == ptr(arena.tensor("AHW_G", 1, 5, 10)) == ptr(arena.tensor("H_G", 1, 5, 4))
    assert ptr(arena.tensor("HW", 0, 5, 4)) == ptr(arena.tensor("HW_G", 2, 5, 9)) \
        == ptr(arena.tensor("G_AH", 1, 5, 4))
    ah = arena.tensor("AH", 1, 5, 4)                  # middle SpMM-first layer: beside its output
    assert ptr(ah) == ptr(arena.tensor("AHW", 1, 5, 10)) + 64 * 4     # 50 elements, aligned to 64
    assert (ptr(ah) - ptr(arena.buffers["out1"])) % 256 == 0          # offsets keep the base's alignment
    assert ptr(arena.tensor("AH", 2, 5, 9)) == ptr(arena.tensor("HW", 0, 5, 9))   # last layer: in HW
    assert ptr(arena.tensor("BC1", -1, 6, 9)) != ptr(arena.tensor("BC2", -1, 6, 9))
    assert arena.peak_bytes == plan.total_bytes
    with pytest.raises(RuntimeError):
        arena.tensor("AHW", 0, 5, 5)                  # layer 0's buffer is 4 wide
    fresh = Arena(plan, "cpu", reuse=False)
    assert ptr(fresh.tensor("AHW", 1, 5, 10)) != ptr(fresh.tensor("H", 1, 5, 10))
    assert fresh.peak_bytes == 2 * 5 * 10 * 4
    received = [fresh.tensor("BC1", -1, 6, 9), fresh.tensor("BC2", -1, 6, 9)]
    assert fresh.peak_bytes == 2 * 5 * 10 * 4 + 2 * 6 * 9 * 4
    fresh.release(received)                           # a stage's tiles die with their SpMM
    fresh.tensor("HW", 0, 5, 4)
    assert fresh.peak_bytes == 2 * 5 * 10 * 4 + 2 * 6 * 9 * 4
    fresh.end_epoch()
    assert not fresh._fresh


def test_relu_backward_in_place_and_out_of_place():
    activation = torch.tensor([[0.0, 1.5], [2.0, 0.0]])
    grad = torch.tensor([[3.0, -4.0], [5.0, 6.0]])
    out = torch.empty(2, 2)
    relu_backward(grad, activation, out)
    assert torch.equal(out, torch.tensor([[0.0, -4.0], [5.0, 0.0]]))
    relu_backward(grad, activation, activation)       # the activation's own buffer
    assert torch.equal(activation, out)


def test_first_layer_backward_spmm():
    g = make_test_graph()
    share = rank_share(g, 0, 1, order="original")
    # aggregating first: the SpMM only feeds dL/dX; skipped, gradients exact
    engine = MGGCN(share, MODELS["spmm_first_layer0"])
    loss, logits, grads = engine.compute_gradients()
    assert engine.spmm_log == ["fwd0", "fwd1", "fwd2", "bwd2", "bwd1"]
    assert_close_to_reference(loss, logits, grads, DenseReference(g, MODELS["spmm_first_layer0"]).gradients())
    # multiplying first: dW0 = X^T (Â G) needs it; "identity" drops it as MG-GCN's code does
    model = MODELS["spmm_first_last"]
    assert orders(model.dims(12, 9))[0] == GEMM_FIRST
    exact = MGGCN(share, model)
    approx = MGGCN(share, model, first_layer_backward="identity")
    _, _, exact_grads = exact.compute_gradients()
    _, _, approx_grads = approx.compute_gradients()
    assert "bwd0" in exact.spmm_log and "bwd0" not in approx.spmm_log
    assert all(torch.equal(a, b) for a, b in zip(exact_grads[1:], approx_grads[1:]))
    assert not torch.allclose(exact_grads[0], approx_grads[0])
    with pytest.raises(ValueError):
        MGGCN(share, model, first_layer_backward="skip")


def test_engine_memory_report_counts_the_plan():
    g = make_test_graph()
    share = rank_share(g, 0, 1, order="random")
    reuse = MGGCN(share, MODELS["spmm_first_middle"])
    fresh = MGGCN(share, MODELS["spmm_first_middle"], reuse_buffers=False)
    reuse.train_epoch()
    fresh.train_epoch()
    a, b = reuse.memory_report(), fresh.memory_report()
    assert a.buffer_count == 4 and a.engine_peak_bytes == a.planned_buffer_bytes == reuse.plan.total_bytes
    assert b.buffer_count == 0 and b.engine_peak_bytes > 2 * a.engine_peak_bytes
    assert a.static_bytes == b.static_bytes > g.features.nbytes


def test_arena_layout_is_one_allocation_the_same_on_every_rank():
    """The peer copies find a rank's block at the offset the reader's own view has: every rank lays
    its buffers out from a plan with the largest part's rows, so every role sits at the same offset,
    whatever its own rows."""
    dims, world = (12, 4, 10, 9), 3
    allocations = []

    def allocate(numel):
        allocations.append(torch.zeros(numel))
        return allocations[-1]

    arenas = [Arena(BufferPlan(dims, 7, 7, world), "cpu", allocate=allocate) for _ in range(world)]
    assert all(a.flat is b for a, b in zip(arenas, allocations))
    for role, layer, width in (("AHW", 1, 10), ("AH", 1, 4), ("HW", 0, 4), ("G_AH", 1, 4), ("BC2", -1, 9)):
        offsets = {a.tensor(role, layer, rows, width).data_ptr() - a.flat.data_ptr()
                   for a, rows in zip(arenas, (7, 6, 5))}
        assert len(offsets) == 1, role
    # buffers do not overlap and start on 256-byte boundaries
    offsets, total = arenas[0].plan.layout()
    spans = sorted((offsets[n], offsets[n] + size) for n, size in arenas[0].plan.sizes().items())
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert all(start % 64 == 0 for start, _ in spans) and spans[-1][1] <= total
    with pytest.raises(ValueError):
        Arena(BufferPlan(dims, 7, 7, world), "cpu", reuse=False, allocate=allocate)
