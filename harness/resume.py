"""``run --resume RUN_DIR``: a campaign taken up where an earlier sitting left it.

A run may be resumed on the same hardware with the same settings only (its rows would otherwise
mix machines or configurations in one table); the refusal names what differs. The resumed run
records each sitting (its start, end, status, command and commit) in its manifest; each row keeps
the commit it was measured on (``commit``), and the run's ``git`` names every commit its rows
came from.
"""

from __future__ import annotations

from pathlib import Path

from .envinfo import REPO_ROOT
from .errors import HarnessError
from .store import StoredRun, git_of, load_run, run_status, withdrawn_reason

# manifest config keys that change what a point measures (the time budget and --impl do not:
# a sitting may take another budget, or add implementations)
SETTINGS = ("device", "world_size", "quick", "seed", "warmup", "repeats", "params", "launch_per_point")


def open_run(path: Path | str) -> StoredRun:
    """The run to resume, refused where it cannot be appended to."""
    run = load_run(path)
    name = run.path.name
    status = run_status(run.manifest)
    if status == "running":
        raise HarnessError(f"cannot resume {name}: it is still running (its process is alive)")
    if withdrawn_reason(run.path):
        raise HarnessError(f"cannot resume {name}: it is withdrawn ({withdrawn_reason(run.path)})")
    if run.path.resolve().parent == (REPO_ROOT / "results").resolve():
        raise HarnessError(f"cannot resume {name}: committed reference runs are never rewritten; resume the run "
                           "under runs/ it was promoted from, then promote it again")
    if not run.manifest.get("config"):
        raise HarnessError(f"cannot resume {name}: its manifest records no settings to check against")
    return run


def differences(stored: dict, now: dict) -> list[str]:
    """What differs between a stored run's manifest and this sitting's, as short phrases:
    the hardware (machine kind, GPU models, and the CPU model for CPU runs) and the settings."""
    out = []
    if stored.get("hardware") != now.get("hardware"):
        out.append(f"hardware {stored.get('hardware')} there, {now.get('hardware')} here")
    gpus = lambda m: [d.get("name") for d in (m.get("gpus") or {}).get("devices", [])]  # noqa: E731
    if stored.get("hardware") == now.get("hardware") and gpus(stored) != gpus(now):
        out.append(f"GPUs {', '.join(map(str, gpus(stored))) or 'none'} there, {', '.join(map(str, gpus(now))) or 'none'} here")
    old_cfg, new_cfg = stored.get("config") or {}, now.get("config") or {}
    if new_cfg.get("device") == "cpu":
        cpu = lambda m: (m.get("host") or {}).get("cpu_model")   # noqa: E731
        if cpu(stored) != cpu(now):
            out.append(f"CPU {cpu(stored)} there, {cpu(now)} here")
    for key in SETTINGS:
        if key in old_cfg and old_cfg.get(key) != new_cfg.get(key):
            out.append(f"{key} {_show(old_cfg.get(key))} there, {_show(new_cfg.get(key))} here")
    old_scale, new_scale = old_cfg.get("scale") or {}, new_cfg.get("scale") or {}
    for exp_id in sorted(set(old_scale) & set(new_scale)):
        if old_scale[exp_id] != new_scale[exp_id]:
            out.append(f"{exp_id} scale {_show(old_scale[exp_id])} there, {_show(new_scale[exp_id])} here")
    return out


def _show(value) -> str:
    if value is None:
        return "default"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={v}" for k, v in sorted(value.items())) + "}" if value else "none"
    return str(value)


def check(run: StoredRun, manifest: dict) -> None:
    found = differences(run.manifest, manifest)
    if found:
        raise HarnessError(f"cannot resume {run.path.name} here: " + "; ".join(found))


def sitting(manifest: dict) -> dict:
    """This sitting as the manifest's ``sittings`` records it."""
    config = manifest.get("config") or {}
    return {k: v for k, v in {
        "start": manifest.get("start"), "command": manifest.get("command"), "git": manifest.get("git"),
        "time_budget_s": config.get("time_budget_s"), "impls": config.get("impls"),
    }.items() if v is not None}


def merged(run: StoredRun, manifest: dict, experiments: list[str]) -> dict:
    """The manifest fields a resumed run updates: its experiments (the earlier ones and this
    sitting's), its sittings, and its git state over every sitting (``commits`` where they differ)."""
    old = run.manifest
    sittings = list(old.get("sittings") or [{k: v for k, v in {
        "start": old.get("start"), "end": old.get("end"), "status": old.get("status"),
        "command": old.get("command"), "git": old.get("git")}.items() if v is not None}])
    sittings.append(sitting(manifest))
    commits = list(dict.fromkeys((s.get("git") or {}).get("commit") for s in sittings))
    git = dict(manifest.get("git") or {})
    git["dirty"] = git_of({"git": git, "sittings": sittings}).get("dirty")
    if len([c for c in commits if c]) > 1:
        git["commits"] = [c for c in commits if c]
    return {"experiments": list(dict.fromkeys(list(old.get("experiments") or []) + experiments)),
            "sittings": sittings, "git": git}


def row_commit(row: dict, manifest: dict) -> str | None:
    """The commit a row was measured on: its own ``commit``, else its run's first sitting's."""
    if row.get("commit"):
        return row["commit"]
    first = (manifest.get("sittings") or [{}])[0].get("git") or manifest.get("git") or {}
    return first.get("commit")
