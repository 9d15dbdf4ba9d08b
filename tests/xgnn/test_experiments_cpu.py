"""XGNN's training experiments (Tables 1, 4, 5; Figs. 10, 11, 12, 15) end to end on two CPU ranks at
toy scale through the runner, their reports, and the V100 budget rule (experiments/xgnn/training.py)."""

from __future__ import annotations

import pytest

from harness.config import RunConfig
from harness.needs import _import_problem
from harness.report import report_runs
from harness.runner import run as run_experiments
from harness.store import load_run
from impls.storage.budget import is_oom_reason

# tiny stand-ins, two mini-batches per epoch, no warm-up: the code paths, not the numbers
TOY = {"max_edges": "2e5", "max_batches": "2", "warmup_batches": "0", "eval_nodes": "32", "hidden": "16",
       "epochs": "1"}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("xgnn-exp-data")


def run(exp_id, tmp_path_factory, data_root, world=2, **params):
    out = tmp_path_factory.mktemp(exp_id.replace(".", "-"))
    cfg = RunConfig(device="cpu", world_size=world, quick=True, out_dir=out, data_root=data_root, timeout_s=300,
                    params={**TOY, **params})
    outcome = run_experiments([exp_id], cfg, ["test"])
    assert outcome.errors == 0, [r for r in load_run(outcome.store.path).rows if r["status"] == "error"]
    return outcome.store.path


def by_system(rows, metric="epoch_time"):
    return {(r["params"]["system"], r["params"]["dataset"], r["params"]["model"], r["world_size"]): r
            for r in rows if r["metric"] == metric}


def report_artifact(run_dir, exp_id):
    """The experiment's report() on the stored rows (its own and those it derives from)."""
    import matplotlib.pyplot as plt

    from harness import registry
    from harness.artifact import RunInfo
    from harness.report import rows_frame

    stored = load_run(run_dir)
    frame = rows_frame([stored])
    exp = registry.get_experiment(exp_id)
    art = exp.report(frame[frame["experiment"].isin((exp_id,) + exp.derives_from)].reset_index(drop=True),
                     [RunInfo.from_stored(stored)])
    if art.figure is not None:
        plt.close(art.figure)
    assert len(art.table) > 0 and art.caption and "note" not in art.table.columns
    return art


def report_text(run_dir, exp_id):
    """The report's caption, table (Markdown), notes and headline."""
    art = report_artifact(run_dir, exp_id)
    return art.caption + "\n" + art.table.to_markdown() + "\n" + "\n".join(art.notes) + "\n" + art.headline


@pytest.mark.skipif(_import_problem("dgl") is not None, reason=str(_import_problem("dgl")))
def test_table4_dgl_column_is_real_dgl_beside_the_reimplemented_policy(tmp_path_factory, data_root):
    run_dir = run("xgnn.table4", tmp_path_factory, data_root, datasets="TW", models="gcn,pinsage",
                  systems="dgl,dgl_gpu,xgnn")
    cells = by_system(load_run(run_dir).rows)
    real = cells[("dgl", "twitter-2010", "gcn", 2)]
    assert real["status"] == "ok" and real["impl"] == "dgl_host"
    assert real["extra"]["components"]["layers"].startswith("DGL 2.1 sampler and loader; layers: DGL")
    assert cells[("dgl_gpu", "twitter-2010", "gcn", 2)]["impl"] == "dgl_cache"
    assert cells[("dgl", "twitter-2010", "pinsage", 2)]["status"] == "skipped"          # no random walks in it
    text = report_text(run_dir, "xgnn.table4")
    assert "DGL policy (re-impl.)" in text
    assert "XGNN's E2E speedup over DGL: ours" in text and "DGL = real DGL 2.1" in text


