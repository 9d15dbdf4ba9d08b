"""The stand-in generation report: each machine's newest run against the targets, every run in the
history."""

from __future__ import annotations

import pandas as pd

from harness import registry
from harness.artifact import RunInfo
from tests.helpers import row


def _rows(seconds: float, rss: float) -> list[dict]:
    params = {"dataset": "ogbn-products", "scale": 1.0, "backend": "cpu"}
    extra = {"nodes": 2449029, "stored_edges": 123718280, "target_edges": 123718280, "features": "cached"}
    return [row("standin", seconds, experiment="datasets.generation", metric="seconds", unit="s", params=params,
                extra=extra),
            row("standin", rss, experiment="datasets.generation", metric="peak_rss", unit="GiB", params=params)]


def test_the_newest_run_of_a_machine_decides_and_every_run_is_history():
    old, new = RunInfo("0001_cpu", "cpu", {}), RunInfo("0002_cpu", "cpu", {})
    frame = pd.DataFrame.from_records([{**r, "run_id": info.run_id, "hardware": "cpu"} for info, rows in
                                       ((old, _rows(90.0, 8.0)), (new, _rows(25.0, 1.7))) for r in rows])
    art = registry.get_experiment("datasets.generation").report(frame, [old, new])
    # the targets are the harness's own, not a paper's claim: no verdict, the headline says met or missed
    assert list(art.table["Seconds"]) == [25.0] and art.status == "measured"
    assert art.headline.startswith("cpu: ogbn-products x1.0 on cpu 25.0 s") and art.headline.endswith(": met)")
    assert list(art.history["run"]) == ["0001", "0002"] and "0001_cpu" not in art.caption
    # the older run alone misses the targets: the verdict reads the runs shown
    alone = registry.get_experiment("datasets.generation").report(frame[frame["run_id"] == "0001_cpu"], [old])
    assert alone.status == "measured" and alone.headline.endswith(": missed)")
