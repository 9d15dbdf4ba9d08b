"""XGNN reports regenerated from committed 4xH200 runs: which runs the headlines judge on, and
runs under a non-paper budget kept out of the paper comparisons."""

from __future__ import annotations

from pathlib import Path

from harness.report import report_runs

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"


def _md(tmp_path, artifact: str, *runs: str) -> str:
    report_runs([RESULTS / r for r in runs], tmp_path)
    return (tmp_path / "xgnn" / f"{artifact}.md").read_text()


def test_table4_other_budget_is_listed_apart(tmp_path):
    md = _md(tmp_path, "table4", "0096_h200x4_xgnn.table4-fused-tiers",
             "0097_h200x4_xgnn.table4-tw-topology-over-budget")
    line = next(ln for ln in md.splitlines() if "under budget topo:0.8" in ln)
    assert "DGL+C (re-impl.) OOM" in line and "XGNN 0.0449 s" in line
    assert "Quiver (re-impl.) 0.0992 s (XGNN 2.21x faster)" in line
    assert "DGL policy (re-impl.) OOM" in line            # stored as system 'dgl': the re-implementation
    mismatch = next(ln for ln in md.splitlines() if ln.startswith("- OOM cells that differ"))
    assert "GCN+TW DGL+C" not in mismatch                       # the topo:0.8 OOMs are not paper mismatches
    assert mismatch.count("GCN+CF Quiver (re-impl.)") == 1                 # listed once, not once per run


def _history(tmp_path, artifact: str) -> set[tuple]:
    """(Machine, Model, Dataset, System, Budget, E2E s) of every row of the artifact's history."""
    import pandas as pd

    table = pd.read_csv(tmp_path / "xgnn" / f"{artifact}.history.csv", dtype=str)
    return set(table[["Machine", "Model", "Dataset", "System", "Budget", "E2E s"]].itertuples(index=False, name=None))


def _headline(tmp_path, exp_id: str, *runs: str) -> str:
    artifacts: dict = {}
    report_runs([RESULTS / r for r in runs], tmp_path, only=[exp_id], artifacts=artifacts)
    return artifacts[exp_id][0].headline


def test_table5_and_fig10_judge_each_combination_on_its_latest_run(tmp_path):
    """The headline table, figure and verdict show the newest run per machine kind; every run is in
    the history, and the spread over runs is a note."""
    artifacts: dict = {}
    report_runs([RESULTS / r for r in ("0048_h200x4_xgnn.table5", "0095_h200x4_xgnn.table5-fused-tiers")],
                tmp_path / "t5", only=["xgnn.table5"], artifacts=artifacts)
    art = artifacts["xgnn.table5"][0]
    assert art.headline.startswith("2 of 6 claims reproduced, 1 partly, 3 inconclusive (within noise): 4xH200: "
                                   "WholeGraph / XGNN E2E 0.91-1.01x (paper 1.9-3.5x)")
    assert art.status == "partly"             # the memory claims hold; the E2E gains are within the noise
    assert "Every run: WholeGraph / XGNN E2E 0.80-1.01x over 6 run-combinations" in art.notes
    assert set(art.table["Source"]) == {"4xH200", "paper (8x A100)"}
    assert "0095_h200x4" in art.caption and "0048_h200x4" not in art.caption          # the runs shown
    md = (tmp_path / "t5" / "xgnn" / "table5.md").read_text()
    assert "#0048" not in md and "| GCN+TW     | WholeGraph | paper (8x A100) | 0.11 " in md
    history = (tmp_path / "t5" / "xgnn" / "table5.history.md").read_text()
    assert "| 4xH200 #0048 |" in history and "| 4xH200 #0095 |" in history          # both runs listed
    headline = _headline(tmp_path / "f10", "xgnn.fig10", "0062_h200x4_xgnn.fig10-x2-synced3",
                         "0093_h200x4_xgnn.fig10-uk-synced9")
    # GCN+TW, GCN+PA, GSG+CF from 0062 and GSG+UK from 0093, every step of a combination from one run;
    # gains such as +MSF's 1.3-1.4x lie inside the launch-to-launch noise of +OGA and +PSA (the same work)
    assert headline.startswith("4 of 12 claims reproduced, 3 partly, 5 inconclusive (within noise): 4xH200:")
    assert "+PSA not judged" in headline
    md = (tmp_path / "f10" / "xgnn" / "fig10.md").read_text()
    assert md.count("| GSG+UK     | 4xH200 #0093 |") == 5 and "| GSG+UK     | 4xH200 #0062 |" not in md
    assert md.count("| GCN+TW     | 4xH200 #0062 |") == 5


def test_table4_over_budget_runs_summarized_and_pinsage_gain_explained(tmp_path):
    md = _md(tmp_path, "table4", "0101_h200x4_xgnn.table4-tw-topology-over-budget-uva",
             "0110_h200x4_xgnn.table4-tw-over-budget-per-point", "0120_h200x4_xgnn.table4-tw-over-budget-third",
             "0119_h200x4_xgnn.table4-pinsage-per-point")
    assert "speedup over DGL+C (UVA) (re-impl.) over 3 runs: median 2.20x (1.99-2.26x)" in md
    note = next(ln for ln in md.splitlines() if "PinSAGE samples by the same random walks" in ln)
    assert "4xH200 TW: DGL+C (re-impl.) E 2.1x (paper 4.7x), E2E 1.13x (paper 1.31x)" in note
    assert "| PSG     | UK        | DGL+C (re-impl.)      | 4xH200          | OOM" in md     # 0119's, at the paper's rule
    assert "topo:0.8" not in md.split("Notes:")[0]                   # other budgets: notes and history only
    history = _history(tmp_path, "table4")
    assert ("4xH200 #0119", "PSG", "UK", "DGL+C (re-impl.)", "v100", "OOM") in history
    assert ("4xH200 #0120", "GCN", "TW", "DGL+C (UVA) (re-impl.)", "topo:0.8", "0.109") in history


