"""XGNN's training experiments on two CUDA ranks at toy scale: every point trains or is an OOM /
skipped row (no errors), and the reports build (the CPU versions are tests/xgnn/test_experiments_cpu.py)."""

from __future__ import annotations

import pytest

from tests.gpu import require_gpus

torch = require_gpus(2)

from harness.config import RunConfig  # noqa: E402
from harness.report import report_runs  # noqa: E402
from harness.runner import run as run_experiments  # noqa: E402
from harness.store import load_run  # noqa: E402

pytestmark = pytest.mark.gpu

TOY = {"max_edges": "3e6", "max_batches": "2", "warmup_batches": "1", "eval_nodes": "256", "epochs": "2",
       "datasets": "TW,CF", "models": "sage", "combos": "sage:CF", "gpus": "1,2", "conv_epochs": "2"}


def test_xgnn_training_experiments_on_two_gpus(tmp_path):
    ids = ["xgnn.table4", "xgnn.fig10", "xgnn.table1", "xgnn.fig11", "xgnn.fig15", "xgnn.table5"]
    cfg = RunConfig(device="cuda", world_size=2, quick=True, out_dir=tmp_path / "results",
                    data_root=tmp_path / "data", timeout_s=900, params=TOY)
    outcome = run_experiments(ids, cfg, ["test"])
    rows = load_run(outcome.store.path).rows
    assert outcome.errors == 0, [r.get("reason") for r in rows if r["status"] == "error"]
    ok = {(r["experiment"], r["params"]["system"]) for r in rows if r["status"] == "ok"}
    assert ("xgnn.table4", "xgnn") in ok and ("xgnn.fig10", "psa") in ok and ("xgnn.table5", "wholegraph") in ok
    written = report_runs([outcome.store.path], tmp_path / "reports")
    names = {p.name for p in written}
    for artifact in ("table4", "fig10", "table1", "fig11", "fig12", "fig15", "table5"):
        assert f"{artifact}.md" in names, artifact
