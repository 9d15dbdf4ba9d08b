"""Across nodes a rank maps only its own node's shards, and the rows of other nodes come through
the NCCL path (gloo on CPU ranks): checked on nodes emulated in one launch of the harness, where
every rank could map every file (tests/test_torchrun.py runs real torchrun nodes)."""

from __future__ import annotations

from harness.launcher import launch

from .targets import reads_across_nodes

NODES = [0, 0, 1]          # node 0: ranks 0 and 1; node 1: rank 2


def test_other_nodes_rows_come_through_nccl_and_a_store_without_node_awareness_is_caught():
    results = launch(reads_across_nodes, (NODES, [True, False], 1001, 7, 400, 5), world_size=3, device="cpu",
                     timeout_s=120)
    for rank, r in enumerate(results):
        assert r["nodes"] == 2 and r["node"] == NODES[rank] and r["local_world_size"] == NODES.count(NODES[rank])
        same = [o for o in range(3) if NODES[o] == NODES[rank]]
        other = [o for o in range(3) if NODES[o] != NODES[rank]]
        aware = r[True]
        assert aware["from_other_nodes_mapped"] == {}
        assert [aware["mapped"][o] for o in other] == [0] * len(other)
        assert [aware["nccl"][o] for o in other] == [r["asked"][o] for o in other]
        assert sum(aware["nccl"]) == sum(r["asked"][o] for o in other) > 0     # and nothing else went through NCCL
        assert [aware["mapped"][o] for o in same] == [r["asked"][o] for o in same]
        assert "other nodes' rows through NCCL" in aware["describe"]
        # must fail: the single-node store maps every rank's file (one host here), so the other
        # node's rows are served from host shared memory, and the check names their owners
        blind = r[False]
        assert sorted(blind["from_other_nodes_mapped"]) == other
        assert sum(blind["nccl"]) == 0 and "not node aware" in blind["describe"]
