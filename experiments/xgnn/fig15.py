"""XGNN Fig. 15: (a) one GPU training GraphSAGE on CF, whose topology exceeds the GPU memory:
DGL-Host, Quiver, XGNN-G (topology first) and XGNN-F (features first); (b) convergence of XGNN,
DGL+C and DGL: accuracy per epoch and the time to the same accuracy.

(a) The paper: XGNN-G is no better than DGL-Host and Quiver (sampling does not dominate the
epoch, so the GPU memory given to the topology buys little), XGNN-F beats them all (the hottest
features in GPU memory cut the Trainer's extraction time): with little GPU memory, prioritizing
features beats prioritizing the topology. No numbers are printed. Here all four on one GPU under
the V100 budget rule (training.py): DGL-Host = Quiver's pipeline without a feature cache (topology
and features in host memory, GPU sampling by UVA).

(b) The paper: the three systems reach a comparable 56% after 120 epochs of GCN on PA (the caption
says GraphSAGE on PA), 8 GPUs; XGNN gets there 2.7x faster than DGL+C and 5.3x faster than DGL,
its baseline of section 6.1 (GPU sampling with the topology in GPU memory, no feature cache).
Here GCN on the PA stand-in (param ``convergence``) on every GPU, every epoch free-running and
evaluated on the validation nodes, for XGNN, DGL+C (re-impl.) and ``dgl_gpu``, the
re-implementation of that DGL configuration (DGL+C's pipeline with R = 0), which the paper's 5.3x
is compared with; real DGL 2.1 (``dgl``: host sampling) runs on request (``--param
systems_b=...``) as a series of its own, not compared with the paper. The report takes the lowest
of the paper's systems' best validation accuracies as the common target and compares the training
time each system needs to reach it.
"""

from __future__ import annotations

from harness.experiment import PaperValue, Param, positive_int
from harness.registry import register_experiment
from harness.report import ReportArtifact
from harness.tables import caption_hardware, skip_notes

from .training import (MODEL_SHORT, SHORT, SYSTEMS, XGNNTraining, budget_caption, cell, collect, combo_list,
                       common_parameters, datasets_caption, drop_single, finite, fmt, machine_labels, ratio,
                       settings_caption, system_list)

SYSTEMS_A = ("dgl_host", "quiver", "xgnn_g", "xgnn_f")
SYSTEMS_B = ("dgl_gpu", "dgl_cache", "xgnn")
ALL_B = ("dgl",) + SYSTEMS_B        # real DGL (host sampling) on request: not the paper's DGL configuration
# the paper's time-to-accuracy speedups of XGNN over each baseline (section 6.9)
PAPER_B = {"dgl_cache": 2.7, "dgl_gpu": 5.3}


def parts_list(text: str) -> tuple[str, ...]:
    from harness.errors import HarnessError

    parts = tuple(x.strip() for x in text.split(",") if x.strip())
    if not parts or any(p not in ("a", "b") for p in parts):
        raise HarnessError(f"parts are a (large graph on one GPU), b (convergence), not '{text}'")
    return parts


def paper_values() -> tuple[PaperValue, ...]:
    return (
        PaperValue("Fig. 15(b), section 6.9", "xgnn", {"part": "b", "dataset": "ogbn-papers100M", "model": "gcn"},
                   "val_accuracy", 0.56, "", "all three systems after 120 epochs, 8 GPUs"),
        PaperValue("Fig. 15(b), section 6.9", "xgnn", {"part": "b", "vs": "dgl_cache"}, "time_to_accuracy_speedup",
                   2.7, "x", "XGNN vs DGL+C"),
        PaperValue("Fig. 15(b), section 6.9", "xgnn", {"part": "b", "vs": "dgl_gpu"}, "time_to_accuracy_speedup",
                   5.3, "x", "XGNN vs DGL (GPU sampling, section 6.1; here its re-implementation)"),
    )


