"""MG-GCN Table 3: epoch time vs number of GPUs on Reddit, Papers, Products and Proteins.

Models as Sec. 6.1: 2 layers x 16 hidden for Reddit, 3 x 256 for Products and Proteins,
3 x 208 for Papers (the largest that fit 8 A100s), and the 2 x 512 model of the DGL comparison
(Figs. 12-13).  One epoch = forward, softmax cross-entropy, backward, gradient all-reduce and
Adam step over the whole graph.  ``mggcn`` runs at every world size; the one-device baselines
(``single_gpu``, ``pyg``, ``dgl``) at one GPU.
"""

from __future__ import annotations

from harness.artifact import ReportArtifact
from harness.experiment import Measurement, PaperValue, Param, Point
from harness.registry import register_experiment
from harness.reportkit import Report, colour, lines

from . import PAPER_HARDWARE_A100
from .comparison import SPEEDUP_VS_DGL_A100, SPEEDUP_VS_DGL_V100
from .common import (DATASETS, DGL_MODEL, MGGCNExperiment, at_paper_settings, common_parameters, dataset_label,
                     dataset_list, limit_threads, load_graph, machine_kinds, measure_epoch_time, mggcn_params,
                     model_list, newest, paper_method, plain_log_y, run_number, scale_suffix, trainers,
                     variant_label)

# Table 3 (DGX-A100), epoch seconds; "-" = out of memory (Papers below 8 GPUs)
TABLE3 = {
    "reddit": {1: 0.033, 2: 0.017, 4: 0.012, 8: 0.012},
    "papers": {8: 2.89},
    "products": {1: 0.355, 2: 0.202, 4: 0.110, 8: 0.067},
    "proteins": {1: 4.221, 2: 2.272, 4: 1.191, 8: 0.641},
}


def baselines() -> tuple[str, ...]:
    """The one-device trainers MG-GCN's epochs are compared with: plain autograd and the libraries' GCNs."""
    return trainers("single_device")


def _paper_values():
    out = []
    for ds, cells in TABLE3.items():
        for gpus, seconds in cells.items():
            out.append(PaperValue("Table 3", "mggcn", {"dataset": ds, "model": DATASETS[ds].paper_model,
                                                       "gpus": gpus}, "epoch_time", seconds, "s"))
    for table, source in ((SPEEDUP_VS_DGL_A100, "Sec. 6.6 (Figs. 12-13, DGX-A100)"),
                          (SPEEDUP_VS_DGL_V100, "Sec. 6.6 (Figs. 10-11, DGX-V100)")):
        for (ds, gpus), factor in table.items():
            out.append(PaperValue(source, "mggcn", {"dataset": ds, "model": DGL_MODEL, "gpus": gpus},
                                  "speedup_vs_dgl", factor, "x"))
    return tuple(out)


