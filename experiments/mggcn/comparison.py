"""What MG-GCN's Figs. 10-13 share: MG-GCN against a library's GCN and CAGNET's 1D algorithm.

Sec. 6.6 trains the first model of Sec. 6.1 (2 layers, 512 hidden) on Cora, Arxiv, Products, Reddit
and Proteins and compares one epoch of MG-GCN on 1-8 GPUs with DGL 0.7.1's GCN on one GPU and with
CAGNET's 1D algorithm (its best) on 1-8 GPUs: Figs. 10 (seconds) and 11 (speedup over DGL) on the
DGX-1's V100s, Figs. 12 and 13 (the same without CAGNET) on the DGX-A100. The paper prints no
seconds, only ratios: MG-GCN on one GPU 2.72x (Reddit), 1.42x (Products), 1.76x (Arxiv) and 3.1x
(Cora) faster than DGL on the V100, 1.5x, 1.5x, 1.8x and 2.2x on the A100, 8.5x (Products) and 8.3x
(Reddit) on eight A100s, and on eight V100s 2.66x, 8.6x and 2.35x faster than CAGNET on Reddit,
Products and Arxiv. Those are the paper's series here; the copy of the paper the project holds is
text only, so the bars of Figs. 10 and 12 cannot be read off.

Here one experiment family measures every figure's points, each system chosen by its registry traits
(impls/fullbatch): the ``distributed`` trainers, ``mggcn`` and ``cagnet_1d`` (CAGNET's published 1D
algorithm, re-implemented: impls/fullbatch/cagnet.py), on 1, 2 and 4 GPUs; the ``library`` ones,
``pyg`` (PyG's GCNConv, the whole graph on one GPU) and ``dgl`` (DGL's GraphConv on one GPU, or on
the host's cores where DGL is a CPU build, as on the lent machines: those rows say so and are no GPU
baseline). Fig. 10's runs hold every system; Figs. 11-13 read them too (``derives_from``), so one
Fig. 10 run gives the four figures, and each also runs alone. A figure's speedups are over the
library's GCN on one GPU: DGL where it ran on a GPU, else PyG (DGL's CPU build), as the caption says.
"""

from __future__ import annotations

from harness import graphs
from harness.argtypes import bool_flag
from harness.artifact import ReportArtifact
from harness.experiment import PaperValue, Param, Point
from harness.reportkit import Band, Claim, Estimate, Report, bars, figure, finite

from .common import (DATASETS, DGL_MODEL, MGGCNExperiment, at_paper_settings, common_parameters, dataset_label,
                     dataset_list, limit_threads, machine_kinds, measure_epoch_time, mggcn_params, newest,
                     has_trait, paper_method, plain_log_y, run_number, scale_note, scale_suffix, trainer_label,
                     trainers)

# Sec. 6.6: MG-GCN's speedup over DGL (one GPU against DGL's one GPU; eight GPUs against it), and
# over CAGNET's 1D algorithm at the same GPU count
SPEEDUP_VS_DGL_V100 = {("reddit", 1): 2.72, ("products", 1): 1.42, ("arxiv", 1): 1.76, ("cora", 1): 3.1}
SPEEDUP_VS_DGL_A100 = {("cora", 1): 2.2, ("arxiv", 1): 1.8, ("products", 1): 1.5, ("reddit", 1): 1.5,
                       ("products", 8): 8.5, ("reddit", 8): 8.3}
SPEEDUP_VS_CAGNET_V100 = {("reddit", 8): 2.66, ("products", 8): 8.6, ("arxiv", 8): 2.35}
# Fig. 10's caption: out of memory on the DGX-1's 32 GB V100s
PAPER_OOM_V100 = "Proteins: CAGNET and DGL out of memory; MG-GCN out of memory on 1 and 2 GPUs"

PANEL_ORDER = ("cora", "arxiv", "products", "reddit", "proteins")
HOST = "host CPU"


def speedup_values(table: dict, source: str, metric: str) -> list[PaperValue]:
    return [PaperValue(source, "mggcn", {"dataset": ds, "model": DGL_MODEL, "gpus": gpus}, metric, factor, "x")
            for (ds, gpus), factor in table.items()]


