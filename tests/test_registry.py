"""Registry and experiment-id resolution."""

from __future__ import annotations

import pytest

from harness import registry
from harness.errors import HarnessError
from harness.experiment import Experiment
from harness.needs import Needs


def _exp_class(paper: str, artifact: str, module: str | None = None):
    attrs = {"title": f"fake {artifact}", "interface": "zztest", "impls": ("a",)}
    if module is None:
        attrs["id"] = f"{paper}.{artifact}"
    else:
        attrs["__module__"] = module
    return type(f"Fake_{paper}_{artifact}", (Experiment,), attrs)


@pytest.fixture
def fakes(registry_sandbox):
    """Two throwaway papers, one of which shares the artifact name `table1`."""
    made = {}
    for paper, artifact in [("zzfake", "table1"), ("zzfake", "fig2"), ("aafake", "fig2"),
                            ("zzfake", "zzfig"), ("aafake", "zzfig")]:
        made[f"{paper}.{artifact}"] = registry_sandbox.experiment(_exp_class(paper, artifact))
    return made


def ids(exps):
    return [e.id for e in exps]


def test_real_experiment_is_discovered():
    exp = registry.get_experiment("wholegraph.table1")
    assert (exp.paper, exp.artifact, exp.interface) == ("wholegraph", "table1", "probes")
    assert "wholegraph.table1" in ids(registry.experiments())


def test_every_experiment_takes_its_id_from_its_module_path():
    for exp in registry.experiments():
        module = type(exp).__module__
        assert module == f"experiments.{exp.id}", (exp.id, module)
        assert exp.id == f"{exp.paper}.{exp.artifact}"
        assert "id" not in type(exp).__dict__ or type(exp).__dict__["id"] == exp.id


def test_an_experiments_module_path_names_it_and_a_contrary_id_is_refused(registry_sandbox):
    exp = registry_sandbox.experiment(_exp_class("zzpath", "fig3", module="experiments.zzpath.fig3"))
    assert (exp.id, exp.paper, exp.artifact) == ("zzpath.fig3", "zzpath", "fig3")
    wrong = _exp_class("zzpath", "fig4", module="experiments.zzpath.fig4")
    wrong.id = "zzpath.fig5"
    with pytest.raises(RuntimeError, match="module path makes it 'zzpath.fig4'"):
        registry.register_experiment(wrong)
    nameless = _exp_class("zzpath", "fig6", module="tests.somewhere")
    with pytest.raises(RuntimeError, match="'paper.artifact'"):
        registry.register_experiment(nameless)


def test_a_second_experiment_in_one_module_is_refused(registry_sandbox):
    registry_sandbox.experiment(_exp_class("zzone", "fig1", module="experiments.zzone.fig1"))
    twin = type("Twin", (Experiment,), {"__module__": "experiments.zzone.fig1", "title": "twin"})
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.register_experiment(twin)


def test_full_id(fakes):
    assert ids(registry.resolve(["zzfake.fig2"])) == ["zzfake.fig2"]
    assert ids(registry.resolve(["wholegraph.table1"])) == ["wholegraph.table1"]


def _real_with_artifact(artifact):
    return [e.id for e in registry.experiments() if e.artifact == artifact and "fake" not in e.paper]


def test_bare_artifact_selects_that_artifact_of_every_paper(fakes):
    got = ids(registry.resolve(["table1"]))
    assert "wholegraph.table1" in got and "zzfake.table1" in got
    assert got == sorted(_real_with_artifact("table1") + ["zzfake.table1"])
    assert ids(registry.resolve(["fig2"])) == sorted(_real_with_artifact("fig2") + ["aafake.fig2", "zzfake.fig2"])
    assert ids(registry.resolve(["zzfig"])) == ["aafake.zzfig", "zzfake.zzfig"]


def test_paper_name_selects_all_its_artifacts(fakes):
    assert ids(registry.resolve(["zzfake"])) == ["zzfake.table1", "zzfake.fig2", "zzfake.zzfig"]
    assert ids(registry.resolve(["wholegraph"])) == [
        e.id for e in registry.experiments() if e.paper == "wholegraph"]


def test_all_selects_everything(fakes):
    got = ids(registry.resolve(["all"]))
    assert got == sorted(got, key=registry.reading_order)
    assert {"wholegraph.table1", "zzfake.table1", "zzfake.fig2", "aafake.fig2"} <= set(got)
    assert got == ids(registry.experiments())


def test_shell_patterns(fakes):
    assert ids(registry.resolve(["*.zzfig"])) == ["aafake.zzfig", "zzfake.zzfig"]
    assert ids(registry.resolve(["zzfake.*"])) == ["zzfake.table1", "zzfake.fig2", "zzfake.zzfig"]
    assert ids(registry.resolve(["zzfake.[ft]*"])) == ["zzfake.table1", "zzfake.fig2"]
    assert ids(registry.resolve(["zz?ake.fig?"])) == ["zzfake.fig2"]
    got = ids(registry.resolve(["*.table1"]))
    assert "wholegraph.table1" in got and "zzfake.table1" in got and got == sorted(got)


