"""Stop signals: SIGINT, SIGTERM and SIGHUP act like one Ctrl-C from benchtui's first line.

Their default action (SIGTERM, SIGHUP) kills the process mid-start-up, leaving staging folders.
Before the Trio loop runs, a stop signal raises `Interrupted` wherever the program is (it is a
BaseException, like KeyboardInterrupt, so no `except Exception` handles it as an error). Inside
the loop, SIGTERM and SIGHUP call Trio's own SIGINT handler, and once the headless front end
listens, its stop request.

Two CPython quirks shape this: a KeyboardInterrupt that went through some import machinery makes
the interpreter kill itself with SIGINT at exit (rc -2, not 130) even if it was caught later, so
we raise our own exception; and an exception raised inside class creation comes out wrapped as
a RuntimeError ("Error calling __set_name__"), so once a stop signal arrived, any exception counts
as the interruption (`explains`). A third: raised inside a weakref callback or a `__del__` (the
import system's module locks use one), the exception is only printed ("Exception ignored in")
and the program goes on. Such a stop is kept (`sys.unraisablehook`) and acted on at the next
hand-over point: before the Trio loop it is raised there, before the TUI it counts as an early one.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING

from benchtui.core.errors import Interrupted
from benchtui.core.signals import STOP_SIGNALS

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

__all__ = ["STOP_SIGNALS", "StopSignals"]


class StopSignals:
    def __init__(self) -> None:
        self.received = False
        self.early = 0
        """Stop signals that arrived while handed over, before the TUI's own handlers."""
        self.swallowed = False
        """A raised stop that a weakref callback or `__del__` swallowed: not acted on yet."""

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self.handle)
        sys.unraisablehook = self._unraisable(sys.unraisablehook)

    def _unraisable(
        self, hook: Callable[[UnraisableHookArgs], object]
    ) -> Callable[[UnraisableHookArgs], None]:
        def keep_swallowed_stops(unraisable: UnraisableHookArgs) -> None:
            if isinstance(unraisable.exc_value, Interrupted):
                self.swallowed = True
            else:
                hook(unraisable)

        return keep_swallowed_stops

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        handler = signal.getsignal(signal.SIGINT)
        if handler == self.handle or handler is signal.default_int_handler:
            raise Interrupted
        if callable(handler):
            handler(signal.SIGINT, frame)

    @contextlib.contextmanager
    def trio_owns_sigint(self) -> Iterator[None]:
        """Trio installs its own SIGINT handling only over Python's default handler."""
        if self.swallowed:
            self.swallowed = False
            raise Interrupted
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, self.handle)

    def hand_over(self) -> None:
        """The TUI handles keys and signals its own way (its event loop's handlers, once it runs).
        Until then, and after it closed, a stop signal is only counted: the TUI acts on those it
        missed as it starts (`early`), and a late one must not kill the closing lines."""
        if self.swallowed:
            self.swallowed = False
            self.early += 1
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._count)

    def _count(self, signum: int, frame: FrameType | None) -> None:
        self.early += 1

    def ignore_from_now(self) -> None:
        """At exit CPython resets caught signals to their default action (a late SIGINT would end
        the process with -2, replacing the exit code it chose); ignored ones stay ignored."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)

    def explains(self, exc: BaseException) -> bool:
        """Is `exc` how a stop signal surfaced (raised, or wrapped by the code it interrupted, or
        Trio's KeyboardInterrupt inside a nursery's exception group)?"""
        if self.received or isinstance(exc, KeyboardInterrupt | Interrupted):
            return True
        return (
            isinstance(exc, BaseExceptionGroup) and exc.subgroup((KeyboardInterrupt, Interrupted)) is not None
        )
