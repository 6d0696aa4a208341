"""Errors that end the program with a one-line message and a contract exit code."""

from __future__ import annotations


class BenchtuiError(Exception):
    """Base: `str(exc)` is the one line shown to the user."""

    exit_code = 1


class BadInput(BenchtuiError):
    """The user's input is wrong; nothing was written."""

    exit_code = 2


class Problems(BadInput):
    """Several problems found at once (a start's preflight): each is shown on its own line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


class RunDirBusy(BenchtuiError):
    """Another benchtui holds the run dir."""

    exit_code = 3


class StorageFailed(BenchtuiError):
    """Persisting state failed (disk full, I/O error); the last committed state is intact."""

    exit_code = 1


class Interrupted(BaseException):
    """A stop signal arrived before the campaign loop ran (a BaseException, like KeyboardInterrupt,
    so that no `except Exception` takes it for an error to handle)."""


def first_error(group: BaseExceptionGroup) -> BaseException:
    """The first leaf of a (nested) exception group: Trio nurseries wrap what tasks raise."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def one_line(message: str, limit: int = 1000) -> str:
    """A message that may quote user input, as one printable line of bounded length."""
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    return line if len(line) <= limit else line[: limit - 1] + "…"