V100_VALUES = tuple(speedup_values(SPEEDUP_VS_DGL_V100, "Sec. 6.6 (Figs. 10-11, DGX-V100)", "speedup_vs_dgl")
                    + speedup_values(SPEEDUP_VS_CAGNET_V100, "Sec. 6.6 (Figs. 10-11, DGX-V100)",
                                     "speedup_vs_cagnet"))
A100_VALUES = tuple(speedup_values(SPEEDUP_VS_DGL_A100, "Sec. 6.6 (Figs. 12-13, DGX-A100)", "speedup_vs_dgl"))


def multi_gpu(systems=None) -> tuple[str, ...]:
    """The ``distributed`` trainers (among ``systems``): measured on every GPU count."""
    return tuple(i for i in trainers("distributed") if systems is None or i in systems)


def libraries() -> tuple[str, ...]:
    """The libraries' GCNs (one GPU), the speedups' baseline first (DGL), then the others (PyG): a
    speedup is over the first that ran on a GPU."""
    return trainers("library", "paper_baseline") + trainers("library", without=("paper_baseline",))


def rival(systems) -> str | None:
    """The ``distributed`` trainer among ``systems`` that is not the paper's (CAGNET 1D), or None."""
    return next((i for i in multi_gpu(systems) if not has_trait(i, "paper_method")), None)


def host_fallbacks() -> tuple[str, ...]:
    """The trainers that may run on the host's cores where their library has no CUDA build (DGL)."""
    return trainers("host_fallback")


