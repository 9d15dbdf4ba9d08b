"""The report kit (harness/reportkit.py): the pieces every experiment's report is built from."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness import reportkit as kit
from harness.artifact import RunInfo


def rows(*records):
    base = {"experiment": "x.fig1", "metric": "t", "unit": "s", "value": 1.0, "reason": None, "world_size": 2,
            "device": "cuda", "params": {}}
    return pd.DataFrame.from_records([{**base, **r} for r in records])


class Exp:
    artifact = "fig1"


def test_finite_accepts_real_numbers_only():
    assert kit.finite(1) and kit.finite(2.5) and kit.finite(np.float32(3)) and kit.finite(np.int64(4))
    for x in (None, True, "OOM", "x", math.nan, math.inf, -math.inf, np.nan):
        assert not kit.finite(x), x


def test_ratio_and_span():
    assert kit.ratio(3, 2) == 1.5
    assert kit.ratio(3, 0) is None and kit.ratio("OOM", 2) is None and kit.ratio(1, math.nan) is None
    assert kit.span([1.234, 0.5, 2]) == "0.50-2.00"
    assert kit.span([10, 60], ".0f", "%-") == "10%-60"
    assert not hasattr(kit, "verdict")          # the one rule is harness/verdicts.py (tests/test_verdicts.py)


def test_group_keeps_first_seen_order_and_sub_keys():
    items = [("b", 1), ("a", 2), ("b", 3)]
    assert list(kit.group(items, lambda i: i[0]).items()) == [("b", [("b", 1), ("b", 3)]), ("a", [("a", 2)])]
    assert kit.group(items, lambda i: i[0], lambda i: i[1]) == {"b": {1: ("b", 1), 3: ("b", 3)}, "a": {2: ("a", 2)}}


def test_pivot_orders_columns_and_takes_the_first_value():
    frame = pd.DataFrame({"cell": ["c1", "c1", "c1", "c2"], "impl": ["ours", "theirs", "ours", "theirs"],
                          "value": [1.0, 2.0, 9.0, 4.0]})
    wide = kit.pivot(frame, ["cell"], order=["theirs", "ours", "absent"])
    assert list(wide.columns) == ["theirs", "ours"]
    assert wide.loc["c1", "ours"] == 1.0 and math.isnan(wide.loc["c2", "ours"])


def test_numeric_turns_text_cells_into_nan_and_is_empty_without_its_columns():
    table = pd.DataFrame({"System": ["A", "B"], "1 GPU s": [1.5, "OOM"], "note": ["x", "y"]})
    plot = kit.numeric(table, "System", ["1 GPU s", "missing"])
    assert list(plot.columns) == ["1 GPU s"]
    assert plot.loc["A", "1 GPU s"] == 1.5 and math.isnan(plot.loc["B", "1 GPU s"])
    assert kit.numeric(table, "Absent", ["1 GPU s"]).empty
    assert kit.numeric(table, "System", ["missing"]).empty


def test_bars_draws_numbers_and_nothing_for_text():
    fig, ax = kit.figure()
    kit.bars(ax, pd.DataFrame({"a": ["OOM", "x"]}, index=["p", "q"]))          # no numbers: nothing drawn
    assert not ax.patches
    kit.bars(ax, pd.DataFrame({"a": [1.0, "OOM"], "b": [2.0, 3.0]}, index=["p", "q"]), color=["r", "g", "b"])
    assert len([p for p in ax.patches if p.get_height() == p.get_height() and p.get_height() > 0]) == 3


def test_newest_per_kind_keeps_the_newest_run_of_each_machine_kind():
    labels = {"0001_a": "4xH200 #0001", "0003_b": "4xH200 #0003", "0002_c": "cpu"}
    items = [("0003_b", "c1"), ("0001_a", "c1"), ("0002_c", "c1"), ("0001_a", "c2")]
    out = kit.newest_per_kind(items, labels, cell=lambda i: (i[1],), run_of=lambda i: i[0])
    assert out == {("4xH200", "c1"): ("0003_b", "c1"), ("cpu", "c1"): ("0002_c", "c1"),
                   ("4xH200", "c2"): ("0001_a", "c2")}


def test_report_table_drops_single_and_empty_columns_but_keeps_paper_ones():
    rep = kit.Report(Exp(), rows({"run_id": "0001_a", "impl": "ours", "status": "ok"}), [])
    table = rep.table([{"Machine": "m", "x": 1, "empty": None, "paper y": None},
                       {"Machine": "m", "x": 2, "empty": None, "paper y": None}])
    assert list(table.columns) == ["x", "paper y"]
    kept = rep.table([{"Machine": "m", "empty": None, "x": 1}], single=(), drop_empty=False)
    assert list(kept.columns) == ["Machine", "empty", "x"]
    assert rep.table([], empty="nothing yet").to_dict("list") == {"note": ["nothing yet"]}


def test_report_artifact_notes_end_with_skips_of_the_chosen_rows():
    frame = rows({"run_id": "0001_a", "impl": "ours", "status": "ok"},
                 {"run_id": "0001_a", "impl": "pyg", "status": "skipped", "reason": "package 'pyg' is not installed"},
                 {"run_id": "0001_a", "impl": "dgl", "status": "failed", "reason": "boom"})
    runs = [RunInfo("0001_a", "2xH200", {"gpus": {"count": 2, "devices": [{"name": "NVIDIA H200"}]}})]
    rep = kit.Report(Exp(), frame, runs)
    rep.notes.append("a finding")
    art = rep.artifact("Title", rep.caption("First.", "", "Second."), rep.table([{"x": 1}]))
    assert art.notes == ["a finding", "2xH200 `pyg` skipped: package 'pyg' is not installed",
                         "2xH200 `dgl` failed: boom"]
    assert art.caption.startswith("First. Second. Measured on 0001_a: 2x NVIDIA H200")
    only_dgl = rep.artifact("Title", "c", rep.table([{"x": 1}]), skips=frame[frame["impl"] == "dgl"])
    assert only_dgl.notes == ["a finding", "2xH200 `dgl` failed: boom"]
    assert rep.artifact("Title", "c", rep.table([{"x": 1}]), skips=False).notes == ["a finding"]


def test_caption_names_only_the_runs_shown_where_given():
    frame = rows({"run_id": "0001_a", "impl": "ours", "status": "ok"}, {"run_id": "0002_b", "impl": "ours", "status": "ok"})
    runs = [RunInfo("0001_a", "cpu", {}), RunInfo("0002_b", "cpu", {})]
    rep = kit.Report(Exp(), frame, runs)
    assert "0001_a" in rep.caption("C.") and "0002_b" in rep.caption("C.")
    shown = rep.caption("C.", runs=["0002_b"])
    assert shown.startswith("C. Measured on 0002_b") and "0001_a" not in shown


@pytest.mark.parametrize("label,kind", [("4xH200 #0084", "4xH200"), ("cpu", "cpu"),
                                        ("2 of 4xH200 #0003", "2 of 4xH200")])
def test_machine_kind(label, kind):
    assert kit.machine_kind(label) == kind


def test_one_colour_per_system_from_the_palette():
    assert kit.colour("DGL+C (re-impl.)") == kit.PALETTE["DGL+C"] != kit.colour("DGL 2.1")
    assert kit.colour("4xH200 WholeGraph s") == kit.PALETTE["WholeGraph"]
    assert kit.colour("something else") is None
    fig, ax = kit.figure()
    kit.bars(ax, pd.DataFrame({"PyG": [1.0], "XGNN": [2.0], "other": [3.0]}), by_system=True)
    faces = [matplotlib_colour(p.get_facecolor()) for p in ax.patches]
    assert faces[:2] == [kit.PALETTE["PyG"], kit.PALETTE["XGNN"]]


def matplotlib_colour(rgba) -> str:
    from matplotlib.colors import to_hex

    return to_hex(rgba)


def test_the_papers_values_are_their_own_dashed_series():
    fig, ax = kit.figure()
    kit.lines(ax, [("ours", [1, 2], [1, 2]), ("paper", [1, 2], [2, 3], {"paper": True, "marker": "s"})],
              by_system=True)
    ours, paper = ax.get_lines()
    assert ours.get_linestyle() == "-" and paper.get_linestyle() == "--" and paper.get_marker() == "s"
    assert matplotlib_colour(ours.get_color()) == kit.PALETTE["ours"]


def test_an_artifacts_history_is_written_apart_from_its_table(tmp_path):
    from harness.report import write_artifact

    rep = kit.Report(Exp(), rows({"run_id": "0001_a", "impl": "ours", "status": "ok"}), [])
    art = rep.artifact("T", "c", rep.table([{"x": 1}]), history=pd.DataFrame({"run": ["0001", "0002"], "x": [1, 2]}))
    written = {p.name for p in write_artifact(art, tmp_path, "tab:x")}
    assert written == {"fig1.md", "fig1.csv", "fig1.tex", "fig1.history.md", "fig1.history.csv"}
    assert "0002" in (tmp_path / "fig1.history.md").read_text() and "0002" not in (tmp_path / "fig1.md").read_text()
    no_history = rep.artifact("T", "c", rep.table([{"x": 1}]))
    assert {p.name for p in write_artifact(no_history, tmp_path / "b", "tab:x")} == {"fig1.md", "fig1.csv", "fig1.tex"}


def test_newest_rows_keep_the_newest_run_per_machine_kind_and_group():
    labels = {"0001_a": "4xH200 #0001", "0003_b": "4xH200 #0003", "0002_c": "cpu"}
    frame = pd.DataFrame({"run_id": ["0001_a", "0003_b", "0001_a", "0002_c", "0003_b"],
                          "ds": ["x", "x", "y", "x", "x"], "f": [[1, 2], [1, 2], [1, 2], [3], [1, 2]],
                          "paper": [True, False, True, False, False]})
    whole = kit.newest_rows(frame, labels)
    assert list(whole.index) == [1, 3, 4]                     # 4xH200's newest run, cpu's only run
    by_ds = kit.newest_rows(frame, labels, by=["ds", "f"])    # lists compare as tuples
    assert list(by_ds.index) == [1, 2, 3, 4]                  # 4xH200's dataset y only in its older run
    preferred = kit.newest_rows(frame, labels, prefer=frame["paper"])
    assert list(preferred.index) == [0, 2, 3]                 # 4xH200 judged on its paper-setting run; cpu has none
    assert kit.newest_rows(frame.iloc[0:0], labels).empty


def test_several_runs_per_kind():
    assert kit.several_runs_per_kind({"0001_a": "4xH200 #0001", "0003_b": "4xH200 #0003"})
    assert not kit.several_runs_per_kind({"0001_a": "4xH200", "0002_c": "cpu", "0003_d": "2 of 4xH200"})
