"""The single-process reference of one data-parallel training step (shared by the CPU and GPU tests)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from . import targets


def reference_model(case: dict, graph):
    from impls import models

    return models.build(case["model"], graph.feature_dim, case["hidden"], graph.num_classes, case["num_layers"],
                        backend=case.get("backend") or ("pyg" if case["pipeline"] == "pyg_host" else "native"),
                        heads=case.get("heads", 4))


def check_one_step(results: list[dict], index: int, case: dict, graph, *, loss_rel: float = 1e-5,
                   exact_updates: bool = True) -> None:
    """``results``: per rank, ``targets.one_step``'s output. Checks every rank's blocks (valid, seeds
    first, at most the fanout of each node's CSR neighbors), inputs (the dataset's features and
    labels), loss (the reference model's on the same blocks) and the weights after the step (one
    Adam step on the mean of the ranks' gradients, as DDP averages them). ``exact_updates=False``
    (GPU: atomics make gradients differ in the last bits) tolerates sign flips of Adam's first step
    on a few near-zero gradient entries."""
    feats, labels = torch.from_numpy(graph.features), torch.from_numpy(graph.labels)
    ip, ix = torch.from_numpy(graph.indptr), torch.from_numpy(graph.indices.astype(np.int64))
    model = reference_model(case, graph)
    before = {k: torch.from_numpy(v) for k, v in results[0][index]["before"].items()}
    for r in results[1:]:
        assert all(np.array_equal(r[index]["before"][k], v.numpy()) for k, v in before.items())
    model.load_state_dict(before)
    grads = []
    for rank, result in enumerate(results):
        (step,) = result[index]["steps"]
        blocks = [targets.block_of(b) for b in step["blocks"]]
        for b in blocks:
            b.validate()
        assert torch.equal(torch.from_numpy(step["x"]), feats[blocks[0].src_ids])   # the dataset's rows
        seeds = torch.from_numpy(step["seeds"])
        assert torch.equal(blocks[-1].src_ids[: blocks[-1].num_dst], seeds)        # seeds lead the last block
        assert torch.equal(torch.from_numpy(step["y"]), labels[seeds])
        for hop, block in enumerate(reversed(blocks)):                              # PyG reuses a node's first
            deg = block.indptr[1:] - block.indptr[:-1]                              # sample in later hops
            assert int(deg.max()) <= max(case["fanouts"][: hop + 1])
            gsrc, gdst = block.global_edges()
            for s_, d_ in list(zip(gsrc.tolist(), gdst.tolist()))[:200]:
                assert s_ in ix[ip[d_]:ip[d_ + 1]].tolist()
        model.zero_grad()
        loss = F.cross_entropy(model(blocks, torch.from_numpy(step["x"])), labels[seeds])
        assert loss.item() == pytest.approx(step["loss"], rel=loss_rel, abs=1e-6), f"rank {rank}"
        loss.backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    opt = torch.optim.Adam(model.parameters(), lr=case["lr"])
    for n, p in model.named_parameters():
        p.grad = sum(g[n] for g in grads) / len(grads)
    opt.step()
    for k, v in model.state_dict().items():
        got = results[0][index]["after"][k]
        for r in results[1:]:
            assert np.array_equal(r[index]["after"][k], got), f"ranks disagree on {k}"
        if exact_updates:
            np.testing.assert_allclose(got, v.numpy(), rtol=1e-4, atol=1e-6, err_msg=k)
        else:
            off = np.abs(got - v.numpy()) > 1e-4 + 1e-3 * np.abs(v.numpy())
            assert off.mean() <= 0.01, f"{k}: {off.sum()} of {off.size} entries differ"


def check_prefetch_matches_sequential(results: list[dict], *, exact: bool = True) -> None:
    """Prefetching the next mini-batch changes when work runs, not what: the same batches in the same
    order with the same blocks, inputs and labels, the same losses, the same weights after."""
    import numpy as np

    for r in results:
        seq, pre = r["0"], r["1"]
        assert not seq["enabled"] and pre["enabled"], (seq["enabled"], pre["enabled"])
        assert "loop" in pre["describe"] and "loop" not in seq["describe"]
        assert seq["batches"] == pre["batches"] == len(seq["steps"]) == len(pre["steps"]) > 2
        for a, b in zip(seq["steps"], pre["steps"]):
            np.testing.assert_array_equal(a["seeds"], b["seeds"])
            np.testing.assert_array_equal(a["y"], b["y"])
            np.testing.assert_array_equal(a["x"], b["x"])
            assert len(a["blocks"]) == len(b["blocks"])
            for ba, bb in zip(a["blocks"], b["blocks"]):
                for key in ("indptr", "indices", "src_ids"):
                    np.testing.assert_array_equal(ba[key], bb[key])
            if exact:
                assert a["loss"] == b["loss"]
            else:
                assert abs(a["loss"] - b["loss"]) <= 1e-4 * max(1.0, abs(a["loss"]))
        for key, value in seq["after"].items():
            if exact:
                np.testing.assert_array_equal(value, pre["after"][key], err_msg=key)
            else:
                np.testing.assert_allclose(value, pre["after"][key], rtol=1e-3, atol=1e-5, err_msg=key)
