"""XGNN Fig. 10: factor analysis: XGNN's optimizations switched on one by one.

BASE = DGL+C's settings (topology and hottest features replicated on every GPU, the reservoir
KHop); +MSG = the topology in GGMS (partitioned over the GPUs); +MSF = the features in GGMS too;
+OGA = XGNN's batched KHop; +PSA = the placement solver (the earlier steps place GGMS partitions
with Quiver's clique policy). The paper (8 V100s of a DGX-1, GCN on TW and PA, GraphSAGE on UK and
CF) reports: all optimizations beat BASE by up to 2.5x in training and in sampling time; +MSG
solves BASE's out-of-memory on GraphSAGE+CF and leaves room for a bigger feature cache without
slowing sampling much; +MSF speeds the Trainer up 1.6-3.6x on GCN+PA, GraphSAGE+UK and
GraphSAGE+CF (less on GCN+TW); +OGA cuts sampling time on GCN+TW and GraphSAGE+UK; +PSA cuts
training time on GraphSAGE+CF by 1.3x (the asymmetric 8-GPU topology) and changes little elsewhere.

Here every step trains on every GPU of the machine under the V100 budget rule (training.py), and
the report gives each step's gain over the previous one in the time the paper names and whether
its sign is the paper's. On a fully connected machine (the H200s) the clique policy and the
solver place the same partitions, so +PSA is expected to change nothing; ``--param topology=4Gc``
(a name of impls/core/topology.by_name with as many GPUs as ranks) makes the placements
differ, without the hardware's links changing.
"""

from __future__ import annotations

import math

from harness.argtypes import names_of
from harness.artifact import ReportArtifact
from harness.experiment import PaperValue, Param
from harness.registry import register_experiment
from harness.reportkit import (TOLERANCE, Axis, Band, Claim, Estimate, FigureSpec, Panel, Series, draw, finite, group,
                               ratio)

from . import PALETTE, PAPER_HARDWARE
from .training import (FIG10_STEPS, MODEL_NAMES, SHORT, SYSTEMS, TrainingReport, XGNNTraining, cell, combo, combo_list,
                       common_parameters, extrapolated, fmt, percent, run_number)

COMBOS = (("gcn", "twitter-2010"), ("gcn", "ogbn-papers100M"), ("sage", "uk-2006-05"), ("sage", "com-friendster"))
# what the paper says each step does: (the time it names, expected gain, the claim)
CLAIMS = {
    "msg": ("sample", "fits", "solves BASE's OOM (GraphSAGE+CF), bigger feature cache; sampling not much slower"),
    "msf": ("trainer", "faster", "Trainer 1.6-3.6x faster on GCN+PA, GSG+UK, GSG+CF; less on GCN+TW"),
    "oga": ("sample", "faster", "sampling faster on GCN+TW and GSG+UK (no neighbour iteration in KHop)"),
    "psa": ("trainer", "same", "1.3x on GSG+CF over the asymmetric 8 GPUs; little change elsewhere"),
}


def paper_values() -> tuple[PaperValue, ...]:
    return (
        PaperValue("Fig. 10, section 6.3", "xgnn", {"system": "psa", "vs": "base"}, "trainer_speedup_max", 2.5, "x",
                   "all optimizations vs BASE, training time"),
        PaperValue("Fig. 10, section 6.3", "xgnn", {"system": "psa", "vs": "base"}, "sampling_speedup_max", 2.5, "x",
                   "all optimizations vs BASE, sampling time"),
        PaperValue("Fig. 10, section 6.3", "xgnn", {"system": "msf", "vs": "msg"}, "trainer_speedup_min", 1.6, "x",
                   "GCN+PA, GraphSAGE+UK, GraphSAGE+CF"),
        PaperValue("Fig. 10, section 6.3", "xgnn", {"system": "msf", "vs": "msg"}, "trainer_speedup_max", 3.6, "x",
                   "GCN+PA, GraphSAGE+UK, GraphSAGE+CF"),
        PaperValue("Fig. 10, section 6.3", "xgnn", {"system": "psa", "vs": "oga", "dataset": "com-friendster",
                                                    "model": "sage"}, "trainer_speedup", 1.3, "x", "8-GPU DGX-1"),
    )


