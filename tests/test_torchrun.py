"""Multi-node entry point: the same CLI under torchrun, one process per rank."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.store import load_run

REPO = Path(__file__).resolve().parents[1]


def test_spawned_experiment_under_torchrun_writes_one_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("HARNESS_SPAWNED", None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "harness", "run", "wholegraph.gather", "--device", "cpu", "--quick",
           "--impl", "nccl_alltoallv,p2p_shared", "--param", "row_bytes=128", "--repeats", "2",
           "--warmup", "0", "--out", str(tmp_path), "--no-report"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = [p for p in tmp_path.iterdir() if (p / "rows.jsonl").exists()]
    assert len(runs) == 1, "only rank 0 stores a run"
    rows = load_run(runs[0]).rows
    algbw = [r for r in rows if r["metric"] == "algbw"]
    assert {r["impl"] for r in algbw} == {"nccl_alltoallv", "p2p_shared"}
    assert all(r["status"] == "ok" and r["world_size"] == 2 for r in algbw)
