"""What every world size must satisfy, for CPU (gloo) and GPU (NCCL) ranks alike."""

from __future__ import annotations

import numpy as np

from .reference import MODELS, NUM_NODES, DenseReference, assert_close_to_reference, make_test_graph
from .targets import ADAM_STEPS, configurations


def check_configurations(per_rank: list[dict], world: int, bitwise: bool = True) -> None:
    """``bitwise``: overlap and buffer reuse must not change a single bit (CPU kernels); on GPUs
    cuSPARSE may pick its algorithm by pointer alignment, so there they must agree to 1e-6.
    Schedules that add the blocks in another order (the paper's stage order, peer copies from
    three ranks on) agree to 1e-6 everywhere."""
    g = make_test_graph(1)
    refs = {name: DenseReference(g, model).gradients() for name, model in MODELS.items()}
    rank0 = per_rank[0]
    configs = [k for k in rank0 if isinstance(k, tuple) and k[0] in MODELS]
    assert len(configs) == len(MODELS) * len(configurations()) * 2
    for key in configs:
        name, order, overlap, variant = key
        label = f"P={world} {name} order={order} overlap={overlap} {variant}"
        # every rank holds the same loss and the same all-reduced gradient
        for other in per_rank[1:]:
            assert other[key][0] == rank0[key][0], label
            for a, b in zip(other[key][3], rank0[key][3]):
                assert np.array_equal(a, b), f"{label}: ranks disagree on dW"
        logits = np.full((NUM_NODES, g.num_classes), np.nan)
        for result in per_rank:
            logits[result[key][1]] = result[key][2]       # rows back to the input graph's ids
        assert not np.isnan(logits).any(), f"{label}: some vertex has no row"
        assert_close_to_reference(rank0[key][0], logits, rank0[key][3], refs[name], label=label)
        spmms = rank0[key][4]
        # the first layer's backward SpMM only feeds dL/dX when it aggregates first: skipped then
        assert ("bwd0" in spmms) == (name != "spmm_first_layer0"), f"{label}: {spmms}"
        assert [s for s in spmms if s.startswith("fwd")] == [f"fwd{l}" for l in range(3)]

    # the same multiplies in the same order: overlap and fresh buffers change nothing
    for name in MODELS:
        for order, variant in configurations():
            _same(rank0, (name, order, True, variant), (name, order, False, variant),
                  f"P={world} {name} {order} {variant}: overlap changed the result", bitwise)
        for overlap in (False, True):
            key = (name, "random_parts", overlap)
            _same(rank0, (*key, "broadcast"), (*key, "fresh"),
                  f"P={world} {name}: buffer reuse changed the result", bitwise)
            for other in ("peer", "paper"):
                # two blocks add up the same in either order; from three on the orders differ
                _same(rank0, (*key, "broadcast"), (*key, other),
                      f"P={world} {name}: {other} changed the result", bitwise and world <= 2)

    ref_losses, ref_weights = DenseReference(g, MODELS["spmm_first_middle"]).adam_losses(ADAM_STEPS)
    losses, weights = rank0["adam"]
    assert losses[-1] < losses[0], f"Adam did not reduce the loss: {losses}"
    np.testing.assert_allclose(losses, ref_losses, rtol=2e-5)
    for w, r in zip(weights, ref_weights):
        np.testing.assert_allclose(w, r.numpy(), rtol=0, atol=2e-5)
    for other in per_rank[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(other["adam"][1], weights)), "replicas diverged"

    for transport in ("peer", "broadcast"):
        intervals, spmms, ops = rank0[("timeline", transport)]
        for spmm in spmms:
            mine = [i for i in intervals if i[0] == spmm]
            computes = sorted(i[1] for i in mine if i[2] == "compute")
            comms = sorted(i[1] for i in mine if i[2] == "comm")
            assert computes == list(range(world)), f"{transport} {spmm}: multiplies of blocks {computes}"
            # a broadcast turn for every rank (its own included); a copy of every other rank's block
            moved = list(range(world)) if transport == "broadcast" else [j for j in range(world) if j != 0]
            assert comms == (moved if world > 1 else []), f"{transport} {spmm}: transfers of {comms}"
            assert all(i[4] >= i[3] >= 0 for i in mine)
            # the local block is multiplied first
            first = min((i for i in mine if i[2] == "compute"), key=lambda i: i[3])
            assert first[1] == 0, f"{transport} {spmm}: rank 0 multiplied block {first[1]} first"
        assert ops["spmm"] > 0 and ops["gemm"] > 0 and ops["adam"] > 0
        assert (ops["allreduce"] > 0) == (world > 1)


def _same(results: dict, a: tuple, b: tuple, message: str, bitwise: bool) -> None:
    ra, rb = results[a], results[b]
    if bitwise:
        assert ra[0] == rb[0], message
        assert np.array_equal(ra[2], rb[2]), message
        assert all(np.array_equal(x, y) for x, y in zip(ra[3], rb[3])), message
    else:
        np.testing.assert_allclose(ra[0], rb[0], rtol=1e-6, err_msg=message)
        np.testing.assert_allclose(ra[2], rb[2], rtol=1e-6, atol=1e-7, err_msg=message)
        for x, y in zip(ra[3], rb[3]):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-9 + 1e-6 * np.abs(y).max(), err_msg=message)
