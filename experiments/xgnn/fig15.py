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

from harness.argtypes import names_of, positive_int
from harness.artifact import ReportArtifact
from harness.experiment import PaperValue, Param
from harness.registry import register_experiment
from harness.reportkit import (TOLERANCE, Axis, Band, Claim, Estimate, FigureSpec, Panel, Series, colour, draw, finite,
                               group, ratio)

from . import PAPER_SOURCE
from .training import (SHOWN, SYSTEMS, TrainingReport, XGNNTraining, cell, combo, combo_list, common_parameters, fmt,
                       percent, system_list)

SYSTEMS_A = ("dgl_host", "quiver", "xgnn_g", "xgnn_f")
SYSTEMS_B = ("dgl_gpu", "dgl_cache", "xgnn")
ALL_B = ("dgl",) + SYSTEMS_B        # real DGL (host sampling) on request: not the paper's DGL configuration
# the paper's time-to-accuracy speedups of XGNN over each baseline (section 6.9)
PAPER_B = {"dgl_cache": 2.7, "dgl_gpu": 5.3}


parts_list = names_of("parts", "a", "b")


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
    title = "XGNN Fig. 15: (a) one GPU, topology or features first; (b) convergence of XGNN, DGL+C, DGL"
    differs_from_paper = ("One and 4 NVLink-connected H200s instead of V100s, stand-ins of CF and PA at about 2% scale "
                          "(planted-community labels: accuracy levels are not the paper's) under the V100's memory "
                          "scaled like the graph; DGL-Host, Quiver, DGL+C and the paper's DGL are re-implementations "
                          "of their policies.")
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

    def run_point(self, point, ctx):
        from .training import train_system

        if point.params.get("timing") == "free":
            return train_system(_Free(self), point, ctx)
        return train_system(self, point, ctx)

    def report(self, rows, runs) -> ReportArtifact:
        rep = TrainingReport(self, rows, runs, key_params=("part", "system", "dataset", "model"))
        shown = list(rep.newest(lambda r: (r["params"].get("part"), r["params"]["model"], r["params"]["dataset"],
                                           r["params"]["system"], r["world"])).values())
        claims, headline, history = [], [], []
        out = part_a([r for r in shown if r["params"].get("part") == "a"], rep.kind, claims, headline, rep.notes)
        shown_b = [r for r in shown if r["params"].get("part") == "b"]
        rows_b, curves, targets = part_b(shown_b, rep.kind, claims, headline, rep.notes)
        history += part_a([r for r in rep.records if r["params"].get("part") == "a"], rep.machine, [], [], [])
        history += part_b([r for r in rep.records if r["params"].get("part") == "b"], rep.machine, [], [], [])[0]
        table = rep.table(out + rows_b, empty="no Fig. 15 rows")
        table = table[[c for c in table.columns if c in SHOWN_COLUMNS]]
        rep.notes += NOTES
        systems_b = [s for s in ALL_B if any(r["params"]["system"] == s for r in shown_b)] or list(SYSTEMS_B)
        caption = rep.caption(
            f"(a) End-to-end epoch time on one GPU for {_names(SYSTEMS_A)}, with its feature extraction (E) and the "
            f"topology and feature ratios on the GPU; (b) validation accuracy per epoch against training time for "
            f"{_names(systems_b)} on every GPU, and the time each needs to reach the same accuracy (stage times S and "
            "T, hit rates and test accuracies are in the history). Paper: Fig. 15 (V100s, real CF and PA; it "
            "printed the accuracy all three reach, 56%, and XGNN's time-to-accuracy speedups, drawn and noted); its "
            "DGL is the configuration of section 6.1 (GPU sampling, topology in GPU memory, no feature cache), "
            f"re-implemented as {SYSTEMS['dgl_gpu'].label}"
            + ("; real DGL 2.1 (host sampling) is a series of its own, not compared with the paper's numbers. "
               if "dgl" in systems_b else ". ") + SHOWN, shown=shown)
        return rep.artifact("XGNN Fig. 15: large graph on one GPU; convergence", caption, table,
                            fig15_figure(out, curves, targets), headline="; ".join(headline),
                            claims=claims, skips=rep.shown_rows(shown),
                            history=rep.table(history, empty="no Fig. 15 rows"))


# the headline table's columns (the others are in the history)
SHOWN_COLUMNS = ("Part", "Machine", "Model+DS", "System", "E2E s", "E s", "graph ratio %", "R%", "best val acc",
                 "target acc", "epochs to target", "time to target s")


