"""Rank functions for the full-batch tests (spawned by harness.launcher.launch: module level)."""

from __future__ import annotations

ADAM_STEPS = 3


def run_configurations(ctx, graph_seed: int = 1):
    """Every model x permutation x schedule x buffer mode on this rank; returns what the parent checks.

    Result: {(model, permute, schedule, reuse): (loss, old_ids, logits, grads, spmm_log)}, plus
    the Adam trajectory and one stage timeline under special keys.
    """
    import torch

    from impls.fullbatch.mggcn import MGGCN
    from impls.fullbatch.problem import rank_share

    from .reference import MODELS, make_test_graph

    if ctx.device == "cpu":
        torch.set_num_threads(1)
    dev = str(ctx.torch_device())
    g = make_test_graph(graph_seed)
    out = {}
    for permute in (False, True):
        share = rank_share(g, ctx.rank, ctx.world_size, permute=permute, seed=7)
        for name, model in MODELS.items():
            for overlap in (False, True):
                for reuse in (True, False):
                    engine = MGGCN(share, model, device=dev, overlap=overlap, reuse_buffers=reuse)
                    loss, logits, grads = engine.compute_gradients()
                    out[(name, permute, overlap, reuse)] = (
                        loss, share.old_ids, logits.cpu().numpy(), [w.cpu().numpy() for w in grads],
                        list(engine.spmm_log))
                    engine.close()
    # Adam: a few full epochs from the same start
    share = rank_share(g, ctx.rank, ctx.world_size, permute=True, seed=7)
    engine = MGGCN(share, MODELS["spmm_first_middle"], device=dev, overlap=True)
    losses = []
    for _ in range(ADAM_STEPS):
        engine.train_epoch()
        losses.append(engine.loss_value())
    out["adam"] = (losses, [w.cpu().numpy() for w in engine.weights])
    # one recorded epoch: every SpMM has P broadcasts and P multiplies
    engine = MGGCN(share, MODELS["spmm_first_last"], device=dev, overlap=True, record_timeline=True,
                   profile_ops=True)
    engine.train_epoch()
    out["timeline"] = ([(i.spmm, i.stage, i.kind, i.start_s, i.end_s) for i in engine.collect_timeline()],
                       list(engine.spmm_log), engine.collect_op_times())
    out["streams"] = (engine.comm_stream is not None,
                      engine.comm_stream is not None and engine.comm_stream != torch.cuda.current_stream())
    return out
