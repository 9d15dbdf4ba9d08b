"""CAGNET's 1D algorithm (re-impl.) on 1 and 3 CPU ranks equals the float64 dense reference, and moves
its blocks as the published algorithm does: every rank's whole block broadcast in turn, two
distributed SpMMs per layer (the first layer's backward included)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.launcher import RankContext, launch

from .reference import MODELS, DenseReference, assert_close_to_reference, make_test_graph

ADAM_STEPS = 3


def run_cagnet(ctx):
    """On this rank: (row ids, loss, logits, dW, broadcasts) per model, then the Adam losses; with
    several ranks also the same without the gradient all-reduce (key "broken")."""
    import torch
    import torch.distributed as dist

    if ctx.device == "cpu":
        torch.set_num_threads(1)
    out = train_models(ctx)
    if ctx.world_size > 1 and ctx.device == "cpu":
        all_reduce, dist.all_reduce = dist.all_reduce, lambda tensor, *a, **k: None
        try:
            out["broken"] = train_models(ctx)
        finally:
            dist.all_reduce = all_reduce
    return out


def train_models(ctx):
    from impls.fullbatch import make_cagnet_1d

    from .reference import MODELS as models

    graph = make_test_graph()
    device = str(ctx.torch_device())
    out = {}
    for name in models:
        trainer = make_cagnet_1d(graph, models[name], device=device, rank=ctx.rank, world=ctx.world_size)
        loss, logits, grads = trainer.compute_gradients()
        out[name] = (trainer.share.old_ids, loss, logits.cpu().numpy(), [g.cpu().numpy() for g in grads],
                     list(trainer.broadcasts))
        trainer.close()
    trainer = make_cagnet_1d(graph, models["spmm_first_middle"], device=device, rank=ctx.rank, world=ctx.world_size)
    losses = []
    for _ in range(ADAM_STEPS):
        trainer.train_epoch()
        losses.append(trainer.loss_value())
    out["adam"] = (losses, [w.detach().cpu().numpy().copy() for w in trainer.weights])
    return out


def check(per_rank: list[dict], world: int) -> None:
    graph = make_test_graph()
    for name, model in MODELS.items():
        logits = np.full((graph.num_nodes, graph.num_classes), np.nan)
        for result in per_rank:
            old_ids, _, mine, _, _ = result[name]
            assert np.array_equal(old_ids, np.arange(old_ids[0], old_ids[0] + len(old_ids))), \
                "CAGNET keeps the input order: each rank's rows are one contiguous range"
            logits[old_ids] = mine
        _, loss, _, grads, broadcasts = per_rank[0][name]
        assert_close_to_reference(loss, logits, grads, DenseReference(graph, model).gradients(),
                                  label=f"P={world} {name}")
        for other in per_rank[1:]:
            assert all(np.array_equal(a, b) for a, b in zip(other[name][3], grads)), "ranks disagree on dW"
        # two SpMMs per layer, each a broadcast from every rank in turn (root 0, 1, ...); the forward
        # SpMM runs on the layer's input width (aggregate first), the backward on its output width
        dims = model.dims(graph.feature_dim, graph.num_classes)
        layers = len(dims) - 1
        if world == 1:
            assert broadcasts == []
        else:
            roots = [root for root, _ in broadcasts]
            assert roots == list(range(world)) * (2 * layers)
            widths = [w for _, w in broadcasts[::world]]
            assert widths == dims[:-1] + dims[:0:-1], f"{name}: SpMM widths {widths}"
    ref_losses, ref_weights = DenseReference(graph, MODELS["spmm_first_middle"]).adam_losses(ADAM_STEPS)
    losses, weights = per_rank[0]["adam"]
    np.testing.assert_allclose(losses, ref_losses, rtol=2e-5)
    for w, r in zip(weights, ref_weights):
        np.testing.assert_allclose(w, r.numpy(), rtol=0, atol=2e-5)
    for other in per_rank[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(other["adam"][1], weights)), "replicas diverged"


def test_one_rank_in_process():
    ctx = RankContext(rank=0, world_size=1, local_rank=0, device="cpu", backend="gloo")
    check([run_cagnet(ctx)], 1)


def test_ranks_match_the_dense_reference(world=3):
    """Three ranks: parts of unequal size (157 rows), every rank both a root and a receiver."""
    per_rank = launch(run_cagnet, (), world_size=world, device="cpu", timeout_s=120)
    check(per_rank, world)
    # each rank's partial dW alone (the all-reduce dropped) must fail the same check
    with pytest.raises(AssertionError):
        check([result["broken"] for result in per_rank], world)


@pytest.mark.gpu
@pytest.mark.parametrize("world", [2, 4])
def test_gpu_ranks_match_the_dense_reference(world):
    """NCCL broadcasts and cuSPARSE products: the same equalities as on CPU ranks."""
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() < world:
        pytest.skip(f"needs {world} GPUs")
    check(launch(run_cagnet, (), world_size=world, device="cuda", timeout_s=300), world)


def test_a_permuted_share_is_refused():
    from impls.fullbatch.cagnet import Cagnet1D
    from impls.fullbatch.problem import rank_share

    share = rank_share(make_test_graph(), 0, 1, order="random", seed=3)
    with pytest.raises(ValueError, match="input order"):
        Cagnet1D(share, MODELS["spmm_first_last"])
