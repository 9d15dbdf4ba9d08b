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
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.experiment import Experiment, Measurement, device_setting
from harness.timing import Stats


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
        return device_setting(self, cfg, name, self.defaults)

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
        started = time.perf_counter()
        pipe.setup()
        setup_s = time.perf_counter() - started
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
                began = time.perf_counter()
                try:
                    st = pipe.train_epoch(e, breakdown=breakdown)
                finally:
                    if unprefetch:
                        if saved is None:
                            options.pop("prefetch", None)
                        else:
                            options["prefetch"] = saved
                if not breakdown:
                    windows.append((began, time.perf_counter()))
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
    """``epoch_time`` (with ``extra``) and the synchronized epochs' stage times (module doc)."""
    out = [Measurement("epoch_time", "s", Stats.from_samples([s.full_epoch_s() for s in trained.timed]),
                       extra=extra)]
    for stage in ("sample", "gather", "train"):
        values = [s.full_epoch_s(getattr(s, f"{stage}_s")) for s in trained.synced]
        if values:
            out.append(Measurement(f"{stage}_time", "s", Stats.from_samples(values)))
    return out


def accuracy_measurements(val: float, test: float) -> list[Measurement]:
    return [Measurement("val_accuracy", "", value=val, better="higher"),
            Measurement("test_accuracy", "", value=test, better="higher")]


# ----------------------------------------------------------------------------- reading rows back

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