def test_duplicates_removed_and_order_kept(fakes):
    got = ids(registry.resolve(["zzfake.zzfig", "aafake.fig2", "zzfig", "zzfake.zzfig",
                                "zzfake.table1", "wholegraph.table1"]))
    assert got == ["zzfake.zzfig", "aafake.fig2", "aafake.zzfig", "zzfake.table1", "wholegraph.table1"]
    got = ids(registry.resolve(["zzfake.table1", "all"]))
    assert got[0] == "zzfake.table1" and len(got) == len(set(got)) == len(registry.experiments())


def test_whitespace_around_ids_is_ignored(fakes):
    assert ids(registry.resolve([" zzfake.fig2 "])) == ["zzfake.fig2"]


@pytest.mark.parametrize("bad", ["nosuch", "wholegraph.table99", "nosuch.*", "zzfake.table1x"])
def test_unknown_id_is_a_harness_error(fakes, bad):
    with pytest.raises(HarnessError) as info:
        registry.resolve(["wholegraph.table1", bad])
    msg = str(info.value)
    assert f"'{bad}'" in msg
    assert "python -m harness list" in msg
    assert "\n" not in msg


def test_unknown_id_suggests_near_names(fakes):
    with pytest.raises(HarnessError, match=r"did you mean .*zzfake\.table1"):
        registry.resolve(["zzfake.tabel1"])          # a typo of an existing id


def test_no_ids_is_an_error():
    with pytest.raises(HarnessError, match="at least one"):
        registry.resolve([])


def test_get_experiment_unknown():
    with pytest.raises(HarnessError, match="unknown experiment 'nope.table1'"):
        registry.get_experiment("nope.table1")


def test_sandbox_removes_its_experiments(registry_sandbox):
    registry_sandbox.experiment(_exp_class("zzgone", "fig9"))
    assert "zzgone.fig9" in registry._EXPERIMENTS
    # (the fixture's teardown asserts the registry is back to its state before the test)


def test_registering_a_different_class_under_the_same_id_fails(registry_sandbox):
    registry_sandbox.experiment(_exp_class("zzdup", "fig1"))
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.register_experiment(_exp_class("zzdup", "fig1"))


# --- implementations ---------------------------------------------------------------

def test_probe_implementations_are_registered():
    names = [s.name for s in registry.impl_specs("probes")]
    assert names == sorted(names)
    assert {"local", "p2p", "um", "host_zero_copy"} <= set(names)  # others may be added
    spec = registry.get_impl("probes", "p2p")
    assert spec.key == "probes.p2p"
    assert spec.needs.min_gpus == 2 and spec.needs.peer_access and spec.needs.devices == ("cuda",)
    assert registry.get_impl("probes", "local").needs.devices == ("cpu", "cuda")


def test_unknown_implementation_names_the_known_ones():
    with pytest.raises(HarnessError) as info:
        registry.get_impl("probes", "telepathy")
    msg = str(info.value)
    assert "'telepathy'" in msg and "'probes'" in msg
    for name in ("local", "p2p", "um", "host_zero_copy"):
        assert name in msg


def test_unknown_interface():
    with pytest.raises(HarnessError, match=r"known: none"):
        registry.get_impl("no_such_interface", "x")


def test_register_impl_and_summary(registry_sandbox):
    def factory():
        """First line of the doc.

        More text."""

    registry_sandbox.impl("zztest", "docimpl", factory, needs=Needs(min_gpus=3))
    spec = registry.get_impl("zztest", "docimpl")
    assert spec.summary == "First line of the doc."
    assert spec.factory is factory and spec.needs.min_gpus == 3
    assert [s.name for s in registry.impl_specs("zztest")] == ["docimpl"]
    # the same factory again is fine, another one under the same name is not
    registry.register_impl("zztest", "docimpl")(factory)
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.register_impl("zztest", "docimpl")(lambda: None)


def test_broken_module_is_left_out_and_named(monkeypatch, tmp_path):
    """A module that fails to import is reported, and the other experiments still resolve."""
    import sys

    from harness import registry

    pkg = tmp_path / "experiments_broken_probe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text("raise RuntimeError('half-written module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import experiments

    monkeypatch.setattr(experiments, "__path__", list(experiments.__path__) + [str(pkg)])
    monkeypatch.setattr(registry, "_DISCOVERED", False)
    monkeypatch.setattr(registry, "BROKEN_MODULES", {})
    with pytest.warns(UserWarning, match="half-written module"):
        registry.discover()
    assert any(name.endswith(".bad") and "half-written" in why for name, why in registry.BROKEN_MODULES.items())
    assert registry.resolve(["wholegraph.table1"])[0].id == "wholegraph.table1"
    with pytest.raises(HarnessError, match="failed to import"):
        registry.resolve(["wholegraph.nosuch"])
    sys.modules.pop("experiments.bad", None)


def test_a_paper_reads_tables_then_figures_by_number_then_its_other_artifacts():
    got = [e.artifact for e in registry.experiments() if e.paper == "wholegraph"]
    assert got == ["table1", "table2", "table3", "table4", "table5", "fig7", "fig8", "fig9", "fig10", "fig11",
                   "fig12", "fig13", "gather", "sampling", "unique"]
    assert registry.reading_order("p.table2") < registry.reading_order("p.table10") < registry.reading_order("p.fig1")
    # a panel with an artifact of its own reads right after its figure, before the next one
    assert registry.reading_order("p.fig6") < registry.reading_order("p.fig6b") < registry.reading_order("p.fig7")
    assert registry.reading_order("p.fig6b") < registry.reading_order("p.fig16") < registry.reading_order("p.other")
