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
    """A rank failed, timed out, or the process group could not be formed."""

    exit_code = 3
