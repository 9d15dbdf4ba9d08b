"""The MG-GCN reports show the newest run of each machine at the paper's settings (older, CPU and
--quick runs go to the history), in the paper's layout, and their verdicts check the paper's claims
(each check tested on rows that must fail it)."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

from harness import figlint, registry
from harness.artifact import RunInfo

from ..helpers import CPU_MANIFEST, H200_MANIFEST, row

matplotlib.use("Agg")


def _run(run_id: str, hardware: str, quick: bool = False) -> RunInfo:
    manifest = H200_MANIFEST if hardware != "cpu" else CPU_MANIFEST
    return RunInfo(run_id, hardware, {**manifest, "hardware": hardware, "config": {"quick": quick}})


def _frame(runs_rows: list[tuple[RunInfo, list[dict]]]) -> pd.DataFrame:
    return pd.DataFrame.from_records([{**r, "run_id": info.run_id, "hardware": info.hardware}
                                      for info, rows in runs_rows for r in rows])


def _epoch(impl, dataset, model, scale, gpus, seconds, device="cuda", experiment="mggcn.table3", **params):
    return row(impl, seconds, experiment=experiment, metric="epoch_time", unit="s", world_size=gpus, device=device,
               params={"dataset": dataset, "model": model, "scale": scale, "gpus": gpus, **params},
               extra={"nodes": 1000, "edges": 50_000, "standin": True})


def _report(exp_id, runs_rows):
    exp = registry.get_experiment(exp_id)
    return exp.report(_frame(runs_rows), [info for info, _ in runs_rows])


def _lint(artifact):
    return figlint.table_problems(artifact.table) + figlint.figure_problems(artifact.figure)


def test_table3_shows_each_machines_newest_run_at_the_papers_settings_in_its_layout():
    old, new = _run("0001_h200x4", "4xH200"), _run("0002_h200x4", "4xH200")
    proteins, quick = _run("0003_h200x4", "4xH200"), _run("0004_cpu", "cpu", quick=True)
    art = _report("mggcn.table3", [
        (old, [_epoch("mggcn", "products", "3x256", 1.0, 1, 0.2), _epoch("mggcn", "products", "3x256", 1.0, 2, 0.1)]),
        (new, [_epoch("mggcn", "products", "3x256", 1.0, 1, 0.15), _epoch("single_gpu", "products", "3x256", 1.0, 1, 0.1)]),
        (proteins, [_epoch("mggcn", "proteins", "3x256", 0.1, 1, 0.16), _epoch("mggcn", "proteins", "3x256", 0.1, 2, 0.08)]),
        (quick, [_epoch("mggcn", "products", "3x256", 0.002, 1, 0.01, device="cpu")]),
    ])
    table = art.table.set_index("#G")
    assert list(table.index) == [1, 2, 4, 8]
    assert table.loc[1, "PRODUCTS 4xH200 (s)"] == 0.15 and table.loc[2, "PRODUCTS 4xH200 (s)"] == 0.1
    assert table.loc[1, "PRODUCTS paper (s)"] == 0.355 and table.loc[8, "PROTEIN paper (s)"] == 0.641
    assert table.loc[1, "PAPERS paper (s)"] == "OOM" and table.loc[8, "PAPERS paper (s)"] == 2.89
    # a stand-in at another scale is its own, labelled column; the quick CPU run is no column at all
    assert table.loc[2, "PROTEIN 4xH200 x0.1 (s)"] == 0.08
    assert not any("cpu" in c for c in table.columns) and len(art.table.columns) <= 12
    assert "0004_cpu" not in art.caption and "0002_h200x4" in art.caption and "0001_h200x4" in art.caption
    assert art.headline.startswith("4xH200: PRODUCTS 0.15 s on 1 GPU -> 0.1 s on 2")
    # every run's rows stay in the history, with their own values
    history = art.history
    assert {"0001", "0002", "0003", "0004"} == set(history["run"])
    assert 0.2 in set(history["epoch (s)"]) and 0.01 in set(history["epoch (s)"])
    # the paper's seconds share an axis only with graphs at the paper's size
    panels = {ax.get_title(): [line.get_label() for line in ax.get_lines()] for ax in art.figure.axes}
    assert "paper (8x A100)" in panels["PRODUCTS 3x256"]
    assert panels["PROTEIN 3x256: stand-in x0.1"] == ["MG-GCN, 4xH200"]
    assert _lint(art) == []


def test_a_report_of_cpu_runs_alone_still_shows_them():
    cpu = _run("0001_cpu", "cpu")
    art = _report("mggcn.table3", [(cpu, [_epoch("mggcn", "reddit", "2x16", 0.005, 1, 0.003, device="cpu"),
                                          _epoch("mggcn", "reddit", "2x16", 0.005, 2, 0.002, device="cpu")])])
    assert art.table.set_index("#G").loc[2, "REDDIT cpu x0.005 (s)"] == 0.002


def test_table3_machines_beyond_twelve_columns_go_to_the_history():
    from experiments.mggcn.table3 import table3_layout

    every = ("reddit", "papers", "products", "proteins")
    cells = {"4xH200": every, "8xA100": every, "1xH200": ("reddit", "products")}
    shown = pd.DataFrame.from_records([{"machine": m, "p_dataset": d, "p_gpus": 1, "p_scale": 1.0, "value": 1.0}
                                       for m, datasets in cells.items() for d in datasets])
    table, machines = table3_layout(shown)
    # the most cells first; a machine whose columns would pass 12 is left out, a smaller one still fits
    assert machines == ["4xH200", "1xH200"] and len(table.columns) == 11


def _ops(run, dataset, shares, gpus=1):
    total = 0.1
    return [row("mggcn", total * share / 100, experiment="mggcn.fig5", metric=f"op_time.{op}", unit="s",
                device="cuda", params={"dataset": dataset, "model": "2x512", "scale": 1.0, "gpus": gpus},
                extra={"op": op}) for op, share in shares.items()]


@pytest.mark.parametrize("reddit, arxiv, status", [
    ({"spmm": 90, "gemm": 7, "activation": 3}, {"spmm": 15, "gemm": 60, "activation": 25}, "reproduced"),
    ({"spmm": 20, "gemm": 70, "activation": 10}, {"spmm": 15, "gemm": 60, "activation": 25}, "partly"),
    ({"spmm": 20, "gemm": 70, "activation": 10}, {"spmm": 60, "gemm": 15, "activation": 25}, "not reproduced"),
])
def test_fig5_verdict_is_the_papers_bottleneck_ordering(reddit, arxiv, status):
    run = _run("0001_h200x4", "4xH200")
    art = _report("mggcn.fig5", [(run, _ops(run, "reddit", reddit) + _ops(run, "arxiv", arxiv))])
    assert art.status == status
    assert art.table["paper SpMM %"].iloc[0] == "60-94" and pd.isna(art.table["paper SpMM %"].iloc[1])
    assert _lint(art) == []


def _permutation(dataset, gpus, original, permuted):
    out = []
    for permute, seconds in ((False, original), (True, permuted)):
        params = {"dataset": dataset, "model": "2x512", "scale": 1.0, "gpus": gpus, "permute": permute}
        out.append(row("mggcn", seconds, experiment="mggcn.fig7", metric="epoch_time", unit="s", device="cuda",
                       world_size=gpus, params=params))
        out.append(row("mggcn", 1.0, experiment="mggcn.fig7", metric="stage_nnz_imbalance", unit="x",
                       device="cuda", world_size=gpus, params=params))
    return out


@pytest.mark.parametrize("permuted_at_four, status", [(0.3, "reproduced"), (0.6, "not reproduced")])
def test_fig7_verdict_is_that_permutation_gains_more_with_more_gpus(permuted_at_four, status):
    run = _run("0001_h200x4", "4xH200")
    art = _report("mggcn.fig7", [(run, _permutation("products", 1, 1.0, 1.2) + _permutation("products", 4, 0.4, permuted_at_four))])
    assert art.status == status
    paper = art.table[art.table["#G"] == 8]
    assert list(paper["paper improvement"]) == [1.5, 1.5] and paper["improvement (orig/perm)"].isna().all()
    assert "not measured here: at most 4 GPUs" in art.headline
    assert _lint(art) == []


def _stage_rows(experiment: str, where: dict, gpus: int, rank: int, stage: int, kind: str, start: float,
                length: float) -> list[dict]:
    """The start and duration rows of one stage of the first forward SpMM on ``rank``."""
    extra = {"rank": rank, "spmm": "fwd1", "stage": stage, "kind": kind}
    return [row("mggcn", value, experiment=experiment, metric=f"{metric}.fwd1.rank{rank}.stage{stage}.{kind}",
                unit="ms", device="cuda", world_size=gpus, params=where, extra=extra)
            for metric, value in (("stage_start", start), ("stage_duration", length))]


def _timeline(gpus, serial_ms, overlap_ms, compute_ms, comm_ms):
    """One SpMM of PRODUCTS on ``gpus`` ranks without and with overlap, and its stages' intervals."""
    out = []
    for overlap, spmm, compute, comm in ((False, serial_ms, 2.0, 2.0), (True, overlap_ms, compute_ms, comm_ms)):
        where = {"dataset": "products", "model": "3x256", "scale": 1.0, "gpus": gpus, "overlap": overlap}
        out.append(row("mggcn", spmm, experiment="mggcn.fig8", metric="spmm_time.fwd1", unit="ms", device="cuda",
                       world_size=gpus, params=where, extra={"spmm": "fwd1"}))
        for rank in range(gpus):
            for stage in range(gpus):
                for kind, length in (("comm", comm), ("compute", compute)):
                    start = stage * (compute + comm) + (comm if kind == "compute" else 0.0)
                    out += _stage_rows("mggcn.fig8", where, gpus, rank, stage, kind, start, length)
    return out


