"""Registry and experiment-id resolution."""

from __future__ import annotations

import ast
import os

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


# --- capabilities, contracts and the one-file way --------------------------------------

def test_an_entry_carries_its_capabilities_and_its_interfaces_contract():
    from impls.gather import Ceiling, Gatherer

    spec = registry.get_impl("gather", "wholegraph_lib")
    assert (spec.title, spec.family, spec.plot_colour()) == ("WholeGraph", "WholeGraph", "#2ca02c")
    assert [v.name for v in spec.variants] == ["continuous", "chunked", "distributed"]
    assert spec.needs.devices == ("cuda",) and "pylibwholegraph" in spec.needs.packages
    assert registry.contract_of(spec) is Gatherer
    assert registry.contract_of(registry.get_impl("gather", "ceiling_alltoall")) is Ceiling
    assert registry.interface("gather").factory is not None and "peer_read" in registry.interface("gather").traits


def test_probes_are_a_contract_whose_traits_say_what_memory_they_chase():
    from experiments.wholegraph.table1 import probe_label, table_i_probes
    from experiments.xgnn.fig6b import IMPLS, headlined
    from impls.probes import Probe

    probe = registry.get_impl("probes", "local").factory("cpu", [])
    try:
        assert isinstance(probe, Probe) and registry.contract_of(registry.get_impl("probes", "local")) is Probe
    finally:
        probe.close()
    assert registry.names("probes", traits=("shared_handle",)) == ("vmm_local", "vmm_remote")
    assert registry.names("probes", traits=("device_memory",), without=("remote",)) == ("local", "p2p")
    assert table_i_probes() == ("um", "p2p") and probe_label("um_remote") == "UM remote"
    assert [i for i in IMPLS if headlined(i)] == ["local", "vmm_local", "vmm_remote"]
    assert not headlined("no_such_probe")


def test_a_row_finds_its_variant_by_the_options_that_name_it():
    spec = registry.get_impl("gather", "p2p_shared")
    assert spec.variant_of({"mode": "chunked", "ids_per_rank": 5}).name == "chunked"
    assert spec.variant_of({"mode": "chunked", "backend": "ipc"}).name == "chunked-ipc"
    assert spec.variant_of({"mode": "chunked", "backend": float("nan"), "load": None}).name == "chunked"
    assert spec.variant_of({"mode": "chunked", "backend": "telepathy"}) is None
    plain = registry.series_of("gather", "nccl_alltoallv", {"row_bytes": 512})
    assert plain.key == "nccl_alltoallv" and plain.label == "NCCL alltoallv (5 steps)"
    assert registry.series_of("gather", "no_such_gather", {}) is None


def test_series_select_by_traits_device_and_family_in_the_registrys_order():
    paper = registry.series("gather", traits=("paper",))
    assert [s.key for s in paper] == ["p2p_shared (chunked)"]
    on_cpu = registry.series("gather", device="cpu", without=("ceiling",))
    assert all(s.runs_on("cpu") for s in on_cpu) and "p2p_push (tma)" not in [s.key for s in on_cpu]
    ours = registry.series("gather", family="ours")
    assert ours and all(s.family == "ours" for s in ours)
    everything = registry.series("gather")
    orders = [(s.spec.order, s.impl) for s in everything]
    assert orders == sorted(orders)


def test_traits_and_variants_are_checked_when_registered(registry_sandbox):
    with pytest.raises(RuntimeError, match=r"traits \['telepathic'\] are not among interface gather's"):
        registry_sandbox.impl("gather", "zz_bad_traits", traits=("telepathic",))
    with pytest.raises(RuntimeError, match="variant names repeat"):
        registry_sandbox.impl("gather", "zz_bad_variants", variants=(registry.Variant("a"), registry.Variant("a")))
    with pytest.raises(HarnessError, match="no variant 'c'"):
        registry_sandbox.impl("zztest", "zz_variants", variants=(registry.Variant("a"), registry.Variant("b")))
        registry.get_impl("zztest", "zz_variants").variant("c")


TOY_GATHER = '''"""A toy gather in one file outside the tree: every rank computes the rows it is asked for."""

from harness.needs import Needs
from harness.registry import Variant, register_impl
from impls.core.layout import check_ids, closed_form_rows


class ToyGather:
    def __init__(self, rank, spec):
        self.spec, self.device = spec, rank.torch_device()

    def gather(self, ids, check=True):
        if check:
            check_ids(ids, self.spec.num_rows)
        return closed_form_rows(ids, self.spec.row_elems, self.spec.torch_dtype).to(self.device)

    def describe(self):
        return "rows computed from their ids"

    def close(self):
        pass


@register_impl("gather", "zz_toy", needs=Needs(devices=("cpu",)), summary="a toy gather", label="toy",
               family="toy", colour="#00ff7f", variants=(Variant("computed", {"source": "ids"}, "toy: computed"),))
def make(rank, spec, source="ids"):
    return ToyGather(rank, spec)
'''