def test_table4_drops_cells_skipped_then_run_since(tmp_path):
    """0047 skipped every PinSAGE cell (no random-walk sampler then); 0119 ran them: only 0119's show."""
    md = _md(tmp_path, "table4", "0047_h200x4_xgnn.table4", "0119_h200x4_xgnn.table4-pinsage-per-point")
    history = _history(tmp_path, "table4")
    assert ("4xH200 #0047", "GCN") in {h[:2] for h in history} and ("4xH200 #0047", "PSG") not in {h[:2] for h in history}
    assert sum(h[:2] == ("4xH200 #0119", "PSG") for h in history) == 16 and "KHop neighbours only" not in md
    # the headline table: GCN and GraphSAGE from 0047, PinSAGE from 0119, each beside the paper's row
    rows = md.split("Notes:")[0]
    assert rows.count("| PSG     |") == 2 * 4 * 4 and rows.count("| 4xH200          |") == 3 * 4 * 4


def test_table1_and_fig15_read_stored_dgl_rows_as_the_reimplemented_policy(tmp_path):
    """Their committed runs stored the DGL policy re-implementation (impl dgl_cache) as system 'dgl':
    it keeps its numbers and the paper's DGL cells, under its re-implementation label."""
    md = _md(tmp_path / "t1", "table1", "0051_h200x4_xgnn.table1")
    assert "| DGL policy (re-impl.) | 0.194     | 0.0707    | 2.95 " in md
    assert "DGL policy (re-impl.) / XGNN epoch time 2.77x (paper, 1 GPU(s): 3.21x)" in md
    assert _headline(tmp_path / "h1", "xgnn.table1", "0051_h200x4_xgnn.table1") == \
        ("1 of 5 claims reproduced, 1 partly, 3 inconclusive (within noise): 4xH200: XGNN faster than the others in "
         "4/5 cells (0.70-2.77x; paper 1.6-7.9x)")
    _md(tmp_path / "f15", "fig15", "0069_h200x4_xgnn.fig15b-120-epochs")
    import pandas as pd

    history = pd.read_csv(tmp_path / "f15" / "xgnn" / "fig15.history.csv", dtype=str).set_index("System")
    assert list(history.loc["DGL policy (re-impl.)", ["E2E s", "epochs", "best val acc", "target acc",
                                                      "epochs to target", "time to target s", "final test acc"]]) == \
        ["0.0522", "120", "0.876", "0.868", "116", "6.15", "0.848"]
    table = pd.read_csv(tmp_path / "f15" / "xgnn" / "fig15.csv", dtype=str).set_index("System")
    assert list(table.loc["DGL policy (re-impl.)", ["E2E s", "best val acc", "target acc", "epochs to target",
                                                    "time to target s"]]) == ["0.0522", "0.876", "0.868", "116", "6.15"]
    assert "(b) 4xH200: XGNN reaches 86.8% 1.17x sooner than DGL policy (re-impl.) (paper 5.3x)" in \
        _headline(tmp_path / "h15", "xgnn.fig15", "0069_h200x4_xgnn.fig15b-120-epochs")


def test_fig15_real_dgl_series_is_never_judged_against_the_papers_dgl(tmp_path):
    """Run 0069 with a real-DGL series added (its re-implementation's curve, 3x slower epochs; or
    lower accuracies): the headline and its target stay those of the paper's systems, and real DGL's
    time to that target is a note without the paper's 5.3x."""
    import json
    import shutil

    import pandas as pd

    run = "0069_h200x4_xgnn.fig15b-120-epochs"
    committed = _headline(tmp_path / "ref", "xgnn.fig15", run)
    for acc_factor, reached in ((1.0, True), (0.9, False)):
        copy = tmp_path / f"acc{acc_factor}" / run
        shutil.copytree(RESULTS / run, copy)
        rows = [json.loads(ln) for ln in (RESULTS / run / "rows.jsonl").read_text().splitlines()]
        real = []
        for r in rows:
            if r["params"]["system"] == "dgl" and r["metric"] == "epoch_time":      # the stored DGL policy
                e = r["extra"]
                e = {**e, "epoch_s_per_epoch": [3 * t for t in e["epoch_s_per_epoch"]],
                     "val_acc_per_epoch": [acc_factor * a for a in e["val_acc_per_epoch"]]}
                real.append({**r, "impl": "dgl_host", "value": 3 * r["value"], "extra": e})
        with (copy / "rows.jsonl").open("a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in real)
        artifacts: dict = {}
        report_runs([copy], tmp_path / f"rep{acc_factor}", only=["xgnn.fig15"], artifacts=artifacts)
        art = artifacts["xgnn.fig15"][0]
        assert art.headline == committed
        table = art.table.set_index("System")
        assert table.loc["DGL", "target acc"] == 0.868
        note = [n for n in art.notes if "sooner than DGL (real DGL 2.1" in n]
        if reached:
            assert note == ["(b) 4xH200: XGNN reaches 86.8% 3.52x sooner than DGL (real DGL 2.1, host sampling: "
                            "not the paper's DGL configuration, so not compared with its 5.3x)"]
        else:
            assert note == [] and pd.isna(table.loc["DGL", "time to target s"])
        assert "real DGL 2.1 (host sampling) is a series of its own" in art.caption
