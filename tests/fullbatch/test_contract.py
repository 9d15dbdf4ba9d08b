"""The full-batch trainers as a typed contract: every registered trainer (enumerated, none named) is a
FullBatchTrainer that agrees with the dense reference; its traits are the interface's words and say
what the MG-GCN artifacts measure it as; a trainer registered with traits fills those roles without
an experiment naming it. Each check also meets a case that must fail it."""

from __future__ import annotations

import numpy as np
import pytest

from harness import registry
from harness.config import RunConfig
from harness.needs import detect
from impls.fullbatch import FullBatchTrainer, StagedTrainer

from .reference import MODELS, DenseReference, assert_close_to_reference, make_test_graph

SPECS = registry.impl_specs("fullbatch")


def _runnable(spec) -> str | None:
    return spec.needs.unmet(detect(), "cpu", 1) or spec.unavailable_reason("cpu")


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_trainer_is_its_contract_and_agrees_with_the_reference(spec):
    if (reason := _runnable(spec)) is not None:
        pytest.skip(reason)
    model = MODELS["spmm_first_middle"]
    graph = make_test_graph()
    trainer = spec.factory(graph, model, device="cpu", seed=0, rank=0, world=1)
    try:
        contract = registry.contract_of(spec)
        assert isinstance(trainer, contract) and isinstance(trainer, FullBatchTrainer)
        assert isinstance(trainer, StagedTrainer) == spec.has("staged")
        ref = DenseReference(graph, model)
        loss, logits, grads = trainer.compute_gradients()
        order = getattr(getattr(trainer, "share", None), "old_ids", None)   # a share's rows in its order
        expected = ref.gradients()
        if order is not None:
            expected = (expected[0], expected[1][np.asarray(order)], expected[2])
        assert_close_to_reference(loss, logits, grads, expected, label=spec.name)
        losses = []
        for _ in range(3):                   # the loss each epoch's Adam step starts from
            trainer.train_epoch()
            losses.append(trainer.loss_value())
        np.testing.assert_allclose(losses, ref.adam_losses(3)[0], rtol=2e-5)
    finally:
        trainer.close()


def test_an_object_short_of_the_contract_is_not_a_trainer():
    class NoLoss:
        def train_epoch(self): ...

        def compute_gradients(self): ...

        def close(self): ...

    class Plain(NoLoss):
        def loss_value(self) -> float:
            return 0.0

    assert not isinstance(NoLoss(), FullBatchTrainer)
    assert isinstance(Plain(), FullBatchTrainer) and not isinstance(Plain(), StagedTrainer)


def test_the_traits_say_what_each_trainer_is():
    declared = registry.interface("fullbatch")
    assert declared is not None and declared.contract is FullBatchTrainer
    assert [s.name for s in SPECS if s.has("paper_method")] == ["mggcn"]     # one method the paper proposes
    for spec in SPECS:
        assert spec.traits <= set(declared.traits), spec.name
        assert spec.has("distributed") != spec.has("single_device"), spec.name
        assert not spec.has("library") or spec.has("single_device"), spec.name
        assert not spec.has("paper_baseline") or spec.has("library"), spec.name
        assert not spec.has("staged") or (spec.has("distributed") and registry.contract_of(spec) is StagedTrainer)
        assert spec.label and spec.plot_colour(), spec.name
    assert len([s for s in SPECS if s.has("paper_baseline")]) == 1


def test_a_trait_the_interface_does_not_declare_is_refused(registry_sandbox):
    with pytest.raises(RuntimeError, match="not among interface fullbatch"):
        registry_sandbox.impl("fullbatch", "zz_bad", traits=("single_device", "fast"))


def test_a_trainer_joins_the_artifacts_by_its_traits_not_its_name(registry_sandbox, tmp_path):
    """A new one-device library trainer is a baseline of Table 3 and a system of Figs. 10 and 12 (after
    the paper's DGL in the speedups' order); a new distributed one is measured on every GPU count of
    Fig. 10, but is no system of Fig. 12 (no CAGNET on the A100s) nor a Table 3 baseline."""
    from experiments.mggcn.comparison import libraries, multi_gpu, rival

    registry_sandbox.impl("fullbatch", "zz_library", traits=("single_device", "library"), label="Toy GCN",
                          order=60)
    registry_sandbox.impl("fullbatch", "zz_spread", traits=("distributed",), label="Toy 1D", order=25)
    cfg = RunConfig(device="cpu", world_size=2, quick=True, data_root=tmp_path,
                    params={"datasets": "cora"})

    def grid(exp_id):
        return {(p.impl, p.world_size) for p in registry.get_experiment(exp_id).points(cfg)}

    assert {("zz_library", 1), ("zz_spread", 1), ("zz_spread", 2)} <= grid("mggcn.fig10")
    fig12 = grid("mggcn.fig12")
    assert ("zz_library", 1) in fig12 and not any(impl == "zz_spread" for impl, _ in fig12)
    assert "zz_library" in registry.get_experiment("mggcn.table3").impls
    assert "zz_spread" not in registry.get_experiment("mggcn.table3").impls
    assert libraries()[0] == "dgl" and libraries()[-1] == "zz_library"
    assert multi_gpu() == ("mggcn", "cagnet_1d", "zz_spread")            # in the registry's order
    assert rival(("mggcn", "pyg")) is None and rival(("mggcn", "zz_spread")) == "zz_spread"


def test_the_artifacts_measure_what_they_did_when_they_named_them():
    from experiments.mggcn.table3 import baselines

    assert baselines() == ("single_gpu", "pyg", "dgl")
    assert registry.get_experiment("mggcn.table3").impls == ("mggcn", "single_gpu", "pyg", "dgl")
    assert registry.get_experiment("mggcn.memory").impls == ("mggcn", "single_gpu")