def test_table4_rows_oom_cells_and_report(tmp_path_factory, data_root, tmp_path):
    run_dir = run("xgnn.table4", tmp_path_factory, data_root, datasets="TW,CF", models="sage,pinsage",
                  systems="dgl_cache,xgnn", epochs="2")
    rows = load_run(run_dir).rows
    cells = by_system(rows)
    ok = cells[("xgnn", "twitter-2010", "sage", 2)]
    assert ok["status"] == "ok" and ok["extra"]["timing"] == ["synced", "pipelined"]
    assert ok["extra"]["budget_bytes"] > ok["extra"]["topology_bytes"] > 0
    mine = {r["metric"]: r["value"] for r in rows if r["status"] == "ok" and r["params"]["system"] == "xgnn"
            and r["params"]["dataset"] == "twitter-2010"}
    assert {"sample_time", "gather_time", "train_time", "feature_hit_rate", "feat_ratio", "memory_total_gpus",
            "val_accuracy"} <= set(mine)
    assert 0 < mine["feat_ratio"] <= 1 and 0 <= mine["feature_hit_rate"] <= 1
    assert cells[("dgl_cache", "twitter-2010", "sage", 2)]["status"] == "ok"           # TW fits DGL+C (paper)
    oom = cells[("dgl_cache", "com-friendster", "sage", 2)]
    assert oom["status"] == "skipped" and is_oom_reason(oom["reason"]) and "DGL+C topology" in oom["reason"]
    assert cells[("xgnn", "com-friendster", "sage", 2)]["status"] == "ok"               # XGNN fits CF
    pinsage = cells[("xgnn", "twitter-2010", "pinsage", 2)]                          # PinSAGE by random walks
    assert pinsage["status"] == "ok" and "random walks" in pinsage["extra"]["components"]["sampling"]
    assert by_system(rows, "feature_hit_rate")[("xgnn", "twitter-2010", "pinsage", 2)]["value"] > 0
    assert cells[("dgl_cache", "twitter-2010", "pinsage", 2)]["status"] == "ok"
    assert is_oom_reason(cells[("dgl_cache", "com-friendster", "pinsage", 2)]["reason"])  # as the paper's
    report_runs([run_dir], tmp_path)                        # the files, once
    text = (tmp_path / "xgnn" / "table4.md").read_text()
    assert "| GSG " in text and "| PSG " in text and "OOM" in text and "| paper (8x V100) |" in text \
        and "XGNN speedup" in text
    assert (tmp_path / "xgnn" / "table4.history.csv").exists()           # every run, apart
    assert "top visited of 4 walks" in text
    assert "PinSAGE samples by the same random walks" in text and "DGL+C (re-impl.) E " in text  # E gain per cell
    assert "OOM cells as the paper's in 8/8" in report_text(run_dir, "xgnn.table4")


def test_table5_and_table1(tmp_path_factory, data_root):
    run5 = run("xgnn.table5", tmp_path_factory, data_root, combos="sage:UK")
    rows = load_run(run5).rows
    mem = by_system(rows, "memory_total_gpus")
    assert {k[0] for k in mem} == {"wholegraph", "xgnn"} and all(r["value"] > 0 for r in mem.values())
    assert all(r["params"]["budget"] == "none" for r in rows)
    text = report_text(run5, "xgnn.table5")
    assert "WholeGraph" in text and "paper (8x A100)" in text and "Mem GB" in text and "143" in text

    run1 = run("xgnn.table1", tmp_path_factory, data_root, gpus="2")            # the default systems
    cells = by_system(load_run(run1).rows)
    assert {k[0] for k in cells} == {"dgl_gpu", "gnnlab", "quiver", "wholegraph", "xgnn"}
    policy = cells[("dgl_gpu", "twitter-2010", "sage", 2)]       # the paper's DGL configuration, re-implemented
    assert policy["status"] == "ok" and policy["impl"] == "dgl_cache"
    assert "not implemented" in cells[("gnnlab", "twitter-2010", "sage", 2)]["reason"]
    wg = cells[("wholegraph", "twitter-2010", "sage", 2)]         # TW's topology + features > 2 V100 budgets
    assert wg["status"] == "skipped" and is_oom_reason(wg["reason"]) and "WholeGraph" in wg["reason"]
    assert cells[("xgnn", "twitter-2010", "sage", 2)]["status"] == "ok"
    text = report_text(run1, "xgnn.table1")
    assert "paper 4-GPU (Sym.)" in text and "GNNLab" in text and "OOM" in text
    assert "DGL policy (re-impl.) / XGNN epoch time" in text and "(paper, 4 GPU(s): 6.78x)" in text
    assert "sit beside DGL policy (re-impl.), the harness's re-implementation" in text
    assert "real DGL" not in text                                 # not run, not mentioned