def fig15_figure(rows_a: list[dict], curves: dict, targets: dict):
    """(a) each system's epoch time on one GPU (horizontal bars, the system's colour); (b) validation
    accuracy against training time per system, the common target and the paper's 56% dashed."""
    if rows_a:
        kinds = list(dict.fromkeys(r["Machine"] for r in rows_a))
        labels = list(dict.fromkeys(r["System"] for r in rows_a))
        where = next(r["Model+DS"] for r in rows_a)
        times = Panel([Series(k, [next((r["E2E s"] for r in rows_a if r["Machine"] == k and r["System"] == s), None)
                                  for s in labels], colour=[colour(s) for s in labels]) for k in kinds],
                      groups=labels, horizontal=True, x=Axis("seconds per epoch"), legend=False,
                      title=f"(a) one GPU, {where} ({', '.join(kinds)})", title_size=10)
    else:
        times = Panel([], title="(a) one GPU (not run)", title_size=10)
    series = [Series(name if len({m for m, _, _ in curves}) == 1 else f"{name} ({machine})", acc, xs=cum,
                     style={"linewidth": 1.5}) for (machine, _, name), (_, acc, cum) in curves.items()]
    ends = [cum[-1] for _, (_, _, cum) in curves.items() if cum]
    series += [Series(f"common target {100 * target:.1f}%", [target] * 2, xs=[0, max(ends)], colour="0.4",
                      style={"linestyle": ":"}) for target in targets.values()]
    if ends:
        series.append(Series(f"{PAPER_SOURCE}: all three reach 56%", [PAPER_ACCURACY] * 2, xs=[0, max(ends)],
                             colour="0.2", paper=True))
    convergence = Panel(series, kind="lines", x=Axis("training time (s)"), y=Axis("validation accuracy", limits=(0, 1)),
                        legend={"fontsize": 9}, title_size=10,
                        title="(b) convergence " + ", ".join(f"on {w} GPU{'s' if w > 1 else ''} ({m})" for m, w in targets)
                        if targets else "(b) convergence (no common target)")
    return draw(FigureSpec([times, convergence], ncols=2, size=(10, 4)))


PAPER_ACCURACY = 0.56           # section 6.9: the accuracy the three systems reach after 120 epochs


def part_a(records, machine, claims: list[Claim], headline: list[str], notes: list[str]) -> list[dict]:
    """(a): one table row per system on one GPU; XGNN-F against the fastest of the others."""
    out = []
    for (mach, model, ds), systems in group(records, lambda r: (machine(r), r["params"]["model"],
                                                                r["params"]["dataset"]),
                                            lambda r: r["params"]["system"]).items():
        for system in (s for s in SYSTEMS_A if s in systems):
            rec = systems[system]
            out.append({"Part": "(a) 1 GPU", "Machine": mach, "Model+DS": combo(model, ds),
                        "System": SYSTEMS[system].label, "E2E s": fmt(cell(rec, "epoch_time")),
                        "S s": fmt(cell(rec, "sample_time")), "E s": fmt(cell(rec, "gather_time")),
                        "T s": fmt(cell(rec, "train_time")), "graph ratio %": percent(cell(rec, "graph_ratio")),
                        "R%": percent(cell(rec, "feat_ratio")), "H%": percent(cell(rec, "feature_hit_rate"))})
        others = [(e, rec) for s, rec in systems.items() if s in SYSTEMS_A and s != "xgnn_f"
                  and finite(e := cell(rec, "epoch_time"))]
        best_other, best_rec = min(others, key=lambda x: x[0]) if others else (None, None)
        f, g = (cell(systems.get(s), "epoch_time") for s in ("xgnn_f", "xgnn_g"))
        if finite(f) and best_other is not None:
            ours, theirs = (Estimate.from_stats(r.get("stats", {}).get("epoch_time"), "epochs")
                            for r in (systems["xgnn_f"], best_rec))
            claims.append(Claim(f"(a) {mach}: epoch time of the fastest other system / XGNN-F",
                                theirs.ratio(ours) if ours is not None and theirs is not None else None,
                                Band.beyond(1.0, text="XGNN-F the fastest (the paper prints no times)"), "faster",
                                runs=tuple(sorted({systems["xgnn_f"]["run_id"], best_rec["run_id"]}))))
            headline.append(f"(a) {mach}: XGNN-F {best_other / f:.2f}x faster than the best other system"
                            if f < best_other else f"(a) {mach}: XGNN-F not the fastest ({f:.3g} s vs {best_other:.3g} s)")
        if finite(f) and finite(g):
            notes.append(f"(a) {mach}: XGNN-G / XGNN-F epoch time {g / f:.2f}x (paper: XGNN-F faster; XGNN-G "
                         "no better than DGL-Host and Quiver)")
    return out


