"""Rank functions for the full-batch tests (spawned by harness.launcher.launch: module level)."""

from __future__ import annotations

ADAM_STEPS = 3
ORDERS = ("original", "random", "random_parts")
# how the blocks move and where the intermediates live:
#   peer       copies out of the peers' shared buffers, local block first (the default)
#   broadcast  the paper's broadcasts, local block first
#   fresh      broadcasts into a fresh allocation per intermediate (no shared buffers)
#   paper      broadcasts, the paper's stage order (stage j multiplies block j)
VARIANTS = {
    "peer": {"transport": "peer"},
    "broadcast": {"transport": "broadcast"},
    "fresh": {"transport": "broadcast", "reuse_buffers": False},
    "paper": {"transport": "broadcast", "local_first": False},
}


def configurations():
    """(vertex order, variant) pairs the equality tests run, each with every model and overlap
    on and off: every order with the default variant, every variant with the default order."""
    return ([(order, "peer") for order in ORDERS]
            + [("random_parts", variant) for variant in VARIANTS if variant != "peer"])


def run_configurations(ctx, graph_seed: int = 1):
    """Every model x (vertex order, variant) x overlap on this rank; returns what the parent checks.

    Result: {(model, order, overlap, variant): (loss, old_ids, logits, grads, spmm_log)}, plus the
    Adam trajectory and one stage timeline per transport under special keys.
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
    shares = {}
    for order, variant in configurations():
        if order not in shares:
            shares[order] = rank_share(g, ctx.rank, ctx.world_size, order=order, seed=7)
        share = shares[order]
        for name, model in MODELS.items():
            for overlap in (False, True):
                engine = MGGCN(share, model, device=dev, overlap=overlap, **VARIANTS[variant])
                loss, logits, grads = engine.compute_gradients()
                out[(name, order, overlap, variant)] = (
                    loss, share.old_ids, logits.cpu().numpy(), [w.cpu().numpy() for w in grads],
                    list(engine.spmm_log))
                engine.close()
    # Adam: a few full epochs from the same start
    share = rank_share(g, ctx.rank, ctx.world_size, order="random_parts", seed=7)
    engine = MGGCN(share, MODELS["spmm_first_middle"], device=dev, overlap=True)
    losses = []
    for _ in range(ADAM_STEPS):
        engine.train_epoch()
        losses.append(engine.loss_value())
    out["adam"] = (losses, [w.cpu().numpy() for w in engine.weights])
    engine.close()
    # one recorded epoch per transport: every SpMM multiplies every block, and moves the others
    for transport in ("peer", "broadcast"):
        engine = MGGCN(share, MODELS["spmm_first_last"], device=dev, overlap=True, record_timeline=True,
                       profile_ops=True, transport=transport)
        engine.train_epoch()
        out[("timeline", transport)] = (
            [(i.spmm, i.stage, i.kind, i.start_s, i.end_s) for i in engine.collect_timeline()],
            list(engine.spmm_log), engine.collect_op_times())
        out[("streams", transport)] = (engine.comm_stream is not None,
                                       engine.comm_stream is not None
                                       and engine.comm_stream != torch.cuda.current_stream())
        engine.close()
    return out


FAKE_STREAM_VARIANTS = ("peer", "broadcast", "paper")


def run_on_fake_streams(ctx):
    """The GPU schedule (two streams, events) on CPU tensors through fake CUDA streams, per
    variant: one epoch's gradients, the trace of every stream operation, the host waits."""
    import torch

    from impls.fullbatch.mggcn import MGGCN
    from impls.fullbatch.problem import rank_share

    from .fake_streams import FakeCuda, counting_host_syncs
    from .reference import MODELS, make_test_graph

    torch.set_num_threads(1)
    share = rank_share(make_test_graph(1), ctx.rank, ctx.world_size, order="random_parts", seed=7)
    out = {}
    for variant in FAKE_STREAM_VARIANTS:
        fake = FakeCuda()
        engine = MGGCN(share, MODELS["spmm_first_middle"], overlap=True, streams=fake, **VARIANTS[variant])
        with counting_host_syncs(fake):
            loss, logits, grads = engine.compute_gradients()
        out[variant] = (loss, share.old_ids, logits.numpy(), [w.numpy() for w in grads], list(engine.spmm_log),
                        fake.trace_labels(), fake.host_syncs)
        engine.close()
    return out