@pytest.mark.parametrize("overlap_ms, compute_ms, status", [
    (12.0, 2.5, "reproduced"), (17.0, 2.5, "partly"), (17.0, 1.5, "not reproduced")])
def test_fig8_verdict_is_that_overlap_shortens_the_spmm_and_slows_its_parts(overlap_ms, compute_ms, status):
    run = _run("0001_h200x4", "4xH200")
    art = _report("mggcn.fig8", [(run, _timeline(4, 16.0, overlap_ms, compute_ms, comm_ms=compute_ms))])
    assert art.status == status
    assert list(art.table["Machine"]) == ["4xH200", "paper (4x V100)"]
    assert list(art.table["no overlap (ms)"]) == [16.0, 38.0]
    lanes = [t.get_text() for t in art.figure.axes[0].get_yticklabels()]
    assert lanes[:3] == ["GPU 0: no overlap", "GPU 0: overlap: compute", "GPU 0: overlap: comm"] and len(lanes) == 12
    assert _lint(art) == []


@pytest.mark.parametrize("four_at_64, status", [(4.5, "reproduced"), (3.5, "not reproduced")])
def test_fig9_verdict_checks_super_linear_speedup_only_where_measured(four_at_64, status):
    run, older = _run("0002_h200x4", "4xH200"), _run("0001_h200x4", "4xH200")
    rows = []
    for k, one, four in ((1, 1.0, 1.5), (64, 8.0, 8.0 / four_at_64)):
        rows += [_epoch("mggcn", f"{k}x", "2x512", 1.0, 1, one, experiment="mggcn.fig9", factor=k),
                 _epoch("mggcn", f"{k}x", "2x512", 1.0, 4, four, experiment="mggcn.fig9", factor=k)]
    stale = [_epoch("mggcn", "64x", "2x512", 1.0, 1, 8.0, experiment="mggcn.fig9", factor=64),
             _epoch("mggcn", "64x", "2x512", 1.0, 4, 1.0, experiment="mggcn.fig9", factor=64)]
    art = _report("mggcn.fig9", [(older, stale), (run, rows)])
    assert art.status == status
    speedups = art.table.set_index("density")["speedup 4 GPUs"]
    assert speedups["64x"] == pytest.approx(four_at_64)            # the newer run's, not the older 8x
    assert "2 GPUs not measured" in art.headline and "8 GPUs not measured" in art.headline
    assert art.table.set_index("density").loc["128x", "paper: super-linear on"] == "2, 4, 8 GPUs"
    assert set(art.history["run"]) == {"0001", "0002"}
    assert _lint(art) == []


