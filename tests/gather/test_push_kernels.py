"""The push gather's kernels and the bulk-copy pull kernel, run on the CPU by the CUDA emulator.

Several ranks are simulated in one process: each has a shard of the closed-form table and a
workspace laid out as on a GPU (counts, inbox, output buffer), every rank's kernels get the host
addresses of all of them as they get peer addresses on GPUs. Every rank posts its requests, then
every rank pushes the rows asked of it; each output must equal the closed form of its ids.
"""

from __future__ import annotations

import pytest
import torch

from impls.core.layout import RowPartition, closed_form_rows
from impls.core.row_gather import gather_into, parse_launch
from impls.gather.p2p_push import WorkspaceLayout, effective_mode, post_requests, push_rows
from tests.sampling import emu

if emu.available():
    pytest.skip(emu.available(), allow_module_level=True)

LAUNCH = parse_launch("2x64u2")


@pytest.fixture(autouse=True)
def emulator():
    with emu.installed():
        yield


class SimulatedRanks:
    """``world`` ranks' shards and workspaces in host memory."""

    def __init__(self, num_rows: int, world: int, row_elems: int, capacity: int):
        self.num_rows, self.world, self.row_elems, self.capacity = num_rows, world, row_elems, capacity
        self.rpp = RowPartition(num_rows, world).rows_per_rank
        self.shards = []
        for r in range(world):
            lo, hi = min(r * self.rpp, num_rows), min((r + 1) * self.rpp, num_rows)
            shard = torch.full((self.rpp, row_elems), -1.0)                 # a short last shard's tail poisoned
            shard[: hi - lo] = closed_form_rows(torch.arange(lo, hi), row_elems, torch.float32)
            self.shards.append(shard)
        self.layout = WorkspaceLayout(world, capacity, row_elems * 4)
        self.ws = [torch.zeros(self.layout.nbytes, dtype=torch.uint8) for _ in range(world)]
        for w in self.ws:                                              # outputs poisoned, as on a GPU
            self.out(w)[:] = -7.0
        base = [w.data_ptr() for w in self.ws]
        lay = self.layout
        self.inbox_table = torch.tensor([b + lay.inbox for b in base], dtype=torch.int64)
        self.peer_table = torch.tensor([b + lay.counts for b in base] + [b + lay.out for b in base], dtype=torch.int64)

    def counts(self, w):
        return w[: self.world * 4].view(torch.int32)

    def inbox(self, w):
        lay = self.layout
        return w[lay.inbox: lay.inbox + self.world * self.capacity * 8].view(torch.int64).view(self.world, -1)

    def out(self, w):
        lay = self.layout
        return w[lay.out: lay.out + self.capacity * lay.row_bytes].view(torch.float32).view(self.capacity, -1)

    def gather(self, ids_per_rank: list[torch.Tensor], mode: str) -> list[torch.Tensor]:
        for r, ids in enumerate(ids_per_rank):
            self.counts(self.ws[r]).zero_()
            post_requests(ids, self.rpp, self.world, r, self.capacity, self.inbox_table, self.counts(self.ws[r]))
        for r in range(self.world):
            push_rows(mode, torch.device("cpu"), self.peer_table, self.world, r, self.capacity,
                      self.ws[r].data_ptr() + self.layout.inbox, self.shards[r].data_ptr(), self.layout.row_bytes,
                      LAUNCH)
        return [self.out(self.ws[r])[: ids.numel()].clone() for r, ids in enumerate(ids_per_rank)]


def adversarial_cases(num_rows: int, world: int, rpp: int, seed: int) -> list[torch.Tensor]:
    """Duplicates, all on one owner, nothing, descending over every owner, the edges of every shard."""
    gen = torch.Generator().manual_seed(seed)
    edges = torch.tensor(sorted({num_rows - 1, 0} | {min(num_rows - 1, b) for r in range(world)
                                                      for b in (r * rpp, (r + 1) * rpp - 1)}))
    return [torch.cat([torch.full((70,), 5), torch.randint(0, 9, (60,), generator=gen)]),       # duplicates
            torch.randint(0, rpp, (90,), generator=gen),                                      # all on owner 0
            torch.empty(0, dtype=torch.int64),                                                # nothing
            torch.randint(0, num_rows, (150,), generator=gen).sort(descending=True).values,   # out of order
            edges.flip(0).repeat(3).to(torch.int64)]                                          # the last row