class ComparisonExperiment(MGGCNExperiment):
    """One figure of Figs. 10-13: the roles of its systems (traits: ``roles``), datasets, the paper's
    machine and values, and whether it draws seconds (``view = "epoch"``) or speedups over the library
    on one GPU (``"speedup"``)."""

    view = "epoch"
    roles: tuple[str, ...] = ("paper_method", "distributed", "library")   # a system has any of them
    paper_gpus = "8x V100"                 # the paper's machine in a series label
    paper_speedups = SPEEDUP_VS_DGL_V100
    paper_vs_cagnet = SPEEDUP_VS_CAGNET_V100
    default_datasets = PANEL_ORDER
    warm_and_cold = ("Full batch: every epoch reads the same graph and features, as in the paper's back-to-back "
                     "epochs; 3 untimed warm-up epochs on GPUs (DGL on the host: 1 warm-up, 3 timed epochs).")

    figure_number = "Fig. 10"
    figure_title = ""

    @property
    def systems(self) -> tuple[str, ...]:
        """The trainers with any of the figure's ``roles``, in the registry's order."""
        return tuple(i for i in trainers() if any(has_trait(i, role) for role in self.roles))

    @property
    def impls(self) -> tuple[str, ...]:
        return self.systems

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.parameters = {
            "datasets": Param(cls.default_datasets, dataset_list,
                              "datasets (cora, arxiv, products, reddit, proteins; papers too)"),
            "model": Param(DGL_MODEL, str, "LAYERSxHIDDEN (the paper's comparisons: 2x512)"),
            "host_dgl": Param(True, bool_flag, "where DGL has no CUDA build, time its GCN on the host's cores "
                                               "(labelled so; off: a skipped row)"),
            **common_parameters(),
        }

    def points(self, cfg):
        worlds = self.world_sizes(cfg)
        model = self.param(cfg, "model")
        for ds in self.param(cfg, "datasets"):
            base = {"dataset": ds, "model": model, "scale": self.scale(cfg, ds)}
            for world in worlds:
                for impl in multi_gpu(self.systems):
                    extra = mggcn_params(self, cfg) if has_trait(impl, "staged") else {}
                    yield Point(impl, {**base, "gpus": world, **extra}, world)
            for impl in (i for i in libraries() if i in self.systems):
                yield Point(impl, {**base, "gpus": 1}, 1)

    def run_point(self, point: Point, ctx):
        limit_threads(ctx.rank)
        graph = graphs.load(ctx, DATASETS[point.params["dataset"]].registry, point.params["scale"], "fullbatch")
        reason = self.host_reason(point, ctx)
        if reason is None:
            return measure_epoch_time(self, point, graph, ctx)
        import torch

        cfg = ctx.cfg
        return measure_epoch_time(self, point, graph, ctx, device="cpu",
                                  counts=(cfg.warmup_or(1, 1), cfg.repeats_or(3, 2)),
                                  extra={"host": True, "host_threads": torch.get_num_threads(),
                                         "host_reason": reason})

    def host_reason(self, point: Point, ctx) -> str | None:
        """Why this DGL point runs on the host (DGL has no CUDA build here), or None: it runs on the rank's device."""
        if (not has_trait(point.impl, "host_fallback") or ctx.rank.device != "cuda"
                or not self.param(ctx.cfg, "host_dgl")):
            return None
        from harness.dgl_compat import layers_unavailable

        reason = layers_unavailable("cuda")
        return reason if reason and layers_unavailable("cpu") is None else None

    # --- report --------------------------------------------------------------------------------
    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        cells = comparison_cells(rep, self)
        machines = drawn_machines(cells)
        speedups = speedup_frame(cells)
        claims, headline = self.claims(cells, speedups)
        if self.view == "epoch":
            table = rep.table(epoch_records(cells, self), empty="no rows of this figure's systems")
            fig = epoch_figure(cells, machines[:1], self)
        else:
            table = rep.table(speedup_records(speedups, self), empty="no speedups (no library row on one GPU)")
            fig = speedup_figure(speedups, machines[:1], self)
        rep.notes += self.notes(cells)
        return rep.artifact(self.figure_title, self.caption(rep, cells, machines), table, fig, headline=headline,
                            claims=claims,
                            skips=rep.rows[rep.rows["run_id"].isin(set(cells["run_id"]))] if not cells.empty
                            else True, history=history(rep, self))

    def caption(self, rep, cells, machines) -> str:
        what = ("Seconds per full-batch training epoch" if self.view == "epoch" else
                "Speedup over the library's GCN on one GPU (its epoch time over each system's)")
        drawn = f"the figure draws {machines[0]}" if machines else "nothing measured yet"
        libraries = baselines_text(cells)
        text = (f"{what} of the {models_text(cells)} GCN: forward, loss, backward, gradient "
                f"all-reduce, Adam; median over epochs of the slowest rank. Systems: "
                f"{', '.join(trainer_label(s) for s in self.systems)}. {libraries} Each machine's newest run per cell "
                f"at the largest scale it ran ({drawn}; every machine in the table). The paper prints no seconds, "
                f"and the copy of the paper here is text only, so its bars are not read off: its series are the "
                f"ratios Sec. 6.6 prints, drawn as the paper's.")
        return rep.caption(text + " Paper: " + self.paper_hardware + ". " + scale_note(cells),
                           f"Every run: {self.artifact}.history.md.", runs=cells["run_id"] if not cells.empty else [])

    def notes(self, cells) -> list[str]:
        out = []
        if self.view == "epoch" and rival(self.systems) is not None:
            out.append(f"Paper, Fig. 10: {PAPER_OOM_V100}; CAGNET is the best of its 1D, 1.5D, 2D and 3D "
                       "algorithms (1D); the paper runs no more than 8 GPUs, this machine at most 4.")
        host = cells[cells["host"]] if not cells.empty else cells
        for _, r in host.drop_duplicates(["machine"]).iterrows():
            threads = r.get("p_host_threads")
            out.append(f"{r['machine']}: DGL GraphConv ran on the host CPU"
                       + (f" ({int(threads)} threads)" if finite(threads) else "")
                       + f": {r.get('p_host_reason')}. Its seconds are no GPU baseline.")
        return out

    def claims(self, cells, speedups) -> tuple[list[Claim], str]:
        """The paper's claims, per machine: MG-GCN on one GPU faster than the library on one GPU (each
        dataset the paper names); with CAGNET, faster than CAGNET 1D at the largest GPU count; and, where
        the paper prints speedups on 8 GPUs, a speedup that grows with GPUs. Each a claim of the one rule
        (its sign: the library here is not always the paper's DGL); a CPU run's get no verdict, nor a
        --quick run's (the kit's rule)."""
        claims, parts = [], []
        ours, versus_name = paper_method(), rival(self.systems)
        ours_label = trainer_label(ours)
        versus_label = trainer_label(versus_name, "short") if versus_name else ""
        for kind in sorted(set(cells["machine"])) if not cells.empty else []:
            mine, sp = cells[cells["machine"] == kind], speedups[speedups["machine"] == kind]
            judged = bool(mine["judged"].all())
            withheld = "" if (mine["device"] == "cuda").all() else "CPU ranks: not GPU numbers"
            text = []

            def claim(what, slow, fast, paper):
                a, b = (Estimate.from_stats(r["stats"], "epochs") if r is not None else None for r in (slow, fast))
                effect = a.ratio(b) if a is not None and b is not None and a.value > 0 and b.value > 0 else None
                runs = tuple(sorted({r["run_id"] for r in (slow, fast) if r is not None}))
                return Claim(f"{kind} {what}", effect, Band.beyond(1.0), paper, runs=runs, withheld=withheld)

            for ds in PANEL_ORDER:
                one = sp[(sp["p_dataset"] == ds) & (sp["impl"] == ours) & (sp["p_gpus"] == 1)]
                if not one.empty and (ds, 1) in self.paper_speedups:
                    value = float(one["value"].iloc[0])
                    paper = f"{self.paper_speedups[(ds, 1)]}x vs DGL"
                    claims.append(claim(f"{dataset_label(ds)}: {one['baseline'].iloc[0]} / {ours_label} on 1 GPU",
                                        library_baseline(mine[mine["p_dataset"] == ds]),
                                        cell_row(mine, ds, ours, 1), paper))
                    text.append(f"{dataset_label(ds)} 1 GPU {value:.2f}x over {one['baseline'].iloc[0]} "
                                f"(paper vs DGL: {self.paper_speedups[(ds, 1)]}x)")
                if versus_name and self.paper_vs_cagnet and any(d == ds for d, _ in self.paper_vs_cagnet):
                    versus = vs_rival(mine, ds, ours, versus_name)
                    if versus is not None:
                        gpus, value = versus
                        paper = max(v for (d, _), v in self.paper_vs_cagnet.items() if d == ds)
                        claims.append(claim(f"{dataset_label(ds)}: {versus_label} / {ours_label} on {gpus} GPUs",
                                            cell_row(mine, ds, versus_name, gpus), cell_row(mine, ds, ours, gpus),
                                            f"{paper}x on 8 GPUs"))
                        text.append(f"{dataset_label(ds)} {gpus} GPUs {value:.2f}x over {versus_label} (paper, 8 GPUs: "
                                    f"{paper}x)")
                many = [g for d, g in self.paper_speedups if d == ds and g > 1]
                if many:
                    line = sp[(sp["p_dataset"] == ds) & (sp["impl"] == ours)].sort_values("p_gpus")
                    if len(line) > 1 and int(line["p_gpus"].iloc[0]) == 1:
                        last, gpus = float(line["value"].iloc[-1]), int(line["p_gpus"].iloc[-1])
                        claims.append(claim(f"{dataset_label(ds)}: {ours_label} on 1 GPU / on {gpus} "
                                            "(the speedup grows)",
                                            cell_row(mine, ds, ours, 1), cell_row(mine, ds, ours, gpus),
                                            f"{self.paper_speedups[(ds, many[0])]}x vs DGL on {many[0]} GPUs"))
                        text.append(f"{dataset_label(ds)} {gpus} GPUs {last:.2f}x "
                                    f"(paper, {many[0]} GPUs: {self.paper_speedups[(ds, many[0])]}x)")
            if text:
                parts.append(f"{kind}{'' if judged else ' (not judged: CPU or --quick)'}: " + "; ".join(text))
        return claims, " | ".join(parts)


