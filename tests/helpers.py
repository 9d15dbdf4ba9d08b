"""Hand-written run directories and rows, shaped like what the harness stores."""

from __future__ import annotations

import json
import os
from pathlib import Path

H200_MANIFEST = {
    "hardware": "2xH200",
    "status": "complete",
    "command": "harness run wholegraph.table1",
    "gpus": {
        "count": 2,
        "driver": "580.95.05",
        "devices": [
            {"index": 0, "name": "NVIDIA H200", "memory_bytes": 150 * 2**30, "capability": "9.0",
             "multiprocessors": 132},
            {"index": 1, "name": "NVIDIA H200", "memory_bytes": 150 * 2**30, "capability": "9.0",
             "multiprocessors": 132},
        ],
        "topology": {"gpus": ["GPU0", "GPU1"], "matrix": [["X", "NV18"], ["NV18", "X"]]},
    },
    "software": {"cuda": "13.0", "torch": "2.11.0+cu130", "nccl": "2.28.9", "python": "3.12.3"},
    "git": {"commit": "0123456789abcdef", "dirty": False},
}

CPU_MANIFEST = {
    "hardware": "cpu",
    "status": "complete",
    "gpus": {"count": 0, "devices": []},
    "host": {"cpu_model": "Test CPU", "cpu_count": 2},
    "software": {"torch": "2.13.0+cpu"},
    "git": {"commit": "fedcba9876543210", "dirty": True},
}


CLEAN_CPU_MANIFEST = {**CPU_MANIFEST, "git": {"commit": "fedcba9876543210", "dirty": False}}


def stats_for(median: float, spread: float = 0.0, repeats: int = 5) -> dict:
    return {"repeats": repeats, "median": median, "min": median - spread, "max": median + spread,
            "p10": median - spread, "p90": median + spread, "mean": median, "std": spread / 2}


def row(impl: str, value: float | None, *, experiment: str = "wholegraph.table1",
        params: dict | None = None, metric: str = "latency", unit: str = "us", better: str = "lower",
        spread: float = 0.0, status: str = "ok", reason: str | None = None, world_size: int = 1,
        device: str = "cpu", stats: dict | None = None, extra: dict | None = None) -> dict:
    r = {
        "experiment": experiment, "impl": impl, "params": dict(params or {}), "metric": metric,
        "unit": unit, "better": better, "value": value,
        "stats": stats if stats is not None else (stats_for(value, spread) if value is not None else None),
        "world_size": world_size, "device": device, "status": status,
        "time": "2026-11-21T00:00:00+00:00",
    }
    if reason is not None:
        r["reason"] = reason
    if extra is not None:
        r["extra"] = extra
    return r


def table1_row(impl: str, size_gb: float, value: float | None, *, gpus: int = 2, scale: float = 1.0,
               status: str = "ok", reason: str | None = None, device: str = "cuda") -> dict:
    params = {"paper_size_gb": float(size_gb), "size_gb": round(size_gb * scale, 6), "gpus": gpus}
    if status == "ok":
        params.update(steps=100_000, placement="test")
    return row(impl, value, params=params, status=status, reason=reason, world_size=gpus,
               device=device)


