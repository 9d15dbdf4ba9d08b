"""Training pipelines on 2 GPUs (NCCL, DDP): one step equals the single-process reference on the same
blocks, features and weights; memory categories add up. wholegraph_lib needs pylibwholegraph and
pyg_host PyG's sampler (pyg-lib or torch-sparse): their cases skip where those do not import."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.multigpu]


def _cases():
    from harness import registry
    from harness.needs import _import_problem

    base = {"model": "sage", "num_layers": 2, "hidden": 16, "fanouts": (4, 3), "batch_size": 24, "lr": 0.01,
            "eval_batch_size": 64}
    cases = [{"pipeline": "wholegraph", **base},
             {"pipeline": "wholegraph", **base, "model": "gat", "heads": 2}]
    if _import_problem("pylibwholegraph") is None:
        cases.append({"pipeline": "wholegraph_lib", **base})
    if registry.get_impl("pipelines", "pyg_host").unavailable_reason("cuda") is None:
        cases.append({"pipeline": "pyg_host", **base, "options": {"num_workers": 0}})
    return cases


PREFETCH_CASE = {"pipeline": "wholegraph", "model": "sage", "num_layers": 2, "hidden": 16, "fanouts": (4, 3),
                 "batch_size": 24, "lr": 0.01, "eval_batch_size": 64}


@pytest.fixture(scope="module")
def two_gpus():
    """One launch of 2 GPU ranks for both tests: the one-step cases and the prefetch runs."""
    import torch

    from tests.helpers import SharedLaunch
    from tests.pipelines import targets

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    pytest.importorskip("cupy")
    graph, cases = targets.planted_graph(), _cases()
    ranks = SharedLaunch({2: {"one_step": (targets.one_step, (graph, cases, False)),
                              "prefetch": (targets.prefetch_runs, (graph, PREFETCH_CASE))}},
                         device="cuda", timeout_s=900)
    return ranks, graph, cases


def test_one_step_on_two_gpus_equals_the_reference(two_gpus):
    from impls.pipelines.base import MEMORY_CATEGORIES
    from tests.pipelines.checks import check_one_step

    ranks, graph, cases = two_gpus
    results = ranks(2, "one_step")
    for index, case in enumerate(cases):
        check_one_step(results, index, case, graph, loss_rel=1e-4, exact_updates=False)
        for r in results:
            mem = r[index]["memory"]
            assert mem["total"] == sum(mem[k] for k in MEMORY_CATEGORIES) and mem["training"] > 0
            assert r[index]["report"]["device_used_bytes"] > 0
        if case["pipeline"] in ("wholegraph", "wholegraph_lib"):
            assert results[0][index]["memory"]["node_features"] > 0
            assert results[0][index]["memory"]["graph_structure"] > 0
    names = {c["pipeline"] for c in cases}
    if "wholegraph_lib" not in names or "pyg_host" not in names:
        pytest.skip(f"ran {sorted(names)}; pylibwholegraph or PyG's sampler is not installed here")


def test_prefetch_on_a_side_stream_trains_as_the_sequential_loop_on_two_gpus(two_gpus):
    """Batch i+1 sampled and gathered on a side stream while batch i trains: the same blocks, inputs
    and labels; losses and weights equal up to DDP's all-reduce order."""
    from tests.pipelines.checks import check_prefetch_matches_sequential

    ranks, _, _ = two_gpus
    check_prefetch_matches_sequential(ranks(2, "prefetch"), exact=False)