def cell_row(mine, ds: str, impl: str, gpus: int):
    """The epoch row of one system on one dataset and GPU count, or None."""
    hit = mine[(mine["p_dataset"] == ds) & (mine["impl"] == impl) & (mine["p_gpus"] == gpus)]
    return hit.iloc[0] if not hit.empty else None


# --- the cells a report shows -------------------------------------------------------------------

def comparison_cells(rep, exp):
    """The epoch rows of ``exp``'s systems and datasets at the paper's settings (its model, the default
    MG-GCN engine), the newest run per machine kind and cell, each machine's largest scale per
    dataset; columns ``machine`` and ``host`` (DGL timed on the host's cores)."""
    import pandas as pd

    ok = rep.ok[rep.ok["metric"] == "epoch_time"] if not rep.ok.empty else rep.ok
    if ok.empty:
        return pd.DataFrame(columns=["run_id", "machine", "impl", "p_dataset", "p_model", "p_gpus", "p_scale", "value",
                                     "host", "judged"])
    datasets = set(exp.default_datasets)
    mine = ok[ok["impl"].isin(exp.systems) & ok["p_dataset"].isin(datasets)]
    mask = mine["p_model"] == DGL_MODEL
    cell = ["p_dataset", "impl", "p_gpus", "p_scale"]
    shown = newest(at_paper_settings(rep, mine, mask), cell, machine_kinds(rep))
    if shown.empty:
        return shown.assign(host=[], judged=[])
    # a run of several of Figs. 10-13 measured the same cell for each: the figure's own row first
    shown = shown.assign(_own=shown["experiment"] != exp.id).sort_values(["_own", "run_id"])
    shown = shown.drop_duplicates(["machine", *cell]).drop(columns="_own")
    largest = shown.groupby(["machine", "p_dataset"])["p_scale"].transform("max")
    shown = shown[shown["p_scale"] == largest]
    host = shown["p_host"].fillna(False).astype(bool) if "p_host" in shown else False
    quick = {r.run_id for r in rep.runs if (r.manifest.get("config") or {}).get("quick")}
    judged = (shown["device"] == "cuda") & ~shown["run_id"].isin(quick)
    return shown.assign(host=host, judged=judged, p_gpus=shown["p_gpus"].astype(int))


