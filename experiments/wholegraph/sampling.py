"""Neighbor sampling, every implementation in one run (ours; WholeGraph III-C): not a paper table.

WholeGraph section III-C describes its GPU sampling (Algorithm 1, path doubling) and hash
append-unique without a table of their speed; XGNN section 5 motivates its batched KHop.

Time per mini-batch (multi-hop sampling + append-unique into Blocks) and sampled edges per second,
for fanouts [30,30,30] (WholeGraph), [15,10,5] and [25,10] (XGNN), batches of 512, 1024 and 6000
seeds per GPU, on products and papers100M stand-ins, one rank per GPU (every rank samples its own
batch; a batch's time is the slowest rank's). Implementations: ours (`path_doubling`,
`reservoir`, `khop_batched`, each with `hash_append`, or with every append-unique of ``--param
uniques``), real WholeGraph (its sampler + its append_unique), PyG's sampler, DGL. Plus the
issue's target points on one GPU: one hop of 6000 seeds x fanout 10 (ours vs the real WholeGraph
sampler), and PyG's NeighborLoader with worker processes on [30,30,30] x 512, timed by its
production rate. ``wholegraph.unique`` times the append-unique implementations alone.
"""

from __future__ import annotations

import time

from harness.argtypes import choice, fanout_sets, int_list, names_of, nonneg_int, positive_int
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, bars, figure, finish
from harness.timing import Stats

from . import PAPER_HARDWARE
from .sampled_graphs import default_scale, sampling_datasets, short_name

OURS = ("path_doubling", "reservoir", "khop_batched")
IMPLS = OURS + ("wholegraph_lib", "pyg", "dgl")
LOADERS = ("pyg", "dgl")                 # the loader target's host loaders (worker processes)
LOADER_NAMES = {"pyg": "PyG NeighborLoader", "dgl": "DGL DataLoader (NeighborSampler)"}
CPU_IMPLS = ("pyg",)           # sample on the host whatever the device


kinds_list = names_of("kinds", "minibatch", "hop", "loader")

UNIQUES = ("hash_append", "dense_append")


unique_list = names_of("uniques", *UNIQUES)


def unique_of(value) -> str:
    """Our samplers' append-unique from a point's ``unique`` parameter (absent in rows before the
    parameter existed, NaN in their report columns: hash_append)."""
    return value if isinstance(value, str) and value else "hash_append"


def store_for(cfg, world: int, setting: str) -> str:
    if setting != "auto":
        return setting
    return "sharded" if (cfg.device == "cuda" and world > 1) else "local"


def sampler_options(impl: str, params: dict) -> dict:
    if impl in OURS:
        return {"store": params["store"]}
    if impl == "wholegraph_lib":
        return {"mode": params["mode"]}
    return {}


# ----------------------------------------------------------------------------- measuring

def _wholegraph_minibatch(lib, wg_unique, seeds, fanouts) -> int:
    """Real WholeGraph's own pipeline: its sampler and its append_unique, hop by hop."""
    from pylibwholegraph.torch.graph_ops import append_unique

    import torch

    targets = seeds.to(lib.inner.col_dtype)
    edges = 0
    with torch.cuda.device(lib.device):
        for fanout in fanouts:
            _, ids = lib.sample_raw(targets, fanout, check=False)
            targets = append_unique(targets, ids, need_neighbor_raw_to_unique=True)[0]
            edges += ids.numel()
    return edges


def minibatch_fn(impl: str, ctx, graph, params):
    """fn(seeds) -> sampled edges of one mini-batch, for this implementation (built on this rank,
    kept in the run's cache ``ctx``)."""
    from impls.sampling.bench import implementation
    from impls.sampling.minibatch import sample_blocks

    fanouts = list(params["fanouts"])
    sampler = implementation(ctx, "sampling", impl, graph, **sampler_options(impl, params))
    if impl in OURS:
        unique = implementation(ctx, "unique", unique_of(params.get("unique")), graph)

        def fn(seeds):
            return sum(b.num_edges for b in sample_blocks(sampler, unique, seeds, fanouts, check=False))
        return fn, sampler.describe() + "; " + unique.describe()
    if impl == "wholegraph_lib":
        wg_unique = implementation(ctx, "unique", "wholegraph_lib", graph, dup_count=False)
        return (lambda seeds: _wholegraph_minibatch(sampler, wg_unique, seeds, fanouts),
                sampler.describe() + "; " + wg_unique.describe())
    return (lambda seeds: sampler.sample_minibatch(seeds, fanouts)["edges"]), sampler.describe()