@pytest.mark.parametrize("mode", ["sm", "tma"])
@pytest.mark.parametrize("row_elems", [128, 37, 1])
def test_every_rank_gets_the_rows_of_its_ids(mode, row_elems):
    # 1001 rows over 5 ranks: a short last shard; 37 floats (148 B) are not a 16-byte multiple, so
    # tma runs the sm kernel with 4-byte vectors; 128 floats are one 16-byte vector per lane
    sim = SimulatedRanks(1001, 5, row_elems, capacity=200)
    ids = adversarial_cases(1001, 5, sim.rpp, seed=3)                  # one case per rank
    for r, (got, want) in enumerate(zip(sim.gather(ids, mode), ids)):
        assert torch.equal(got, closed_form_rows(want, row_elems, torch.float32)), f"rank {r}"
    assert effective_mode(mode, row_elems * 4, torch.device("cpu"), LAUNCH) == \
        ("tma" if mode == "tma" and row_elems == 128 else "sm")


def test_the_inboxes_hold_each_request_once_where_its_owner_reads_it():
    sim = SimulatedRanks(600, 3, 8, capacity=400)
    ids = [torch.randint(0, 600, (333,), generator=torch.Generator().manual_seed(r)) for r in range(3)]
    sim.gather(ids, "sm")
    for r, mine in enumerate(ids):
        owner = mine // sim.rpp
        for o in range(3):
            posted = int(sim.counts(sim.ws[r])[o])
            want = sorted(((torch.nonzero(owner == o).squeeze(1) << 32) | (mine[owner == o] - o * sim.rpp)).tolist())
            assert posted == len(want)
            assert sorted(sim.inbox(sim.ws[o])[r, :posted].tolist()) == want


def test_a_second_call_overwrites_the_first_and_a_request_never_posted_is_caught():
    sim = SimulatedRanks(500, 2, 4, capacity=300)
    first = [torch.arange(300), torch.arange(299, -1, -1)]
    second = [torch.tensor([499, 0, 250]), torch.empty(0, dtype=torch.int64)]
    sim.gather(first, "sm")
    got = sim.gather(second, "sm")
    assert torch.equal(got[0], closed_form_rows(second[0], 4, torch.float32)) and got[1].shape == (0, 4)
    # negative control: requests posted but their counts lost before the owners read them: nothing
    # is pushed, rank 0's buffer still holds the second call's rows, and the check sees it
    third = torch.tensor([1, 2, 3])
    post_requests(third, sim.rpp, 2, 0, 300, sim.inbox_table, sim.counts(sim.ws[0]))
    sim.counts(sim.ws[0]).zero_()
    for r in range(2):
        push_rows("sm", torch.device("cpu"), sim.peer_table, 2, r, 300, sim.ws[r].data_ptr() + sim.layout.inbox,
                  sim.shards[r].data_ptr(), 16, LAUNCH)
    stale = sim.out(sim.ws[0])[:3]
    assert torch.equal(stale, got[0]) and not torch.equal(stale, closed_form_rows(third, 4, torch.float32))


@pytest.mark.parametrize("row_elems", [128, 12, 37])
def test_the_bulk_copy_pull_reads_the_rows_of_every_part(row_elems):
    # 12 floats = 48 B rows (16-byte multiple, three vectors); 37 floats fall back to plain loads
    num_rows, world = 1001, 3
    rpp = RowPartition(num_rows, world).rows_per_rank
    shards = [closed_form_rows(torch.arange(r * rpp, (r + 1) * rpp), row_elems, torch.float32) for r in range(world)]
    table = torch.tensor([s.data_ptr() for s in shards], dtype=torch.int64)
    ids = torch.cat(adversarial_cases(num_rows, world, rpp, seed=5)
                    + [torch.randint(0, num_rows, (200,), generator=torch.Generator().manual_seed(2))])
    want = closed_form_rows(ids, row_elems, torch.float32)
    for load in ("bulk", "plain"):
        out = torch.full((ids.numel(), row_elems), -3.0)
        gather_into(out, table, rpp, ids, row_elems * 4, parse_launch("2x64"), load=load)
        assert torch.equal(out, want), load
