"""The experiment contract: one module per paper artifact, discovered from a registry.

An experiment declares its parameters, the implementations it compares, the points
of its grid, how one point is measured, the paper's own numbers, and how rows
become the paper's table and figure. The runner does the rest (skips, rows,
progress, launching ranks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from .argtypes import BadValue
from .timing import Stats
from .worlds import Worlds, world_sizes

if TYPE_CHECKING:
    import pandas as pd

    from .artifact import ReportArtifact, RunInfo
    from .config import RunConfig
    from .launcher import RankContext


@dataclass(frozen=True)
class Param:
    """A tunable of an experiment, settable with ``--param name=value``."""

    default: Any
    parse: Callable[[str], Any]
    help: str


def parse_param(spec: Param, name: str, raw: str):
    """``--param name=raw`` parsed; a parser's ValueError (e.g. ``float('x')``) is one clear error."""
    try:
        return spec.parse(raw)
    except (ValueError, TypeError) as exc:
        raise BadValue(f"--param {name}={raw}: {exc}") from None


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


@dataclass
class RunContext:
    """What a point runs with: the run's configuration, this process's rank (None for an
    experiment whose points run in the runner's process) and a cache that lives as long as this
    process runs the experiment's points (a launch of ranks, or the runner's loop): what one
    point builds and a later one reuses (a loaded graph, a placement) is kept there, never in a
    module's globals."""

    cfg: "RunConfig"
    rank: "RankContext | None" = None
    cache: dict = field(default_factory=dict)

    def cached(self, key: tuple, build: Callable[[], Any], *, replaces: tuple[str, ...] = ()):
        """``cache[key]`` (``key[0]`` names its kind), built by ``build()`` the first time.
        Building drops the entries of the kinds in ``replaces`` first, closing those that have a
        ``close``: one large object at a time (a graph of gigabytes, and what was built on it)."""
        if key not in self.cache:
            for old in [k for k in self.cache if k[0] in replaces]:
                close = getattr(self.cache.pop(old), "close", None)
                if callable(close):
                    close()
            self.cache[key] = build()
        return self.cache[key]


def module_id(module: str) -> str | None:
    """'experiments.wholegraph.table1' -> 'wholegraph.table1': the id of the experiment that
    module ``experiments/<paper>/<artifact>.py`` defines (None for a module elsewhere)."""
    parts = module.split(".")
    return ".".join(parts[1:]) if len(parts) == 3 and parts[0] == "experiments" else None


class Experiment:
    """Base class. Subclasses set the class attributes and implement the hooks.

    One experiment per module ``experiments/<paper>/<artifact>.py``: its id is
    ``"<paper>.<artifact>"``, set from the module path when it is registered (an experiment
    defined elsewhere, e.g. in a test, names its ``id``); ``paper`` and ``artifact`` are the id's
    two parts.
    """

    id: str = ""
    title: str = ""
    interface: str = ""          # the impls/ interface whose implementations are compared
    impls: tuple[str, ...] = ()
    metric: str = ""             # primary metric (rows of skipped points carry it)
    unit: str = ""
    better: str = "lower"
    # one line for the paper's page: what differs from the paper's setup (default: its hardware
    # beside the machines of the committed runs)
    differs_from_paper: str = ""
    # one line for the report caption: what a timed repeat finds warm and what it reads cold
    # (docs/measurement.md: what a fair repeat is)
    warm_and_cold: str = ""
    parameters: dict[str, Param] = {}
    paper_values: tuple[PaperValue, ...] = ()
    spawn_ranks: bool = False    # True: points run in one process per rank (launcher)
    worlds: Worlds = Worlds()    # the rank counts its points can use (harness.worlds)
    # experiments whose stored rows this one's report also reads (a view of another run's data,
    # e.g. a breakdown figure of the training runs of a table); its own rows are read too
    derives_from: tuple[str, ...] = ()
    # the parameters that set a point's size (cost_size): harness.estimate estimates a point from
    # stored points that differ from it in these alone (and, with cost_per_rank, in rank count)
    cost_scales: tuple[str, ...] = ("scale",)
    cost_per_rank: bool = False

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def artifact(self) -> str:
        return self.id.split(".", 1)[-1]

    @property
    def paper_hardware(self) -> str:
        """The paper's machine: its package's ``PAPER_HARDWARE`` (experiments/<paper>/__init__.py),
        unless the experiment names another (an artifact the paper measured elsewhere)."""
        import importlib

        try:
            return getattr(importlib.import_module(f"experiments.{self.paper}"), "PAPER_HARDWARE", "")
        except ImportError:
            return ""

    # --- configuration -----------------------------------------------------------
    def scale(self, cfg: "RunConfig", dataset: str | None = None) -> float:
        """The size of ``dataset`` (or of the experiment's own sizes, for None) relative to the
        paper's: ``--scale`` when given, else :meth:`default_scale`. The runner records it per
        dataset in the manifest."""
        return cfg.scale if cfg.scale is not None else self.default_scale(cfg, dataset)

    def default_scale(self, cfg: "RunConfig", dataset: str | None = None) -> float:
        return 1.0

    def world_sizes(self, cfg: "RunConfig") -> list[int]:
        """The rank counts of this run's points (``worlds``, harness.worlds)."""
        return world_sizes(cfg, self.worlds, self.id)

    def param(self, cfg: "RunConfig", name: str):
        spec = self.parameters[name]
        raw = cfg.params.get(name)
        return spec.default if raw is None else parse_param(spec, name, raw)

    def validate_params(self, cfg: "RunConfig") -> None:
        for name in cfg.params:
            if name in self.parameters:
                parse_param(self.parameters[name], name, cfg.params[name])

    # --- grid and measurement ----------------------------------------------------
    def points(self, cfg: "RunConfig") -> Iterable[Point]:
        raise NotImplementedError

    def skip_reason(self, point: Point, cfg: "RunConfig") -> str | None:
        """A reason beyond the implementation's needs why this point cannot run here."""
        return None

    def on_ranks(self, point: Point) -> bool:
        """True when the runner runs ``point`` on ranks it launches (one process per rank, the
        point's ``world_size`` of them), False when it runs it in its own process."""
        return self.spawn_ranks

    def rank_env(self, point: Point, cfg: "RunConfig") -> dict[str, str]:
        """Environment variables ``point``'s ranks must have before their process group forms
        (NCCL reads its settings once per process, e.g. ``NCCL_P2P_DISABLE``): the runner launches
        points whose environments differ apart and sets it in each rank; under torchrun, where the
        ranks exist already, a point whose variables the environment lacks is a skipped row."""
        return {}

    def run_point(self, point: Point, ctx: RunContext) -> list[Measurement]:
        """Measure one point: ``ctx.cfg`` is the run's configuration, ``ctx.rank`` this process's
        rank where the experiment runs its points on ranks (``spawn_ranks``), else None."""
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
