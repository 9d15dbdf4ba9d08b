"""Fig. 11's per-layer measurement on a trained pipeline (experiments/wholegraph/training.py,
profile_layers): each layer of the model alone on one of the rank's mini-batches."""

from __future__ import annotations

from harness.launcher import launch

from . import targets


def test_profile_layers_of_a_trained_pipeline():
    (rows,) = launch(targets.profiled_layers, (targets.planted_graph(),), world_size=1, device="cpu", timeout_s=300)
    assert [r["layer"] for r in rows] == [0, 1]
    assert rows[0]["num_dst"] == rows[1]["num_src"] and rows[1]["num_dst"] <= 32      # blocks outermost first
    assert rows[0]["in_dim"] == 8 and rows[0]["out_dim"] == rows[1]["in_dim"] == 16 and rows[1]["out_dim"] == 4
    assert all(r["edges"] > 0 and r["p10_ms"] <= r["ms"] <= r["p90_ms"] for r in rows)


def test_fig11_note_gives_each_layer_and_the_normalization():
    from experiments.wholegraph.fig11 import layer_note

    layers = [{"layer": 0, "ms": 1500.0, "edges": 12_000_000, "num_src": 2_000_000, "num_dst": 400_000, "in_dim": 100,
               "out_dim": 256, "norm_ms": 210.0},
              {"layer": 1, "ms": 90.0, "edges": 400_000, "num_src": 400_000, "num_dst": 15_000, "in_dim": 256,
               "out_dim": 256, "norm_ms": 8.0}]
    rec = {"key": {"dataset": "ogbn-products", "model": "gcn", "impl": "wholegraph", "backend": "pyg"},
           "extra": {"epoch_time": {"layer_profile": layers}}}
    note = layer_note(rec, "4xH200")
    assert note.startswith("4xH200 products GCN, WholeGraph (ours) + PyG layers, each layer alone on one mini-batch")
    assert "layer 0 1,500 ms (12M edges, 2M sources, 100->256; normalization 210 ms of it)" in note
    assert layer_note({"key": rec["key"], "extra": {"epoch_time": {}}}, "x") == ""
