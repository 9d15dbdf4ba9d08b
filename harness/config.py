"""Run configuration shared by the CLI, the runner and the experiments."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HarnessError


@dataclass
class RunConfig:
    device: str = "cpu"                     # cpu | cuda
    world_size: int | None = None           # GPUs (cuda) or ranks (cpu); None = experiment default
    scale: float | None = None              # None = the experiment's default for this device
    quick: bool = False                     # fewer points/repeats, small sizes
    warmup: int | None = None
    repeats: int | None = None
    impl_patterns: tuple[str, ...] = ()     # shell patterns on implementation names
    params: dict[str, str] = field(default_factory=dict)  # --param overrides, raw strings
    seed: int = 0
    out_dir: Path = Path("runs")
    label: str | None = None
    timeout_s: float = 3600.0               # the longest a rank may stay in one point (harness.launcher)
    data_root: Path | None = None
    launch_per_point: bool = False          # a fresh launch of ranks for every point
    time_budget_s: float | None = None      # the run ends within this many seconds (harness.plan)
    started_at: float | None = None         # harness.timing.now() the budget counts from (default: the run's start)

    def __post_init__(self):
        if self.device not in ("cpu", "cuda"):
            raise HarnessError(f"--device must be cpu or cuda, not '{self.device}'")
        if self.world_size is not None and self.world_size < 1:
            raise HarnessError("--gpus/--ranks must be >= 1")
        if self.scale is not None and not (0 < self.scale <= 1024):
            raise HarnessError(f"--scale must be in (0, 1024], not {self.scale}")
        if self.repeats is not None and self.repeats < 1:
            raise HarnessError("--repeats must be >= 1")
        if self.warmup is not None and self.warmup < 0:
            raise HarnessError("--warmup must be >= 0")
        if self.time_budget_s is not None and self.time_budget_s <= 0:
            raise HarnessError("--time-budget must be more than 0 s")

    def wants_impl(self, name: str) -> bool:
        return not self.impl_patterns or any(fnmatch.fnmatchcase(name, p) for p in self.impl_patterns)

    def repeats_or(self, default: int, quick: int | None = None) -> int:
        if self.repeats is not None:
            return self.repeats
        return quick if (self.quick and quick is not None) else default

    def warmup_or(self, default: int, quick: int | None = None) -> int:
        if self.warmup is not None:
            return self.warmup
        return quick if (self.quick and quick is not None) else default


def parse_param_assignments(items: list[str]) -> dict[str, str]:
    """``["sizes_gb=8,16", "steps=1000"]`` -> dict; malformed items, and one name given twice (the
    second would silently replace the first: a list takes commas, ``sizes_gb=8,16``), are a clear
    error."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise HarnessError(f"--param takes KEY=VALUE, got '{item}'")
        key = key.strip()
        if key in out:
            raise HarnessError(f"--param {key} is given twice ({key}={out[key]}, {key}={value.strip()}): give it "
                               f"once (a list takes commas: {key}={out[key]},{value.strip()})")
        out[key] = value.strip()
    return out