def write_run(root: Path, name: str, manifest: dict, rows: list[dict]) -> Path:
    """A run directory ``root/name`` with a manifest and one JSON line per row."""
    path = Path(root) / name
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({**manifest, "run_id": name}, indent=2))
    (path / "rows.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return path


def h200_table1_rows(um_128_refused: bool = False) -> list[dict]:
    """UM ~15x P2P at every size (numbers in the range measured on our H200s)."""
    values = {8: (17.5, 1.15, 0.49), 16: (18.0, 1.16, 0.50), 32: (18.5, 1.17, 0.51)}
    rows = []
    for size, (um, p2p, local) in values.items():
        rows += [table1_row("um", size, um), table1_row("p2p", size, p2p),
                 table1_row("local", size, local), table1_row("host_zero_copy", size, 1.9)]
    if um_128_refused:
        rows += [table1_row("um", 128, None, status="skipped",
                            reason="refused: 128 GB of managed memory exceeds 90% of GPU0's free 139.0 GB"),
                 table1_row("p2p", 128, 1.2), table1_row("local", 128, 0.55)]
    return rows


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie, dead but not yet reaped, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "zombie" not in fh.read()
    except FileNotFoundError:
        return False


class SharedLaunch:
    """The rank-side checks of a test module in one launch per world size.

    ``calls``: ``{world_size: {name: (fn, args)}}``, every ``fn(ctx, *args)`` a module-level rank
    function. The first test that asks for a world size launches all of that size's calls
    (tests.launch_targets.run_calls); each test then takes its call's per-rank results by name, or
    the launch's error; a call its ranks skipped together (SkipPoint) skips its test. Keep it in a
    module-scoped fixture, and run xdist with ``--dist loadfile`` so that a module's tests share
    one worker and so one launch."""

    def __init__(self, calls: dict[int, dict[str, tuple]], *, device: str = "cpu", timeout_s: float = 600):
        self.calls = {world: dict(named) for world, named in calls.items()}
        self.device, self.timeout_s = device, timeout_s
        self.launches = 0
        self._done: dict[int, object] = {}

    def __call__(self, world: int, name: str) -> list:
        from harness.launcher import launch

        from .launch_targets import SKIPPED, run_calls

        named = self.calls.get(world, {})
        if name not in named:
            raise KeyError(f"{name!r} on {world} ranks is not among the shared calls ({sorted(named)}); add it")
        if world not in self._done:
            self.launches += 1
            try:
                self._done[world] = launch(run_calls, (list(named.values()),), world_size=world,
                                           device=self.device, timeout_s=self.timeout_s)
            except Exception as exc:            # every test of this launch reports the same failure
                self._done[world] = exc
        done = self._done[world]
        if isinstance(done, Exception):
            raise done
        mine = [per_rank[list(named).index(name)] for per_rank in done]
        skipped = {r[SKIPPED] for r in mine if isinstance(r, dict) and SKIPPED in r}
        if skipped:
            import pytest

            pytest.skip(" | ".join(sorted(skipped)))
        return mine


def stored_report(experiment_id: str, run_dirs) -> tuple:
    """``experiment_id``'s artifact from stored runs and figlint's problems with its table and
    figure (the figure closed after the lint)."""
    import matplotlib.pyplot as plt

    from harness import registry
    from harness.artifact import RunInfo
    from harness.figlint import figure_problems, table_problems
    from harness.report import rows_frame
    from harness.store import load_run

    stored = [load_run(d) for d in run_dirs]
    art = registry.get_experiment(experiment_id).report(rows_frame(stored), [RunInfo.from_stored(s) for s in stored])
    problems = table_problems(art.table) + (figure_problems(art.figure) if art.figure is not None else [])
    if art.figure is not None:
        plt.close(art.figure)
    return art, problems


def one_rank_rows(exp, cfg, ctx) -> list[dict]:
    """``exp``'s rows of ``cfg`` measured in this process on the one rank ``ctx``: a point needing
    more ranks is left out, one the plan skips keeps its skipped row; every measured row is ok."""
    from harness import runner
    from harness.experiment import RunContext

    rows = []
    for point in exp.points(cfg):
        reason = runner.impl_skip_reason(exp, point, cfg)
        if reason:
            rows.append(runner.make_row(exp, point, cfg, None, "skipped", reason))
        elif point.world_size == 1:
            got = runner.run_one_point(exp, point, RunContext(cfg, ctx))
            assert all(r["status"] == "ok" for r in got), got
            rows += got
    return rows


def assert_refuses_out_of_range(call, ids, what: str) -> None:
    """``call(ids)`` raises the harness's "out of range" error (the ids hold one outside the table)."""
    from harness.errors import HarnessError

    try:
        call(ids)
    except HarnessError as exc:
        assert "out of range" in str(exc)
    else:
        raise AssertionError(f"an out-of-range id was {what}")
