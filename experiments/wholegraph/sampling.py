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

from harness import registry
from harness.argtypes import choice, fanout_sets, int_list, names_from, names_of, nonneg_int, positive_int
from harness.artifact import ReportArtifact
from harness.errors import SkipPoint
from harness.experiment import Experiment, Measurement, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, figure, machine_kind, newest_rows, ratio, several_runs_per_kind
from harness.timing import RepeatBudget, Stats

from . import PAPER_HARDWARE
from .sampled_graphs import default_scale, sampling_datasets, short_name


def samplers():
    """Every neighbour sampler (not the random walks), in the registry's order: the table's columns."""
    return registry.series("sampling", without=("walks",))


def composed() -> tuple[str, ...]:
    """Ours: the samplers composed with an append-unique into Blocks."""
    return registry.names("sampling", traits=("blocks",))


def paper_sampler():
    """WholeGraph's Algorithm 1 as implemented here: the sampler the others are compared with."""
    return registry.series("sampling", traits=("paper",))[0]


def our_uniques() -> tuple[str, ...]:
    """The append-uniques our samplers can be composed with (not the reference, not a library's)."""
    return registry.names("unique", without=("reference", "library"))


def paper_unique() -> str:
    return registry.names("unique", traits=("paper",))[0]


kinds_list = names_of("kinds", "minibatch", "hop", "loader")
unique_list = names_from("uniques", lambda: our_uniques())


def unique_of(value) -> str:
    """Our samplers' append-unique from a point's ``unique`` parameter (absent in rows before the
    parameter existed, NaN in their report columns: the paper's, hash_append)."""
    return value if isinstance(value, str) and value else paper_unique()


def store_for(cfg, world: int, setting: str) -> str:
    if setting != "auto":
        return setting
    return "sharded" if (cfg.device == "cuda" and world > 1) else "local"


def sampler_options(spec, params: dict) -> dict:
    """Ours take the CSR's store; a library its memory type."""
    if spec.has("blocks"):
        return {"store": params["store"]}
    if spec.has("library"):
        return {"mode": params["mode"]}
    return {}


# ----------------------------------------------------------------------------- measuring

def minibatch_fn(spec, ctx, graph, params):
    """fn(seeds) -> sampled edges of one mini-batch, for this implementation (built on this rank,
    kept in the run's cache ``ctx``): ours composed with the point's append-unique into Blocks, a
    library's sampler with its own de-duplication."""
    from impls.sampling.minibatch import sample_blocks

    from ..kit.samplers import implementation

    fanouts = list(params["fanouts"])
    sampler = implementation(ctx, "sampling", spec.name, graph, **sampler_options(spec, params))
    if spec.has("blocks"):
        unique = implementation(ctx, "unique", unique_of(params.get("unique")), graph)

        def fn(seeds):
            return sum(b.num_edges for b in sample_blocks(sampler, unique, seeds, fanouts, check=False))
        return fn, sampler.describe() + "; " + unique.describe()
    return (lambda seeds: sampler.sample_minibatch(seeds, fanouts)["edges"]), sampler.describe()


def hop_fn(spec, ctx, graph, params):
    from ..kit.samplers import implementation

    sampler = implementation(ctx, "sampling", spec.name, graph, **sampler_options(spec, params))
    fanout = params["fanout"]
    if spec.has("library"):          # its own call, in its own output convention
        return (lambda seeds: sampler.sample_raw(seeds, fanout, check=False)[1].numel()), sampler.describe()
    return (lambda seeds: sampler.sample(seeds, fanout, check=False)[1].numel()), sampler.describe()