def times(rec):
    """(sample, trainer = extraction + training, epoch) seconds of a record, or None each."""
    if rec is None or rec["status"] != "ok":
        return None, None, None
    m = rec["metrics"]
    s, e, t = m.get("sample_time"), m.get("gather_time"), m.get("train_time")
    trainer = e + t if finite(e) and finite(t) else None
    return s, trainer, m.get("epoch_time")


def stage_estimate(rec, kind: str) -> Estimate | None:
    """The mean of a stage's synchronized epochs with its t interval: the sampler, or the trainer
    (extraction + training)."""
    if rec is None or rec["status"] != "ok":
        return None
    stats = rec.get("stats", {})
    if kind == "sample":
        return Estimate.from_stats(stats.get("sample_time"), "synced epochs")
    e, t = (Estimate.from_stats(stats.get(m), "synced epochs") for m in ("gather_time", "train_time"))
    return e.plus(t) if e is not None and t is not None else None


def gain_estimate(prev, cur, kind: str, noise: dict) -> Estimate | None:
    """prev / cur in the stage ``kind`` (sample, trainer), its interval widened by the launch-to-launch
    noise of that stage (``noise``: stage -> factor)."""
    a, b = stage_estimate(prev, kind), stage_estimate(cur, kind)
    if a is None or b is None or not (a.value > 0 and b.value > 0):
        return None
    factor = noise.get(kind, 1.0)
    gain = a.ratio(b)
    return gain.widened(factor, f"the launch-to-launch noise {factor:.2f}x") if factor > 1 else gain


def launch_noise(records) -> dict:
    """{stage: factor}: the largest gap between +OGA and +PSA on the machine's own topology (the
    same placement, model and batches: the same work twice) over every run, per stage; what a
    step's gain must exceed to be told from noise."""
    gaps: dict = {"sample": [], "trainer": []}
    for steps in group(records, lambda r: (r["run_id"], r["world"], r["params"]["model"], r["params"]["dataset"],
                                           r["params"].get("topology") or ""),
                       lambda r: r["params"]["system"]).values():
        oga, psa = steps.get("oga"), steps.get("psa")
        if oga is None or psa is None or (oga["params"].get("topology") or ""):
            continue
        for i, kind in ((0, "sample"), (1, "trainer")):
            if (g := ratio(times(oga)[i], times(psa)[i])) is not None:
                gaps[kind].append(max(g, 1 / g))
    return {kind: max(v) for kind, v in gaps.items() if v}


def step_claim(step: str, model: str, ds: str, prev, cur, noise: dict, where: str) -> Claim | None:
    """The paper's claim about a step on one model+dataset, measured against the step before it in
    the same run; None where the paper claims nothing there (or the claim needs the DGX-1's
    asymmetric links: +PSA)."""
    runs = tuple(sorted({r["run_id"] for r in (prev, cur) if r is not None}))
    name = f"{where} {combo(model, ds)} {SYSTEMS[step].label}"
    if step == "msg":
        if cell(prev, "epoch_time") == "OOM":
            fits = cur is not None and cur["status"] == "ok"
            return Claim(f"{name}: BASE out of memory, +MSG fits", Estimate.exact(1.0 if fits else 0.0),
                         Band.between(1, 1, "+MSG fits where BASE ran out of memory"), "BASE OOM, +MSG fits",
                         null=None, runs=runs, unit="", ours="+MSG fits" if fits else "+MSG out of memory too")
        return Claim(f"{name}: sampler time BASE / +MSG", gain_estimate(prev, cur, "sample", noise),
                     Band.between(0.9, math.inf, "sampling at most 1.11x slower (the paper: not much slower)"),
                     "not much slower", null=None, runs=runs)
    if step == "msf":
        band = MSF_TW if ds == "twitter-2010" else MSF_OTHERS
        return Claim(f"{name}: trainer time +MSG / +MSF", gain_estimate(prev, cur, "trainer", noise), band,
                     "less than 1.6x" if ds == "twitter-2010" else "1.6-3.6x", runs=runs)
    if step == "oga" and ds in ("twitter-2010", "uk-2006-05"):
        return Claim(f"{name}: sampler time +MSF / +OGA", gain_estimate(prev, cur, "sample", noise),
                     Band.beyond(1.0, text="any sampling speedup (the paper prints none)"), "faster", runs=runs)
    return None


MSF_OTHERS = Band.between(1.6, 3.6, "the paper's 1.6-3.6x")
MSF_TW = Band.between(1.0, 1.6, "faster but under 1.6x (the paper: less on GCN+TW)")
ALL_OPTS = Band.factor(2.5, TOLERANCE)