@register_experiment
class Table3(MGGCNExperiment):
    title = "Epoch time vs GPUs (MG-GCN Table 3)"
    paper_hardware = PAPER_HARDWARE_A100
    differs_from_paper = ("MG-GCN as the harness re-implements it in PyTorch, on H200 GPUs, not the authors' C++ code "
                          "on a DGX-A100's 8 A100s: across GPUs each vertex lands in the part the paper's random "
                          "permutation gives it but keeps its input order inside the part, every SpMM multiplies "
                          "the local block first and copies the others out of the peers' memory (copy engines) "
                          "instead of NCCL broadcasts, the same bytes in float32; every graph a synthetic stand-in, "
                          "REDDIT and PRODUCTS at the paper's size, PROTEIN at 0.1 and PAPERS at 0.01 of it on GPUs "
                          "by default.")
    warm_and_cold = ("Full batch: every epoch reads the same graph and features, as in the paper's "
                     "back-to-back epochs; 3 untimed warm-up epochs; graphs beyond the smallest are many times "
                     "the L2.")
    paper_values = _paper_values()
    parameters = {
        "datasets": Param(("reddit", "products", "proteins", "papers"), dataset_list,
                          "datasets (reddit, products, proteins, papers, arxiv, cora)"),
        "models": Param(("paper", DGL_MODEL), model_list,
                        "models: 'paper' (each dataset's Table 3 model) and/or LAYERSxHIDDEN"),
        **common_parameters(),
    }

    @property
    def impls(self) -> tuple[str, ...]:
        return (paper_method(),) + baselines()

    def points(self, cfg):
        worlds = self.world_sizes(cfg)
        for ds, model, scale in self.datasets_and_models(cfg):
            base = {"dataset": ds, "model": model, "scale": scale}
            for world in worlds:
                yield Point(paper_method(), {**base, "gpus": world, **mggcn_params(self, cfg)}, world)
            for impl in baselines():
                yield Point(impl, {**base, "gpus": 1}, 1)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        limit_threads(ctx.rank)
        choice = DATASETS[point.params["dataset"]]
        graph = load_graph(choice, point.params["scale"], ctx)
        return measure_epoch_time(self, point, graph, ctx)

    # --- report --------------------------------------------------------------------------------
    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        kinds = machine_kinds(rep)
        ok = rep.ok[rep.ok["metric"] == "epoch_time"]
        # every model and implementation, newest per machine and cell: the DGL-comparison notes
        measured = newest(at_paper_settings(rep, ok), ["p_dataset", "p_model", "impl", "p_gpus", "p_scale"], kinds)
        shown = table3_cells(measured)
        table, machines = table3_layout(shown)
        rep.notes += self._claims(measured) + rep.skip_notes(rep.rows[rep.rows["run_id"].isin(set(measured["run_id"]))])
        rep.notes.append("Paper, Table 3: PAPERS runs out of memory below 8 GPUs ('OOM'); DistGNN's best (Table 2, CPU "
                         "sockets): REDDIT 0.60 s, PAPERS 36.45 s, PRODUCTS 1.74 s, PROTEIN 2.63 s.")
        caption = self.shown_caption(
            rep,
            "Seconds per full-batch training epoch of MG-GCN with each dataset's Table 3 model (REDDIT 2x16, "
            "PAPERS 3x208, PRODUCTS and PROTEIN 3x256): forward, loss, backward, all-reduce, Adam; median over "
            "epochs of the slowest rank. Rows: GPUs; per dataset the paper's seconds, then each machine's newest "
            "run (a column marked xS is a stand-in at S times the paper's graph, not comparable with the paper's "
            "seconds).",
            shown, PAPER_HARDWARE_A100, every="Every run, model and implementation")
        return rep.artifact("MG-GCN Table 3: epoch time (s) vs GPUs", caption, table,
                            epoch_figure(shown, machines), headline=table3_headline(shown, machines),
                            skips=False, history=self._history(rep))

    def _claims(self, measured) -> list[str]:
        """MG-GCN's speedup over each one-GPU baseline with the DGL-comparison model, per machine."""
        notes, ours = [], paper_method()
        for kind, mine in measured.groupby("machine", sort=True):
            def seconds(ds, impl, gpus):
                hit = mine[(mine["p_dataset"] == ds) & (mine["p_model"] == DGL_MODEL)
                           & (mine["impl"] == impl) & (mine["p_gpus"].astype(int) == gpus)]["value"]
                return float(hit.iloc[0]) if not hit.empty else None

            for ds in sorted(set(mine["p_dataset"])):
                gpu_counts = sorted(set(mine[(mine["p_dataset"] == ds) & (mine["impl"] == ours)
                                             & (mine["p_model"] == DGL_MODEL)]["p_gpus"].astype(int)))
                for base in baselines():
                    ref = seconds(ds, base, 1)
                    if ref is None or not gpu_counts:
                        continue
                    parts = []
                    for gpus in gpu_counts:
                        paper = SPEEDUP_VS_DGL_A100.get((ds, gpus))
                        parts.append(f"{gpus} GPU {ref / seconds(ds, ours, gpus):.2f}x"
                                     + (f" (paper vs DGL: {paper}x)" if paper else ""))
                    notes.append(f"{kind}: MG-GCN over {base} on {ds} {DGL_MODEL}: " + ", ".join(parts))
        return notes

    def _history(self, rep):
        """Every run's rows: seconds and speedup over MG-GCN (its default engine) on one GPU of the same
        run and model; an engine variant's rows say which."""
        import pandas as pd

        rows = rep.rows[(rep.rows["metric"] == "epoch_time") | (rep.rows["status"] != "ok")]
        ours = paper_method()
        one = {(r["run_id"], r["p_dataset"], r["p_model"], r["p_scale"]): r["value"] for _, r in rows.iterrows()
               if r["impl"] == ours and r["status"] == "ok" and int(r["p_gpus"]) == 1 and not variant_label(r)}
        records = []
        for _, r in rows.iterrows():
            gpus = int(r["p_gpus"])
            seconds = r["value"] if r["status"] == "ok" else None
            base = one.get((r["run_id"], r["p_dataset"], r["p_model"], r["p_scale"]))
            paper = TABLE3.get(r["p_dataset"], {}).get(gpus) \
                if r["impl"] == ours and r["p_model"] == _paper_model(r["p_dataset"]) else None
            records.append({"run": run_number(r["run_id"]), "machine": rep.label(r["run_id"]),
                            "dataset": dataset_label(r["p_dataset"]), "model": r["p_model"], "impl": r["impl"],
                            "variant": variant_label(r) if r["impl"] == ours else "", "#G": gpus,
                            "scale": float(r["p_scale"]), "epoch (s)": seconds,
                            "speedup": base / seconds if (r["impl"] == ours and base and seconds) else None,
                            "paper A100 (s)": paper,
                            "status": r["status"] if r["status"] == "ok" else f"{r['status']}: {r.get('reason')}"})
        return pd.DataFrame.from_records(records)


