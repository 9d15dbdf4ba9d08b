"""What a GPU's used memory (nvidia-smi's view) is made of: the pipelines' device_used_parts, the
fullest rank's parts in WholeGraph's rows and Table IV's note on them (on the CPU: the CUDA and NVML
calls are stood in for)."""

from __future__ import annotations

import pytest
import torch

GIB = 1 << 30


@pytest.fixture
def fake_cuda(monkeypatch):
    values = {"memory_allocated": 3 * GIB, "memory_reserved": 9 * GIB, "max_memory_allocated": 4 * GIB,
              "max_memory_reserved": 10 * GIB}
    for name, value in values.items():
        monkeypatch.setattr(torch.cuda, name, lambda device=None, v=value: v)
    return values


@pytest.mark.parametrize("own_listed", [True, False])
def test_device_used_parts(monkeypatch, fake_cuda, own_listed):
    import os

    from impls.pipelines import base

    me = os.getpid() if own_listed else 999_999
    procs = [{"pid": me, "used_bytes": 11 * GIB, "own": own_listed},
             {"pid": 2, "used_bytes": GIB // 2, "own": False}, {"pid": 3, "used_bytes": GIB // 2, "own": False}]
    monkeypatch.setattr("impls.core.nvml.device_processes", lambda device: procs)
    parts = base.device_used_parts(torch.device("cuda", 0), 12 * GIB)
    assert parts["reserved"] == 9 * GIB and parts["max_allocated"] == 4 * GIB and parts["processes"] == 3
    assert parts["others_bytes"] == GIB and parts["other_processes"] == 2
    assert parts["own_bytes"] == (11 * GIB if own_listed else None)
    monkeypatch.setattr("impls.core.nvml.device_processes", lambda device: None)
    assert "processes" not in base.device_used_parts(torch.device("cuda", 0), 12 * GIB)


def test_fullest_rank_gives_the_parts():
    from experiments.wholegraph.training import fullest

    assert fullest([{"used": 5}, {"used": 9}, None, {"used": 9}]) == {"used": 9, "rank": 1}
    assert fullest([None, None]) is None


def test_table4_note_adds_up_the_device_used():
    from experiments.wholegraph.table4 import used_parts_note

    parts = {"used": 20 * GIB, "allocated": 3 * GIB, "reserved": 12 * GIB, "max_allocated": 4 * GIB,
             "max_reserved": 13 * GIB, "processes": 4, "own_bytes": 18 * GIB, "others_bytes": 2 * GIB,
             "other_processes": 3, "rank": 2}
    rec = {"key": {"impl": "wholegraph"}, "extra": {"memory_total": {"device_used_parts": parts}}}
    note = used_parts_note(rec, "4xH200")
    assert "device used 20.0 GiB on rank 2's GPU = torch's caching allocator 12.0 GiB reserved" in note
    assert "+ 6.0 GiB of this process outside that allocator" in note
    assert "+ 2.0 GiB of 3 other processes on this GPU" in note
    assert used_parts_note({"key": {"impl": "wholegraph"}, "extra": {"memory_total": {}}}, "x") == ""