@register_experiment
class Fig15(XGNNTraining):
    id = "xgnn.fig15"
    artifact = "fig15"
    title = "XGNN Fig. 15: (a) one GPU, topology or features first; (b) convergence of XGNN, DGL+C, DGL"
    impls = ("xgnn", "quiver", "dgl_cache", "dgl_host")
    paper_values = paper_values()
    parameters = common_parameters(
        parts=Param(("a", "b"), parts_list, "a: large graph on one GPU; b: convergence"),
        large=Param((("sage", "com-friendster"),), combo_list, "(a) model:dataset (paper: sage:CF)"),
        systems_a=Param(SYSTEMS_A, system_list(*SYSTEMS_A), "(a) systems: dgl_host, quiver, xgnn_g, xgnn_f"),
        convergence=Param((("gcn", "ogbn-papers100M"),), combo_list, "(b) model:dataset (paper text: gcn:PA)"),
        systems_b=Param(SYSTEMS_B, system_list(*ALL_B), "(b) systems: dgl_gpu (the paper's DGL configuration, "
                        "re-implemented), dgl_cache, xgnn; also dgl: real DGL 2.1, host sampling (not compared with "
                        "the paper)"),
        conv_epochs=Param(None, positive_int, "(b) epochs (CUDA 120 as the paper, quick 6; CPU 4, quick 3); every one evaluated"),
    )

    def points(self, cfg):
        parts = self.param(cfg, "parts")
        if "a" in parts:
            for model, ds in self.param(cfg, "large"):
                for system in self.param(cfg, "systems_a"):
                    yield self.point(system, ds, model, 1, cfg, part="a")
        if "b" in parts:
            world = self.world(cfg)
            epochs = self.param(cfg, "conv_epochs") or ((6 if cfg.quick else 120) if cfg.device == "cuda"
                                                        else (3 if cfg.quick else 4))
            for model, ds in self.param(cfg, "convergence"):
                for system in self.param(cfg, "systems_b"):
                    yield self.point(system, ds, model, world, cfg, part="b", epochs=epochs, timing="free")

    def run_point(self, point, cfg, rank):
        from .training import train_system

        if point.params.get("timing") == "free":
            return train_system(_Free(self), point, cfg, rank)
        return train_system(self, point, cfg, rank)

    def report(self, rows, runs) -> ReportArtifact:
        import matplotlib.pyplot as plt
        import pandas as pd

        labels = machine_labels(rows, runs)
        records = collect(rows, prefer=self.id, key_params=("part", "system", "dataset", "model"))
        a = [r for r in records if r["params"].get("part") == "a"]
        b = [r for r in records if r["params"].get("part") == "b"]
        notes, out = [], []
        headline_parts, verdicts = [], []
        # (a)
        groups: dict = {}
        for rec in a:
            p = rec["params"]
            groups.setdefault((labels.get(rec["run_id"], rec["run_id"]), p["model"], p["dataset"]), {})[
                p["system"]] = rec
        for (machine, model, ds), systems in groups.items():
            best_other = None
            for system in SYSTEMS_A:
                rec = systems.get(system)
                if rec is None:
                    continue
                r, g, h = cell(rec, "feat_ratio"), cell(rec, "graph_ratio"), cell(rec, "feature_hit_rate")
                out.append({"Part": "(a) 1 GPU", "Machine": machine,
                            "Model+DS": f"{MODEL_SHORT[model]}+{SHORT.get(ds, ds)}", "System": SYSTEMS[system].label,
                            "E2E s": fmt(cell(rec, "epoch_time")), "S s": fmt(cell(rec, "sample_time")),
                            "E s": fmt(cell(rec, "gather_time")), "T s": fmt(cell(rec, "train_time")),
                            "graph ratio %": fmt(100 * g) if finite(g) else g,
                            "R%": fmt(100 * r) if finite(r) else r, "H%": fmt(100 * h) if finite(h) else h})
                e = cell(rec, "epoch_time")
                if system != "xgnn_f" and finite(e):
                    best_other = e if best_other is None else min(best_other, e)
            f = cell(systems.get("xgnn_f"), "epoch_time")
            g_ = cell(systems.get("xgnn_g"), "epoch_time")
            if finite(f) and best_other is not None:
                verdicts.append(f < best_other)
                headline_parts.append(f"(a) XGNN-F {best_other / f:.2f}x faster than the best other system"
                                      if f < best_other else f"(a) XGNN-F not the fastest ({f:.3g} s vs "
                                                             f"{best_other:.3g} s)")
            if finite(f) and finite(g_):
                notes.append(f"(a) {machine}: XGNN-G / XGNN-F epoch time {g_ / f:.2f}x (paper: XGNN-F faster; "
                             "XGNN-G no better than DGL-Host and Quiver)")
        # (b)
        curves = {}
        groups_b: dict = {}
        for rec in b:
            p = rec["params"]
            groups_b.setdefault((labels.get(rec["run_id"], rec["run_id"]), rec["world"], p["model"], p["dataset"]),
                                {})[p["system"]] = rec
        for (machine, world, model, ds), systems in groups_b.items():
            tracks = {}
            for system, rec in systems.items():
                e = rec["extra"].get("epoch_time", {}) if rec["status"] == "ok" else {}
                acc, times = e.get("val_acc_per_epoch") or [], e.get("epoch_s_per_epoch") or []
                if acc and len(acc) == len(times):
                    cum = [sum(times[: i + 1]) for i in range(len(times))]
                    tracks[system] = (acc, cum)
            # the accuracy all of the paper's systems reach (real DGL's time to it is listed, not judged)
            judged = [acc for system, (acc, _) in tracks.items() if system in SYSTEMS_B] or \
                [acc for acc, _ in tracks.values()]
            target = min(max(acc) for acc in judged) if judged else None
            classes = next((r["extra"].get("epoch_time", {}).get("graph", {}).get("classes")
                            for r in systems.values() if r["status"] == "ok"), None)
            chance = 1.0 / classes if classes else 0.0
            learned = target is not None and target > 1.5 * chance
            if target is not None and not learned:
                notes.append(f"(b) {machine}: the lowest best validation accuracy ({100 * target:.1f}%) is not above "
                             f"chance ({100 * chance:.1f}%): no time to accuracy is compared (train longer or on "
                             "more nodes)")
            reach = {}
            for system in ALL_B:
                rec = systems.get(system)
                if rec is None:
                    continue
                row = {"Part": f"(b) {world} GPU(s)", "Machine": machine,
                       "Model+DS": f"{MODEL_SHORT[model]}+{SHORT.get(ds, ds)}", "System": SYSTEMS[system].label,
                       "E2E s": fmt(cell(rec, "epoch_time"))}
                if system in tracks:
                    acc, cum = tracks[system]
                    hit = next((i for i, v in enumerate(acc) if v >= target), None)
                    reach[system] = cum[hit] if hit is not None else None
                    row.update({"epochs": len(acc), "best val acc": fmt(max(acc)), "target acc": fmt(target),
                                "epochs to target": hit + 1 if hit is not None else None,
                                "time to target s": fmt(reach[system]),
                                "final test acc": fmt(rec["metrics"].get("test_accuracy"))})
                    curves[(machine, world, SYSTEMS[system].label)] = (list(range(1, len(acc) + 1)), acc, cum)
                out.append(row)
            for other, paper in PAPER_B.items():
                s = ratio(reach.get(other), reach.get("xgnn"))
                if s is not None and learned:
                    verdicts.append(s > 1)
                    headline_parts.append(f"(b) XGNN reaches {100 * target:.1f}% {s:.2f}x sooner than "
                                          f"{SYSTEMS[other].label} (paper {paper}x)")
            s = ratio(reach.get("dgl"), reach.get("xgnn"))
            if s is not None and learned:
                notes.append(f"(b) {machine}: XGNN reaches {100 * target:.1f}% {s:.2f}x sooner than "
                             f"{SYSTEMS['dgl'].label} (real DGL 2.1, host sampling: not the paper's DGL "
                             "configuration, so not compared with its 5.3x)")
        table = pd.DataFrame.from_records(out)
        headline, status = "; ".join(headline_parts), "measured"
        if table.empty:
            table = pd.DataFrame({"note": ["no Fig. 15 rows"]})
        else:
            table = drop_single(table, ("Machine",))
            table = table[[c for c in table.columns if table[c].notna().any()]]
        if verdicts:
            status = "reproduced" if all(verdicts) else "partly" if any(verdicts) else "not reproduced"
        notes.append("(a) Paper (section 6.8, no numbers printed): all systems are slower than on 8 GPUs; XGNN-G has "
                     "no advantage over DGL-Host and Quiver (sampling does not dominate the epoch); XGNN-F beats "
                     "them all (the hottest features on the GPU). With the V100 budget the CF stand-in's topology "
                     "does not fit one GPU: XGNN-G keeps the hottest rows of it, XGNN-F fills the GPU with features.")
        notes.append("(b) Paper (section 6.9): XGNN, DGL+C and DGL reach a comparable 56% after 120 epochs (GCN on PA "
                     "in the text, GraphSAGE on PA in the caption), XGNN 2.7x sooner than DGL+C and 5.3x sooner than "
                     "DGL (GPU sampling, section 6.1: compared here with "
                     f"{SYSTEMS['dgl_gpu'].label}). Here: the target is the lowest of the paper's systems' best "
                     "validation accuracies (the accuracy all of them reach); time = the sum of the pipelined epoch "
                     "times until the first epoch at or above it (evaluation excluded). Stand-in labels are planted "
                     "communities: the accuracy levels are not the paper's.")
        notes += skip_notes(rows, labels)
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        if out and any(r["Part"].startswith("(a)") for r in out):
            sel = pd.DataFrame.from_records([r for r in out if r["Part"].startswith("(a)")])
            sel["E2E s"] = pd.to_numeric(sel["E2E s"], errors="coerce")
            if sel["E2E s"].notna().any():
                sel.set_index("System")["E2E s"].plot.bar(ax=axes[0])
            axes[0].set_ylabel("seconds per epoch")
        axes[0].set_title("(a) one GPU, GraphSAGE on CF")
        for (machine, world, name), (_, acc, cum) in curves.items():
            axes[1].plot(cum, acc, marker="o", label=name if len(groups_b) == 1 else f"{name} ({machine})")
        if curves:
            axes[1].legend()
        axes[1].set_xlabel("training time (s)")
        axes[1].set_ylabel("validation accuracy")
        axes[1].set_title("(b) convergence")
        fig.tight_layout()
        shown_b = [s for s in ALL_B if any(r["params"]["system"] == s for r in b)] or list(SYSTEMS_B)
        caption = (f"(a) End-to-end epoch time and its breakdown on one GPU for {_names(SYSTEMS_A)}, "
                   "with the topology and feature ratios on the GPU; (b) validation accuracy per epoch against "
                   f"training time for {_names(shown_b)} on every GPU, and the time each needs to reach the same "
                   "accuracy. Paper: Fig. 15 (V100s, real CF and PA); its DGL is the configuration of section 6.1 "
                   f"(GPU sampling, topology in GPU memory, no feature cache), re-implemented as "
                   f"{SYSTEMS['dgl_gpu'].label}"
                   + ("; real DGL 2.1 (host sampling) is a series of its own, not compared with the paper's "
                      "numbers" if "dgl" in shown_b else "") + ". GPU memory budget: "
                   f"{budget_caption(records)}. Datasets: {datasets_caption(records)}. Models: "
                   f"{settings_caption(records)}. " + caption_hardware(runs))
        return ReportArtifact("fig15", "XGNN Fig. 15: large graph on one GPU; convergence", caption, table, notes,
                              fig, headline=headline, status=status)


def _names(systems) -> str:
    labels = [SYSTEMS[s].label for s in systems]
    return ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else "".join(labels)


class _Free:
    """The experiment seen by train_system with every epoch free-running (Fig. 15b)."""

    def __init__(self, exp):
        self._exp = exp
        self.timing = "free"
        self.eval_every_epoch = True

    def __getattr__(self, name):
        return getattr(self._exp, name)