def hop_fn(impl: str, ctx, graph, params):
    from impls.sampling.bench import implementation

    sampler = implementation(ctx, "sampling", impl, graph, **sampler_options(impl, params))
    fanout = params["fanout"]
    if impl == "wholegraph_lib":
        return (lambda seeds: sampler.sample_raw(seeds, fanout, check=False)[1].numel()), sampler.describe()
    return (lambda seeds: sampler.sample(seeds, fanout, check=False)[1].numel()), sampler.describe()


def loader_point(ctx, graph, params, warmup: int, windows: int, seed: int, impl: str = "pyg") -> list[Measurement]:
    """A host loader with worker processes (PyG's NeighborLoader, or DGL's NeighborSampler in its
    DataLoader): its steady production rate, time per batch.

    Each worker builds whole batches on its own, so with W workers the batches come in waves of W
    close together and then a wait of one worker's batch time: the gap between two batches is
    mostly the spacing inside a wave, and a median of gaps says nothing about the rate. A window
    of W consecutive batches spans one period of that cycle wherever it starts, so each repeat
    times a window of W batches and takes window time / W; its rows say so (``window``), and rows
    without that field, which stored the median gap, are read by their mean gap (``loader_ms``).
    """
    import os

    import torch

    workers = min(params["workers"], os.cpu_count() or 1)
    torch.manual_seed(seed)
    loader, edges_of, name = _host_loader(impl, graph, params, workers)
    it = iter(loader)

    def batch():
        nonlocal it
        try:
            return next(it)
        except StopIteration:
            it = iter(loader)
            return next(it)

    # The loader keeps up to workers x prefetch_factor batches in flight: drain that many
    # before timing, so the timed batches come at the workers' production rate and not out
    # of a buffer filled while the warm-up ran.
    prefetch = 2 if workers > 0 else 0
    for _ in range(warmup + workers * prefetch):
        batch()
    window = max(workers, 1)
    times, rates = [], []
    for _ in range(windows):
        start, edges = time.perf_counter(), 0
        for _ in range(window):
            edges += edges_of(batch())
        elapsed = time.perf_counter() - start
        times.append(elapsed / window)
        rates.append(edges / elapsed)
    del it, loader
    where = (f"{name}, {workers} worker processes; time per batch over windows of "
             f"{window} consecutive batches after the prefetch buffer is drained")
    return [Measurement("time", "ms", Stats.from_samples(times).scaled(1e3),
                        extra={"placement": where, "workers": workers, "window": window}),
            Measurement("edges_per_s", "edges/s", Stats.from_samples(rates), better="higher")]