@register_experiment
class Fig10(XGNNTraining):
    title = "XGNN Fig. 10: factor analysis (BASE, +MSG, +MSF, +OGA, +PSA)"
    differs_from_paper = ("4 NVLink-connected H200s instead of a DGX-1's 8 V100s on an asymmetric cube-mesh (so +PSA "
                          "places as +OGA does), stand-ins of TW, PA, UK and CF at 3-8% scale under the V100's memory "
                          "scaled like the graph.")
    impls = ("xgnn",)
    paper_values = paper_values()
    parameters = common_parameters(
        combos=Param(COMBOS, combo_list, "model:dataset pairs (paper: gcn:TW, gcn:PA, sage:UK, sage:CF; CPU --quick: "
                                         "gcn:TW, sage:CF)"),
        topology=Param("", str, "GPU topology the placements are made for (a name of impls.core.topology.by_name "
                                "with as many GPUs as ranks, e.g. 4Gc; default: this machine's)"),
        steps=Param(FIG10_STEPS, names_of("steps", *FIG10_STEPS), "steps to run, in this order (default all: "
                                                                  + ", ".join(FIG10_STEPS) + "); the report "
                                                                  "compares each with the step before it in "
                                                                  "the paper's order"),
    )

    def points(self, cfg):
        world = self.world(cfg)
        combos = self.param(cfg, "combos")
        if cfg.device == "cpu" and cfg.quick and "combos" not in cfg.params:
            combos = (("gcn", "twitter-2010"), ("sage", "com-friendster"))
        topo = self.param(cfg, "topology")
        for model, ds in combos:
            for step in self.param(cfg, "steps"):
                extra = {"topology": topo} if topo else {}
                yield self.point(step, ds, model, world, cfg, **extra)

    def report(self, rows, runs) -> ReportArtifact:
        rep = TrainingReport(self, rows, runs)
        noise = launch_noise(rep.records)
        history, spread = [], {}
        for (machine, *point), steps in group(
                rep.records, lambda r: (rep.machine(r), r["world"], r["params"]["model"], r["params"]["dataset"],
                                        r["params"].get("topology") or ""), lambda r: r["params"]["system"]).items():
            history += [row for _, _, row, _ in step_rows(rep, machine, tuple(point), steps, noise)]
            if note := same_placement_spread(machine, tuple(point), steps):
                spread[next(iter(steps.values()))["run_id"]] = note
        chains = one_run_per_combination(rep)
        out, claims, keys = [], [], []
        for (kind, model, ds), steps in chains.items():
            world = next(iter(steps.values()))["world"]
            for step, rec, row, claim in step_rows(rep, kind, (world, model, ds, ""), steps, noise):
                out.append({"Model+DS": row["Model+DS"], "Run": f"{kind} {run_number(rec)}",
                            **{c: v for c, v in row.items() if c not in ("Machine", "GPUs", "Topology", "Model+DS")}})
                keys.append((kind, model, ds, step))
                claims += [claim] if claim is not None else []
        shown = {key: chains[key[:3]][key[3]] for key in keys}
        claims += all_optimizations_claims(chains, noise)
        table = rep.table(out, empty="no Fig. 10 rows", single=(), drop_empty=False)
        headline = ""
        if shown:
            kinds = ", ".join(sorted({k[0] for k in shown}))
            headline = f"{kinds}:"
            if best := {c.what.rsplit(" ", 2)[-2]: c.effect.value for c in claims if c.band is ALL_OPTS}:
                headline += (" all optimizations vs BASE: " + ", ".join(f"{k} up to {v:.2f}x" for k, v in best.items())
                             + " (paper up to 2.5x each)")
            headline += ("; " if best else " ") + "+PSA not judged (the same placement as +OGA on this fully connected machine)"
        records = list(shown.values())
        rep.notes += [spread[r] for r in sorted({rec["run_id"] for rec in records}) if r in spread]
        rep.notes += [GAIN_NOTE, noise_note(noise),
                      f"Steps (training.py): {rep.systems_note(FIG10_STEPS)}. BASE keeps the whole topology "
                      "on every GPU (OOM when it does not fit the budget, as DGL+C); from +MSG on the topology ratio is "
                      "the largest that fits."]
        if any((rec["params"].get("topology") or "") == "" for rec in rep.records):
            rep.notes.append(SAME_PLACEMENT_NOTE)
        if barrier := sorted({f"{rep.kind(rec)} {run_number(rec)}" for rec in rep.records
                              if rec["params"].get("stage_barrier") == "on"}):
            rep.notes.append(f"{', '.join(barrier)} (history only): stage times with a barrier of all ranks before "
                             "each stage (param stage_barrier=on), so T is the slowest rank's training alone; elsewhere "
                             "T also holds the wait in DDP's all-reduce for peers still sampling or gathering.")
        caption = rep.caption(
            "Sampler and Trainer time per epoch (synchronized stages), E2E epoch time, feature cache ratio and hit "
            "rate as XGNN's optimizations are switched on one by one, data-parallel over every GPU; each step's gain "
            f"over the step before it in the same run, judged where the paper states a claim (Fig. 10, "
            f"{PAPER_HARDWARE}, 8 GPUs; the paper printed no bar values). Every step of a model+dataset comes from "
            "one run, the newest at the paper's budget rule on the machine's own topology that ran the most steps "
            "(column Run), so each gain compares like with like; every run, other topologies too, is in the "
            "artifact's history (.history.md / .history.csv). A gain's interval is the t interval of the synced "
            "epochs widened by the launch-to-launch noise of the same stage (the notes).",
            shown=records)
        return rep.artifact("XGNN Fig. 10: factor analysis", caption, table, steps_figure(shown, keys),
                            headline=headline, claims=claims, skips=rep.shown_rows(records),
                            history=rep.table(history, empty="no Fig. 10 rows", single=(), drop_empty=False))


