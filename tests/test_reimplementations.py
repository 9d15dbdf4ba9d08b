"""Re-implemented systems say so: in `harness list`, in report captions and in their table labels."""

from __future__ import annotations

from harness import registry


def test_reimplementations_are_registered_with_their_system_and_reason():
    marked = {s.key: s for s in registry.impl_specs() if s.reimplements}
    assert {"pipelines.quiver", "storage.quiver", "placement.clique", "pipelines.dgl_cache", "storage.dgl_cache",
            "placement.pagraph"} <= set(marked)
    for spec in marked.values():
        assert spec.real_package and spec.what().startswith(f"re-implementation of {spec.reimplements}'s policy (")
    assert registry.get_impl("pipelines", "dgl_host").what() == ""          # real DGL
    assert registry.get_impl("pipelines", "wholegraph_lib").what() == ""    # real pylibwholegraph


def test_caption_note_names_only_the_reimplementations_present():
    note = registry.reimplementation_note("pipelines", ["xgnn", "quiver", "dgl_host", "quiver"])
    assert note.startswith("Re-implementations, not the systems' own code: quiver is the harness's "
                           "re-implementation of Quiver's policy (torch-quiver")
    assert "dgl_host" not in note and note.count("quiver is") == 1
    assert registry.reimplementation_note("pipelines", ["xgnn", "dgl_host"]) == ""


def test_xgnn_and_placement_labels_mark_reimplementations():
    from experiments.placement.paper import policy_label
    from experiments.xgnn.training import REIMPL, SYSTEMS

    for key, system in SYSTEMS.items():
        spec = registry.get_impl("pipelines", system.impl)
        if spec.reimplements and system.unavailable is None and key in ("quiver", "dgl_cache", "dgl_gpu",
                                                                        "dgl_cache_uva", "dgl_host"):
            assert system.label.endswith(REIMPL), key
    assert SYSTEMS["dgl"].impl == "dgl_host" and REIMPL not in SYSTEMS["dgl"].label
    assert all(policy_label(impl).endswith(REIMPL) for impl in registry.names("placement", family="PaGraph"))


def test_list_shows_what_each_implementation_is(capsys):
    from harness.cli import main

    assert main(["list", "--interface", "pipelines"]) == 0
    out = capsys.readouterr().out
    assert "what it is" in out and "re-implementation of Quiver's" in out
