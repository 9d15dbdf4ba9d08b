"""Append-unique on the CPU: hash table (numba) against the sort reference and the exact order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness import registry
from harness.errors import HarnessError
from impls.sampling.unique import DenseAppendUnique, HashAppendUnique, SortUnique

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


# every registered append-unique with a CPU path, through its registry factory
ON_CPU = [s.impl for s in registry.series("unique") if s.unmet("cpu") is None]


def test_every_kind_of_append_unique_is_checked():
    assert {"hash_append", "dense_append", "sort"} <= set(ON_CPU)          # others may come


# ids below a graph's node count, as a sampler gives them (the contract's id_bound)
GRAPH_CASES = [c for c in CASES if max(np.max(c[1], initial=0), np.max(c[2], initial=0)) < 2**31 - 1]


@pytest.mark.parametrize("impl", ON_CPU)
@pytest.mark.parametrize("name,targets,neighbors", GRAPH_CASES, ids=[c[0] for c in GRAPH_CASES])
def test_every_append_unique_equals_the_sort_reference(impl, name, targets, neighbors):
    spec = registry.get_impl("unique", impl)
    unique = spec.factory("cpu")
    assert isinstance(unique, registry.contract_of(spec))
    id_bound = int(max(np.max(targets, initial=0), np.max(neighbors, initial=0))) + 1
    out = unique.append_unique(torch.as_tensor(targets), torch.as_tensor(neighbors), id_bound=id_bound)
    check_against_sort(out, targets, neighbors)


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


@pytest.mark.parametrize("id_bound", [10_000, 12_345, 1 << 20])
def test_id_bound_sizes_the_table_and_keeps_the_contract(id_bound):
    """A graph of N nodes bounds the distinct ids of any hop: the table is sized by min(inputs, N),
    and the output is still the reference's, in the order that table size gives."""
    g = np.random.default_rng(id_bound)
    targets, neighbors = g.choice(10_000, 400, replace=False), g.integers(0, 10_000, 60_000)
    out = HashAppendUnique("cpu").append_unique(torch.as_tensor(targets), torch.as_tensor(neighbors),
                                                id_bound=id_bound)
    check_against_sort(out, targets, neighbors)
    ru, rl, rd = ref.hash_unique_order(targets, neighbors, id_bound)
    assert np.array_equal(out[0].numpy(), ru) and np.array_equal(out[1].numpy(), rl)
    assert np.array_equal(out[2].numpy(), rd)
    unbounded = ref.hash_unique_order(targets, neighbors)[0]
    if id_bound < 30_000:      # a smaller table than the inputs' numbers new nodes in another order
        assert not np.array_equal(unbounded, ru)


def test_broken_id_bound_raises_instead_of_spinning():
    t, n = torch.arange(3), torch.arange(1000, 1300)
    unique = HashAppendUnique("cpu")
    with pytest.raises(HarnessError, match="not below id_bound 5"):
        unique.append_unique(t, n, id_bound=5)
    with pytest.raises(HarnessError, match="table full"):      # 303 distinct ids in 64 slots
        unique.append_unique(t, n, id_bound=5, check=False)


@pytest.mark.parametrize("name,targets,neighbors", CASES, ids=[c[0] for c in CASES])
def test_dense_append_equals_sort_exactly(name, targets, neighbors):
    """New nodes in ascending id, as the sort reference numbers them: the outputs are identical."""
    t, n = torch.as_tensor(targets), torch.as_tensor(neighbors)
    if name == "large ids":       # one slot per id: ids near 2^62 have no table
        with pytest.raises(HarnessError, match="dense_append needs ids below"):
            DenseAppendUnique("cpu").append_unique(t, n)
        return
    out = DenseAppendUnique("cpu").append_unique(t, n)
    check_against_sort(out, targets, neighbors)
    for x, y in zip(out, SortUnique("cpu").append_unique(t, n)):
        assert torch.equal(x, y)


def test_dense_append_id_bound():
    g = np.random.default_rng(5)
    t, n = torch.as_tensor(g.choice(3000, 50, replace=False)), torch.as_tensor(g.integers(0, 3000, 900))
    bounded = DenseAppendUnique("cpu").append_unique(t, n, id_bound=3000)
    for x, y in zip(bounded, SortUnique("cpu").append_unique(t, n)):
        assert torch.equal(x, y)
    with pytest.raises(HarnessError, match="not below id_bound 100"):
        DenseAppendUnique("cpu").append_unique(t, n, id_bound=100)
    with pytest.raises(HarnessError, match="table full"):
        DenseAppendUnique("cpu").append_unique(t, n, id_bound=100, check=False)
