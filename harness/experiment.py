"""The experiment contract: one module per paper artifact, discovered from a registry.

An experiment declares its parameters, the implementations it compares, the points
of its grid, how one point is measured, the paper's own numbers, and how rows
become the paper's table and figure. The runner does the rest (skips, rows,
progress, launching ranks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .errors import HarnessError
from .timing import Stats

if TYPE_CHECKING:
    import pandas as pd

    from .config import RunConfig
    from .report import ReportArtifact, RunInfo


@dataclass(frozen=True)
class Param:
    """A tunable of an experiment, settable with ``--param name=value``."""

    default: Any
    parse: Callable[[str], Any]
    help: str


def float_list(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise HarnessError(f"expected comma-separated numbers, got '{text}'") from None
    if not values:
        raise HarnessError("expected at least one number")
    return values


def int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise HarnessError(f"expected comma-separated integers, got '{text}'") from None
    if not values:
        raise HarnessError("expected at least one integer")
    return values


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise HarnessError(f"expected an integer, got '{text}'") from None
    if value <= 0:
        raise HarnessError(f"expected a positive integer, got {value}")
    return value


def nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise HarnessError(f"expected an integer, got '{text}'") from None
    if value < 0:
        raise HarnessError(f"expected an integer >= 0, got {value}")
    return value


def dataset_names(text: str) -> tuple[str, ...]:
    """'products,PA' -> the registry's names of those datasets (aliases resolved)."""
    from harness import datasets

    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise HarnessError("expected at least one dataset name")
    return tuple(datasets.get(n).name for n in names)


def choice(*allowed):
    """A parser accepting exactly one of ``allowed``."""
    def parse(text: str) -> str:
        if text not in allowed:
            raise HarnessError(f"expected one of {', '.join(allowed)}, not '{text}'")
        return text
    return parse


def device_setting(exp, cfg, name: str, defaults: dict[str, tuple]):
    """``exp``'s parameter ``name``, or where it was not given (None), its default for this run from
    ``defaults[name]`` = (CUDA, CUDA --quick, CPU, CPU --quick)."""
    value = exp.param(cfg, name)
    if value is not None or name not in defaults:
        return value
    cuda, cuda_quick, cpu, cpu_quick = defaults[name]
    if cfg.device == "cuda":
        return cuda_quick if cfg.quick else cuda
    return cpu_quick if cfg.quick else cpu


def names_of(what: str, *allowed: str):
    """A parser of a comma-separated, non-empty list drawn from ``allowed`` ('gcn,sage')."""
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(x.strip() for x in text.split(",") if x.strip())
        if not names or any(n not in allowed for n in names):
            raise HarnessError(f"{what} are {', '.join(allowed)}, not '{text}'")
        return names
    return parse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise HarnessError(f"expected a number, got '{text}'") from None
    if value <= 0:
        raise HarnessError(f"expected a positive number, got {value}")
    return value


@dataclass(frozen=True)
class Point:
    """One configuration to measure: an implementation and its parameters."""

    impl: str
    params: dict = field(default_factory=dict)
    world_size: int = 1

    def label(self) -> str:
        inner = " ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.impl} {inner}".strip()


@dataclass(frozen=True)
class Measurement:
    """One metric measured at a point. ``value`` defaults to ``stats.median``."""

    metric: str
    unit: str
    stats: Stats | None = None
    value: float | None = None
    better: str = "lower"        # lower | higher: which direction is an improvement
    extra: dict = field(default_factory=dict)  # extra params describing this metric

    def resolved_value(self) -> float | None:
        if self.value is not None:
            return float(self.value)
        return None if self.stats is None else float(self.stats.median)


@dataclass(frozen=True)
class Cheaper:
    """A cheaper way to measure a point, for a run under a time budget (``Experiment.cheaper``)."""

    point: Point                 # the point as measured at this level: its params say what changed
    note: str                    # what is reduced, for rows and reports: "1 epoch; host pipelines 16 batches"
    cfg: dict = field(default_factory=dict)   # RunConfig fields changed for this point: {"repeats": 1}