def _host_loader(impl: str, graph, params, workers: int):
    """(loader over the training nodes, shuffled and persistent, edges of one of its batches, its name)."""
    import torch

    seeds = torch.from_numpy(graph.train_idx.astype("int64"))
    prefetch = 2 if workers > 0 else None
    if impl == "dgl":
        from harness.dgl_compat import import_dgl

        dgl = import_dgl()
        ip, ix = torch.from_numpy(graph.indptr).to(torch.int64), torch.from_numpy(graph.indices).to(torch.int64)
        g = dgl.graph(("csc", (ip, ix, torch.arange(ix.numel()))), num_nodes=int(graph.num_nodes))
        sampler = dgl.dataloading.NeighborSampler(list(reversed(params["fanouts"])))
        extra = {"multiprocessing_context": "fork", "persistent_workers": True, "prefetch_factor": prefetch} \
            if workers else {}                          # fork: the shim's graphbolt stand-in lives in this process
        loader = dgl.dataloading.DataLoader(g, seeds, sampler, batch_size=params["batch"], shuffle=True,
                                            num_workers=workers, **extra)
        return loader, (lambda b: sum(int(block.num_edges()) for block in b[2])), \
            f"DGL {dgl.__version__} NeighborSampler in its DataLoader"
    from impls.sampling.baselines import pyg_backend, pyg_data

    backend = pyg_backend()
    from torch_geometric.loader import NeighborLoader

    loader = NeighborLoader(pyg_data(graph.indptr, graph.indices), num_neighbors=list(params["fanouts"]),
                            batch_size=params["batch"], shuffle=True, num_workers=workers, is_sorted=True,
                            input_nodes=seeds, persistent_workers=workers > 0, prefetch_factor=prefetch)
    return loader, (lambda b: int(b.edge_index.size(1))), f"PyG NeighborLoader ({backend})"