# Table 3's dataset columns in its order; its values' series label (the paper's hardware)
PAPER_ORDER = ("reddit", "papers", "products", "proteins")
PAPER_LABEL = "paper (8x A100)"
MARKERS = "o^vD<>"


def _paper_model(dataset: str) -> str | None:
    return DATASETS[dataset].paper_model if dataset in DATASETS else None


def _paper_cell(dataset: str, gpus: int):
    """The paper's seconds, or 'OOM' where it prints a dash (out of memory)."""
    cells = TABLE3.get(dataset, {})
    return cells.get(gpus, "OOM" if gpus in (1, 2, 4, 8) else None)


def table3_cells(measured):
    """MG-GCN with each dataset's Table 3 model, at the largest scale each machine ran the dataset at."""
    mine = measured[(measured["impl"] == paper_method()) & (measured["p_model"] == measured["p_dataset"].map(_paper_model))]
    if mine.empty:
        return mine
    largest = mine.groupby(["machine", "p_dataset"])["p_scale"].transform("max")
    return mine[mine["p_scale"] == largest]


def table3_layout(shown, max_columns: int = 12):
    """The paper's layout (rows: GPUs; per dataset the paper's seconds, then each machine's), and the
    machines it holds: those with the most cells first, as many as fit ``max_columns``."""
    import pandas as pd

    coverage = shown.groupby("machine").size().to_dict() if not shown.empty else {}
    machines, width = [], 1 + len(PAPER_ORDER)
    for kind in sorted(coverage, key=lambda k: (-coverage[k], k)):
        more = shown[shown["machine"] == kind]["p_dataset"].nunique()
        if width + more <= max_columns:
            machines.append(kind)
            width += more
    gpu_counts = sorted({g for cells in TABLE3.values() for g in cells}
                        | set(shown["p_gpus"].astype(int) if not shown.empty else ()))
    records = []
    for gpus in gpu_counts:
        rec = {"#G": gpus}
        for ds in PAPER_ORDER:
            rec[f"{dataset_label(ds)} paper (s)"] = _paper_cell(ds, gpus)
            for kind in machines:
                mine = shown[(shown["machine"] == kind) & (shown["p_dataset"] == ds)]
                if mine.empty:
                    continue
                hit = mine[mine["p_gpus"].astype(int) == gpus]["value"]
                column = f"{dataset_label(ds)} {kind}{scale_suffix(mine['p_scale'].iloc[0])} (s)"
                rec[column] = float(hit.iloc[0]) if not hit.empty else None
        records.append(rec)
    return pd.DataFrame.from_records(records), machines