def drawn_machines(cells) -> list[str]:
    """The machines, the one with the most cells first (the one a figure draws)."""
    if cells.empty:
        return []
    counts = cells.groupby("machine").size()
    return sorted(counts.index, key=lambda k: (-counts[k], k))


def library_baseline(cells):
    """The one-GPU library row each speedup is over: DGL where it ran on a GPU, else PyG."""
    for impl in libraries():
        hit = cells[(cells["impl"] == impl) & (cells["p_gpus"] == 1) & ~cells["host"]]
        if not hit.empty:
            return hit.iloc[0]
    return None


def baselines_text(cells) -> str:
    if cells.empty:
        return ""
    names = set()
    for (_, _), grp in cells.groupby(["machine", "p_dataset"]):
        base = library_baseline(grp)
        if base is not None:
            names.add(trainer_label(base["impl"]))
    host = bool(cells["host"].any())
    if not names:
        return "No library ran on a GPU, so there are no speedups."
    text = f"Speedups are over {' or '.join(sorted(names))} on one GPU"
    if names - {trainer_label(i) for i in trainers("paper_baseline")} and host:
        text += (" (PyG's, since DGL's build here is a CPU build: DGL's GraphConv ran on the host's cores, "
                 "its seconds and the speedup over them in their own columns)")
    return text + "."


def speedup_frame(cells):
    """One row per machine, dataset, system and GPU count: the library's one-GPU seconds over the
    system's (``value``), the baseline's name, and the speedup over DGL on the host where it ran there."""
    import pandas as pd

    out = []
    for (kind, ds), grp in cells.groupby(["machine", "p_dataset"], sort=True):
        base = library_baseline(grp)
        host = grp[grp["impl"].isin(host_fallbacks()) & grp["host"]]
        for _, r in grp[grp["impl"].isin(multi_gpu())].iterrows():
            if base is None:
                continue
            out.append({"machine": kind, "run_id": r["run_id"], "p_dataset": ds, "p_scale": r["p_scale"],
                        "p_model": r["p_model"],
                        "impl": r["impl"], "p_gpus": int(r["p_gpus"]), "seconds": float(r["value"]),
                        "value": float(base["value"]) / float(r["value"]), "baseline": trainer_label(base["impl"]),
                        "baseline_s": float(base["value"]),
                        "over_host_dgl": float(host["value"].iloc[0]) / float(r["value"]) if not host.empty else None})
    columns = ["machine", "run_id", "p_dataset", "p_scale", "p_model", "impl", "p_gpus", "seconds", "value", "baseline",
               "baseline_s", "over_host_dgl"]
    return pd.DataFrame.from_records(out, columns=columns)