def part_b(records, machine, claims: list[Claim], headline: list[str], notes: list[str]) -> tuple[list[dict], dict, dict]:
    """(b): one table row per system with the time it needs to reach the accuracy every system
    reaches; the accuracy curves {(machine, GPUs, system label): (epochs, accuracy, seconds)} and
    the targets {(machine, GPUs): accuracy}."""
    out, curves, targets = [], {}, {}
    for (mach, world, model, ds), systems in group(
            records, lambda r: (machine(r), r["world"], r["params"]["model"], r["params"]["dataset"]),
            lambda r: r["params"]["system"]).items():
        tracks = {system: track for system, rec in systems.items() if (track := accuracy_track(rec))}
        # the accuracy all of the paper's systems reach (real DGL's time to it is listed, not judged)
        judged = [acc for system, (acc, _) in tracks.items() if system in SYSTEMS_B] or \
            [acc for acc, _ in tracks.values()]
        target = min(max(acc) for acc in judged) if judged else None
        classes = next((r["extra"].get("epoch_time", {}).get("graph", {}).get("classes")
                        for r in systems.values() if r["status"] == "ok"), None)
        chance = 1.0 / classes if classes else 0.0
        learned = target is not None and target > 1.5 * chance
        if target is not None and not learned:
            notes.append(f"(b) {mach}: the lowest best validation accuracy ({100 * target:.1f}%) is not above "
                         f"chance ({100 * chance:.1f}%): no time to accuracy is compared (train longer or on more "
                         "nodes)")
        if learned:
            targets[(mach, world)] = target
        reach, reach_est = {}, {}
        for system in (s for s in ALL_B if s in systems):
            rec = systems[system]
            row = {"Part": f"(b) {world} GPU(s)", "Machine": mach, "Model+DS": combo(model, ds),
                   "System": SYSTEMS[system].label, "E2E s": fmt(cell(rec, "epoch_time"))}
            if system in tracks:
                acc, cum = tracks[system]
                hit = next((i for i, v in enumerate(acc) if v >= target), None)
                reach[system] = cum[hit] if hit is not None else None
                if hit is not None:
                    reach_est[system] = time_to_target(rec, hit)
                row.update({"epochs": len(acc), "best val acc": fmt(max(acc)), "target acc": fmt(target),
                            "epochs to target": hit + 1 if hit is not None else None,
                            "time to target s": fmt(reach[system]),
                            "final test acc": fmt(rec["metrics"].get("test_accuracy"))})
                curves[(mach, world, SYSTEMS[system].label)] = (list(range(1, len(acc) + 1)), acc, cum)
            out.append(row)
        for other, paper in PAPER_B.items():
            if (s := ratio(reach.get(other), reach.get("xgnn"))) is not None and learned:
                claims.append(Claim(f"(b) {mach}: time to {100 * target:.1f}%, {SYSTEMS[other].label} / XGNN",
                                    reach_est[other].ratio(reach_est["xgnn"]), Band.factor(paper, TOLERANCE),
                                    f"{paper}x", runs=tuple(sorted({systems[other]["run_id"],
                                                                    systems["xgnn"]["run_id"]}))))
                headline.append(f"(b) {mach}: XGNN reaches {100 * target:.1f}% {s:.2f}x sooner than "
                                f"{SYSTEMS[other].label} (paper {paper}x)")
        if (s := ratio(reach.get("dgl"), reach.get("xgnn"))) is not None and learned:
            notes.append(f"(b) {mach}: XGNN reaches {100 * target:.1f}% {s:.2f}x sooner than "
                         f"{SYSTEMS['dgl'].label} (real DGL 2.1, host sampling: not the paper's DGL configuration, "
                         "so not compared with its 5.3x)")
    return out, curves, targets


def time_to_target(rec, hit: int) -> Estimate:
    """The training time up to epoch ``hit``: that many epochs at the mean epoch time, with the t
    interval of the epochs' times (the epoch the target is reached taken as it came)."""
    times = rec["extra"]["epoch_time"]["epoch_s_per_epoch"][: hit + 1]
    return Estimate.from_samples(times, "epoch times").times(hit + 1)


def accuracy_track(rec) -> tuple[list, list] | None:
    """(validation accuracy per epoch, training seconds up to each epoch) of a point that trained."""
    e = rec["extra"].get("epoch_time", {}) if rec["status"] == "ok" else {}
    acc, times = e.get("val_acc_per_epoch") or [], e.get("epoch_s_per_epoch") or []
    if acc and len(acc) == len(times):
        return acc, [sum(times[: i + 1]) for i in range(len(times))]
    return None


NOTES = [
    "(a) Paper (section 6.8, no numbers printed): all systems are slower than on 8 GPUs; XGNN-G has no advantage "
    "over DGL-Host and Quiver (sampling does not dominate the epoch); XGNN-F beats them all (the hottest features on "
    "the GPU). With the V100 budget the CF stand-in's topology does not fit one GPU: XGNN-G keeps the hottest rows "
    "of it, XGNN-F fills the GPU with features.",
    "(b) Paper (section 6.9): XGNN, DGL+C and DGL reach a comparable 56% after 120 epochs (GCN on PA in the text, "
    "GraphSAGE on PA in the caption), XGNN 2.7x sooner than DGL+C and 5.3x sooner than DGL (GPU sampling, section "
    f"6.1: compared here with {SYSTEMS['dgl_gpu'].label}). Here: the target is the lowest of the paper's systems' best "
    "validation accuracies (the accuracy all of them reach); time = the sum of the pipelined epoch times until the "
    "first epoch at or above it (evaluation excluded). Stand-in labels are planted communities: the accuracy levels "
    "are not the paper's.",
]


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
