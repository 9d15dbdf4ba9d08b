"""What a placement report shows (experiments/placement/shown.py): per machine kind the newest run at
the paper's settings, cells it lacks from earlier runs of the same size, smoke runs only where
nothing else exists."""

from __future__ import annotations

import pandas as pd

from experiments.placement.shown import at_paper_settings, shown_rows
from harness import registry
from harness.artifact import RunInfo
from harness.reportkit import Report

EXP = registry.get_experiment("placement.fig10")
CELL = ["impl", "p_topology", "p_buffer", "p_las", "p_mode"]


def _run(run_id, hardware="4xH200", quick=False, **params):
    return RunInfo(run_id, hardware, {"config": {"quick": quick, "params": {k: str(v) for k, v in params.items()}}})


def _rows(run_id, scale, cells):
    return [{"run_id": run_id, "experiment": EXP.id, "impl": impl, "metric": "loading_time", "value": value,
             "status": "ok", "params": {"topology": top, "buffer": "0.1N", "las": False, "mode": "simulated",
                                        "scale": scale}}
            for (impl, top), value in cells.items()]


def _shown(rows, runs):
    return shown_rows(Report(EXP, pd.DataFrame(rows), runs), CELL)


def _cells(shown):
    return {(r.run_id, r.impl, r.p_topology): r.value for r in shown.rows.itertuples(index=False)}


def test_paper_settings_leave_the_method_alone_and_are_no_smoke_run():
    assert at_paper_settings(EXP, _run("0001_a"))
    assert at_paper_settings(EXP, _run("0001_a", topologies="4GPU", buffers="0.1N", batch_sizes="paper"))
    assert at_paper_settings(EXP, _run("0001_a", alpha="auto", las_scale="8"))
    assert not at_paper_settings(EXP, _run("0001_a", quick=True))
    assert not at_paper_settings(EXP, _run("0001_a", alpha="0.5"))
    assert not at_paper_settings(EXP, _run("0001_a", c_cpu_us="3"))


def test_newest_run_per_kind_with_earlier_cells_of_its_size():
    rows = (_rows("0001_a", 0.1, {("naive", "2GPU"): 1.0, ("random", "2GPU"): 2.0, ("random", "4GPU"): 3.0})
            + _rows("0002_b", 0.1, {("random", "2GPU"): 2.5})                    # re-ran one cell
            + _rows("0000_z", 0.01, {("naive", "8GPU"): 9.0})                    # another size, older
            + _rows("0004_d", 0.3, {("random", "2GPU"): 7.0})                    # another kind
            + _rows("0005_e", 0.5, {("random", "2GPU"): 8.0}))                   # a smoke run, newest
    runs = [_run("0000_z"), _run("0001_a"), _run("0002_b", batch_sizes="scaled"), _run("0004_d", "cpu"),
            _run("0005_e", quick=True)]
    shown = _shown(rows, runs)
    assert not shown.smoke
    assert _cells(shown) == {("0001_a", "naive", "2GPU"): 1.0, ("0002_b", "random", "2GPU"): 2.5,
                             ("0001_a", "random", "4GPU"): 3.0, ("0004_d", "random", "2GPU"): 7.0}
    assert shown.run_ids == ["0001_a", "0002_b", "0004_d"]
    assert {shown.kind(r) for r in shown.run_ids} == {"4xH200", "cpu"}


def test_the_newest_run_fixes_the_size():
    rows = (_rows("0001_a", 0.1, {("naive", "2GPU"): 1.0, ("random", "2GPU"): 2.0})
            + _rows("0002_b", 0.5, {("random", "4GPU"): 3.0}))
    shown = _shown(rows, [_run("0001_a"), _run("0002_b")])
    assert _cells(shown) == {("0002_b", "random", "4GPU"): 3.0}
    rows = rows + _rows("0003_c", 0.1, {("random", "2GPU"): 2.0})       # paper batches: another size
    shown = _shown(rows, [_run("0001_a"), _run("0002_b"), _run("0003_c", batch_sizes="paper")])
    assert _cells(shown) == {("0003_c", "random", "2GPU"): 2.0}


def test_other_settings_go_to_the_history_and_smoke_runs_stand_in_only_alone():
    rows = _rows("0001_a", 0.1, {("random", "2GPU"): 1.0}) + _rows("0002_b", 0.1, {("random", "2GPU"): 5.0})
    shown = _shown(rows, [_run("0001_a"), _run("0002_b", alpha="0.9")])
    assert _cells(shown) == {("0001_a", "random", "2GPU"): 1.0} and not shown.smoke
    smoke = _shown(rows, [_run("0001_a", quick=True), _run("0002_b", quick=True)])
    assert smoke.smoke and _cells(smoke) == {("0002_b", "random", "2GPU"): 5.0}