def one_run_per_combination(rep) -> dict:
    """{(machine kind, model, dataset): {step: record}}: per model+dataset and machine kind, the steps
    of one run, the newest at the paper's budget rule on the machine's own topology among those
    that ran the most steps."""
    pool = [r for r in rep.records if rep.paper_budget(r) and not r["params"].get("topology")]
    gpus = [r for r in pool if r.get("device") == "cuda"]
    runs = group(gpus or pool, lambda r: (rep.kind(r), r["params"]["model"], r["params"]["dataset"], r["run_id"]),
                 lambda r: r["params"]["system"])
    best: dict = {}
    for (kind, model, ds, run_id), steps in runs.items():
        key = (kind, model, ds)
        if key not in best or (len(steps), run_id) > (len(best[key]), next(iter(best[key].values()))["run_id"]):
            best[key] = steps
    order = {c: i for i, c in enumerate(COMBOS)}
    return dict(sorted(best.items(), key=lambda kv: (order.get(kv[0][1:], 99), kv[0][1:], kv[0][0])))


def all_optimizations_claims(chains: dict, noise: dict) -> list[Claim]:
    """The paper's 'all optimizations beat BASE by up to 2.5x', in trainer and in sampler time: the
    largest gain of BASE over the last step measured, over the model+datasets of each machine kind."""
    out = []
    for kind in dict.fromkeys(k[0] for k in chains):
        for stage, name in (("trainer", "trainer"), ("sample", "sampler")):
            gains = []
            for (k, model, ds), steps in chains.items():
                last = next((steps[s] for s in reversed(FIG10_STEPS) if s in steps), None)
                if k == kind and (g := gain_estimate(steps.get("base"), last, stage, noise)) is not None:
                    gains.append((g.value, g, steps))
            if gains:
                _, g, steps = max(gains, key=lambda x: x[0])
                runs = tuple(sorted({r["run_id"] for r in steps.values()}))
                out.append(Claim(f"{kind}: all optimizations vs BASE, largest {name} gain", g, ALL_OPTS, "up to 2.5x",
                                 runs=runs))
    return out


def noise_note(noise: dict) -> str:
    if not noise:
        return ("No run measured +OGA and +PSA on the machine's own topology (the same work twice): gains are judged "
                "on the synced epochs' spread alone.")
    return ("Launch-to-launch noise: +OGA and +PSA on the machine's own topology do the same work (the same placement, "
            "model and batches); the largest gap between them over every run is " +
            ", ".join(f"{'Sampler' if k == 'sample' else 'Trainer'} {v:.2f}x" for k, v in sorted(noise.items()))
            + ". A step's gain in that stage is told from no effect only beyond it.")


