"""Progress for long runs: a live bar on a terminal, one line per finished point always, with the
time the point took and an estimate of the time the run has left."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .estimate import fmt_duration

if TYPE_CHECKING:
    from .budget import Budget


@dataclass
class Eta:
    """The run's points by plan index: their estimates (harness.estimate) and, once finished, the
    seconds they took. Picklable, so a launch of ranks carries a copy and continues the count."""

    total: int
    estimates: dict[int, float | None] = field(default_factory=dict)   # every point that will run
    finished: dict[int, float | None] = field(default_factory=dict)    # None: took no time / unknown
    budget: "Budget | None" = None          # the run's time budget, if it has one
    tag: str = ""                           # "refine ": lines of a budget run's refinement

    @property
    def done(self) -> int:
        return len(self.finished)

    def finish(self, index: int, seconds: float | None) -> None:
        self.finished[index] = seconds

    def left(self) -> tuple[float, int]:
        """Seconds left and how many pending points that guess leaves out (no estimate, and no
        finished point yet to take an average from). The pending points' estimates are corrected by
        how long the finished points took against theirs."""
        pairs = [(self.estimates[i], s) for i, s in self.finished.items()
                 if s is not None and self.estimates.get(i)]
        ratio = 1.0
        if pairs:
            ratio = min(5.0, max(0.2, sum(s for _, s in pairs) / sum(e for e, _ in pairs)))
        took = [s for i, s in self.finished.items() if s is not None and i in self.estimates]
        mean = sum(took) / len(took) if took else None
        pending = [self.estimates[i] for i in self.estimates if i not in self.finished]
        seconds = sum(e * ratio for e in pending if e is not None)
        unknown = sum(e is None for e in pending)
        if unknown and mean is not None:
            seconds += unknown * mean
            unknown = 0
        return seconds, unknown

    def text(self) -> str:
        """The time the run has left, as one consistent phrase: under a budget that the pending
        points would outlast, the budget's end comes first and the points' estimate second."""
        seconds, unknown = self.left()
        if not any(i not in self.finished for i in self.estimates):
            return ""
        pending = f"about {fmt_duration(seconds)}" if not unknown or seconds else ""
        if unknown:
            pending += (" + " if pending else "") + f"{unknown} point{'s' if unknown > 1 else ''} of unknown length"
        if self.budget is not None and seconds > self.budget.left():
            return f"budget ends in {fmt_duration(self.budget.left())}, before the points left could all run ({pending})"
        out = pending.replace(f"about {fmt_duration(seconds)}", f"about {fmt_duration(seconds)} left", 1)
        if self.budget is not None:
            out += f"; budget ends in {fmt_duration(self.budget.left())}"
        return out


class PointProgress:
    def __init__(self, title: str, total: int | Eta, enabled: bool = True):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.eta = total if isinstance(total, Eta) else Eta(total)
        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self._live = enabled and sys.stderr.isatty()
        self._progress = None
        self.title = title
        self._auto = 0                      # indices for callers that pass none
        if self._live:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=self.console, transient=True)
            self._task = self._progress.add_task(title, total=self.eta.total, completed=self.eta.done)
            self._progress.start()

    @property
    def total(self) -> int:
        return self.eta.total

    @property
    def done(self) -> int:
        return self.eta.done

    def start_point(self, label: str) -> None:
        if self._progress is not None:
            left = self.eta.text()
            self._progress.update(self._task, description=f"{self.title}: {label}" + (f" ({left})" if left else ""))

    def finish_point(self, label: str, outcome: str, index: int | None = None,
                     seconds: float | None = None) -> None:
        if index is None:
            index = -1 - self._auto
            self._auto += 1
        self.eta.finish(index, seconds)
        timing = [f"took {fmt_duration(seconds)}"] if seconds is not None else []
        left = self.eta.text()
        if left:
            timing.append(left)
        suffix = f" ({'; '.join(timing)})" if timing else ""
        self.console.print(f"[{self.eta.tag}{self.eta.done}/{self.eta.total}] {self.title} {label}: {outcome}{suffix}",
                           markup=False)
        if self._progress is not None:
            self._progress.advance(self._task)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