def _orders(gpus, spmm_ms, heavy_ms):
    """One SpMM of PRODUCTS on ``gpus`` ranks in the paper's schedule, per vertex order: its time and
    its stages, where rank ``stage`` multiplies a tile ``heavy_ms[order]`` long and the others 1 ms."""
    out = []
    for order, spmm in spmm_ms.items():
        where = {"dataset": "products", "model": "2x512", "scale": 1.0, "gpus": gpus, "order": order,
                 "overlap": False, "transport": "broadcast", "local_first": False}
        out.append(row("mggcn", spmm, experiment="mggcn.fig6", metric="spmm_time.fwd1", unit="ms", device="cuda",
                       world_size=gpus, params=where, extra={"spmm": "fwd1"}))
        for rank in range(gpus):
            for stage in range(gpus):
                compute = heavy_ms[order] if rank == stage else 1.0
                for kind, length, start in (("comm", 0.5, 3.0 * stage), ("compute", compute, 3.0 * stage + 0.5)):
                    out += _stage_rows("mggcn.fig6", where, gpus, rank, stage, kind, start, length)
    return out


@pytest.mark.parametrize("permuted_ms, permuted_heavy, status", [
    (8.0, 1.0, "reproduced"), (8.0, 2.5, "partly"), (12.0, 2.5, "not reproduced")])