def steps_figure(shown: dict, keys: list):
    """A panel per model+dataset (the paper's four), the steps along x, Sampler and Trainer seconds
    per epoch side by side; "OOM" where a step ran out of memory."""
    panels = []
    for kind, model, ds in dict.fromkeys(k[:3] for k in keys):
        steps = [s for s in FIG10_STEPS if (kind, model, ds, s) in shown]
        recs = [shown[(kind, model, ds, s)] for s in steps]
        values = [times(rec) for rec in recs]
        mixed = len({rec["run_id"] for rec in recs}) > 1          # then each step names its run
        panels.append(Panel(
            [Series(name, [v[i] if v[i] is not None else cell(rec, "epoch_time") for v, rec in zip(values, recs)],
                    extrapolated=[extrapolated(rec) for rec in recs]) for i, name in enumerate(("Sampler", "Trainer"))],
            groups=[SYSTEMS[s].label + (f"\n{run_number(rec)}" if mixed else "") for s, rec in zip(steps, recs)],
            y=Axis("seconds per epoch"), legend=False if panels else {"loc": "upper right"},
            title=f"{MODEL_NAMES[model]} on {SHORT.get(ds, ds)} ({kind})"))
    nrows = -(-len(panels) // 2) or 1
    return draw(FigureSpec(panels, PALETTE, ncols=2, size=(10, min(6.0, 2.8 * nrows + 0.3))))


def step_rows(rep, machine: str, point: tuple, steps: dict, noise: dict) -> list[tuple]:
    """(step, record, table row, claim or None) of one run's combination (``point``: GPUs, model,
    dataset, topology), each step judged against the one before it in that run."""
    world, model, ds, topo = point
    out, prev = [], None
    for step in FIG10_STEPS:
        if (rec := steps.get(step)) is None:
            prev = None
            continue
        s, tr, _ = times(rec)
        row = {"Machine": machine, "GPUs": world, "Model+DS": combo(model, ds), "Topology": topo or "machine",
               "Step": SYSTEMS[step].label,
               "Sampler s": fmt(s) if s is not None else cell(rec, "sample_time"),
               "Trainer s": fmt(tr) if tr is not None else cell(rec, "gather_time"),
               "E2E s": fmt(cell(rec, "epoch_time")), "R%": percent(cell(rec, "feat_ratio")),
               "H%": percent(cell(rec, "feature_hit_rate"))}
        claim = None
        if step != "base":
            kind = CLAIMS[step][0]
            gain = ratio(*(times(r)[{"sample": 0, "trainer": 1, "epoch": 2}[kind]] for r in (prev, rec))) \
                if prev is not None else None
            claim = step_claim(step, model, ds, prev, rec, noise, machine) if not topo and prev is not None else None
            verdict = rep.judge([claim]).judgements[0].verdict if claim is not None else \
                ("no claim here" if prev is not None else "-")
            row.update({"gain": fmt(gain), "gain in": kind, "verdict": verdict, "paper": CLAIMS[step][2]})
        out.append((step, rec, row, claim))
        prev = rec
    return out


def same_placement_spread(machine: str, point: tuple, steps: dict) -> str:
    """On the machine's own topology +OGA and +PSA place alike: their T apart is the launch-to-launch
    spread (a note), or ""."""
    _, model, ds, topo = point
    t_oga, t_psa = (cell(steps.get(s), "train_time") for s in ("oga", "psa"))
    if topo or not (finite(t_oga) and finite(t_psa)):
        return ""
    return (f"{machine} {combo(model, ds)}: +OGA and +PSA place the same partitions here and train the same model on "
            f"the same batches, yet T alone is {fmt(t_oga)} s vs {fmt(t_psa)} s ({t_oga / t_psa:.2f}x): the "
            "launch-to-launch spread that +PSA's gain on this machine is within")


GAIN_NOTE = ("Gain = the previous step's time / this step's, in the time the paper names for the step (sampler = "
             "sampling stage; trainer = feature extraction + training; E2E = the pipelined epoch). Stage times are "
             "from the synchronized epochs (the first synced_epochs measured ones, median; each stage alone).")
SAME_PLACEMENT_NOTE = (
    "On a fully connected machine Quiver's clique policy (one clique of every GPU) and the solver place the same "
    "partitions: +PSA's expected gain there is about 1 (the paper's 1.3x comes from the DGX-1's asymmetric links).")