@register_experiment
class SamplingTable(Experiment):
    title = "Mini-batch neighbor sampling: time and sampled edges per second, every implementation"
    interface = "sampling"
    impls = IMPLS
    metric, unit, better = "time", "ms", "lower"
    paper_hardware = PAPER_HARDWARE
    warm_and_cold = ("Warm: the CSR, the samplers' workspaces (dense_append's id table) and compiled kernels. "
                     "Cold: every timed call samples its own batch of seeds, cut from one shuffle as an "
                     "epoch's batches are (rows: seed_batches); PyG's loader is timed by its production rate "
                     "over whole waves of its workers.")
    spawn_ranks = True
    parameters = {
        "datasets": Param(("ogbn-products", "ogbn-papers100M"), sampling_datasets,
                          "stand-ins to sample; uniform:NODES:DEGREE adds a synthetic uniform random graph"),
        "loader_datasets": Param(None, sampling_datasets,
                                 "datasets of the loader target, PyG's and DGL's (default: the first of datasets)"),
        "fanouts": Param(((30, 30, 30), (15, 10, 5), (25, 10)), fanout_sets,
                         "fanout sets, outermost hop last (30-30-30,15-10-5,25-10)"),
        "batches": Param((512, 1024, 6000), int_list, "seeds per GPU per mini-batch"),
        "kinds": Param(("minibatch", "hop", "loader"), kinds_list,
                       "minibatch grid, one-hop target (6000 x 10), host-loader target (PyG, DGL)"),
        "store": Param("auto", choice("auto", "local", "sharded"),
                       "our samplers' CSR: auto = sharded over the GPUs when there are several"),
        "wholegraph_mode": Param("continuous", choice("continuous", "chunked", "distributed"),
                                 "real WholeGraph's memory type"),
        "cpu_max_edges": Param(20_000_000, positive_int,
                               "skip PyG/DGL mini-batches whose edge bound batch x (f0 + f0 f1 + ...) is larger"),
        "loader_workers": Param(8, nonneg_int, "host loaders' worker processes (0: batches built in the rank)"),
        "uniques": Param(("hash_append", "dense_append"), unique_list,
                         "our samplers' append-unique: hash_append (WholeGraph's hash table), dense_append "
                         "(direct-mapped id table); each is a point of its own"),
    }

    def default_scale(self, cfg, dataset=None) -> float:
        return default_scale(dataset, cfg)

    def points(self, cfg):
        (world,) = self.world_sizes(cfg)
        kinds = self.param(cfg, "kinds")
        store = store_for(cfg, world, self.param(cfg, "store"))
        mode = self.param(cfg, "wholegraph_mode")
        names = self.param(cfg, "datasets")
        batches = self.param(cfg, "batches")
        fsets = self.param(cfg, "fanouts")
        if cfg.device == "cpu" and "batches" not in cfg.params:
            batches = (64, 256) if cfg.quick else (64, 256, 512)
        if cfg.quick and "fanouts" not in cfg.params and cfg.device == "cpu":
            fsets = ((15, 10, 5), (25, 10))
        common = lambda name, w: {"dataset": name, "scale": self.scale(cfg, name),  # noqa: E731
                                  "store": store if w == world else "local", "mode": mode}
        uniques = self.param(cfg, "uniques")

        def with_uniques(impl, params):
            return [{**params, "unique": u} for u in uniques] if impl in OURS else [params]

        if "minibatch" in kinds:
            for name in names:
                for fanouts in fsets:
                    for batch in batches:
                        for impl in IMPLS:
                            for params in with_uniques(impl, {"kind": "minibatch", **common(name, world),
                                                              "fanouts": list(fanouts), "batch": batch}):
                                yield Point(impl, params, world)
        first = names[0]
        if "hop" in kinds:
            batch = 6000 if cfg.device == "cuda" else 600
            for name in names:
                for impl in IMPLS:
                    yield Point(impl, {"kind": "hop", **common(name, 1), "fanout": 10, "batch": batch}, 1)
        if "loader" in kinds:
            batch = 512 if cfg.device == "cuda" else 64
            fanouts = [30, 30, 30] if cfg.device == "cuda" else [15, 10, 5]
            for name in self.param(cfg, "loader_datasets") or (first,):
                mine = {"kind": "minibatch", **common(name, 1), "fanouts": fanouts, "batch": batch}
                grid = (world == 1 and "minibatch" in kinds and name in names and tuple(fanouts) in
                        {tuple(f) for f in fsets} and batch in batches)
                if not grid:                              # our side of the target, on one GPU
                    for params in with_uniques("path_doubling", mine):
                        yield Point("path_doubling", params, 1)
                for impl in LOADERS:
                    yield Point(impl, {"kind": "loader", **common(name, 1), "fanouts": fanouts, "batch": batch,
                                       "workers": self.param(cfg, "loader_workers")}, 1)

    def skip_reason(self, point, cfg):
        p = point.params
        if point.impl == "pyg":
            from impls.sampling.baselines import pyg_backend

            try:
                pyg_backend()
            except SkipPoint as exc:
                return str(exc)
        if point.impl in ("pyg", "dgl") and p["kind"] == "minibatch":
            from impls.sampling.bench import expected_edges

            bound = expected_edges(p["batch"], p["fanouts"])
            if bound > self.param(cfg, "cpu_max_edges"):
                return (f"mini-batch bound {bound:,} edges > cpu_max_edges "
                        f"{self.param(cfg, 'cpu_max_edges'):,} (too slow for a CPU sampler)")
        return None

    def run_point(self, point, ctx):
        from impls.sampling.bench import load_graph, seed_batches, timed

        cfg, rank = ctx.cfg, ctx.rank
        p = point.params
        graph = load_graph(ctx, p["dataset"], p["scale"])
        device = rank.torch_device()
        warmup = cfg.warmup_or(3, 1)
        repeats = cfg.repeats_or(10, 3)
        if point.impl in ("pyg", "dgl"):
            warmup, repeats = cfg.warmup_or(1, 1), cfg.repeats_or(5, 2)
        if p["kind"] == "loader":
            if point.impl not in LOADERS:
                raise SkipPoint("the loader points are PyG's NeighborLoader and DGL's DataLoader")
            return loader_point(rank, graph, p, warmup, cfg.repeats_or(3, 2), cfg.seed, point.impl)
        make = minibatch_fn if p["kind"] == "minibatch" else hop_fn
        fn, where = make(point.impl, ctx, graph, p)
        on_gpu = point.impl not in CPU_IMPLS
        # every call samples its own batch of seeds, as an epoch's batches are
        inputs = seed_batches(graph, p["batch"], warmup + repeats, cfg.seed, rank.rank,
                              device if on_gpu else "cpu")
        stats, spread, edges = timed(fn, inputs, rank, warmup, repeats, on_gpu)
        rate = Stats.from_samples([e / t for e, t in zip(edges, stats.samples)])
        extra = {"placement": where, "edges_mean": sum(edges) / len(edges), "seed_batches": len(inputs),
                 "rank_median_ms": [spread.min * 1e3, spread.avg * 1e3, spread.max * 1e3]}
        return [Measurement("time", "ms", stats.scaled(1e3), extra=extra),
                Measurement("edges_per_s", "edges/s", rate, better="higher")]

    # ------------------------------------------------------------------------- report
    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ok = rep.ok
        mb = ok[ok["p_kind"] == "minibatch"] if "p_kind" in ok else ok.iloc[0:0]
        table = rep.table([minibatch_row(rep.label(run_id), int(world), ds, fan, int(batch), grp)
                           for (run_id, world, ds, fan, batch), grp in mb.groupby(
                               ["run_id", "world_size", "p_dataset", mb["p_fanouts"].map(lambda f: "-".join(map(str, f))),
                                "p_batch"], sort=False)],
                          empty="no successful mini-batch measurements", single=(), keep=())
        rep.notes += self._target_notes(ok, rep.labels)
        rep.notes.append("Mini-batch = all hops of sampling plus append-unique (ours: Blocks with remapped ids and "
                         "duplicate counts via hash_append, WholeGraph's hash table; columns marked +dense_append use "
                         "the direct-mapped id table instead; WholeGraph: its sampler and its append_unique, no "
                         "duplicate counts; PyG: NeighborSampler's multi-hop sample with relabeling, CPU, in the "
                         "rank's process; DGL: sample_neighbors + to_block). fanouts[0] applies to the seeds.")
        fig, ax = figure((9, 4.2))
        if "Fanouts" in table:
            fan = "30-30-30" if (table["Fanouts"] == "30-30-30").any() else table["Fanouts"].iloc[0]
            batch = 512 if ((table["Fanouts"] == fan) & (table["Batch"] == 512)).any() else \
                table[table["Fanouts"] == fan]["Batch"].min()
            sel = table[(table["Fanouts"] == fan) & (table["Batch"] == batch)]
            cols = [c for c in sel.columns if c.endswith(" ms")]
            if cols and not sel.empty:
                plot = sel.set_index(["Machine", "Dataset"])[cols]
                plot.columns = [c[:-3] for c in cols]
                bars(ax, plot, logy=True, ylabel="ms per mini-batch (log)")
                ax.set_title(f"fanouts {sel['Fanouts'].iloc[0]}, batch {int(sel['Batch'].iloc[0])}")
        scales = sorted({(short_name(d), s) for d, s in zip(ok.get("p_dataset", []), ok.get("p_scale", []))})
        caption = rep.caption("Time per mini-batch (median over repeats of the slowest rank) and sampled edges per "
                              "second per GPU; each GPU samples its own batch of distinct training nodes. Stand-ins "
                              "(graph and splits; sampling reads no features): "
                              + ", ".join(f"{d} at scale {s:g}" for d, s in scales)
                              + f". WholeGraph's testbed: {PAPER_HARDWARE}; the paper gives no sampling table.")
        targets = [n for n in rep.notes if "(issue target" in n]
        latest = [n for n in targets if "NeighborLoader" in n][-1:] + [n for n in targets if "one hop of" in n][-1:]
        return rep.artifact("Mini-batch sampling, every implementation", caption, table, finish(fig),
                            headline="; ".join(latest))

    @staticmethod
    def _target_notes(ok, labels) -> list[str]:
        notes = []
        if "p_kind" not in ok:
            return notes
        for run_id, label in labels.items():
            mine = ok[ok["run_id"] == run_id]
            hop = mine[(mine["p_kind"] == "hop") & (mine["metric"] == "time")]
            for ds, grp in hop.groupby("p_dataset"):
                vals = {r["impl"]: r["value"] for _, r in grp.iterrows()}
                parts = [f"{k} {v * 1e3:.0f} us" for k, v in sorted(vals.items(), key=lambda kv: kv[1])]
                line = f"{label}, one hop of {int(grp['p_batch'].iloc[0])} seeds x fanout 10 on {short_name(ds)}: " \
                       + ", ".join(parts)
                if "path_doubling" in vals and "wholegraph_lib" in vals:
                    ratio = vals["path_doubling"] / vals["wholegraph_lib"]
                    line += (f"; path_doubling / WholeGraph = {ratio:.2f} (issue target <= 1: "
                             f"{'met' if ratio <= 1 else 'NOT met'})")
                notes.append(line)
            loader = mine[(mine["p_kind"] == "loader") & (mine["metric"] == "time")]
            for _, lrow in loader.iterrows():
                fan = list(lrow["p_fanouts"])
                ours = mine[(mine["p_kind"] == "minibatch") & (mine["impl"] == "path_doubling")
                            & (mine["metric"] == "time") & (mine["world_size"] == 1)
                            & (mine["p_batch"] == lrow["p_batch"]) & (mine["p_dataset"] == lrow["p_dataset"])
                            & mine["p_fanouts"].map(lambda f: isinstance(f, (list, tuple)) and list(f) == fan)]
                pyg_ms, how = loader_ms(lrow)
                line = (f"{label}, {LOADER_NAMES.get(lrow['impl'], lrow['impl'])} {fan} x {int(lrow['p_batch'])} with "
                        f"{int(lrow.get('p_workers', 0))} workers on {short_name(lrow['p_dataset'])}: "
                        f"{pyg_ms:.1f} ms per batch ({how})")
                where = "one GPU" if lrow["device"] == "cuda" else "the CPU"
                for _, orow in ours.iterrows():
                    speedup = pyg_ms / float(orow["value"])
                    line += (f"; path_doubling + {unique_of(orow.get('p_unique'))} on {where} "
                             f"{float(orow['value']):.3f} ms = {speedup:.1f}x faster")
                    if lrow["device"] == "cuda" and how.startswith("median of windows"):
                        line += f" (issue target >= 50x: {'met' if speedup >= 50 else 'NOT met'})"
                notes.append(line)
        return notes