def test_fig6_verdict_is_that_permuting_shortens_the_spmm_and_evens_its_stages(permuted_ms, permuted_heavy, status):
    run = _run("0001_h200x4", "4xH200")
    art = _report("mggcn.fig6", [(run, _orders(4, {"original": 10.0, "random": permuted_ms, "random_parts": 7.0},
                                               {"original": 2.0, "random": permuted_heavy, "random_parts": 1.0}))])
    assert art.status == status
    table = art.table.set_index(["Machine", "order"])
    assert table.loc[("paper (4x V100)", "original"), "SpMM (ms)"] == 50.0
    assert table.loc[("paper (4x V100)", "permuted (paper)"), "SpMM (ms)"] == 38.0
    assert table.loc[("4xH200", "original"), "SpMM (ms)"] == 10.0
    # stage imbalance: per stage the slowest GPU's multiply over the mean GPU's, summed over stages
    assert table.loc[("4xH200", "original"), "stage imbalance"] == pytest.approx(2.0 / 1.25)
    assert table.loc[("4xH200", "random parts"), "stage imbalance"] == pytest.approx(1.0)
    assert "10 ms original -> " in art.headline and "paper 4x V100: 50 -> 38 ms" in art.headline
    # one panel per order, a compute and a comm lane per GPU; the SpMM times beside them
    panels = [ax for ax in art.figure.axes if ax.get_yticklabels() and "GPU" in ax.get_yticklabels()[0].get_text()]
    assert len(panels) == 3
    assert [t.get_text() for t in panels[0].get_yticklabels()][:2] == ["GPU 0: compute", "GPU 0: comm"]
    assert _lint(art) == []


def test_table3_shows_the_default_engine_and_keeps_its_variants_in_the_history():
    run = _run("0001_h200x4", "4xH200")
    art = _report("mggcn.table3", [(run, [
        _epoch("mggcn", "products", "3x256", 1.0, 1, 0.1), _epoch("mggcn", "products", "3x256", 1.0, 4, 0.03),
        _epoch("mggcn", "products", "3x256", 1.0, 4, 0.05, transport="broadcast", order="random")])])
    assert art.table.set_index("#G").loc[4, "PRODUCTS 4xH200 (s)"] == 0.03
    history = art.history.set_index("variant")
    assert history.loc["order=random, transport=broadcast", "epoch (s)"] == 0.05
    assert history.loc["order=random, transport=broadcast", "speedup"] == pytest.approx(2.0)   # over the default 1 GPU
    assert history.loc["", "speedup"].tolist() == pytest.approx([1.0, 0.1 / 0.03])
