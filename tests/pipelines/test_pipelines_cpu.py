"""Training pipelines on CPU ranks: one step equals a single-process reference, every rank runs the
same batches, memory categories add up, a planted-label stand-in is learned, failures end the rank
group, and PyG's NeighborLoader output becomes equivalent Blocks.

PyG's sampler needs pyg-lib or torch-sparse, which have no builds for this CPU image; the tests of
``pyg_host`` register the Python ``torch_sparse::neighbor_sample`` of tests/sampling/
conftest.py (same semantics) unless a real one is present, and a separate test runs the
conversion on the real sampler where it is installed (the GPU machine).
"""

from __future__ import annotations


import numpy as np
import pytest
import torch

from harness.errors import HarnessError, LaunchError
from harness.launcher import launch
from impls.pipelines.base import MEMORY_CATEGORIES, epoch_batches

from . import targets
from ..helpers import SharedLaunch
from .checks import check_one_step, check_prefetch_matches_sequential

GRAPH = targets.planted_graph()


def _pyg_sampler_backend() -> str | None:
    try:
        import torch_geometric.typing as tgt
    except Exception:
        return None
    return "pyg-lib" if tgt.WITH_PYG_LIB else "torch-sparse" if tgt.WITH_TORCH_SPARSE else None


# ----------------------------------------------------------------------------- the epoch split

@pytest.mark.parametrize("n,world,batch", [(103, 2, 16), (64, 4, 8), (9, 3, 4), (500, 3, 512)])
def test_every_rank_gets_the_same_number_of_batches(n, world, batch):
    ids = torch.arange(1000, 1000 + n)
    per_rank = [epoch_batches(ids, world, r, seed=7, epoch=2, batch_size=batch) for r in range(world)]
    counts = {len(b) for b, _ in per_rank}
    assert len(counts) == 1 and {full for _, full in per_rank} == counts
    seen = torch.cat([torch.cat(b) for b, _ in per_rank])
    assert seen.numel() == (n // world) * world == torch.unique(seen).numel()   # disjoint shares
    assert all(int(x.numel()) <= batch for b, _ in per_rank for x in b)
    again = epoch_batches(ids, world, 0, seed=7, epoch=2, batch_size=batch)[0]
    assert all(torch.equal(a, b) for a, b in zip(again, per_rank[0][0]))          # (seed, epoch) fixes it
    other = epoch_batches(ids, world, 0, seed=7, epoch=3, batch_size=batch)[0]
    assert not all(torch.equal(a, b) for a, b in zip(other, per_rank[0][0]))
    capped, full = epoch_batches(ids, world, 0, seed=7, epoch=2, batch_size=batch, max_batches=1)
    assert len(capped) == 1 and full == len(per_rank[0][0])


def test_too_few_training_nodes_for_the_ranks_is_a_clear_error():
    with pytest.raises(HarnessError, match="cannot be shared by 4 ranks"):
        epoch_batches(torch.arange(3), 4, 0, seed=0, epoch=0, batch_size=8)


# ----------------------------------------------------------------------------- one step vs a reference

CASES = [
    {"pipeline": "wholegraph", "model": "sage", "num_layers": 2, "hidden": 16, "fanouts": (4, 3), "batch_size": 24,
     "lr": 0.01, "eval_batch_size": 64},
    {"pipeline": "wholegraph", "model": "gat", "num_layers": 2, "hidden": 16, "heads": 2, "fanouts": (3, 3),
     "batch_size": 24, "lr": 0.01, "eval_batch_size": 64},
    {"pipeline": "wholegraph", "model": "gcn", "backend": "pyg", "num_layers": 2, "hidden": 16, "fanouts": (4, 3),
     "batch_size": 24, "lr": 0.01, "eval_batch_size": 64, "options": {"feature_mode": "continuous"}},
    {"pipeline": "pyg_host", "model": "sage", "num_layers": 2, "hidden": 16, "fanouts": (4, 3), "batch_size": 24,
     "lr": 0.01, "eval_batch_size": 64, "options": {"num_workers": 1, "multiprocessing_context": "fork"}},
    # a persistent loader worker, forked (it inherits the emulated sampler; spawning one costs ~10 s here,
    # spawned workers with worker_init_fn=targets.fake_pyg_worker_init work too)
]


PREFETCH_CASE = {"pipeline": "wholegraph", "model": "sage", "num_layers": 2, "hidden": 16, "fanouts": (4, 3),
                 "batch_size": 24, "lr": 0.01, "eval_batch_size": 64}


@pytest.fixture(scope="module")
def two_ranks(data_root):
    """One launch of 2 CPU ranks for the one-step cases, the prefetch runs and the planted training."""
    import importlib.util

    calls = {"prefetch": (targets.prefetch_runs, (GRAPH, PREFETCH_CASE)),
             "planted": (targets.train_planted, (str(data_root), 3))}
    if importlib.util.find_spec("torch_geometric"):
        calls["one_step"] = (targets.one_step, (GRAPH, CASES, True))
    return SharedLaunch({2: calls}, timeout_s=600)


@pytest.fixture(scope="module")
def stepped(two_ranks):
    pytest.importorskip("torch_geometric")
    return two_ranks(2, "one_step")


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c['pipeline']}-{c['model']}-{c.get('backend', 'default')}"
                                                         for c in CASES])
