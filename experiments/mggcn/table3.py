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
from harness.reportkit import Report, figure, finish, lines

from . import PAPER_HARDWARE_A100
from .common import (MGGCNExperiment, mggcn_params, DATASETS, DGL_MODEL, common_parameters, dataset_list,
                     limit_threads, load_graph, model_list, resolve_model, scale_note,
                     measure_epoch_time)

# Table 3 (DGX-A100), epoch seconds; "-" = out of memory (Papers below 8 GPUs)
TABLE3 = {
    "reddit": {1: 0.033, 2: 0.017, 4: 0.012, 8: 0.012},
    "papers": {8: 2.89},
    "products": {1: 0.355, 2: 0.202, 4: 0.110, 8: 0.067},
    "proteins": {1: 4.221, 2: 2.272, 4: 1.191, 8: 0.641},
}
# Sec. 6.6, MG-GCN's speedup over DGL with the 2 x 512 model
SPEEDUP_VS_DGL_A100 = {("cora", 1): 2.2, ("arxiv", 1): 1.8, ("products", 1): 1.5, ("reddit", 1): 1.5,
                       ("products", 8): 8.5, ("reddit", 8): 8.3}
SPEEDUP_VS_DGL_V100 = {("reddit", 1): 2.72, ("products", 1): 1.42, ("arxiv", 1): 1.76, ("cora", 1): 3.1}
BASELINES = ("single_gpu", "pyg", "dgl")


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
    impls = ("mggcn",) + BASELINES
    paper_hardware = PAPER_HARDWARE_A100
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

    def points(self, cfg):
        worlds = self.world_sizes(cfg)
        for ds in self.param(cfg, "datasets"):
            choice = DATASETS[ds]
            scale = self.scale(cfg, choice.key)
            for model_text in self.param(cfg, "models"):
                model = resolve_model(model_text, choice)
                if model is None:
                    continue
                base = {"dataset": ds, "model": model, "scale": scale}
                for world in worlds:
                    yield Point("mggcn", {**base, "gpus": world, **mggcn_params(self, cfg)}, world)
                for impl in BASELINES:
                    yield Point(impl, {**base, "gpus": 1}, 1)

    def run_point(self, point: Point, ctx) -> list[Measurement]:
        limit_threads(ctx.rank)
        choice = DATASETS[point.params["dataset"]]
        graph = load_graph(choice, point.params["scale"], ctx)
        return measure_epoch_time(self, point, graph, ctx)

    # --- report --------------------------------------------------------------------------------
    def report(self, rows, runs) -> ReportArtifact:
        rep = Report(self, rows, runs)
        ok = rep.ok[rep.ok["metric"] == "epoch_time"]

        def order(key):     # datasets in the paper's order, each dataset's Table 3 model first
            ds, model = key
            known = ds in DATASETS
            return (list(DATASETS).index(ds) if known else 99,
                    not (known and model == DATASETS[ds].paper_model), model)

        keys = sorted({(d, m) for d, m in zip(rep.rows["p_dataset"], rep.rows["p_model"])}, key=order)
        records = [rec for ds, model in keys for rec in self._rows(ok, ds, model, rep.labels)]
        rep.notes += self._claims(ok, rep.labels) + rep.skip_notes()
        rep.notes.append("Paper, Table 3: PAPERS runs out of memory below 8 GPUs ('-'); DistGNN's best (Table 2, CPU "
                         "sockets): REDDIT 0.60 s, PAPERS 36.45 s, PRODUCTS 1.74 s, PROTEIN 2.63 s.")
        caption = rep.caption("Seconds per full-batch training epoch (forward, loss, backward, all-reduce, Adam); "
                              "median over epochs of the slowest rank. 'speedup' is over MG-GCN on one GPU of the "
                              f"same run. Paper: {PAPER_HARDWARE_A100}. " + scale_note(rep.rows))
        return rep.artifact("MG-GCN Table 3: epoch time (s) vs GPUs", caption,
                            rep.table(records, single=(), drop_empty=False), epoch_figure(ok, keys, rep.labels),
                            skips=False)

    def _rows(self, ok, ds: str, model: str, labels: dict) -> list[dict]:
        """The table's rows of one dataset and model: every implementation and GPU count, each run's
        seconds and speedup over one GPU, the paper's."""
        paper_model = DATASETS[ds].paper_model if ds in DATASETS else None
        paper = TABLE3.get(ds, {}) if model == paper_model else {}
        mine = ok[(ok["p_dataset"] == ds) & (ok["p_model"] == model)]
        out = []
        for impl in self.impls:
            for gpus in sorted(set(mine["p_gpus"].astype(int)) | set(paper)):
                if impl != "mggcn" and gpus != 1:
                    continue
                rec = {"dataset": DATASETS[ds].label if ds in DATASETS else ds, "model": model, "impl": impl,
                       "#G": gpus, "paper A100 (s)": paper.get(gpus) if impl == "mggcn" else None}
                for run_id, label in labels.items():
                    hit = mine[(mine["run_id"] == run_id) & (mine["impl"] == impl)
                               & (mine["p_gpus"].astype(int) == gpus)]["value"]
                    one = mine[(mine["run_id"] == run_id) & (mine["impl"] == "mggcn")
                               & (mine["p_gpus"].astype(int) == 1)]["value"]
                    value = rec[f"{label} (s)"] = float(hit.iloc[0]) if not hit.empty else None
                    rec[f"{label} speedup"] = (float(one.iloc[0]) / value
                                               if value and not one.empty and impl == "mggcn" else None)
                if impl == "mggcn" and paper.get(1) and paper.get(gpus):
                    rec["paper speedup"] = paper[1] / paper[gpus]
                if any(rec.get(f"{label} (s)") is not None for label in labels.values()) \
                        or rec["paper A100 (s)"] is not None:
                    out.append(rec)
        return out

    def _claims(self, ok, labels) -> list[str]:
        """The issue's acceptance checks and the DGL-comparison speedups, as sentences."""
        notes = []
        for run_id, label in labels.items():
            mine = ok[ok["run_id"] == run_id]

            def seconds(ds, model, impl, gpus):
                hit = mine[(mine["p_dataset"] == ds) & (mine["p_model"] == model)
                           & (mine["impl"] == impl) & (mine["p_gpus"].astype(int) == gpus)]["value"]
                return float(hit.iloc[0]) if not hit.empty else None

            one, four = seconds("products", "3x256", "mggcn", 1), seconds("products", "3x256", "mggcn", 4)
            if one is not None:
                scale = mine[mine["p_dataset"] == "products"]["p_scale"].iloc[0]
                text = (f"{label}: PRODUCTS 3x256 (scale {scale:g}) {one:.3f} s/epoch on 1 GPU "
                        f"(paper A100: 0.355 s)")
                if four is not None:
                    text += f"; 4 GPUs {four:.3f} s, {one / four:.2f}x (paper: {0.355 / 0.110:.2f}x)"
                notes.append(text)
            for ds in sorted({d for d in mine["p_dataset"]}):
                for base in BASELINES:
                    ref = seconds(ds, DGL_MODEL, base, 1)
                    if ref is None:
                        continue
                    parts = []
                    for gpus in sorted(set(mine[(mine["p_dataset"] == ds) & (mine["impl"] == "mggcn")
                                                & (mine["p_model"] == DGL_MODEL)]["p_gpus"].astype(int))):
                        t = seconds(ds, DGL_MODEL, "mggcn", gpus)
                        paper = SPEEDUP_VS_DGL_A100.get((ds, gpus))
                        parts.append(f"{gpus} GPU {ref / t:.2f}x" + (f" (paper vs DGL: {paper}x)" if paper else ""))
                    if parts:
                        notes.append(f"{label}: MG-GCN over {base} on {ds} {DGL_MODEL}: " + ", ".join(parts))
        return notes


