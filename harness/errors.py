"""Errors the CLI reports as one clear line (no traceback)."""


class HarnessError(Exception):
    """A user-facing error: bad input, an impossible size, a missing dataset.

    The CLI prints ``error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 2

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class SkipPoint(Exception):
    """Raised by an implementation or experiment when a point cannot run here.

    The runner records it as a ``skipped`` row carrying the message as reason.
    """


class LaunchError(HarnessError):
    """A rank failed, timed out, or the process group could not be formed.

    ``culprit``: who ended the launch ("rank 1 died (SIGKILL)", "rank 1 was still in point ... after
    60 s"); ``rank``: that rank; ``activities``: what each rank last said it was doing
    (``RankContext.set_activity``); ``hung``: the ranks that overran ``--timeout``, busy ones first.
    """

    exit_code = 3

    def __init__(self, message: str, *, culprit: str | None = None, rank: int | None = None,
                 activities: dict[int, str] | None = None, hung: list[int] | None = None):
        super().__init__(message)
        self.culprit = culprit
        self.rank = rank
        self.activities = dict(activities or {})
        self.hung = list(hung or [])


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``): a run ends as at Ctrl-C (rows kept, ranks stopped), and the CLI exits 143
    (128 + SIGTERM), as a process that SIGTERM ends does; Ctrl-C exits 130."""

    exit_code = 143


class StoreError(HarnessError):
    """A run directory could not be written (a full disk, a read-only folder): the run stops, its
    manifest ends final where anything can still be written, and the message says what was lost."""
