"""Progress for long runs: a live bar on a terminal, one line per finished point always."""

from __future__ import annotations

import sys


class PointProgress:
    def __init__(self, title: str, total: int, enabled: bool = True):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True, highlight=False, soft_wrap=True)
        self.total = total
        self.done = 0
        self._live = enabled and sys.stderr.isatty()
        self._progress = None
        if self._live:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=self.console, transient=True)
            self._task = self._progress.add_task(title, total=total)
            self._progress.start()
        self.title = title

    def start_point(self, label: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=f"{self.title}: {label}")

    def finish_point(self, label: str, outcome: str) -> None:
        self.done += 1
        self.console.print(f"[{self.done}/{self.total}] {self.title} {label}: {outcome}",
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