def vs_rival(mine, ds, ours: str, versus: str):
    """(GPU count, ``versus``'s seconds over ``ours``) at the largest count above one both ran (CAGNET 1D
    over MG-GCN), or None."""
    both = {}
    for impl in (ours, versus):
        hit = mine[(mine["p_dataset"] == ds) & (mine["impl"] == impl) & (mine["p_gpus"] > 1)]
        both[impl] = dict(zip(hit["p_gpus"].astype(int), hit["value"].astype(float)))
    common = sorted(set(both[ours]) & set(both[versus]))
    if not common:
        return None
    return common[-1], both[versus][common[-1]] / both[ours][common[-1]]


def seconds_label(cells, impl: str) -> str:
    host = has_trait(impl, "host_fallback") and not cells.empty and bool(cells[cells["impl"] == impl]["host"].any())
    return f"{trainer_label(impl)}{', ' + HOST if host else ''} (s)"


def epoch_records(cells, exp) -> list[dict]:
    """Fig. 10 / 12 as a table: per machine, dataset and GPU count each system's seconds, MG-GCN's
    ratio to CAGNET 1D and to the library on one GPU, and the paper's ratios where it prints them."""
    records = []
    machines = drawn_machines(cells)
    ours, versus = paper_method(), rival(exp.systems)
    for ds in PANEL_ORDER:
        if ds not in exp.default_datasets:
            continue
        paper_gpus = {g for d, g in exp.paper_speedups if d == ds} | {g for d, g in exp.paper_vs_cagnet if d == ds}
        for kind in machines or [None]:
            mine = cells[(cells["machine"] == kind) & (cells["p_dataset"] == ds)] if kind else cells.iloc[0:0]
            gpu_counts = sorted(set(mine["p_gpus"]) | paper_gpus)
            base = library_baseline(mine)
            for gpus in gpu_counts:
                at = mine[mine["p_gpus"] == gpus]
                rec = {"Machine": kind, "Dataset": dataset_label(ds) + (scale_suffix(mine["p_scale"].iloc[0])
                                                                       if not mine.empty else ""), "#G": gpus}
                for impl in exp.systems:
                    hit = at[at["impl"] == impl]["value"]
                    rec[seconds_label(cells, impl)] = float(hit.iloc[0]) if not hit.empty else None
                mg = at[at["impl"] == ours]["value"]
                if versus is not None:
                    ca = at[at["impl"] == versus]["value"]
                    rec["MG-GCN over CAGNET"] = float(ca.iloc[0]) / float(mg.iloc[0]) if len(ca) and len(mg) else None
                rec["MG-GCN over library (1 GPU)"] = (float(base["value"]) / float(mg.iloc[0])
                                              if base is not None and len(mg) else None)
                rec[f"paper ({exp.paper_gpus}): over DGL"] = exp.paper_speedups.get((ds, gpus))
                if exp.paper_vs_cagnet:
                    rec[f"paper ({exp.paper_gpus}): over CAGNET"] = exp.paper_vs_cagnet.get((ds, gpus))
                records.append(rec)
    return records


