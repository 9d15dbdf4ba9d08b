"""GGMS, DGL+C and Quiver stores on CPU ranks against a plain CSR and feature matrix.

One rank in this process (no process group needed) for every design and several ratios, then two
spawned CPU ranks (gloo + host shared memory) with remote-GPU reads, solver copies and a budget.
Where g++ builds the CUDA emulator (tests/sampling/emu.py), the sampling kernels run over the
tiered descriptor (GPU buffers + host part) too and must equal the numba samples.
"""

from __future__ import annotations

import pytest

from harness.launcher import RankContext, launch

from .graphs import skewed_graph
from .targets import build, check_store, ranks_check_designs

ONE = RankContext(0, 1, 0, "cpu", "gloo")


def _emulator_ok() -> bool:
    from tests.sampling import emu

    return emu.available() is None


@pytest.mark.parametrize("design,options", [
    ("ggms", dict(graph_ratio=0.3, feat_ratio=0.5)),
    ("ggms", dict(graph_ratio=0.0, feat_ratio=0.0)),
    ("ggms", dict()),                                   # no budget: everything on the GPU
    ("ggms", dict(hotness="none", graph_ratio=0.7, feat_ratio=0.1)),
    ("dgl_cache", dict(cache_ratio=0.25)),
    ("dgl_cache", dict(cache_ratio=0.25, graph_location="host")),
    ("quiver", dict(feat_ratio=0.6)),
])
def test_one_rank_matches_plain_graph(design, options):
    graph = skewed_graph(num_nodes=300, seed=len(options))
    store = build(ONE, design, graph, **options)
    try:
        counts = check_store(store, graph)
        ratio = store.feat_layout.ratio
        if ratio in (0.0, 1.0):
            assert counts["feature_tiers"][2 if ratio == 0.0 else 0] == sum(counts["feature_tiers"])
        if options.get("graph_location") == "host":       # DGL's UVA mode: no topology on the GPU
            assert store.graph_layout.ratio == 0.0 and store.memory()["per_gpu"][0]["topology_bytes"] == 0
    finally:
        store.close()


def test_one_rank_kernels_over_tiered_descriptor():
    """Descriptor with a GPU part and a larger host part: the kernels' clamp to the last part."""
    from tests.sampling import emu

    if emu.available():
        pytest.skip(emu.available())
    graph = skewed_graph(num_nodes=250, seed=9)
    with emu.installed():
        for options in (dict(graph_ratio=0.15, feat_ratio=0.5), dict(graph_ratio=0.0, feat_ratio=0.0)):
            store = build(ONE, "ggms", graph, **options)
            try:
                check_store(store, graph, n_ids=120, kernel=True)
            finally:
                store.close()


def _two_ranks(ctx, kernel):
    if kernel:
        from tests.sampling import emu

        with emu.installed():
            return ranks_check_designs(ctx, True)
    return ranks_check_designs(ctx, False)


def test_two_cpu_ranks_every_design():
    kernel = _emulator_ok()
    results = launch(_two_ranks, (kernel,), world_size=2, device="cpu", timeout_s=240)
    r0, r1 = results
    for name in r0:
        assert r0[name]["per_gpu"] == r1[name]["per_gpu"], f"{name}: ranks disagree on the memory model"
        assert r0[name]["layouts"] == r1[name]["layouts"]
    # GGMS spreads hot rows over both GPUs: each rank reads the other's buffer
    assert r0["ggms"]["feature_tiers"][1] > 0 and r1["ggms"]["feature_tiers"][1] > 0
    assert r0["ggms_all_gpu"]["feature_tiers"][2] == 0
    # without NVLink the solver stores both partitions on both GPUs: no remote reads, twice the bytes
    assert r0["ggms_solver_copies"]["feature_tiers"][1] == 0
    assert "2 copies" in r0["ggms_solver_copies"]["layouts"][1]
    # DGL+C reads only its own cache; Quiver's clique is both GPUs
    assert r0["dgl_cache"]["feature_tiers"][1] == 0 and r0["ggms_msg_step"]["feature_tiers"][1] == 0
    assert r0["dgl_cache_uva"]["feature_tiers"][1] == 0 and "host" in r0["dgl_cache_uva"]["layouts"][0]
    assert r0["dgl_cache_uva"]["fit"]["topology_bytes"] == 0 < r0["dgl_cache"]["fit"]["topology_bytes"]
    assert "replicated" in r0["ggms_msg_step"]["layouts"][1] and "modulo 2" in r0["ggms_msg_step"]["layouts"][0]
    assert r0["quiver"]["feature_tiers"][1] > 0
    fit = r0["ggms_budget_feat_first"]["fit"]
    assert fit["total_bytes"] <= 3000 and fit["feat_rows"] > 0