def real_dgl_ran_or_skipped(rec):
    """Real DGL trains where it imports (its own loader), and is a skipped row with the reason elsewhere."""
    problem = _import_problem("dgl")
    if problem is None:
        assert rec["status"] == "ok" and rec["impl"] == "dgl_host"
        assert rec["extra"]["components"]["layers"].startswith("DGL 2.1 sampler and loader")
    else:
        assert rec["status"] == "skipped" and rec["impl"] == "dgl_host" and rec["reason"] == str(problem)


def test_table1_real_dgl_is_its_own_row_without_paper_cells(tmp_path_factory, data_root):
    run_dir = run("xgnn.table1", tmp_path_factory, data_root, world=1, gpus="1", systems="dgl,dgl_gpu,xgnn")
    cells = by_system(load_run(run_dir).rows)
    real_dgl_ran_or_skipped(cells[("dgl", "twitter-2010", "sage", 1)])
    assert cells[("dgl_gpu", "twitter-2010", "sage", 1)]["impl"] == "dgl_cache"
    art = report_artifact(run_dir, "xgnn.table1")
    rows = art.table.set_index("System")
    paper = [c for c in rows.columns if c.startswith("paper ")]
    assert rows.loc["DGL", paper].isna().all()                    # never beside the paper's GPU-sampling DGL
    assert list(rows.loc["DGL policy (re-impl.)", paper]) == [2.95, 1.22, 0.63]
    assert "real DGL 2.1 (host sampling) has no paper cells" in art.caption
    text = report_text(run_dir, "xgnn.table1")
    assert "the paper's DGL numbers were measured with GPU sampling" in text
    if _import_problem("dgl") is None:
        assert "DGL / XGNN epoch time" in text and "(host sampling: no paper counterpart)" in text
        assert "/1 cells" in art.headline                          # judged on the DGL policy alone


def test_fig10_steps(tmp_path_factory, data_root):
    run_dir = run("xgnn.fig10", tmp_path_factory, data_root, combos="sage:CF", epochs="3", synced_epochs="2")
    rows = load_run(run_dir).rows
    cells = by_system(rows)
    sample = by_system(rows, "sample_time")[("msf", "com-friendster", "sage", 2)]
    assert sample["stats"]["repeats"] == 2                    # S/E/T: median of the synchronized epochs
    assert cells[("msf", "com-friendster", "sage", 2)]["extra"]["timing"] == ["synced", "synced", "pipelined"]
    base = cells[("base", "com-friendster", "sage", 2)]
    assert base["status"] == "skipped" and is_oom_reason(base["reason"])               # BASE OOM on GSG+CF
    for step in ("msg", "msf", "oga", "psa"):
        assert cells[(step, "com-friendster", "sage", 2)]["status"] == "ok", step
    stores = {s: cells[(s, "com-friendster", "sage", 2)]["extra"]["store"] for s in ("msg", "msf")}
    assert stores["msf"]["feat_ratio"] > stores["msg"]["feat_ratio"]                  # partitioned features
    assert "modulo" in stores["msf"]["feat_layout"] and "replicated" in stores["msg"]["feat_layout"]
    text = report_text(run_dir, "xgnn.fig10")
    assert "BASE out of memory, +MSG fits: +MSG fits" in text and "| verdict" in text and "+PSA" in text
    assert report_artifact(run_dir, "xgnn.fig10").status == "no verdict (smoke run (--quick))"


