"""Multi-node entry point: the same CLI under torchrun, one process per rank; torchrun's nodes (two node
processes on localhost), per-point timeouts and ranks that die with their agent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.store import load_run

REPO = Path(__file__).resolve().parents[1]


def test_spawned_experiment_under_torchrun_writes_one_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("HARNESS_SPAWNED", None)
    env.pop("HARNESS_SHM_PREFIX", None)    # each torchrun node names its own (harness.shm.node_prefix)
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


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


def _env(tmp_path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "HARNESS_SHM_DIR": str(tmp_path / "shm")}
    env.pop("HARNESS_SPAWNED", None)
    env.pop("HARNESS_SHM_PREFIX", None)    # each torchrun node names its own (harness.shm.node_prefix)
    (tmp_path / "shm").mkdir(exist_ok=True)
    return env


def test_two_torchrun_nodes_read_each_others_rows_through_nccl_never_shared_memory(tmp_path):
    """2 nodes x 1 rank (two torchrun node processes, c10d rendezvous on localhost): the ranks find
    themselves on two nodes of one host; the rows of the other node come through the NCCL path
    (gloo here) and equal the closed form; a store without node awareness cannot even open the
    other node's file (each node has its own shared-memory prefix)."""
    from harness.launcher import free_port

    env = _env(tmp_path)
    endpoint = f"127.0.0.1:{free_port()}"
    cmd = _torchrun("--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                    "--rdzv-id", "nodes-test", "--max-restarts", "0", str(REPO / "tests" / "torchrun_nodes.py"),
                    str(tmp_path))
    nodes = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(2)]
    logs = [p.communicate(timeout=300)[0] for p in nodes]
    assert [p.returncode for p in nodes] == [0, 0], "\n".join(log[-2000:] for log in logs)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert sorted(r["node"] for r in results) == [0, 1] and {r["nodes"] for r in results} == {2}
    assert results[0]["topology"]["label"] == "2 nodes x 1 CPU rank, emulated nodes (one host)"
    for rank, r in enumerate(results):
        other = 1 - rank
        aware = r["true"]
        assert aware["from_other_nodes_mapped"] == {} and aware["mapped"][other] == 0
        assert aware["nccl"] == [0, r["asked"][1]] if rank == 0 else aware["nccl"] == [r["asked"][0], 0]
        assert aware["mapped"][rank] == r["asked"][rank] and aware["nccl"][other] > 0
        # the store of one node: it maps every rank's file, and the other node's is not there to map
        assert "FileNotFoundError" in r["false"]["error"], r["false"]
    assert not any((tmp_path / "shm").iterdir())


LIFE = REPO / "tests" / "lifecycle_run.py"


def _life_run(tmp_path, *params: str) -> list[str]:
    args = _torchrun("--standalone", "--nproc-per-node", "2", str(LIFE), "run", "zzlife.steps", "--device", "cpu",
                     "--out", str(tmp_path / "out"), "--no-report", "--timeout", "5",
                     "--param", f"pid_dir={tmp_path / 'pids'}", "--param", "shm=on")
    for p in params:
        args += ["--param", p]
    (tmp_path / "pids").mkdir(exist_ok=True)
    return args


def test_under_torchrun_a_point_past_the_timeout_names_the_rank_and_where_it_was(tmp_path):
    """As under the harness's launcher (tests/test_lifecycle.py): rank 1 sleeps in point 1 while rank 0
    waits for it; rank 0 reads rank 1's state from the job's store, stores the error row naming rank 1
    and where it was, the skipped row of the point after it, a failed manifest, and ends the job."""
    proc = subprocess.run(_life_run(tmp_path, "points=3", "sleep=600", "sleep_point=1", "sleep_rank=1"),
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    (run,) = [p for p in (tmp_path / "out").iterdir() if (p / "rows.jsonl").exists()]
    by_point = {r["params"]["i"]: r for r in load_run(run).rows}
    assert [by_point[i]["status"] for i in range(3)] == ["ok", "error", "skipped"], proc.stderr[-3000:]
    named = "rank 1 was still in point step i=1 after 5 s (--timeout) (at tests/lifecycle_targets.py:"
    assert by_point[1]["reason"].startswith(named) and "in run_point)" in by_point[1]["reason"]
    assert by_point[2]["reason"].startswith(f"not reached: {named}")
    assert load_run(run).manifest["status"] == "failed"
    assert f"error: {named}" in proc.stdout + proc.stderr
    assert not any((tmp_path / "shm").iterdir())


def test_under_torchrun_the_ranks_die_with_their_agent(tmp_path):
    """SIGKILL to the torchrun agent while both ranks sleep in a point: the ranks end too (their
    parent is gone), and their shared-memory files go with them."""
    from .helpers import pid_alive

    proc = subprocess.Popen(_life_run(tmp_path, "points=3", "sleep=600", "sleep_point=1"), cwd=tmp_path,
                            env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = tmp_path / "pids"
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (len(list(pids.glob("rank*.pid"))) == 2
                                                   and len(list((tmp_path / "shm").iterdir())) == 2):
            time.sleep(0.2)
        ranks = [int(p.read_text()) for p in pids.glob("rank*.pid")]
        assert len(ranks) == 2, "the ranks never reached their point"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (any(pid_alive(pid) for pid in ranks) or any((tmp_path / "shm").iterdir())):
        time.sleep(0.2)
    assert not any(pid_alive(pid) for pid in ranks), "a rank outlived its torchrun agent"
    assert not any((tmp_path / "shm").iterdir())


def test_fig13_trains_on_two_torchrun_nodes_and_says_they_are_emulated(tmp_path):
    """wholegraph.fig13 on 2 nodes x 1 CPU rank (two node processes on localhost): a replica per node,
    DDP over both ranks; its row and the run's manifest say the nodes were emulated on one host."""
    from harness.launcher import free_port

    env = _env(tmp_path)
    endpoint = f"127.0.0.1:{free_port()}"
    cmd = _torchrun("--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                    "--rdzv-id", "fig13-test", "--max-restarts", "0", "-m", "harness", "run", "wholegraph.fig13",
                    "--device", "cpu", "--quick", "--param", "datasets=ogbn-papers100M", "--param", "models=sage",
                    "--param", "max_edges=2e5", "--param", "max_batches=2", "--param", "eval_nodes=64",
                    "--param", "warmup_batches=0", "--out", str(tmp_path / "out"), "--no-report")
    nodes = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(2)]
    logs = [p.communicate(timeout=600)[0] for p in nodes]
    assert [p.returncode for p in nodes] == [0, 0], "\n".join(log[-2000:] for log in logs)
    (run,) = [p for p in (tmp_path / "out").iterdir() if (p / "rows.jsonl").exists()]
    stored = load_run(run)
    (epoch,) = [r for r in stored.rows if r["metric"] == "epoch_time"]
    assert epoch["status"] == "ok" and epoch["world_size"] == 2
    assert (epoch["params"]["nodes"], epoch["params"]["ranks_per_node"]) == (2, 1)
    label = "2 nodes x 1 CPU rank, emulated nodes (one host)"
    assert epoch["extra"]["topology"]["label"] == label and stored.manifest["topology"]["label"] == label
    assert epoch["extra"]["components"]["nodes"].startswith(f"{label}: a replica of the graph and the features per node")
    assert "1 ranks x" in epoch["extra"]["components"]["gather"]          # each node's store: its one rank