def test_a_gather_in_one_file_is_listed_run_and_drawn(tmp_path, monkeypatch, registry_sandbox, py_env):
    """The one-file way: a module outside impls/, named by $HARNESS_PLUGINS, is in `harness list`,
    measured by the every-implementation experiment on CPU ranks, and a series of its figure."""
    import subprocess
    import sys

    from harness.config import RunConfig
    from harness.report import report_runs
    from harness.runner import run as run_experiments
    from harness.store import load_run
    from tests.conftest import REPO_ROOT

    (tmp_path / "zz_toy_gather.py").write_text(TOY_GATHER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(registry.PLUGINS_ENV, "zz_toy_gather")
    monkeypatch.setattr(registry, "_DISCOVERED", False)
    try:
        registry.discover()
        assert registry.get_impl("gather", "zz_toy").title == "toy"
        assert "zz_toy" in registry.get_experiment("wholegraph.gather").impls

        env = {**py_env, registry.PLUGINS_ENV: "zz_toy_gather",
               "PYTHONPATH": str(tmp_path) + os.pathsep + py_env["PYTHONPATH"]}
        listed = subprocess.run([sys.executable, "-m", "harness", "list", "--interface", "gather"], cwd=REPO_ROOT,
                                env=env, capture_output=True, text=True, timeout=180)
        assert listed.returncode == 0, listed.stderr
        line = next(ln for ln in listed.stdout.splitlines() if "zz_toy" in ln)
        assert "toy (toy): computed" in line and "yes" in line

        cfg = RunConfig(device="cpu", world_size=2, quick=True, repeats=2, warmup=0,
                        impl_patterns=("zz_toy", "nccl_alltoallv"), params={"row_bytes": "128"},
                        out_dir=tmp_path / "runs", timeout_s=300)
        outcome = run_experiments(["wholegraph.gather"], cfg, ["test"])
        rows = load_run(outcome.store.path).rows
        toy = [r for r in rows if r["impl"] == "zz_toy"]
        assert outcome.errors == 0 and toy and all(r["status"] == "ok" for r in toy)
        assert toy[0]["params"]["source"] == "ids" and any(r["metric"] == "algbw" and r["value"] > 0 for r in toy)

        artifacts: dict = {}
        report_runs([outcome.store.path], tmp_path / "rep", artifacts=artifacts)
        artifact = artifacts["wholegraph.gather"][0]
        assert "zz_toy (computed)" in set(artifact.table["Implementation"])
        ticks = {t.get_text(): t.get_color() for t in artifact.figure.axes[0].get_yticklabels()}
        assert ticks.get("toy: computed") == "#00ff7f" and "NCCL alltoallv (5 steps)" in ticks
    finally:
        sys.modules.pop("zz_toy_gather", None)


# --- no experiment branches on an implementation's name -----------------------------------

def name_comparisons(source: str) -> list[str]:
    """Where ``source`` compares an implementation's name (``impl``, ``x.impl``, ``row["impl"]``) with
    a string literal, a container of them, or a module-level name bound to one: ``== "x"``,
    ``in ("x", "y")``, ``in OURS``, ``.isin(["x"])``. One line per place."""
    tree = ast.parse(source)
    literal_names: set = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _literal(node.value, literal_names):
            literal_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_impl(s) for s in sides) and any(_literal(s, literal_names) for s in sides):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "isin"
              and _names_impl(node.func.value) and any(_literal(a, literal_names) for a in node.args)):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return sorted(found, key=lambda f: int(f.split(":")[0].split()[1]))


def _names_impl(node) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "impl"
    if isinstance(node, ast.Attribute):
        return node.attr == "impl"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "impl"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "impl"
    return False


def _literal(node, literal_names: set) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return _literal(node.left, literal_names) and _literal(node.right, literal_names)
    return isinstance(node, ast.Name) and node.id in literal_names


# modules not converted yet, each with why: empty, and it only shrinks (a module listed here that no
# longer compares a name fails the test, so that it is taken off)
NOT_YET: dict[str, str] = {}


def test_the_name_check_finds_every_form_of_comparison():
    source = '''OURS = ("a", "b")
BOTH = OURS + ("c",)
if point.impl == "mggcn": pass
if impl in ("x", "y"): pass
if "z" != r["impl"]: pass
if impl not in OURS: pass
if system.impl in BOTH: pass
sel = frame[frame["impl"].isin(["p"])]
ok = row.get("impl") == "q"
fine = impl == other and spec.has("host") and impl in names(interface) and r["metric"] == "algbw"
'''
    found = name_comparisons(source)
    assert [f.split(":")[0] for f in found] == [f"line {n}" for n in (3, 4, 5, 6, 7, 8, 9)], found


def test_no_experiment_compares_an_implementations_name_with_a_literal():
    from tests.conftest import REPO_ROOT

    found = {}
    for path in sorted((REPO_ROOT / "experiments").rglob("*.py")):
        rel = str(path.relative_to(REPO_ROOT))
        places = name_comparisons(path.read_text())
        if places:
            found[rel] = places
    unexpected = {rel: places for rel, places in found.items() if rel not in NOT_YET}
    assert not unexpected, ("experiments choose implementations by their registry capabilities (traits, family, "
                            "variants), not by name:\n" + "\n".join(f"{rel} {p}" for rel, ps in unexpected.items()
                                                                    for p in ps))
    stale = sorted(set(NOT_YET) - set(found))
    assert not stale, f"converted, take them off NOT_YET: {stale}"
