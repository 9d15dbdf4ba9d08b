"""The epoch driver every training experiment shares (WholeGraph's, XGNN's and ICS'22's), and the
reading of their rows back.

:func:`run_epochs` trains a pipeline for a point: setup (timed), untimed warm-up steps, then the
measured epochs, each one synchronized between its stages (``synced(e)``: the stage breakdown) or
free-running (the epoch time), evaluated after every epoch, only the last or never; while the free
epochs run, an optional utilization monitor reads the device. ``finish(pipe)`` reads what the experiment
wants from the trained pipeline before it is closed. A failure on one rank ends the rank group
(``impls.pipelines.base.collective_lifetime``) instead of leaving the others in a collective.

:func:`epoch_measurements` turns the epochs into the rows every training experiment stores alike:
``epoch_time`` (the free-running epochs, else the synchronized ones, extrapolated to the full
epoch when capped) and ``sample_time`` / ``gather_time`` / ``train_time`` (the synchronized
epochs). :func:`collect` reads rows back as one record per trained point.

How many epochs are timed (:func:`timed_epoch_counts`, the one rule of every training
experiment): a figure taken from epochs of a few mini-batches each is mostly what an epoch costs
whatever it holds (the barrier and synchronization at its ends, the first batch sampled before
anything overlaps it; XGNN Table 4 on 4 GPUs once timed epochs of 5 mini-batches per GPU, 0.05 s).
So the epochs a figure comes from hold together at least ``timed_batches`` mini-batches per GPU
(default 50 on GPUs), and the epoch time is the median of at least ``timed_epochs`` (3) of them,
whose spread and per-epoch samples the ``epoch_time`` row keeps (``extra.timed_epoch_s``: what an
interval on a ratio of two systems is computed from). The counts are decided when a point is made,
from the mini-batches its epoch holds per GPU, and stored in its params (``epochs``,
``synced_epochs``); captions say them (:func:`timing_caption`).
"""

from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.argtypes import nonneg_int, positive_int
from harness.experiment import Experiment, Measurement, Param, device_setting
from harness.timing import Stats, now

# (CUDA, CUDA --quick, CPU, CPU --quick): CPU ranks train toy stand-ins for the tests, untimed
TIMED_DEFAULTS = {"timed_batches": (50, 10, 1, 1), "timed_epochs": (3, 2, 1, 1)}


def timed_parameters() -> dict[str, Param]:
    """The parameters of the timed-epoch rule (module doc), in every training experiment."""
    return {
        "timed_batches": Param(None, nonneg_int, "mini-batches per GPU the timed epochs hold together at least: "
                                                 "more epochs are measured until they do (CUDA 50, quick 10; CPU 1)"),
        "timed_epochs": Param(None, positive_int, "timed epochs at least, for a spread (CUDA 3, quick 2; CPU 1)"),
    }