def loader_ms(row) -> tuple[float, str]:
    """A loader row's time per batch at the workers' production rate, and how it was taken. Rows
    with a ``window`` timed windows of one wave of batches; rows without one stored the median gap
    between batches, which is the spacing inside a wave, so their rate is the mean gap (all their
    timed batches' time over their count)."""
    window = row.get("p_window")
    if isinstance(window, (int, float)) and window == window:
        return float(row["value"]), f"median of windows of {int(window)} batches"
    stats = row.get("stats")
    mean = stats.get("mean") if isinstance(stats, dict) else None
    if mean is None:
        return float(row["value"]), "median gap between batches"
    return float(mean), (f"mean gap over {int(stats.get('repeats', 0))} consecutive batches, a rough rate: they "
                         f"need not span whole waves of workers; the stored median gap {float(row['value']):.1f} ms "
                         "is the spacing inside a wave")


def minibatch_row(machine: str, world: int, ds: str, fan: str, batch: int, grp) -> dict:
    """A row of the table: every implementation's time per mini-batch and sampled edges per second."""
    def value(sel, metric):
        sel = sel[sel["metric"] == metric]
        return float(sel["value"].iloc[0]) if not sel.empty else None

    rec = {"Machine": machine, "GPUs": world, "Dataset": short_name(ds), "Fanouts": fan, "Batch": batch}
    for impl, sel in _by_column(grp):
        rec[f"{impl} ms"] = value(sel, "time")
    for impl, sel in _by_column(grp):
        rate = value(sel, "edges_per_s")
        rec[f"{impl} Medges/s"] = rate / 1e6 if rate else None
    return rec


def _by_column(grp):
    """(column name, rows) per implementation in the table: ours with hash_append under its own name,
    with another append-unique as name+unique."""
    for impl in IMPLS:
        sel = grp[grp["impl"] == impl]
        if impl not in OURS or "p_unique" not in sel:
            yield impl, sel
            continue
        kind = sel["p_unique"].map(unique_of)
        for u in UNIQUES:
            yield (impl if u == "hash_append" else f"{impl}+{u}"), sel[kind == u]