def test_one_step_equals_the_single_process_reference(stepped, index):
    """Each rank's loss is the reference model's on that rank's blocks (features gathered from the
    dataset, labels of the seeds); the weights after the step are one Adam step on the mean of the
    ranks' gradients (what DDP all-reduces)."""
    check_one_step(stepped, index, CASES[index], GRAPH)


def test_prefetching_the_next_batch_trains_exactly_as_the_sequential_loop(two_ranks):
    check_prefetch_matches_sequential(two_ranks(2, "prefetch"))


def test_prefetch_option_is_checked():
    from impls.pipelines.base import Pipeline, PipelineConfig

    class Rank:
        rank, world_size = 0, 1

        @staticmethod
        def torch_device():
            return torch.device("cpu")

    pipe = Pipeline(Rank(), PipelineConfig(options={"prefetch": "yes"}))
    with pytest.raises(HarnessError, match="prefetch must be 0 or 1"):
        pipe.prefetch_enabled()
    assert not Pipeline(Rank(), PipelineConfig()).prefetch_enabled()


def test_ranks_run_the_same_batches_and_memory_adds_up(stepped):
    for index in range(len(CASES)):
        r0, r1 = stepped[0][index], stepped[1][index]
        assert r0["stats"]["batches"] == r1["stats"]["batches"] == 1 and r0["stats"]["batches_full"] > 1
        assert r0["full"]["batches"] == r1["full"]["batches"] == r0["full"]["batches_full"]
        assert r0["full"]["sample_s"] is not None and r0["full"]["epoch_s"] > 0
        assert r0["full"]["sampled_edges"] == r1["full"]["sampled_edges"] > 0       # reduced over ranks
        assert 0 <= r0["accuracy"] <= 1
        for r in (r0, r1):
            mem = r["memory"]
            assert set(mem) == set(MEMORY_CATEGORIES) | {"total"}
            assert all(v >= 0 for v in mem.values())
            assert mem["total"] == sum(mem[k] for k in MEMORY_CATEGORIES)
            assert mem["node_features"] > 0 and mem["training"] > 0
            assert r["report"]["bytes"] == mem and "sampling" in r["describe"]
    wg = stepped[0][0]["memory"]
    rows = -(-GRAPH.num_nodes // 2)
    assert wg["node_features"] == rows * GRAPH.feature_dim * 4                      # one shard of ceil(N/2) rows
    assert wg["graph_structure"] == GRAPH.indptr.nbytes + GRAPH.indices.nbytes      # CPU ranks: the whole CSR


# ----------------------------------------------------------------------------- learning, failures

def test_wholegraph_learns_a_planted_stand_in(two_ranks):
    """products stand-in at scale 0.01 (24k nodes, 47 planted classes, 1,966 training nodes): three
    epochs of GraphSAGE reach >= 0.8 validation accuracy. Chance is about 0.02 (the largest class
    holds 2.1% of the nodes); the model reaches ~0.9 in three epochs on 2 CPU cores, so 0.8 leaves
    room for seed-to-seed variation while failing any pipeline that mixes up features, labels or
    blocks."""
    r0, r1 = two_ranks(2, "planted")
    assert r0["val"] == r1["val"] and r0["batches"] == r1["batches"]
    assert r0["val"][-1] >= 0.8, r0
    assert r0["test"] >= 0.75, r0
    assert r0["loss"][-1] < 0.5 * r0["loss"][0]


def test_a_rank_failing_inside_a_point_ends_the_group_instead_of_hanging():
    with pytest.raises(LaunchError) as info:
        launch(targets.failing_point, (), world_size=2, device="cpu", timeout_s=120)
    assert "rank 1" in str(info.value) and "deliberate failure" in str(info.value)
    assert "(--timeout)" not in str(info.value)               # ended by the failure, not the timeout


# ----------------------------------------------------------------------------- PyG's output as Blocks

def _loader_batch(graph, fanouts, batch):
    from torch_geometric.loader import NeighborLoader

    from impls.sampling.baselines import pyg_data

    torch.manual_seed(0)
    loader = NeighborLoader(pyg_data(graph.indptr, graph.indices), num_neighbors=list(fanouts), batch_size=batch,
                            input_nodes=torch.from_numpy(graph.train_idx.astype(np.int64)), is_sorted=True)
    return next(iter(loader))


def _check_conversion(graph, fanouts=(4, 3, 2), batch=16):
    """Blocks from one NeighborLoader batch: seeds first, hop-by-hop prefixes, each node's own sample
    of at most fanouts[hop] CSR neighbors, and PyG layers on the whole subgraph give the model's
    output on the blocks."""
    from torch_geometric.nn import SAGEConv

    from impls import models
    from impls.pipelines.pyg_host import _hop_ends, blocks_from_pyg

    out = _loader_batch(graph, fanouts, batch)
    L = len(fanouts)
    blocks = blocks_from_pyg(out.n_id, out.edge_index, out.batch_size, L)
    assert len(blocks) == L and blocks[-1].num_dst == out.batch_size
    assert torch.equal(blocks[0].src_ids, out.n_id)                       # every sampled node feeds layer 0
    for inner, outer in zip(blocks[1:], blocks[:-1]):
        assert torch.equal(outer.src_ids[: outer.num_dst], inner.src_ids)  # dst of hop h+1 = src of hop h
    ip, ix = graph.indptr, graph.indices
    row, col = out.edge_index
    ends = _hop_ends(out.n_id, row, col, out.batch_size, L, None)
    ends_from_counts = blocks_from_pyg(out.n_id, out.edge_index, out.batch_size, L,
                                       num_sampled_nodes=[ends[0]] + [b - a for a, b in zip(ends, ends[1:])])
    assert all(torch.equal(a.indices, b.indices) and torch.equal(a.indptr, b.indptr)
               for a, b in zip(blocks, ends_from_counts))                 # pyg-lib's counts give the same
    for hop, block in enumerate(reversed(blocks)):
        block.validate()
        assert block.num_edges == int((col < ends[hop]).sum())           # every sampled edge into its dsts
        for i in range(block.num_dst):
            v = int(block.src_ids[i])
            d = next(h for h in range(L + 1) if i < ends[h])                # the hop v was first reached
            nbrs = block.src_ids[block.indices[block.indptr[i]:block.indptr[i + 1]]].tolist()
            assert len(nbrs) == min(int(ip[v + 1] - ip[v]), fanouts[d]) == len(set(nbrs))
            assert set(nbrs) <= set(ix[ip[v]:ip[v + 1]].tolist())
    feats = torch.from_numpy(graph.features)
    model = models.build("sage", graph.feature_dim, 8, graph.num_classes, L, backend="pyg")
    torch.manual_seed(1)
    convs = [SAGEConv(c.lin_l.weight.shape[1], c.lin_l.weight.shape[0], aggr="mean") for c in model.convs]
    for conv, mine in zip(convs, model.convs):
        conv.load_state_dict(mine.state_dict())
    h = feats[out.n_id]
    for i, conv in enumerate(convs):                                       # PyG's way: the whole subgraph
        h = conv(h, out.edge_index)
        if i < L - 1:
            h = torch.relu(h)
    with torch.no_grad():
        ours = model(blocks, feats[blocks[0].src_ids])
    torch.testing.assert_close(ours, h[: out.batch_size].detach(), rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_neighbor_loader_output_becomes_equivalent_blocks_emulated_sampler(monkeypatch):
    pytest.importorskip("torch_geometric")
    import torch_geometric.typing as tgt

    monkeypatch.setattr(tgt, "WITH_TORCH_SPARSE", tgt.WITH_TORCH_SPARSE)   # restored afterwards
    targets.install_fake_pyg_sampler()
    _check_conversion(GRAPH)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.skipif(_pyg_sampler_backend() is None,
                    reason="PyG's neighbor sampler needs pyg-lib or torch-sparse (not installable on this CPU "
                           "image); runs where they are, e.g. the GPU machines with the torch-sparse wheels")
def test_neighbor_loader_output_becomes_equivalent_blocks_real_sampler():
    _check_conversion(GRAPH)


# ----------------------------------------------------------------------------- the utilization monitor

def test_utilization_monitor_on_a_cpu_rank_is_labelled_and_summarized():
    from impls.pipelines.monitor import UtilizationMonitor

    monitor = UtilizationMonitor(torch.device("cpu"), interval_s=0.02, max_points=3).start()
    for _ in range(10**6):                        # keep this process busy until 5 readings are in
        sum(i * i for i in range(2000))
        if len(monitor.values) >= 5:
            break
    summary = monitor.stop()
    assert summary["kind"] == "cpu_process" and "process CPU" in summary["unit"]
    assert summary["interval_ms"] == 100          # CPU readings need at least 100 ms
    assert summary["samples"] >= 5 and 0 <= summary["p10"] <= summary["p50"] <= summary["p90"] <= summary["max"]
    assert summary["max"] > 10                    # the busy loop shows
    assert len(summary["trace"]) == len(summary["trace_s"]) == 3   # bucket means, at most max_points


def test_utilization_window_keeps_only_samples_inside_the_training_epochs():
    from impls.pipelines.monitor import UtilizationMonitor

    monitor = UtilizationMonitor(torch.device("cpu"))
    monitor.t0 = 100.0
    monitor.times = [0.1, 0.3, 0.5, 1.0, 1.5, 2.25, 2.6]
    monitor.values = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]
    # windows [100.0, 101.0] and [102.0, 102.7]; the first 0.2 s of each is NVML's averaging lag
    out = monitor.window_summary([(100.0, 101.0), (102.0, 102.7)], settle_s=0.2)
    assert out["samples"] == 5 and out["mean"] == pytest.approx((20 + 30 + 40 + 60 + 70) / 5)
    assert out["min"] == 20.0 and out["max"] == 70.0
    assert monitor.window_summary([(105.0, 106.0)]) == {"samples": 0}


def test_profile_dir_gets_one_epoch_profile_from_rank_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_PROFILE_DIR", str(tmp_path))
    monkeypatch.setenv("HARNESS_PROFILE_EPOCH", "1")
    case = {"pipeline": "wholegraph", "model": "sage", "num_layers": 2, "hidden": 16, "fanouts": (4, 3),
            "batch_size": 24, "lr": 0.01, "eval_batch_size": 64}
    launch(targets.profiled_epochs, (GRAPH, case), world_size=2, device="cpu", timeout_s=300)
    reports = list(tmp_path.glob("*.txt"))
    assert [p.name for p in reports] == ["wholegraph-planted-sage-e1.txt"]   # rank 0, epoch 1 only, its graph's name
    text = reports[0].read_text()
    assert "kernel launches" in text and "operators by self_cpu_time_total" in text and "aten::" in text


def test_profile_ranks_pick_which_ranks_profile(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from impls.pipelines.profiling import profile_target, rank_selected

    monkeypatch.setenv("HARNESS_PROFILE_DIR", str(tmp_path))
    monkeypatch.setenv("HARNESS_PROFILE_EPOCH", "0")
    pipe = lambda me: SimpleNamespace(me=me, name="xgnn", graph=SimpleNamespace(name="twitter"),  # noqa: E731
                                      config=SimpleNamespace(model="gcn"))
    assert profile_target(pipe(1), 0) is None                                   # default: rank 0 only
    monkeypatch.setenv("HARNESS_PROFILE_RANKS", "all")
    assert profile_target(pipe(3), 0).name == "xgnn-twitter-gcn-e0-r3.txt"
    assert profile_target(pipe(0), 0).name == "xgnn-twitter-gcn-e0.txt"
    assert rank_selected(2, "1, 2") and not rank_selected(0, "1,2")
    with pytest.raises(ValueError, match="HARNESS_PROFILE_RANKS"):
        rank_selected(0, "first")


def test_prefetched_batches_protect_every_block_tensor():
    """The prefetcher marks every tensor of a batch as used by the training stream, a Block's
    edge weights included (not a dataclass field: PinSAGE's visit counts); block_bytes counts them."""
    from impls.core.blocks import set_edge_weight
    from impls.pipelines.base import _tensors, block_bytes
    from impls.core.blocks import Block

    block = Block(torch.tensor([0, 2]), torch.tensor([1, 2]), torch.tensor([5, 6, 7]), 1, torch.tensor([0, 1, 1]))
    plain = block_bytes([block])
    weight = torch.tensor([2.0, 1.0])
    set_edge_weight(block, weight)
    found = list(_tensors([block]))
    assert any(t is weight for t in found) and len(found) == 5
    assert block_bytes([block]) == plain + 8


def test_a_host_loader_epoch_is_capped_at_whole_waves_of_its_workers():
    """Three loader workers build three batches at once: caps of 1, 4 and 6 run 3, 6 and 6 batches, and
    a cap past the epoch runs the epoch."""
    pytest.importorskip("torch_geometric")
    (result,) = launch(targets.capped_host_epochs, (GRAPH, 3, [1, 4, 6, 10_000]), world_size=1, device="cpu",
                       timeout_s=300)
    full = result[0][1]
    assert full >= 7, "the planted graph's epoch must be longer than two waves for this check"
    assert [b for b, _ in result] == [3, 6, 6, full]
