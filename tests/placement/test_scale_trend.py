"""The placement reports' scale trend: RAND / Our at the smallest buffer per stand-in scale, from
the runs that kept the paper's batch sizes (the run with the most topologies at each scale)."""

from __future__ import annotations

import pandas as pd

from experiments.placement.breakdown_report import scale_trend_text
from experiments.placement.paper import PAPER_LAYER_NODES
from harness import registry


def _rows(run_id, scale, layer_nodes, cells):
    return [{"run_id": run_id, "impl": impl, "p_topology": top, "p_buffer": buf, "p_las": False,
             "loading_time": value, "p_scale": scale, "p_layer_nodes": layer_nodes}
            for (impl, top, buf), value in cells.items()]


def test_trend_per_scale_from_paper_batch_runs_only():
    exp = registry.get_experiment("placement.fig10")
    both = {("random", "2GPU", "0.1N"): 0.9, ("clique_opt", "2GPU", "0.1N"): 0.6,
            ("random", "4GPU", "0.1N"): 0.8, ("clique_opt", "4GPU", "0.1N"): 0.4,
            ("random", "4GPU", "0.2N"): 0.8, ("clique_opt", "4GPU", "0.2N"): 0.1}
    frame = pd.DataFrame(
        _rows("0001_a", 0.01, PAPER_LAYER_NODES, both)
        + _rows("0002_b", 0.1, PAPER_LAYER_NODES, {k: v for k, v in both.items() if k[1] == "2GPU"})
        + _rows("0003_c", 0.1, PAPER_LAYER_NODES, {**both, ("clique_opt", "2GPU", "0.1N"): 0.45})
        + _rows("0004_d", 0.1, PAPER_LAYER_NODES,
                {("random", "4GPU", "0.1N"): 0.8, ("clique_opt", "4GPU", "0.1N"): 0.2})   # fewer topologies
        + _rows("0005_e", 0.3, 96, both))                                               # scaled batches: left out
    text = scale_trend_text(exp, frame)
    assert text.startswith("RAND / Our (modeled) at 0.1N")
    assert "0.01: 2GPU 1.50x, 4GPU 2.00x" in text
    assert "0.1: 2GPU 2.00x, 4GPU 2.00x" in text           # 0003: the latest run with both topologies
    assert "0.3" not in text
    assert scale_trend_text(exp, frame[frame["p_scale"] == 0.01]) is None     # one scale: no trend