def timed_epoch_counts(batches_per_epoch: int, synced: int, free: int, timed_batches: int,
                       timed_epochs: int, *, free_running: bool = True) -> tuple[int, int]:
    """(synchronized, free-running) epochs to measure where ``synced`` and ``free`` were asked for
    (module doc). The epoch time comes from the free-running epochs (from the synchronized ones
    where none runs free): they get at least ``timed_epochs`` epochs and ``timed_batches``
    mini-batches per GPU; the synchronized epochs of a stage breakdown beside them get the
    mini-batches (their count of epochs stays as asked, at least). Where only synchronized epochs
    were asked and they fall short, free-running ones are added (``free_running``, the epoch time
    of an un-instrumented loop), else more synchronized ones."""
    if batches_per_epoch < 1 or synced < 0 or free < 0 or synced + free < 1:
        raise ValueError("an epoch holds at least one mini-batch, and some epoch is measured")
    enough = -(-timed_batches // batches_per_epoch)
    if free == 0:
        if synced >= max(timed_epochs, enough) or not free_running:
            return max(synced, timed_epochs, enough), 0
        free = 1
    return (max(synced, enough) if synced else 0), max(free, timed_epochs, enough)


class TrainingExperiment(Experiment):
    """Base of the pipeline-training experiments: one process per GPU, the epoch time as the
    headline metric, and per-device defaults of the parameters left unset (:meth:`setting`)."""

    interface = "pipelines"
    metric, unit, better = "epoch_time", "s", "lower"
    spawn_ranks = True
    # parameter -> (CUDA, CUDA --quick, CPU, CPU --quick), for the parameters given as None
    defaults: dict[str, tuple] = {}
    # a point's time grows with the mini-batches each rank trains (cost_size: harness.estimate)
    cost_scales = ("scale", "epochs", "max_batches")
    cost_per_rank = True

    def setting(self, cfg, name: str):
        return device_setting(self, cfg, name, {**TIMED_DEFAULTS, **self.defaults})

    def timed_counts(self, cfg, params: dict, world: int, synced: int, free: int,
                     free_running: bool = True) -> tuple[int, int]:
        """:func:`timed_epoch_counts` for a point's params (dataset, scale, batch size, its cap on
        mini-batches per epoch) on ``world`` GPUs."""
        from harness import datasets

        per_epoch = datasets.epoch_batches(params["dataset"], params["scale"], params["batch_size"], world)
        if params.get("max_batches"):
            per_epoch = min(per_epoch, int(params["max_batches"]))
        return timed_epoch_counts(per_epoch, synced, free, self.setting(cfg, "timed_batches"),
                                  self.setting(cfg, "timed_epochs"), free_running=free_running)

    def cost_size(self, point, cfg):
        """Mini-batches each rank trains over the measured epochs (capped where the point caps them)."""
        from harness import datasets

        p = point.params
        if not all(k in p for k in ("dataset", "scale", "batch_size", "epochs")):
            return super().cost_size(point, cfg)
        batches = datasets.epoch_batches(p["dataset"], p["scale"], p["batch_size"], point.world_size)
        return p["epochs"] * min(batches, p.get("max_batches") or batches)


@dataclass
class Trained:
    """What :func:`run_epochs` measured: one ``EpochStats`` per measured epoch, the validation
    accuracy after the evaluated epochs, the setup seconds, the utilization summary (empty without
    a monitor) and what ``finish`` read from the trained pipeline."""

    stats: list
    val_curve: list[float]
    setup_s: float
    util: dict = field(default_factory=dict)
    final: Any = None

    @property
    def synced(self) -> list:
        return [s for s in self.stats if s.breakdown]

    @property
    def timed(self) -> list:
        """The epochs the epoch time is taken from: the free-running ones, else the synced ones."""
        return [s for s in self.stats if not s.breakdown] or self.synced


def run_epochs(pipe, rank, label: str, epochs: int, *, warmup_batches: int = 0,
               synced: Callable[[int], bool] = lambda e: False, evaluate: str = "every",
               unprefetched_synced: bool = False, monitor=None, finish: Callable[[Any], Any] | None = None,
               lifetime=None) -> Trained:
    """Train ``pipe`` (module doc). ``evaluate``: the validation accuracy after "every" epoch, the
    "last" one, or "never"; ``unprefetched_synced``: synchronized epochs run without prefetching,
    so each stage is timed alone; ``lifetime``: the context the pipeline lives in (default:
    ``collective_lifetime``, which closes it on every rank)."""
    if lifetime is None:
        from impls.pipelines.base import collective_lifetime

        lifetime = collective_lifetime(pipe, label, rank)
    say = rank.progress if rank is not None else (lambda text: None)
    stats, val_curve, windows = [], [], []
    util: dict = {}
    with lifetime:
        started = now()
        pipe.setup()
        setup_s = now() - started
        say(f"  {label}: setup {setup_s:.3g} s ({rank.world_size if rank is not None else 1} ranks)")
        if warmup_batches:
            pipe.train_epoch(-1, breakdown=False, max_batches=warmup_batches)
        if monitor is not None:
            monitor.start()
        try:
            for e in range(epochs):
                breakdown = synced(e)
                options = getattr(getattr(pipe, "config", None), "options", {})
                unprefetch = breakdown and unprefetched_synced
                saved = options.get("prefetch")
                if unprefetch:
                    options["prefetch"] = 0
                began = now()
                try:
                    st = pipe.train_epoch(e, breakdown=breakdown)
                finally:
                    if unprefetch:
                        if saved is None:
                            options.pop("prefetch", None)
                        else:
                            options["prefetch"] = saved
                if not breakdown:
                    windows.append((began, now()))
                stats.append(st)
                if evaluate == "every" or (evaluate == "last" and e == epochs - 1):
                    val_curve.append(pipe.evaluate("val"))
                say(f"  {label}: epoch {e + 1}/{epochs} {describe_epoch(st)}"
                    + (f", val acc {val_curve[-1]:.4f}" if val_curve else ""))
        finally:
            if monitor is not None:
                util = monitor.stop()
                if windows:
                    util["training"] = monitor.window_summary(windows)
        final = finish(pipe) if finish is not None else None
    return Trained(stats, val_curve, setup_s, util, final)


def describe_epoch(st) -> str:
    """One progress line's worth of an epoch."""
    parts = (f" (sample {st.sample_s:.3g}, gather {st.gather_s:.3g}, train {st.train_s:.3g} s)" if st.breakdown
             else " (free-running)")
    batches = f"{st.batches}/{st.batches_full} batches" if st.capped else f"{st.batches} batches"
    hit = st.extra.get("feature_hit_rate")
    return (f"{st.full_epoch_s():.3g} s{parts}, {batches}, loss {st.loss:.4g}"
            + (f", H {100 * hit:.0f}%" if hit is not None else ""))


def no_lifetime():
    """The lifetime of a trainer that needs no collective close (one process)."""
    return contextlib.nullcontext()


def epoch_measurements(trained: Trained, extra: dict) -> list[Measurement]:
    """``epoch_time`` (with ``extra``, and what its value was taken from: the timed epochs' seconds
    ``timed_epoch_s``, their count and mini-batches per GPU) and the synchronized epochs' stage
    times (module doc)."""
    timed = trained.timed
    samples = [s.full_epoch_s() for s in timed]
    extra = {**extra, "timed_epoch_s": samples, "timed_epochs": len(timed),
             "timed_batches_per_gpu": sum(s.batches for s in timed),
             "timed_from": "free-running" if not timed[0].breakdown else "synchronized"}
    out = [Measurement("epoch_time", "s", Stats.from_samples(samples), extra=extra)]
    for stage in ("sample", "gather", "train"):
        values = [s.full_epoch_s(getattr(s, f"{stage}_s")) for s in trained.synced]
        if values:
            out.append(Measurement(f"{stage}_time", "s", Stats.from_samples(values)))
    return out


def accuracy_measurements(val: float, test: float) -> list[Measurement]:
    return [Measurement("val_accuracy", "", value=val, better="higher"),
            Measurement("test_accuracy", "", value=test, better="higher")]


# ----------------------------------------------------------------------------- reading rows back

def timed_samples(rec) -> list[float]:
    """The seconds of the epochs a record's epoch time was taken from (full-epoch seconds,
    extrapolated where capped): ``extra.timed_epoch_s``, or for rows stored before it the
    free-running epochs of ``epoch_s_per_epoch`` (XGNN) / ``epoch_s_measured`` (WholeGraph), else
    the synchronized ones; [] where the record has none."""
    e = (rec.get("extra") or {}).get("epoch_time") or {}
    if e.get("timed_epoch_s"):
        return [float(x) for x in e["timed_epoch_s"]]
    timing = e.get("timing") or []
    if e.get("epoch_s_per_epoch"):
        per_epoch = [float(x) for x in e["epoch_s_per_epoch"]]
    elif e.get("epoch_s_measured") and e.get("batches_run"):
        factor = (e.get("batches_full") or e["batches_run"]) / e["batches_run"]
        per_epoch = [float(x) * factor for x in e["epoch_s_measured"]]
    else:
        return []
    free = [x for x, t in zip(per_epoch, timing) if t != "synced"]
    return free or per_epoch


def timed_batches(rec) -> int | None:
    """Mini-batches per GPU the record's timed epochs held together (older rows: from their count
    of timed epochs and mini-batches per epoch)."""
    e = (rec.get("extra") or {}).get("epoch_time") or {}
    if e.get("timed_batches_per_gpu") is not None:
        return int(e["timed_batches_per_gpu"])
    samples = timed_samples(rec)
    return len(samples) * int(e["batches_run"]) if samples and e.get("batches_run") else None


def timing_caption(records, rule: int | None = TIMED_DEFAULTS["timed_batches"][0]) -> str:
    """One caption sentence: how many epochs each shown epoch time is the median of, the
    mini-batches per GPU they held, and their spread ((max - min) / median over those epochs);
    the points below ``rule`` mini-batches per GPU are counted apart."""
    def span(values, fmt="{:g}"):
        lo, hi = min(values), max(values)
        return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"

    timed = [(r, timed_samples(r), timed_batches(r)) for r in records if r.get("status", "ok") == "ok"]
    timed = [(r, xs, b) for r, xs, b in timed if xs]
    if not timed:
        return ""
    epochs = [len(xs) for _, xs, _ in timed]
    batches = [b for _, _, b in timed if b is not None]
    spreads = [100 * (max(xs) - min(xs)) / statistics.median(xs) for _, xs, _ in timed if len(xs) > 1]
    text = (f"Epoch times: the median of {span(epochs)} timed epoch{'s' if max(epochs) > 1 else ''} per point"
            + (f", {span(batches)} mini-batches per GPU in all" if batches else "")
            + (f"; their spread (max - min over median) {span(spreads, '{:.0f}')}%" if spreads else "; one epoch each: "
               "no spread") + ".")
    if rule and batches and (few := sum(b < rule for b in batches)):
        text += (f" {few} of {len(batches)} points were timed over fewer than {rule} mini-batches per GPU (the "
                 "timed-epoch rule of experiments/kit/training.py; runs before it, or set lower): fixed per-epoch "
                 "costs weigh in them.")
    return text



def collect(rows, prefer: str | None = None, key_params: tuple[str, ...] = ("dataset", "model"),
            defaults: dict | None = None, failures: bool = False,
            reading: Callable[[dict, str], dict] | None = None) -> list[dict]:
    """One record per trained point (run, world size, implementation and ``key_params``):
    ``{"key": {"run_id", "impl", "world_size", *key_params}, "run_id", "world", "params", "status",
    "reason", "metrics": {metric: value}, "extra": {metric: extra}, "stats": {metric: the repeats'
    stats}, "experiment", "device"}``, and
    ``"fidelity"`` where the point was measured at a reduced budget level (``run --time-budget``).

    Rows of the experiment ``prefer`` come first where several experiments trained the same
    point (the others' are left out); ``defaults`` fills key parameters older rows lack;
    ``failures`` keeps skipped and failed points as records too (their status and reason);
    ``reading(params, impl)`` gives the params a row is read with (a rule on the row's own fields)."""
    defaults = defaults or {}
    ordered = rows if failures else rows[rows["status"] == "ok"]
    if prefer is not None and not ordered.empty:
        ordered = ordered.assign(_order=(ordered["experiment"] != prefer).astype(int)).sort_values(
            "_order", kind="stable")
    records: dict = {}
    owner: dict = {}
    for _, r in ordered.iterrows():
        params = r["params"] if isinstance(r["params"], dict) else {}
        if reading is not None:
            params = reading(params, r["impl"])
        values = {k: params.get(k, defaults.get(k)) for k in key_params}
        if any(v is None for v in values.values()):
            continue
        world = int(r["world_size"])
        key = (r["run_id"], world, r["impl"]) + tuple(str(v) for v in values.values())
        if owner.setdefault(key, r["experiment"]) != r["experiment"]:
            continue                     # the same point trained by another experiment
        rec = records.setdefault(key, {
            "key": {"run_id": r["run_id"], "impl": r["impl"], "world_size": world, **values},
            "run_id": r["run_id"], "world": world, "params": params, "status": r["status"], "reason": None,
            "metrics": {}, "extra": {}, "stats": {}, "experiment": r["experiment"], "device": r.get("device")})
        if r["status"] != "ok":
            rec["status"], rec["reason"] = r["status"], r.get("reason")
            continue
        rec["metrics"][r["metric"]] = r["value"]
        if isinstance(r.get("stats"), dict):
            rec["stats"][r["metric"]] = r["stats"]
        extra = r.get("extra")
        if isinstance(extra, dict):
            rec["extra"][r["metric"]] = extra
        if isinstance(r.get("fidelity"), dict):         # measured cheaper to fit a time budget
            rec["fidelity"] = r["fidelity"]
    return list(records.values())
