"""The `models` interface: registered names, Needs, factories, paper settings, bad options."""

from __future__ import annotations

import pytest
import torch

from harness import registry
from harness.errors import HarnessError
from impls import models

from .util import random_block


def test_registered_names_and_needs():
    names = {s.name for s in registry.impl_specs("models")}
    assert {"gcn", "sage", "gat", "pinsage"} <= names
    assert {"gcn_pyg", "sage_pyg", "gat_pyg", "pinsage_pyg"} <= names
    for kind in models.KINDS:
        assert registry.get_impl("models", kind).needs.packages == ()
        assert registry.get_impl("models", f"{kind}_pyg").needs.packages == ("torch_geometric",)
        assert registry.get_impl("models", kind).summary


@pytest.mark.parametrize("kind", models.KINDS)
def test_factory_signature_and_output_shape(kind):
    gen = torch.Generator().manual_seed(0)
    blocks = [random_block(gen, 30, 80, 5), random_block(gen, 10, 30, 5), random_block(gen, 4, 10, 5)]
    make = registry.get_impl("models", kind).factory
    model = make(12, 16, 5, 3, backend="native", heads=4, dropout=0.1, fanouts=(3, 3, 3))
    assert isinstance(model, torch.nn.Module) and model.num_layers == 3 and model.backend == "native"
    out = model(blocks, torch.randn(80, 12))
    assert out.shape == (4, 5)


def test_gat_widths_follow_heads():
    m = models.build("gat", 10, 256, 7, 3, heads=4)
    assert [(c.heads, c.out_dim, c.concat) for c in m.convs] == [(4, 64, True), (4, 64, True), (4, 7, False)]
    assert m.convs[1].in_dim == 256
    m = models.build("gat", 10, 32, 7, 2, heads=4, head_dim=32)
    assert m.convs[1].in_dim == 128


def test_wrong_number_of_blocks_or_rows():
    gen = torch.Generator().manual_seed(0)
    blocks = [random_block(gen, 10, 30, 5), random_block(gen, 4, 10, 5)]
    m = models.build("sage", 6, 8, 3, 3)
    with pytest.raises(ValueError, match="3 layers but got 2 blocks"):
        m(blocks, torch.randn(30, 6))
    m = models.build("sage", 6, 8, 3, 2)
    with pytest.raises(ValueError, match="source nodes"):
        m(blocks, torch.randn(29, 6))


def test_bad_options_are_harness_errors():
    with pytest.raises(HarnessError, match="unknown model"):
        models.build("gin", 4, 8, 2, 2)
    with pytest.raises(HarnessError, match="norm"):
        models.build("gcn", 4, 8, 2, 2, norm="left")
    with pytest.raises(HarnessError, match="backend"):
        models.needs_for("mxnet")


def test_pyg_backend_missing_is_a_clear_error(monkeypatch):
    from harness.needs import Capabilities

    caps = Capabilities(cuda=False, gpu_count=0,
                        packages={"torch_geometric": "package 'torch_geometric' is not installed"})
    monkeypatch.setattr(models, "_caps", lambda: caps)
    with pytest.raises(HarnessError, match="backend 'pyg' cannot run here: package 'torch_geometric'"):
        models.build("sage", 4, 8, 2, 2, backend="pyg")
    assert "torch_geometric" in models.needs_for("pyg").unmet(caps)


def test_paper_settings():
    wg = models.PAPER_MODELS["wholegraph"]
    assert set(wg) == {"gcn", "sage", "gat"}
    assert all(v["num_layers"] == 3 and v["hidden"] == 256 and v["fanouts"] == (30, 30, 30)
               and v["batch_size"] == 512 for v in wg.values())
    assert wg["gat"]["heads"] == 4
    xg = models.PAPER_MODELS["xgnn"]
    assert xg["gcn"]["fanouts"] == (15, 10, 5) and xg["sage"]["num_layers"] == 2
    assert xg["pinsage"]["num_layers"] == 3 and xg["pinsage"]["batch_size"] == 6000


def test_paper_sized_models_build():
    for kind, cfg in models.PAPER_MODELS["wholegraph"].items():
        m = models.build(kind, 100, cfg["hidden"], 47, cfg["num_layers"], heads=cfg.get("heads", 4))
        assert m.num_layers == 3


def test_dropout_only_in_training():
    gen = torch.Generator().manual_seed(0)
    blocks = [random_block(gen, 10, 30, 5), random_block(gen, 4, 10, 5)]
    x = torch.randn(30, 6)
    m = models.build("sage", 6, 8, 3, 2, dropout=0.5).eval()
    torch.testing.assert_close(m(blocks, x), m(blocks, x))


def test_bench_runs_on_cpu(capsys):
    from experiments.kit import layers

    rows = layers.bench(("sage", "gat"), num_dst=20, num_src=60, fanout=4, dim=8, repeats=1,
                       warmup=0, pyg=False)
    plain = {f"{i}/{b}" for i, b in layers.VARIANTS}
    assert {r["variant"] for r in rows if r["layer"] == "sage"} == plain
    # GAT: the default g-SpMM once per SDDMM way instead of once
    gat = {f"sparse/transpose/{d}" for d in layers.GAT_SDDMM_VARIANTS} | (plain - {"sparse/transpose"})
    assert {r["variant"] for r in rows if r["layer"] == "gat"} == gat
    assert all(r["ms"] > 0 for r in rows)
    assert layers.main(["--device", "cpu", "--dst", "10", "--src", "30", "--fanout", "3",
                       "--dim", "4", "--layers", "gcn", "--repeats", "1"]) == 0
    assert "sparse/transpose" in capsys.readouterr().out


def test_discovery_does_not_need_torch_geometric(py_env):
    """The registry imports every module under impls/: none of ours may import PyG then."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch_geometric'] = None\n"
            "from harness import registry; registry.discover()\n"
            "import impls.models.pyg, experiments.kit.layers\n"
            "from impls import models\n"
            "m = models.build('gat', 4, 8, 2, 2)\n"
            "print(sorted(s.name for s in registry.impl_specs('models')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=py_env,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'gat_pyg'" in out.stdout


class StepTimer:
    """Runs the step, reports 2 ms (no clock), counts the calls."""

    def __init__(self):
        self.calls = 0

    def time(self, fn):
        fn()
        self.calls += 1
        return 0.002


def test_layer_profile_times_each_layer_alone_with_its_block():
    """Each layer on its own block and input (the previous layers' output, activation applied),
    forward and backward; sizes and widths of each block; no normalization part for native layers."""
    from experiments.kit import layers

    blocks = [layers.synthetic_block(40, 120, 5), layers.synthetic_block(10, 40, 4)]
    model = models.build("gcn", 6, 16, 3, 2)
    x = torch.randn(120, 6)
    timer = StepTimer()
    rows = layers.layer_profile(model, blocks, x, timer=timer, warmup=1, repeats=3)
    assert timer.calls == 2 * 4 and [r["layer"] for r in rows] == [0, 1]
    assert [(r["edges"], r["num_src"], r["num_dst"]) for r in rows] == [(200, 120, 40), (40, 40, 10)]
    assert [(r["in_dim"], r["out_dim"]) for r in rows] == [(6, 16), (16, 3)]
    assert all(r["ms"] == 2.0 and "norm_ms" not in r for r in rows)
    assert all(p.grad is not None for p in model.convs[1].parameters())      # the step ran backward
