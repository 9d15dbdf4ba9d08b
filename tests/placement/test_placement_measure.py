"""The measured path on 2 CPU ranks: every policy's gathered rows and per-tier counts."""

from __future__ import annotations

import importlib.util

import numpy as np

from harness.launcher import launch
from impls.placement import make_policy
from impls.placement.hotness import lhop_hotness
from impls.placement.measure import MeasureJob, measure_jobs, portable
from impls.placement.policies import PlacementProblem
from impls.placement.sampling import LayerWiseSampler
from impls.placement.simulate import replay
from impls.placement.topology import by_name

POLICIES = ["naive", "random", "pagraph", "hash_modulo", "clique", "clique_opt", "xgnn_solver"] + \
    (["metis"] if importlib.util.find_spec("pymetis") else [])


def test_measured_gather_every_policy(small_graph):
    indptr, indices, train = small_graph
    topology = by_name("2GPU")
    hot = lhop_hotness(indptr, indices, train, 2, symmetric=True)
    jobs, sims = [], {}
    for name in POLICIES:
        problem = PlacementProblem(indptr, indices, train, hot, topology, 60, 2, 0, True)
        placement = make_policy(name).place(problem)
        sim = replay(indptr, indices, train, placement, lambda g: LayerWiseSampler(48, 2), 16,
                     max_batches=3, seed=1, keep_batches=True)
        sims[name] = sim
        jobs.append(MeasureJob(name, portable(placement), sim.meta["input_batches"], row_elems=3,
                               check_batches=-1, warmup=1))
    per_rank = launch(measure_jobs, (jobs,), world_size=2, device="cpu", timeout_s=120)
    tiers_seen = np.zeros(3, dtype=np.int64)
    for rank, results in enumerate(per_rank):
        for res in results:
            sim = sims[res["key"]]
            # every batch's rows were compared with the features of its ids (a mismatch raises)
            assert res["checked"] == len(sim.meta["input_batches"][rank]) > 0
            # local / peer / host rows of the real gather == the simulator's counts, batch by batch
            np.testing.assert_array_equal(res["batch_reads"], sim.batch_reads[rank])
            assert len(res["batch_s"]) == len(sim.batch_reads[rank]) and res["max_mean_s"] > 0
            tiers_seen += sim.split()[rank]
    assert (tiers_seen > 0).all()                 # local, peer and host reads were all exercised
