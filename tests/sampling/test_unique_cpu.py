"""Append-unique on the CPU: hash table (numba) against the sort reference and the exact order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from impls.sampling.unique import HashAppendUnique, SortUnique

from . import reference as ref


def cases():
    g = np.random.default_rng(3)
    yield "random", g.choice(10_000, 300, replace=False), g.integers(0, 10_000, 5_000)
    yield "frontier 512 x 30", g.choice(2_000_000, 512, replace=False), g.integers(0, 2_000_000, 15_360)
    yield "neighbors are targets", np.arange(50), np.tile(np.arange(50), 7)
    yield "all duplicates", np.array([4, 9, 1]), np.full(1000, 77)
    yield "one duplicated target", np.array([4, 9, 1]), np.full(200, 9)
    yield "empty frontier", np.array([8, 3, 5]), np.zeros(0, dtype=np.int64)
    yield "no targets", np.zeros(0, dtype=np.int64), g.integers(0, 30, 100)
    yield "nothing", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    yield "large ids", np.array([2**40 + 1, 5]), np.array([2**40 + 1, 2**40 + 7, 5, 2**62, 2**62])
    yield "collisions", np.arange(0, 64 * 1000, 64), np.arange(0, 64 * 3000, 32)


CASES = list(cases())


def check_against_sort(out, targets, neighbors, device="cpu"):
    uniq, local, dup = (t.to("cpu") for t in out)
    ru, rl, rd = SortUnique("cpu").append_unique(torch.as_tensor(targets), torch.as_tensor(neighbors))
    nt = len(targets)
    assert uniq.dtype == torch.int64 and local.dtype == torch.int64
    assert torch.equal(uniq[:nt], torch.as_tensor(targets, dtype=torch.int64)), "targets first, in order"
    assert set(uniq[nt:].tolist()) == set(ru[nt:].tolist()) and uniq.numel() == ru.numel(), "same new nodes"
    assert torch.unique(uniq).numel() == uniq.numel(), "each node once"
    assert torch.equal(uniq[local], torch.as_tensor(neighbors, dtype=torch.int64)), "local ids"
    assert torch.equal(dup.to(torch.int64), torch.bincount(local, minlength=uniq.numel())), "dup counts"
    assert torch.equal(rd.to(torch.int64), torch.bincount(rl, minlength=ru.numel()))


@pytest.mark.parametrize("name,targets,neighbors", CASES, ids=[c[0] for c in CASES])
def test_hash_append_equals_sort_reference(name, targets, neighbors):
    out = HashAppendUnique("cpu").append_unique(torch.as_tensor(targets), torch.as_tensor(neighbors))
    check_against_sort(out, targets, neighbors)
    ru, rl, rd = ref.hash_unique_order(targets, neighbors)     # the deterministic order, exactly
    assert np.array_equal(out[0].numpy(), ru) and np.array_equal(out[1].numpy(), rl)
    assert np.array_equal(out[2].numpy(), rd)


def test_sort_reference_orders_new_nodes_ascending():
    uniq, local, dup = SortUnique("cpu").append_unique(torch.tensor([7, 3]), torch.tensor([9, 3, 1, 9, 7]))
    assert uniq.tolist() == [7, 3, 1, 9] and local.tolist() == [3, 1, 2, 3, 0] and dup.tolist() == [1, 1, 1, 2]


def test_int32_inputs_and_errors():
    out = HashAppendUnique("cpu").append_unique(torch.tensor([5, 2], dtype=torch.int32),
                                                torch.tensor([2, 8, 8], dtype=torch.int32))
    assert out[0].tolist()[:2] == [5, 2] and sorted(out[0].tolist()) == [2, 5, 8]
    with pytest.raises(HarnessError, match=">= 0"):
        HashAppendUnique("cpu").append_unique(torch.tensor([1]), torch.tensor([-3]))
    with pytest.raises(HarnessError, match="int32 or int64"):
        HashAppendUnique("cpu").append_unique(torch.tensor([1.0]), torch.tensor([2]))