def speedup_records(speedups, exp) -> list[dict]:
    """Fig. 11 / 13 as a table: per machine, dataset and GPU count each system's speedup over the
    library on one GPU, the paper's MG-GCN speedup over DGL where it prints one."""
    records = []
    ours = paper_method()
    for ds in PANEL_ORDER:
        if ds not in exp.default_datasets:
            continue
        mine_all = speedups[speedups["p_dataset"] == ds]
        paper_gpus = {g for d, g in exp.paper_speedups if d == ds}
        for kind in sorted(set(mine_all["machine"])) or [None]:
            mine = mine_all[mine_all["machine"] == kind]
            for gpus in sorted(set(mine["p_gpus"]) | paper_gpus):
                at = mine[mine["p_gpus"] == gpus]
                rec = {"Machine": kind, "Dataset": dataset_label(ds) + (scale_suffix(mine["p_scale"].iloc[0])
                                                                       if not mine.empty else ""), "#G": gpus,
                       "over": (f"{mine['baseline'].iloc[0]}, 1 GPU ({mine['baseline_s'].iloc[0]:.3g} s)"
                                if not mine.empty else None)}
                for impl in multi_gpu(exp.systems):
                    hit = at[at["impl"] == impl]["value"]
                    rec[f"{trainer_label(impl)} (x)"] = float(hit.iloc[0]) if not hit.empty else None
                rec[f"paper MG-GCN ({exp.paper_gpus}) over DGL (x)"] = exp.paper_speedups.get((ds, gpus))
                host = at[at["impl"] == ours]["over_host_dgl"]
                rec[f"MG-GCN over DGL on the {HOST} (x)"] = float(host.iloc[0]) if len(host) and finite(
                    host.iloc[0]) else None
                records.append(rec)
    return records


def history(rep, exp):
    """Every run's epoch rows of the figure's systems: seconds, where DGL ran, the status."""
    import pandas as pd

    rows = rep.rows[rep.rows["impl"].isin(exp.systems)]
    records = []
    for _, r in rows.iterrows():
        host = r.get("p_host") is True
        records.append({"run": run_number(r["run_id"]), "machine": rep.label(r["run_id"]),
                        "figure": r["experiment"].split(".")[-1], "dataset": dataset_label(r["p_dataset"]),
                        "model": r["p_model"],
                        "system": trainer_label(r["impl"]) + (f", {HOST}" if host else ""),
                        "#G": int(r["p_gpus"]), "scale": float(r["p_scale"]),
                        "epoch (s)": r["value"] if r["status"] == "ok" else None,
                        "status": r["status"] if r["status"] == "ok" else f"{r['status']}: {r.get('reason')}"})
    return pd.DataFrame.from_records(records)


# --- figures ------------------------------------------------------------------------------------

def panels(exp, count: int):
    """A figure with one panel per dataset (2 x 2 or 2 x 3), the spare panel removed."""
    ncols = 3 if count > 4 else 2
    fig, axes = figure((10, 5.8), ncols=ncols, nrows=2)
    axes = list(axes.flat)
    for ax in axes[count:]:
        ax.remove()
    return fig, axes[:count]


def _datasets(exp) -> list[str]:
    return [ds for ds in PANEL_ORDER if ds in exp.default_datasets]


