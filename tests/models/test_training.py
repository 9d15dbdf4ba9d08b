"""Models train to high accuracy on a small planted-label graph with a uniform neighbor
sampler, and training is deterministic under a fixed seed."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from impls import models
from impls.core.blocks import set_edge_weight

from .util import planted_graph, sample_blocks


GRAPH = planted_graph(num_nodes=600, num_classes=4, feat_dim=16, avg_deg=10, seed=1)


def _visit_counts(blocks, gen):
    """Stand-in random-walk visit counts for PinSAGE (an integer weight per sampled edge)."""
    for b in blocks:
        set_edge_weight(b, torch.randint(1, 4, (b.num_edges,), generator=gen).float())


def train(kind: str, backend: str = "native", steps: int = 200, seed: int = 0,
          fanouts=(8, 8), hidden: int = 32, **options):
    indptr, indices, feats, labels = GRAPH
    n = labels.numel()
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(2))
    train_ids, test_ids = perm[: n // 2], perm[n // 2:]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = models.build(kind, feats.shape[1], hidden, 4, len(fanouts), backend=backend, **options)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        seeds = train_ids[torch.randint(0, train_ids.numel(), (64,), generator=gen)].unique()
        blocks = sample_blocks(indptr, indices, seeds, fanouts, gen)
        if kind == "pinsage":
            _visit_counts(blocks, gen)
        logits = model(blocks, feats[blocks[0].src_ids])
        loss = F.cross_entropy(logits, labels[seeds])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        blocks = sample_blocks(indptr, indices, test_ids, fanouts, gen)
        if kind == "pinsage":
            _visit_counts(blocks, gen)
        pred = model(blocks, feats[blocks[0].src_ids]).argmax(1)
    return (pred == labels[test_ids]).float().mean().item(), losses


def test_features_alone_are_weak():
    _, _, feats, labels = GRAPH
    assert (feats[:, :4].argmax(1) == labels).float().mean() < 0.6


@pytest.mark.parametrize("kind", models.KINDS)
def test_native_models_learn_planted_labels(kind):
    acc, losses = train(kind)
    assert acc >= 0.9, f"{kind}: test accuracy {acc:.3f}"
    assert sum(losses[-20:]) / 20 < 0.5 * sum(losses[:20]) / 20


def test_three_layer_sage_learns():
    acc, _ = train("sage", fanouts=(6, 5, 4), steps=150)
    assert acc >= 0.9


@pytest.mark.parametrize("kind", ["sage", "gat"])
def test_pyg_models_learn_too(kind):
    pytest.importorskip("torch_geometric")
    acc, _ = train(kind, backend="pyg", steps=150)
    assert acc >= 0.9


@pytest.mark.parametrize("kind,options", [("gat", {}), ("gcn", {"impl": "segment", "backward": "dup_split"}),
                                          ("pinsage", {})])
def test_training_is_deterministic(kind, options):
    a = train(kind, steps=15, seed=3, **options)
    b = train(kind, steps=15, seed=3, **options)
    assert a == b
    c = train(kind, steps=15, seed=4, **options)
    assert c[1] != a[1]
