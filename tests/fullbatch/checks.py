"""What every world size must satisfy, for CPU (gloo) and GPU (NCCL) ranks alike."""

from __future__ import annotations

import numpy as np

from .reference import MODELS, NUM_NODES, DenseReference, assert_close_to_reference, make_test_graph
from .targets import ADAM_STEPS


def check_configurations(per_rank: list[dict], world: int, bitwise: bool = True) -> None:
    """``bitwise``: overlap and buffer reuse must not change a single bit (CPU kernels); on GPUs
    cuSPARSE may pick its algorithm by pointer alignment, so there they must agree to 1e-6."""
    g = make_test_graph(1)
    refs = {name: DenseReference(g, model).gradients() for name, model in MODELS.items()}
    rank0 = per_rank[0]
    configs = [k for k in rank0 if isinstance(k, tuple)]
    assert len(configs) == len(MODELS) * 8
    for key in configs:
        name, permute, overlap, reuse = key
        label = f"P={world} {name} permute={permute} overlap={overlap} reuse={reuse}"
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

    for name in MODELS:
        for permute in (False, True):
            for overlap in (False, True):
                _same(rank0, (name, permute, overlap, True), (name, permute, overlap, False),
                      f"P={world} {name}: buffer reuse changed the result", bitwise)
            for reuse in (True, False):
                _same(rank0, (name, permute, True, reuse), (name, permute, False, reuse),
                      f"P={world} {name}: overlap changed the result", bitwise)

    ref_losses, ref_weights = DenseReference(g, MODELS["spmm_first_middle"]).adam_losses(ADAM_STEPS)
    losses, weights = rank0["adam"]
    assert losses[-1] < losses[0], f"Adam did not reduce the loss: {losses}"
    np.testing.assert_allclose(losses, ref_losses, rtol=2e-5)
    for w, r in zip(weights, ref_weights):
        np.testing.assert_allclose(w, r.numpy(), rtol=0, atol=2e-5)
    for other in per_rank[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(other["adam"][1], weights)), "replicas diverged"

    intervals, spmms, ops = rank0["timeline"]
    for spmm in spmms:
        mine = [i for i in intervals if i[0] == spmm]
        computes = sorted(i[1] for i in mine if i[2] == "compute")
        comms = sorted(i[1] for i in mine if i[2] == "comm")
        assert computes == list(range(world)), f"{spmm}: multiplies at stages {computes}"
        assert comms == (list(range(world)) if world > 1 else []), f"{spmm}: broadcasts at {comms}"
        assert all(i[4] >= i[3] >= 0 for i in mine)
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