def loader_point(spec, graph, params, warmup: int, windows: int, seed: int) -> list[Measurement]:
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

    from harness.timing import CpuTimer, measure

    workers = min(params["workers"], os.cpu_count() or 1)
    torch.manual_seed(seed)
    sampler = spec.factory("cpu", graph.indptr, graph.indices)         # a host loader: its graph on the host
    seeds = torch.from_numpy(graph.train_idx.astype("int64"))
    loader, edges_of, name = sampler.loader(seeds, params["fanouts"], params["batch"], workers)
    it = iter(loader)

    def batch():
        nonlocal it
        try:
            return next(it)
        except StopIteration:
            it = iter(loader)
            return next(it)

    # The loader keeps up to workers x prefetch_factor batches in flight: the untimed warm-up
    # windows drain that many (and the workers' start), so the timed windows come at the workers'
    # production rate and not out of a buffer filled while the warm-up ran.
    prefetch = 2 if workers > 0 else 0
    window = max(workers, 1)
    edges_per_window = []

    def one_window():
        edges_per_window.append(sum(edges_of(batch()) for _ in range(window)))

    warm_windows = -(-(warmup + workers * prefetch) // window)
    stats = measure(one_window, timer=CpuTimer(), warmup=warm_windows, repeats=windows)
    times = [t / window for t in stats.samples]
    rates = [e / t for e, t in zip(edges_per_window[warm_windows:], stats.samples)]
    del it, loader
    where = (f"{name}, {workers} worker processes; time per batch over windows of "
             f"{window} consecutive batches after the prefetch buffer is drained")
    return [Measurement("time", "ms", Stats.from_samples(times).scaled(1e3),
                        extra={"placement": where, "workers": workers, "window": window}),
            Measurement("edges_per_s", "edges/s", Stats.from_samples(rates), better="higher")]


@register_experiment
class SamplingTable(Experiment):
    title = "Mini-batch neighbor sampling: time and sampled edges per second, every implementation"
    interface = "sampling"

    @property
    def impls(self):
        return tuple(s.impl for s in samplers())

    metric, unit, better = "time", "ms", "lower"
    differs_from_paper = ("Not a paper table (WholeGraph describes its GPU sampling without timing it): our samplers "
                          "beside today's real WholeGraph on one H200 and PyG's and DGL's host loaders on its CPU, on "
                          "products and papers100M stand-ins and a synthetic uniform graph.")
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
        "uniques": Param(None, unique_list,
                         "our samplers' append-uniques, each a point of its own (default: every one of ours: "
                         "hash_append, WholeGraph's hash table; dense_append, a direct-mapped id table)"),
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
        uniques = self.param(cfg, "uniques") or our_uniques()
        ours, every = set(composed()), [s.impl for s in samplers()]

        def with_uniques(impl, params):
            return [{**params, "unique": u} for u in uniques] if impl in ours else [params]

        if "minibatch" in kinds:
            for name in names:
                for fanouts in fsets:
                    for batch in batches:
                        for impl in every:
                            for params in with_uniques(impl, {"kind": "minibatch", **common(name, world),
                                                              "fanouts": list(fanouts), "batch": batch}):
                                yield Point(impl, params, world)
        first = names[0]
        if "hop" in kinds:
            batch = 6000 if cfg.device == "cuda" else 600
            for name in names:
                for impl in every:
                    yield Point(impl, {"kind": "hop", **common(name, 1), "fanout": 10, "batch": batch}, 1)
        if "loader" in kinds:
            batch = 512 if cfg.device == "cuda" else 64
            fanouts = [30, 30, 30] if cfg.device == "cuda" else [15, 10, 5]
            for name in self.param(cfg, "loader_datasets") or (first,):
                mine = {"kind": "minibatch", **common(name, 1), "fanouts": fanouts, "batch": batch}
                grid = (world == 1 and "minibatch" in kinds and name in names and tuple(fanouts) in
                        {tuple(f) for f in fsets} and batch in batches)
                if not grid:                              # our side of the target, on one GPU
                    for params in with_uniques(paper_sampler().impl, mine):
                        yield Point(paper_sampler().impl, params, 1)
                for impl in registry.names("sampling", traits=("loader",)):
                    yield Point(impl, {"kind": "loader", **common(name, 1), "fanouts": fanouts, "batch": batch,
                                       "workers": self.param(cfg, "loader_workers")}, 1)

    def skip_reason(self, point, cfg):
        p = point.params
        if registry.get_impl("sampling", point.impl).has("cpu_library") and p["kind"] == "minibatch":
            from ..kit.samplers import expected_edges

            bound = expected_edges(p["batch"], p["fanouts"])
            if bound > self.param(cfg, "cpu_max_edges"):
                return (f"mini-batch bound {bound:,} edges > cpu_max_edges "
                        f"{self.param(cfg, 'cpu_max_edges'):,} (too slow for a CPU sampler)")
        return None

    def run_point(self, point, ctx):
        from ..kit.samplers import load_graph, seed_stream, timed

        cfg, rank = ctx.cfg, ctx.rank
        p = point.params
        graph = load_graph(ctx, p["dataset"], p["scale"])
        device = rank.torch_device()
        spec = registry.get_impl("sampling", point.impl)
        host = spec.has("cpu_library")
        budget = RepeatBudget.for_run(cfg, warmup=(1, 1) if host else (3, 1), repeats=(5, 2) if host else (10, 3))
        if p["kind"] == "loader":
            if not spec.has("loader"):
                raise SkipPoint("the loader points are the samplers with a host loader (PyG's NeighborLoader, "
                                "DGL's DataLoader)")
            return loader_point(spec, graph, p, budget.warmup, cfg.repeats_or(3, 2), cfg.seed)
        make = minibatch_fn if p["kind"] == "minibatch" else hop_fn
        fn, where = make(spec, ctx, graph, p)
        on_gpu = not spec.has("host")
        # every call samples its own batch of seeds, as an epoch's batches are
        inputs = seed_stream(graph, p["batch"], cfg.seed, rank.rank, device if on_gpu else "cpu")
        stats, spread, edges, batches = timed(fn, inputs, rank, budget, on_gpu)
        rate = Stats.from_samples([e / t for e, t in zip(edges, stats.samples)])
        extra = {"placement": where, "edges_mean": sum(edges) / len(edges), "seed_batches": batches,
                 "rank_median_ms": [spread.min * 1e3, spread.avg * 1e3, spread.max * 1e3], **budget.extra()}
        return [Measurement("time", "ms", stats.scaled(1e3), extra=extra),
                Measurement("edges_per_s", "edges/s", rate, better="higher")]

    # ------------------------------------------------------------------------- report
    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ok = rep.ok
        kind = ok["p_kind"] if "p_kind" in ok else ok["impl"].map(lambda _: None)
        mb, hop, loader = ok[kind == "minibatch"], ok[kind == "hop"], ok[kind == "loader"]
        # per machine kind: the newest run comparing ours with another sampler in its grid, the
        # newest one-hop target and the newest run of each host loader (with our side of it)
        compared = mb["run_id"].isin(set(mb[~mb["impl"].isin(composed())]["run_id"]))
        grid = newest_rows(mb, rep.labels, prefer=compared)
        hop = newest_rows(hop, rep.labels)
        loader = newest_rows(loader, rep.labels, by=["impl"])
        shown_ids = set(grid["run_id"]) | set(hop["run_id"]) | set(loader["run_id"])
        shown = Report(self, rows[rows["run_id"].isin(shown_ids)], [r for r in runs if r.run_id in shown_ids])
        kinds = {run_id: machine_kind(label) for run_id, label in shown.labels.items()}
        table = shown.table([headline_row(r) for r in minibatch_records(grid, kinds)],
                            empty="no successful mini-batch measurements", single=("GPUs",), keep=())
        history = rep.table(minibatch_records(mb, rep.labels), single=(), keep=()) \
            if several_runs_per_kind(rep.labels) else None
        shown.notes += hop_notes(hop, shown.labels) + loader_notes(loader, mb, shown.labels)
        shown.notes.append("Mini-batch = all hops of sampling plus append-unique (ours: Blocks with remapped ids and "
                           "duplicate counts via hash_append, WholeGraph's hash table; columns marked +dense_append use "
                           "the direct-mapped id table instead; WholeGraph: its sampler and its append_unique, no "
                           "duplicate counts; PyG: NeighborSampler's multi-hop sample with relabeling, CPU, in the "
                           "rank's process; DGL: sample_neighbors + to_block). fanouts[0] applies to the seeds.")
        shown_ok = ok[ok["run_id"].isin(shown_ids)]
        scales = sorted({(short_name(d), s) for d, s in zip(shown_ok.get("p_dataset", []), shown_ok.get("p_scale", []))})
        caption = shown.caption("Time per mini-batch (median over repeats of the slowest rank); each GPU samples its own "
                                "batch of distinct training nodes; the newest run per machine kind that compares ours "
                                "with another sampler, and the newest of each target (one hop, each host loader)"
                                + (" (every run, with sampled edges per second: sampling.history.md)"
                                   if history is not None else "")
                                + ". Stand-ins (graph and splits; sampling reads no features): "
                                + ", ".join(f"{d} at scale {s:g}" for d, s in scales)
                                + f". WholeGraph's testbed: {PAPER_HARDWARE}; the paper gives no sampling table.")
        targets = [n for n in shown.notes if "(issue target" in n]
        latest = [n for n in targets if "NeighborLoader" in n][-1:] + [n for n in targets if "one hop of" in n][-1:]
        return shown.artifact("Mini-batch sampling, every implementation", caption, table,
                              sampling_figure(grid, hop, loader, mb, kinds), headline="; ".join(latest),
                              history=history)


def minibatch_records(mb, machine_of: dict) -> list[dict]:
    """A record per (run, GPUs, dataset, fanouts, batch) of the mini-batch grid (``machine_of``: run
    id -> the machine it is shown as)."""
    fans = mb["p_fanouts"].map(lambda f: "-".join(map(str, f))) if "p_fanouts" in mb else mb["impl"]
    return [minibatch_row(machine_of.get(run_id, run_id), int(world), ds, fan, int(batch), grp)
            for (run_id, world, ds, fan, batch), grp in mb.groupby(
                ["run_id", "world_size", "p_dataset", fans, "p_batch"], sort=False)]


def headline_row(rec: dict) -> dict:
    """A grid record as the headline table gives it: times, and the other samplers over ours."""
    out = {k: v for k, v in rec.items() if not k.endswith(" Medges/s")}
    paper = paper_sampler().impl
    ours = rec.get(f"{paper} ms")
    for one in samplers():
        if one.family != paper_sampler().family and rec.get(f"{one.impl} ms") is not None:
            out[f"{one.impl} / {paper}"] = ratio(rec[f"{one.impl} ms"], ours)
    return out


def hop_notes(hop, labels) -> list[str]:
    """One note per run and dataset of the one-hop target: every sampler's time, ours over WholeGraph."""
    notes = []
    for (run_id, ds), grp in hop[hop["metric"] == "time"].groupby(["run_id", "p_dataset"], sort=False):
        vals = {r["impl"]: r["value"] for _, r in grp.iterrows()}
        parts = [f"{k} {v * 1e3:.0f} us" for k, v in sorted(vals.items(), key=lambda kv: kv[1])]
        line = f"{labels.get(run_id, run_id)}, one hop of {int(grp['p_batch'].iloc[0])} seeds x fanout 10 on " \
               f"{short_name(ds)}: " + ", ".join(parts)
        paper = paper_sampler().impl
        for library in registry.series("sampling", traits=("library",)):
            if paper in vals and library.impl in vals:
                ratio_ = vals[paper] / vals[library.impl]
                line += (f"; {paper} / {library.spec.title} = {ratio_:.2f} (issue target <= 1: "
                         f"{'met' if ratio_ <= 1 else 'NOT met'})")
        notes.append(line)
    return notes


def loader_notes(loader, mb, labels) -> list[str]:
    """One note per host-loader row: its time per batch beside our mini-batches of the same run."""
    notes = []
    for _, lrow in loader[loader["metric"] == "time"].iterrows():
        label = labels.get(lrow["run_id"], lrow["run_id"])
        pyg_ms, how = loader_ms(lrow)
        fan = list(lrow["p_fanouts"])
        line = (f"{label}, {loader_label(lrow['impl'], 'loader')} {fan} x {int(lrow['p_batch'])} with "
                f"{int(lrow.get('p_workers', 0))} workers on {short_name(lrow['p_dataset'])}: "
                f"{pyg_ms:.1f} ms per batch ({how})")
        where = "one GPU" if lrow["device"] == "cuda" else "the CPU"
        for _, orow in ours_beside(lrow, mb).iterrows():
            speedup = pyg_ms / float(orow["value"])
            line += (f"; {orow['impl']} + {unique_of(orow.get('p_unique'))} on {where} "
                     f"{float(orow['value']):.3f} ms = {speedup:.1f}x faster")
            if lrow["device"] == "cuda" and how.startswith("median of windows"):
                line += f" (issue target >= 50x: {'met' if speedup >= 50 else 'NOT met'})"
        notes.append(line)
    return notes


def ours_beside(lrow, mb):
    """Our path_doubling mini-batches on one GPU in the loader row's run, at its dataset and setting."""
    fan = list(lrow["p_fanouts"])
    return mb[(mb["run_id"] == lrow["run_id"]) & (mb["impl"] == paper_sampler().impl) & (mb["metric"] == "time")
              & (mb["world_size"] == 1) & (mb["p_batch"] == lrow["p_batch"]) & (mb["p_dataset"] == lrow["p_dataset"])
              & mb["p_fanouts"].map(lambda f: isinstance(f, (list, tuple)) and list(f) == fan)]


WHOLEGRAPH_SETTING = ([30, 30, 30], 512)            # the paper's training mini-batches


def loader_label(impl: str, use: str) -> str:
    spec = registry.lookup("sampling", impl)
    return spec.label_for(use) if spec is not None else impl


def figure_bars() -> list[tuple[str, str, str | None]]:
    """The figure's bars, (table column or impl, label, colour): the paper's sampler with each of our
    append-uniques (in the append-unique's colour), then every sampler of another system."""
    paper = paper_sampler()
    bars = [(column_name(paper.impl, u.impl), f"{paper.spec.title} + {u.impl}", u.colour)
            for u in registry.series("unique", without=("reference", "library"))]
    return bars + [(one.impl, one.spec.label_for("minibatch"), one.colour) for one in samplers()
                   if one.family != paper.family]


def at_setting(frame, setting=WHOLEGRAPH_SETTING):
    """The rows at WholeGraph's fanouts and batch where there are any, else those of the first setting."""
    if frame.empty:
        return frame
    fans = frame["p_fanouts"].map(lambda f: list(f) if isinstance(f, (list, tuple)) else None)
    here = (fans.map(lambda f: f == setting[0])) & (frame["p_batch"] == setting[1])
    if here.any():
        return frame[here]
    first = frame.iloc[0]
    return frame[(fans.map(lambda f: f == list(first["p_fanouts"]))) & (frame["p_batch"] == first["p_batch"])]


def column_name(impl: str, unique: str) -> str:
    """A table column: ours with the paper's append-unique under its own name, with another as name+unique."""
    return impl if unique == paper_unique() else f"{impl}+{unique}"


def column_of(r) -> str:
    return r["impl"] if r["impl"] not in composed() else column_name(r["impl"], unique_of(r.get("p_unique")))


def grouped_bars(ax, groups: list[tuple[str, dict]], ylabel: str) -> None:
    """Bars per group (x label, {column: value}) in SAMPLERS' order and colours, each other sampler's
    bar marked with its time over ours (path_doubling + hash_append); log where the values span more
    than 100x."""
    import numpy as np

    ours, paper = composed(), paper_sampler().impl
    present = [s for s in figure_bars() if any(s[0] in values for _, values in groups)]
    width = 0.8 / max(len(present), 1)
    xs = np.arange(len(groups))
    for i, (col, label, face) in enumerate(present):
        heights = [values.get(col, 0) for _, values in groups]
        at = xs + (i - (len(present) - 1) / 2) * width
        ax.bar(at, heights, width, label=label, color=face)
        if col.split("+")[0] in ours:
            continue
        for x, h, (_, values) in zip(at, heights, groups):
            if h and values.get(paper):
                ax.annotate(f"{h / values[paper]:.{0 if h >= 10 * values[paper] else 1}f}x",
                            (x, h), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(xs, [name for name, _ in groups])
    values = [v for _, vals in groups for v in vals.values() if v]
    if values and max(values) / min(values) > 100:
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ylabel += " (log)"
    ax.margins(y=0.12)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)


def figure_name(ds: str) -> str:
    """A graph's name short enough for a tick label."""
    from ..kit.samplers import is_uniform, parse_uniform

    if is_uniform(ds):
        nodes, degree = parse_uniform(ds)
        return f"uniform\n{nodes / 1e6:g}M, deg. {degree}"
    return short_name(ds)


def sampling_figure(grid, hop, loader, mb, kinds: dict):
    """Ours beside real WholeGraph (mini-batches, one hop) and beside PyG's and DGL's host loaders, the
    newest run of each on each machine kind; each other sampler's bar says its time over ours."""
    times = at_setting(grid[grid["metric"] == "time"])
    hops = hop[hop["metric"] == "time"]
    hops = hops[hops["p_batch"] == hops["p_batch"].max()] if not hops.empty else hops      # the GPU target
    loads = at_setting(loader[loader["metric"] == "time"])
    shown_kinds = sorted({kinds[r] for r in set(times["run_id"]) | set(hops["run_id"]) | set(loads["run_id"])})
    several = len(shown_kinds) > 1
    where = (lambda run_id: f"\n{kinds[run_id]}" if several else "")
    panels = []
    if not times.empty:
        groups = [(figure_name(ds) + where(run_id), {column_of(r): r["value"] for _, r in grp.iterrows()})
                  for (run_id, ds), grp in times.groupby(["run_id", "p_dataset"], sort=False)]
        first = times.iloc[0]
        panels.append((f"mini-batch, {'-'.join(map(str, first['p_fanouts']))} x {int(first['p_batch'])}",
                       groups, "ms per mini-batch"))
    if not hops.empty:
        groups = [(figure_name(ds) + where(run_id), {r["impl"]: r["value"] * 1e3 for _, r in grp.iterrows()})
                  for (run_id, ds), grp in hops.groupby(["run_id", "p_dataset"], sort=False)]
        panels.append((f"one hop, {int(hops['p_batch'].iloc[0])} seeds x fanout 10", groups, "us per hop"))
    if not loads.empty:
        groups = []
        for _, lrow in loads.iterrows():
            values = {lrow["impl"]: loader_ms(lrow)[0]}
            values.update({column_of(o): float(o["value"]) for _, o in ours_beside(lrow, mb).iterrows()})
            name = loader_label(lrow["impl"], "loader_tick")
            groups.append((f"{name}\n{int(lrow.get('p_workers', 0))} workers" + where(lrow["run_id"]), values))
        first = loads.iloc[0]
        panels.append((f"host loaders, {'-'.join(map(str, first['p_fanouts']))} x {int(first['p_batch'])}",
                       groups, "ms per mini-batch"))
    if not panels:
        return None
    fig, axes = figure((10.5, 5.4), ncols=len(panels), squeeze=False,
                       gridspec_kw={"width_ratios": [max(len(g), 2) for _, g, _ in panels]})
    for ax, (title, groups, ylabel) in zip(axes[0], panels):
        grouped_bars(ax, groups, ylabel)
        ax.set_title(title, fontsize=10)
    labels: dict = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labels.setdefault(label, handle)
    order = [label for _, label, _ in figure_bars() if label in labels]
    fig.legend([labels[k] for k in order], order, loc="lower center", ncol=min(len(order), 3), fontsize=9,
               frameon=False)
    fig.suptitle("Neighbor sampling: ours beside real WholeGraph and PyG/DGL's host loaders"
                 + ("" if several or not shown_kinds else f" ({shown_kinds[0]})")
                 + "\n(numbers over bars: that sampler's time over ours with hash_append)", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


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
    ours = composed()
    for impl in (s.impl for s in samplers()):
        sel = grp[grp["impl"] == impl]
        if impl not in ours or "p_unique" not in sel:
            yield impl, sel
            continue
        kind = sel["p_unique"].map(unique_of)
        for u in our_uniques():
            yield column_name(impl, u), sel[kind == u]
