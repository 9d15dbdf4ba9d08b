"""Process targets for store tests (module level: spawned processes import them by name)."""

from __future__ import annotations


def create_run_at_barrier(root: str, label: str, barrier) -> str:
    """Wait until every process is ready, then create a run directory: a burst of runs at once."""
    from harness.store import RunStore

    barrier.wait()
    return RunStore.create(root, label, {"label": label}).path.name