def test_fig10_compares_each_step_with_the_step_before_it_in_the_same_run(tmp_path_factory, data_root, tmp_path):
    """A later run of only +OGA/+PSA with a barrier before each stage records the slowest rank's
    stages; it times T differently, so the headline table keeps every step of the combination from the
    run that ran them all (like with like), and the later run is in the history with its note."""
    out = tmp_path_factory.mktemp("fig10-subset")
    params = {**TOY, "combos": "sage:UK", "epochs": "2", "synced_epochs": "1"}
    for extra in ({}, {"steps": "oga,psa", "stage_barrier": "on"}):
        cfg = RunConfig(device="cpu", world_size=2, quick=True, out_dir=out, data_root=data_root, timeout_s=300,
                        params={**params, **extra})
        outcome = run_experiments(["xgnn.fig10"], cfg, ["subset" if extra else "full"])
        assert outcome.errors == 0
    full, subset = sorted(p for p in out.iterdir() if p.is_dir())
    rows = load_run(subset).rows
    cells = by_system(rows)
    assert {k[0] for k in cells} == {"oga", "psa"}
    psa = cells[("psa", "uk-2006-05", "sage", 2)]
    assert psa["params"]["stage_barrier"] == "on"
    slowest = psa["extra"]["stage_s_slowest_rank"][0]
    mean_t = by_system(rows, "train_time")[("psa", "uk-2006-05", "sage", 2)]["value"]
    assert slowest["train"] > 0 and slowest["sample"] > 0
    assert "stage_barrier" not in by_system(load_run(full).rows)[("psa", "uk-2006-05", "sage", 2)]["params"]
    artifacts: dict = {}
    report_runs([full, subset], tmp_path, only=["xgnn.fig10"], artifacts=artifacts)
    art = artifacts["xgnn.fig10"][0]
    assert set(art.table["Run"]) == {f"cpu #{full.name.split('_')[0]}"}          # every step from the full run
    assert len(art.table) == 5
    assert any("stage_barrier=on" in n and "history only" in n for n in art.notes)
    assert art.status.startswith("no verdict")                                   # --quick: smoke runs
    assert mean_t > 0


def test_fig11_and_derived_fig12(tmp_path_factory, data_root):
    run_dir = run("xgnn.fig11", tmp_path_factory, data_root, gpus="2", combos="sage:UK")
    rows = load_run(run_dir).rows
    assert {r["params"]["system"] for r in rows} == {"dgl_cache", "xgnn"}
    assert "DGL+C / XGNN" in report_text(run_dir, "xgnn.fig11")
    fig12 = report_text(run_dir, "xgnn.fig12")                                        # a view of fig11's rows
    assert "topology GiB (all GPUs)" in fig12 and "Sampler ms/batch" in fig12


def test_fig15_one_gpu_priorities_and_convergence(tmp_path_factory, data_root):
    # one rank: part (a) runs on one GPU anyway, and (b) then shares its launch
    run_dir = run("xgnn.fig15", tmp_path_factory, data_root, world=1, conv_epochs="2")      # the default systems
    rows = load_run(run_dir).rows
    a = {r["params"]["system"]: r for r in rows if r["params"]["part"] == "a" and r["metric"] == "epoch_time"}
    assert set(a) == {"dgl_host", "quiver", "xgnn_g", "xgnn_f"} and all(r["world_size"] == 1 for r in a.values())
    store = {s: a[s]["extra"]["store"] for s in a}
    assert store["dgl_host"]["feat_ratio"] == 0 and store["dgl_host"]["graph_ratio"] == 0
    assert 0 < store["xgnn_g"]["graph_ratio"] < 1 and store["xgnn_g"]["feat_ratio"] == 0   # CF's topology > 1 GPU
    assert store["xgnn_f"]["graph_ratio"] == 0 and store["xgnn_f"]["feat_ratio"] > 0
    b = [r for r in rows if r["params"]["part"] == "b" and r["metric"] == "epoch_time"]
    assert {(r["params"]["system"], r["impl"]) for r in b} == {("dgl_gpu", "dgl_cache"), ("dgl_cache", "dgl_cache"),
                                                                 ("xgnn", "xgnn")}
    assert all(len(r["extra"]["val_acc_per_epoch"]) == 2 for r in b)
    assert all(r["extra"]["timing"] == ["pipelined", "pipelined"] for r in b)
    text = report_text(run_dir, "xgnn.fig15")
    assert "XGNN-F" in text and "(b) 1 GPU(s)" in text and "best val acc" in text
    assert "| DGL policy (re-impl.) |" in text and "for DGL policy (re-impl.), DGL+C (re-impl.) and XGNN" in text
    assert "5.3x sooner than DGL (GPU sampling, section 6.1: compared here with DGL policy (re-impl.))" in text