def epoch_figure(ok, keys, labels):
    """MG-GCN's epoch time vs GPUs per run, dataset and model, the paper's dashed beside."""
    import matplotlib.pyplot as plt

    fig, ax = figure((7.5, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "o^vD<>"
    for i, (ds, model) in enumerate(keys):     # one color per dataset and model
        color = colors[i % len(colors)]
        grp = ok[(ok["impl"] == "mggcn") & (ok["p_dataset"] == ds) & (ok["p_model"] == model)]
        for j, (run_id, label) in enumerate(labels.items()):
            g = grp[grp["run_id"] == run_id].sort_values("p_gpus")
            if not g.empty:
                lines(ax, [(f"{label} {ds} {model}", g["p_gpus"], g["value"])], legend_size=None, grid=False,
                      marker=markers[j % len(markers)], color=color)
        paper = TABLE3.get(ds, {}) if ds in DATASETS and model == DATASETS[ds].paper_model else {}
        if paper:
            xs = sorted(paper)
            lines(ax, [(f"A100 (paper) {ds} {model}", xs, [paper[x] for x in xs], {"paper": True})],
                  legend_size=None, grid=False, marker="s", color=color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("GPUs (ranks)")
    ax.set_ylabel("epoch time (s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return finish(fig, ax, "MG-GCN epoch time vs GPUs (Table 3)", tight=False)
