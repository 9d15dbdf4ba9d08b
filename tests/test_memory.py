"""Admission rules: refuse a point (as a skipped row) rather than over-commit memory."""

from __future__ import annotations

import json
import re


from harness import cli
from harness.store import load_run
from impls.probes import memory

GB = 1 << 30


def numbers(text: str) -> set[float]:
    return {float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)}


# --- managed memory -------------------------------------------------------------------

def test_um_fits():
    assert memory.um_refusal(8 * GB, [140 * GB, 140 * GB]) is None
    assert memory.um_refusal(64 * GB, [140 * GB, 140 * GB]) is None
    assert memory.um_refusal(1, [1 * GB]) is None


def test_um_refused_beyond_90_percent_of_the_chasing_gpu():
    reason = memory.um_refusal(128 * GB, [139 * GB, 139 * GB])
    assert reason is not None and reason.startswith("refused")
    assert "128 GB" in reason and "139.0 GB" in reason and "90%" in reason
    assert "managed" in reason


def test_um_boundary_is_the_headroom():
    free = 100 * GB
    assert memory.um_refusal(int(0.9 * free) - (1 << 20), [free]) is None
    assert memory.um_refusal(int(0.9 * free) + (1 << 20), [free]) is not None
    assert memory.um_refusal(60 * GB, [free], headroom=0.5) is not None
    assert memory.um_refusal(40 * GB, [free], headroom=0.5) is None


def test_um_refused_when_a_partition_exceeds_its_gpu():
    # the whole fits on the chasing GPU0 (100 < 180), but GPU1's half (50) exceeds 90% of 40
    reason = memory.um_refusal(100 * GB, [200 * GB, 40 * GB])
    assert reason is not None and "partition" in reason
    assert "GPU1" in reason and "50.0 GB" in reason and "40.0 GB" in reason
    # the same partition fits a GPU with 60 GB free (50 < 54)
    assert memory.um_refusal(100 * GB, [200 * GB, 60 * GB]) is None


def test_um_checks_the_chasing_gpu_it_is_told():
    free = [10 * GB, 200 * GB]
    # chased from GPU1: the whole fits there, but GPU0's partition (50 GB) does not fit in 10
    reason = memory.um_refusal(100 * GB, free, chase_gpu=1)
    assert reason is not None and "partition" in reason and "GPU0" in reason
    # chased from GPU0 with 10 GB free: the whole allocation is refused first
    reason = memory.um_refusal(100 * GB, free, chase_gpu=0)
    assert reason is not None and "100 GB" in reason and "10.0 GB" in reason


def test_um_degenerate_inputs():
    assert memory.um_refusal(0, [GB]) is not None
    assert memory.um_refusal(-5, [GB]) is not None
    assert memory.um_refusal(GB, []) is not None


def test_um_refusal_message_keeps_the_requested_size():
    reason = memory.um_refusal(int(0.4 * GB), [int(0.3 * GB)])
    assert reason is not None
    assert "0.4" in reason, reason


# --- device and host memory -----------------------------------------------------------

def test_device_refusal():
    assert memory.device_refusal(64 * GB, [140 * GB]) is None
    assert memory.device_refusal(128 * GB, [70 * GB, 70 * GB]) is None  # 64 per GPU < 67.9
    reason = memory.device_refusal(100 * GB, [200 * GB, 40 * GB])
    assert reason is not None and "GPU1" in reason
    assert {50.0, 40.0} <= numbers(reason) and "97%" in reason
    assert memory.device_refusal(96 * GB, [100 * GB]) is None   # 96 < 97
    assert memory.device_refusal(98 * GB, [100 * GB]) is not None


def test_host_refusal_by_availability():
    assert memory.host_refusal(10 * GB, 24 * GB) is None
    reason = memory.host_refusal(20 * GB, 24 * GB)              # 20 > 0.75 * 24
    assert reason is not None and "20.00 GB" in reason and "24.0 GB" in reason and "75%" in reason


def test_host_refusal_by_explicit_cap():
    reason = memory.host_refusal(40 * GB, 1024 * GB, cap_bytes=32 * GB)
    assert reason is not None and "32 GB" in reason and "host_max_gb" in reason
    assert memory.host_refusal(32 * GB, 1024 * GB, cap_bytes=32 * GB) is None
    # the cap is checked before availability, and both apply
    assert "capped" in memory.host_refusal(40 * GB, 8 * GB, cap_bytes=32 * GB)
    assert "available" in memory.host_refusal(20 * GB, 8 * GB, cap_bytes=32 * GB)


def test_host_cap_message_keeps_a_fractional_cap():
    reason = memory.host_refusal(GB, 1024 * GB, cap_bytes=GB // 2)
    assert reason is not None and "0.5" in reason, reason


# --- through the experiment, on a CPU-only run ----------------------------------------

def test_um_on_cpu_is_a_skipped_row_mentioning_cuda(tmp_path, capsys):
    code = cli.main(["run", "wholegraph.table1", "--device", "cpu", "--impl", "um",
                     "--param", "sizes_gb=8,16", "--scale", "0.001", "--out", str(tmp_path)])
    assert code == 0
    (run_dir,) = list(tmp_path.iterdir())
    run = load_run(run_dir)
    assert len(run.rows) == 2
    for r in run.rows:
        assert r["impl"] == "um" and r["status"] == "skipped" and r["value"] is None
        assert "cuda" in r["reason"].lower()
        assert r["metric"] == "latency" and r["unit"] == "us"
    assert run.manifest["status"] == "complete"
    assert run.manifest["counts"] == {"ok": 0, "skipped": 2, "error": 0}
    out, err = capsys.readouterr()
    assert "0 ok, 2 skipped, 0 errors" in out
    assert "Traceback" not in err


def test_cpu_local_refuses_more_host_memory_than_available(tmp_path, monkeypatch, capsys):
    import collections

    import psutil

    fake = collections.namedtuple("vm", "total available percent used free")(
        1 << 20, 1 << 20, 99.0, 0, 1 << 20)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: fake)
    code = cli.main(["run", "wholegraph.table1", "--device", "cpu", "--impl", "local",
                     "--param", "sizes_gb=8", "--scale", "0.001", "--repeats", "1", "--warmup", "0",
                     "--no-report", "--out", str(tmp_path)])
    (run_dir,) = list(tmp_path.iterdir())
    (r,) = load_run(run_dir).rows
    assert r["status"] == "skipped" and "host memory" in r["reason"], json.dumps(r)
    assert code == 0
