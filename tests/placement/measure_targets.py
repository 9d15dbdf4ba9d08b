"""The measured placement path run end to end on ranks of any device (CPU tests and tests/gpu)."""

from __future__ import annotations

import importlib.util

import numpy as np

from experiments.kit.placement_loading import MeasureJob, measure_jobs, portable
from harness import registry
from harness.launcher import launch
from impls.core.topology import by_name
from impls.placement import make_policy
from impls.placement.hotness import lhop_hotness
from impls.placement.policies import PlacementProblem
from impls.placement.sampling import LayerWiseSampler
from impls.placement.simulate import replay
from tests.placement.placement_graphs import random_graph

POLICIES = [spec.name for spec in registry.impl_specs("placement")
            if all(importlib.util.find_spec(p) for p in spec.needs.packages)]


def check_measured_policies(device: str, world: int, variants: list[tuple], policies=POLICIES, nodes: int = 400,
                            repeats: int = 2) -> dict[tuple, list[str]]:
    """Every policy's replayed batches gathered on ``world`` ranks, for every ``(gather, row_elems)``
    or ``(gather, row_elems, batches_per_region)`` of ``variants`` (one batch per timed launch where
    not given), all in one launch: every row checked against its closed form (a mismatch raises in
    the ranks), the local / peer / host reads of each batch equal the simulator's, every repeat and
    the launch floor timed. Returns the gather path each rank reported, per variant."""
    indptr, indices = random_graph(nodes, 8, seed=3)
    train = np.sort(np.random.default_rng(4).choice(nodes, nodes * 3 // 10, replace=False))
    topology = by_name(f"{world}GPU")
    hot = lhop_hotness(indptr, indices, train, 2, symmetric=True)
    jobs, sims = [], {}
    for name in policies:
        problem = PlacementProblem(indptr, indices, train, hot, topology, nodes * 3 // 20, 2, 0, True)
        placement = make_policy(name).place(problem)
        sim = replay(indptr, indices, train, placement, lambda g: LayerWiseSampler(48, 2), 16,
                     max_batches=5, seed=1, keep_batches=True)
        sims[name] = sim
        jobs += [MeasureJob(f"{name} {' '.join(map(str, v))}", portable(placement), sim.meta["input_batches"],
                            row_elems=v[1], check_batches=-1, warmup=1, gather=v[0],
                            batches_per_region=v[2] if len(v) > 2 else 1, repeats=repeats)
                 for v in variants]
    per_rank = launch(measure_jobs, (jobs,), world_size=world, device=device, timeout_s=300)
    tiers_seen = np.zeros(3, dtype=np.int64)
    paths: dict[tuple, list[str]] = {tuple(v): [] for v in variants}
    for rank, results in enumerate(per_rank):
        assert len(results) == len(jobs)
        for res in results:
            name, *variant = res["key"].split(" ")
            variant = (variant[0], *map(int, variant[1:]))
            per_region = variant[2] if len(variant) > 2 else 1
            sim = sims[name]
            batches = len(sim.meta["input_batches"][rank])
            assert res["checked"] == res["batches"] == batches > 0
            np.testing.assert_array_equal(res["batch_reads"], sim.batch_reads[rank])
            regions = -(-batches // per_region)
            assert res["regions"] == regions and res["batches_per_region"] == per_region
            assert len(res["region_s"]) == len(res["floor_per_batch_s"]) == repeats
            assert all(len(p) == regions for p in res["region_s"]) and res["max_mean_s"] > 0
            assert res["floor_s"] > 0
            tiers_seen += sim.split()[rank]
            paths[variant].append(res["gather"])
    assert (tiers_seen > 0).all()                 # local, peer and host reads were all exercised
    return paths