@dataclass(frozen=True)
class PaperValue:
    """A number transcribed from a paper, with where it came from."""

    source: str          # "Table I", "Fig. 8"
    impl: str
    params: dict
    metric: str
    value: float
    unit: str
    note: str = ""


class Experiment:
    """Base class. Subclasses set the class attributes and implement the hooks."""

    id: str = ""
    paper: str = ""
    artifact: str = ""
    title: str = ""
    interface: str = ""          # the impls/ interface whose implementations are compared
    impls: tuple[str, ...] = ()
    metric: str = ""             # primary metric (rows of skipped points carry it)
    unit: str = ""
    better: str = "lower"
    paper_hardware: str = ""
    # one line for the report caption: what a timed repeat finds warm and what it reads cold
    # (docs/measurement.md: what a fair repeat is)
    warm_and_cold: str = ""
    parameters: dict[str, Param] = {}
    paper_values: tuple[PaperValue, ...] = ()
    spawn_ranks: bool = False    # True: points run in one process per rank (launcher)
    # experiments whose stored rows this one's report also reads (a view of another run's data,
    # e.g. a breakdown figure of the training runs of a table); its own rows are read too
    derives_from: tuple[str, ...] = ()
    # the parameters that set a point's size (cost_size): harness.estimate estimates a point from
    # stored points that differ from it in these alone (and, with cost_per_rank, in rank count)
    cost_scales: tuple[str, ...] = ("scale",)
    cost_per_rank: bool = False

    # --- configuration -----------------------------------------------------------
    def default_scale(self, cfg: "RunConfig") -> float:
        return 1.0

    def scale(self, cfg: "RunConfig") -> float:
        return cfg.scale if cfg.scale is not None else self.default_scale(cfg)

    def param(self, cfg: "RunConfig", name: str):
        spec = self.parameters[name]
        raw = cfg.params.get(name)
        return spec.default if raw is None else spec.parse(raw)

    def validate_params(self, cfg: "RunConfig") -> None:
        for name in cfg.params:
            if name in self.parameters:
                self.parameters[name].parse(cfg.params[name])

    # --- grid and measurement ----------------------------------------------------
    def points(self, cfg: "RunConfig") -> Iterable[Point]:
        raise NotImplementedError

    def skip_reason(self, point: Point, cfg: "RunConfig") -> str | None:
        """A reason beyond the implementation's needs why this point cannot run here."""
        return None

    def run_point(self, point: Point, cfg: "RunConfig") -> list[Measurement]:
        raise NotImplementedError

    # --- time budget (harness.plan) ----------------------------------------------
    def cheaper(self, point: Point, level: int, cfg: "RunConfig") -> Cheaper | None:
        """``point`` measured at budget level ``level`` (1: a little cheaper; higher: cheaper still),
        or None past the experiment's cheapest level. A run under ``--time-budget`` fills its table
        at the levels that fit, then measures again at full fidelity while time remains; rows
        measured at a level carry ``fidelity``. Default: one level, a single timed repeat."""
        if level == 1 and (cfg.repeats is None or cfg.repeats > 1):
            return Cheaper(point, "1 timed repeat", {"repeats": 1})
        return None

    def cost_size(self, point: Point, cfg: "RunConfig") -> float | None:
        """A number the point's time grows with (linearly, plus a fixed part), for estimating it
        from the same point stored at another size. Default: the product of its ``cost_scales``
        values, divided by its rank count where ``cost_per_rank``."""
        size = 1.0
        for name in self.cost_scales:
            value = point.params.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                size *= float(value)
        return size / point.world_size if self.cost_per_rank else size

    def memory_need(self, point: Point, cfg: "RunConfig") -> dict[str, float] | None:
        """Bytes ``point`` needs, where the experiment can tell without running it: {"gpu": per
        GPU, "host": in host memory} (either may be absent); None where it cannot tell."""
        return None

    # --- reporting ---------------------------------------------------------------
    def report(self, rows: "pd.DataFrame", runs: list["RunInfo"]) -> "ReportArtifact":
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<Experiment {self.id}>"