def table3_headline(shown, machines) -> str:
    """The first machine's scaling from one GPU to its most on the graphs at the paper's size, beside
    the paper's over the same GPU counts."""
    if not machines:
        return ""
    kind, parts, scaled = machines[0], [], []
    for ds in PAPER_ORDER:
        mine = shown[(shown["machine"] == kind) & (shown["p_dataset"] == ds)].sort_values("p_gpus")
        if mine.empty:
            continue
        if float(mine["p_scale"].iloc[0]) != 1.0:
            scaled.append(f"{dataset_label(ds)}{scale_suffix(mine['p_scale'].iloc[0])}")
            continue
        first, last = mine.iloc[0], mine.iloc[-1]
        g0, g1 = int(first["p_gpus"]), int(last["p_gpus"])
        paper = TABLE3.get(ds, {})
        if g1 == g0:
            text = f"{dataset_label(ds)} {first['value']:.3g} s on {g0} GPU" + (
                f" (paper 8x A100: {paper[g0]:.3g} s)" if g0 in paper else "")
        else:
            text = (f"{dataset_label(ds)} {first['value']:.3g} s on {g0} GPU -> {last['value']:.3g} s on {g1} "
                    f"({first['value'] / last['value']:.1f}x" + (
                        f"; paper 8x A100: {paper[g0]:.3g} -> {paper[g1]:.3g} s, {paper[g0] / paper[g1]:.1f}x)"
                        if g0 in paper and g1 in paper else ")"))
        parts.append(text)
    if scaled:
        parts.append(f"{', '.join(scaled)} as smaller stand-ins")
    return f"{kind}: " + "; ".join(parts)


def epoch_figure(shown, machines):
    """One panel per dataset of Table 3: epoch time vs GPUs, each machine's newest runs and the
    paper's; a stand-in at another scale than the paper's graph gets the paper's seconds as text,
    not on its axis."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6.0))
    ours = colour("MG-GCN")
    for ax, ds in zip(axes.flat, PAPER_ORDER):
        mine = shown[shown["p_dataset"] == ds]
        paper = TABLE3[ds]
        scales = {float(s) for s in mine["p_scale"]}
        comparable = scales <= {1.0}
        series = []
        for i, kind in enumerate(machines):
            g = mine[mine["machine"] == kind].sort_values("p_gpus")
            if not g.empty:
                series.append((f"MG-GCN, {kind}", g["p_gpus"].astype(int).tolist(), g["value"].tolist(),
                               {"marker": MARKERS[i % len(MARKERS)], "color": ours, "linewidth": 2}))
        xs = sorted(paper)
        if comparable:
            series.append((PAPER_LABEL, xs, [paper[x] for x in xs],
                           {"paper": True, "marker": "s", "color": ours, "linewidth": 2}))
        lines(ax, series, legend_size=None, grid=False)
        ax.set_yscale("log")
        title = f"{dataset_label(ds)} {_paper_model(ds)}"
        if not comparable:
            title += f": stand-in{scale_suffix(max(scales))}"
            oom = [g for g in (1, 2, 4) if g not in paper]
            cells = [f"{x} GPU{'s' if x > 1 else ''} {paper[x]:.3g} s" for x in xs]
            text = (f"{PAPER_LABEL}, full-size graph:\n" + ",\n".join(", ".join(cells[i:i + 2])
                                                                       for i in range(0, len(cells), 2))
                    + (f"\nout of memory on {', '.join(map(str, oom))} GPUs" if oom else ""))
            # the paper's seconds under the lines (which fall left to right), off their axis
            low, high = ax.get_ylim()
            ax.set_ylim(low / (high / low) ** 0.8, high)
            ax.text(0.03, 0.04, text, transform=ax.transAxes, fontsize=9, ha="left", va="bottom",
                    bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.7"})
        elif mine.empty:
            title += " (not measured)"
        ax.set_title(title, fontsize=11)
        log_axes(ax)
    for ax in axes[1]:
        ax.set_xlabel("GPUs")
    for ax in axes.flat:
        ax.set_ylabel("epoch time (s)")
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.suptitle("MG-GCN Table 3: epoch time vs GPUs", fontsize=12)
    if handles:
        fig.legend(handles.values(), handles.keys(), loc="upper center", bbox_to_anchor=(0.5, 0.95),
                   ncol=len(handles), fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def log_axes(ax) -> None:
    """GPUs 1-8 on a base-2 axis, seconds on a log axis labelled in plain numbers (0.02, not 2x10^-2)."""
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    ax.set_xticks([], minor=True)
    ax.set_xlim(0.8, 10)
    plain_log_y(ax)