def test_fig15_real_dgl_is_a_series_of_its_own(tmp_path_factory, data_root):
    run_dir = run("xgnn.fig15", tmp_path_factory, data_root, world=1, parts="b", systems_b="dgl,dgl_gpu,xgnn",
                  conv_epochs="2")
    cells = {r["params"]["system"]: r for r in load_run(run_dir).rows if r["metric"] == "epoch_time"}
    assert set(cells) == {"dgl", "dgl_gpu", "xgnn"}
    real_dgl_ran_or_skipped(cells["dgl"])
    text = report_text(run_dir, "xgnn.fig15")
    assert "real DGL 2.1 (host sampling) is a series of its own, not compared with the paper's numbers" in text
    assert "than DGL (paper" not in text                         # the paper's 5.3x goes with the DGL policy only


# ----------------------------------------------------------------------------- the budget rule

@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_v100_budget_rule_gives_table4_oom_cells(model, data_root):
    """Under the default rule DGL+C (whole topology on every GPU) runs out of memory exactly where the
    paper's Table 4 says (GCN: UK and CF; GraphSAGE: CF) while XGNN fits on 4 GPUs everywhere, and on
    one GPU the CF stand-in's topology does not fit (Fig. 15a)."""
    from harness import datasets, registry
    from experiments.xgnn.table4 import TABLE4
    from experiments.xgnn.training import budget_bytes, topology_bytes
    from impls.storage import budget as B
    from impls.storage.reorder import reorder

    exp = registry.get_experiment("xgnn.table4")
    cfg = RunConfig(device="cpu", quick=True, params={"max_edges": "2e5"})
    for ds in ("twitter-2010", "ogbn-papers100M", "uk-2006-05", "com-friendster"):
        g = datasets.load(ds, scale=exp.scale(cfg, ds), data_root=data_root)
        order = reorder(g.indptr, g.indices, "degree")
        sizes = B.StoreSizes.of(g.indptr, order.order, g.feature_dim * 4)
        budget = budget_bytes("v100", ds, model, topology_bytes(g))
        paper_oom = TABLE4[model][ds]["dgl_cache"] == "OOM"
        try:
            fit = B.fit_dgl_cache(sizes, 4, budget)
            dgl_oom = False
        except B.OutOfMemoryBudget:
            dgl_oom = True
        assert dgl_oom == paper_oom, (ds, model)
        if ds == "twitter-2010":                 # R near the paper's 9% (GCN) / 16% (GraphSAGE)
            assert abs(100 * fit.feat_ratio - {"gcn": 9, "sage": 16}[model]) < 5
        xg = B.fit_ggms(sizes, 4, budget)
        assert xg.graph_ratio == 1.0 and xg.feat_ratio > 0
        one = B.fit_ggms(sizes, 1, budget)
        assert (one.graph_ratio < 1.0) == (ds == "com-friendster" or (ds == "uk-2006-05" and model == "gcn"))


def test_table4_compares_the_papers_dgl_with_the_re_implementation_only():
    """The paper's DGL sampled on the GPUs (section 6.1): its cells belong to dgl_gpu, the
    re-implementation of that configuration; real DGL (host sampling) has no paper counterpart."""
    from experiments.xgnn.table4 import TABLE4, paper_cell

    for model, per_ds in TABLE4.items():
        for ds, cells in per_ds.items():
            assert paper_cell(model, ds, "dgl") is None
            assert paper_cell(model, ds, "dgl_gpu") == cells.get("dgl")