def epoch_figure(cells, machines, exp):
    """Fig. 10 / 12: per dataset, each system's seconds at each GPU count (log axis); the paper's
    ratios for that dataset in the panel (it prints no seconds)."""
    import pandas as pd

    datasets = _datasets(exp)
    fig, axes = panels(exp, len(datasets))
    mine = cells[cells["machine"].isin(machines)] if machines else cells.iloc[0:0]
    for ax, ds in zip(axes, datasets):
        at = mine[mine["p_dataset"] == ds]
        frame = pd.DataFrame({seconds_label(cells, impl)[:-4]: at[at["impl"] == impl].set_index("p_gpus")["value"]
                              for impl in exp.systems}, index=sorted(set(at["p_gpus"])) or [1])
        frame.index.name = "GPUs"
        bars(ax, frame, logy=True, by_system=True, rot=0, width=0.8, legend=False)
        if at.empty:
            not_measured(ax)
        else:
            plain_log_y(ax)
            ax.grid(False, axis="x")
            low, high = ax.get_ylim()
            ax.set_ylim(low, high * 8)          # room for the paper's ratios above the bars
        paper = paper_lines(exp, ds)
        if paper:
            ax.text(0.98, 0.97, paper, transform=ax.transAxes, ha="right", va="top", fontsize=8,
                    bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.7"})
        ax.set_title(panel_title(ds, at), fontsize=11)
        ax.set_xlabel("GPUs")
    for ax in axes[::3 if len(axes) > 4 else 2]:
        ax.set_ylabel("epoch time (s)")
    return finish_panels(fig, axes, f"MG-GCN {exp.figure_number}: epoch time, {models_text(cells)} "
                         f"({', '.join(machines) or 'no runs'})")


def models_text(frame) -> str:
    """The model(s) of the shown rows, and the paper's where they differ."""
    models = sorted(set(frame["p_model"])) if "p_model" in frame and not frame.empty else [DGL_MODEL]
    return " / ".join(models) + ("" if models == [DGL_MODEL] else f" (paper: {DGL_MODEL})")


def panel_title(ds: str, at) -> str:
    return dataset_label(ds) + (scale_suffix(at["p_scale"].iloc[0]) if not at.empty else " (not measured)")


def not_measured(ax) -> None:
    ax.set_yticks([])
    ax.set_xticks([])
    ax.text(0.5, 0.4, "not measured", transform=ax.transAxes, ha="center", va="center", fontsize=10, color="0.4")


def paper_lines(exp, ds) -> str:
    """The paper's ratios for ``ds`` as a panel's text, or ''."""
    parts = [f"{g} GPU{'s' if g > 1 else ''}: {v}x DGL" for (d, g), v in sorted(exp.paper_speedups.items()) if d == ds]
    parts += [f"{g} GPUs: {v}x CAGNET" for (d, g), v in sorted(exp.paper_vs_cagnet.items()) if d == ds]
    return f"paper, MG-GCN ({exp.paper_gpus}):\n" + "\n".join(parts) if parts else ""


def speedup_figure(speedups, machines, exp):
    """Fig. 11 / 13: per dataset, each system's speedup over the library on one GPU at each GPU count,
    the paper's MG-GCN speedups over DGL beside them (hatched); 1x dotted."""
    import pandas as pd

    datasets = _datasets(exp)
    fig, axes = panels(exp, len(datasets))
    mine = speedups[speedups["machine"].isin(machines)] if machines else speedups.iloc[0:0]
    paper_label = f"MG-GCN, paper ({exp.paper_gpus}, over DGL)"
    baseline = sorted(set(mine["baseline"]))
    for ax, ds in zip(axes, datasets):
        at = mine[mine["p_dataset"] == ds]
        paper = {g: v for (d, g), v in exp.paper_speedups.items() if d == ds}
        index = sorted(set(at["p_gpus"]) | set(paper)) or [1]
        columns = {f"{trainer_label(impl)}, ours": at[at["impl"] == impl].set_index("p_gpus")["value"]
                   for impl in multi_gpu(exp.systems)}
        columns[paper_label] = pd.Series(paper, dtype=float)
        frame = pd.DataFrame(columns, index=index)
        frame.index.name = "GPUs"
        bars(ax, frame, by_system=True, rot=0, width=0.8, legend=False)
        for container, label in zip(ax.containers, frame.columns):
            if label == paper_label:
                for patch in container:
                    patch.set_hatch("//")
                    patch.set_alpha(0.6)
        ax.axhline(1.0, ls=":", lw=1, color="0.3")
        ax.set_title(panel_title(ds, at), fontsize=11)
        ax.set_xlabel("GPUs")
        ax.grid(True, axis="y", alpha=0.3)
    for ax in axes[::3 if len(axes) > 4 else 2]:
        ax.set_ylabel("speedup (x)")
    return finish_panels(fig, axes, f"MG-GCN {exp.figure_number}: speedup over {' / '.join(baseline) or 'the library'} "
                         f"on one GPU, {models_text(speedups)} ({', '.join(machines) or 'no runs'})")


def finish_panels(fig, axes, title: str):
    """One legend for every panel above them, the title above it."""
    handles: dict = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.suptitle(title, fontsize=12)
    if handles:
        fig.legend(handles.values(), handles.keys(), loc="upper center", bbox_to_anchor=(0.5, 0.955),
                   ncol=min(len(handles), 4), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.91))
    return fig


class A100Comparison(ComparisonExperiment):
    """Figs. 12 and 13: the DGX-A100 figures, MG-GCN against the libraries alone (no CAGNET)."""

    roles = ("paper_method", "library")
    paper_gpus, paper_speedups, paper_vs_cagnet = "8x A100", SPEEDUP_VS_DGL_A100, {}
    paper_values = A100_VALUES
    derives_from = ("mggcn.fig10",)
