"""A run's time budget (``--time-budget``): how long the run may take, the part of it kept for what
follows the last point (stopping ranks, the rows' last rewrite, the report), and the clock it is
measured on, in one object that the runner, the ranks and the progress lines share.

The clock is the timing engine's (``harness.timing.now``) and injectable (``CLOCK``, or
``Budget(clock=...)``), so that budget behaviour is tested on a clock the test advances, never on
the wall clock. Only on the real clock does the budget also stop a point in flight (``alarm``); on
any clock the runner starts no point once it has ended.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from . import timing
from .estimate import fmt_duration

CLOCK: Callable[[], float] = timing.now        # the clock budgets are read on (tests replace it)

REPORT_S_PER_ARTIFACT = 3.0                    # reserve per artifact the report writes


def reserve_for(total_s: float, artifacts: int = 1) -> float:
    """Seconds of a budget kept for the end of the run: stopping ranks and writing rows (8 s, or
    8% of long budgets, at most 60 s) plus each artifact of the report, never more than half the
    budget."""
    base = min(60.0, max(8.0, 0.08 * total_s))
    return min(0.5 * total_s, base + REPORT_S_PER_ARTIFACT * max(1, artifacts))


def command_start() -> float:
    """When this command began, on the budget's clock: on the real clock the process's own start
    (the interpreter's start-up and imports are part of what the user waits for), else now."""
    return timing.process_start() if CLOCK is timing.now else CLOCK()


class BudgetEnded(KeyboardInterrupt):
    """The time budget ended: raised in the main thread wherever it is (a point in this process,
    the wait for a launch of ranks, which then stops its ranks), so the run stops as at Ctrl-C."""


@dataclass
class Budget:
    """``total_s`` from ``start`` on ``clock``; points may run until ``points_end``, the rest is
    the reserve. Picklable (ranks read it) where its clock is."""

    total_s: float
    start: float
    reserve_s: float
    clock: Callable[[], float] = field(default=CLOCK, repr=False)
    text: str = ""                           # the budget as said to the user ("2 min 00 s")

    @classmethod
    def begin(cls, total_s: float, artifacts: int = 1, start: float | None = None,
              clock: Callable[[], float] | None = None) -> "Budget":
        clock = clock or CLOCK
        return cls(total_s, clock() if start is None else start, reserve_for(total_s, artifacts), clock,
                   fmt_duration(total_s))

    @property
    def points_end(self) -> float:
        return self.start + self.total_s - self.reserve_s

    @property
    def end(self) -> float:
        return self.start + self.total_s

    def left(self) -> float:
        """Seconds left for points (0 once they are over)."""
        return max(0.0, self.points_end - self.clock())

    def ended(self) -> bool:
        return self.clock() >= self.points_end

    def over(self) -> bool:
        """The whole budget is spent, reserve included (the report is then left unwritten)."""
        return self.clock() >= self.end

    def took(self) -> float:
        return self.clock() - self.start

    @property
    def unreached_reason(self) -> str:
        return f"not measured: the time budget ({self.text}) ended before this point"

    @contextmanager
    def alarm(self):
        """While entered, BudgetEnded is raised in the main thread when the points' time is over:
        on the real clock only (an injected clock has no alarm; the runner checks it between
        points), and only in the main thread (elsewhere the runner stops between points only)."""
        if self.clock is not timing.now or not timing.clock_is_real() \
                or threading.current_thread() is not threading.main_thread():
            yield self
            return
        armed = True

        def fire(signum, frame):
            nonlocal armed
            if armed:
                armed = False
                raise BudgetEnded()

        previous = signal.signal(signal.SIGALRM, fire)
        signal.setitimer(signal.ITIMER_REAL, max(0.001, self.points_end - self.clock()))
        try:
            yield self
        finally:
            armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


@dataclass
class Stop:
    """When a group of points stops starting new ones: once the budget has ended, or once its
    share of the budget (``until``, on the budget's clock) is spent; the first point of a group
    always starts while the budget lasts, so every group makes progress. Picklable (ranks read it)."""

    budget: Budget | None = None
    until: float | None = None

    def now(self) -> float:
        """The clock points are timed on: the budget's (so that its decisions use the times it
        measures), else the timing engine's."""
        return self.budget.clock() if self.budget is not None else timing.now()

    def due(self, first: bool) -> bool:
        if self.budget is None:
            return False
        if self.budget.ended():
            return True
        return not first and self.until is not None and self.budget.clock() >= self.until
