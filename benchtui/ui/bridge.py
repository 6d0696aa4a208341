"""Trio as a guest on Textual's asyncio loop (docs/design/decisions.md#trio-guest).

Both loops share one thread: Trio code may touch the view model directly, while the asyncio
side reaches Trio only through `TrioToken.run_sync_soon` (Trio's run state is only current
inside a Trio tick). `app.call_from_thread` does not work here: there is no second thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import outcome
import trio


class TrioGuest:
    """One guest Trio run: start it, send it calls, stop it, wait for it to end."""

    def __init__(self) -> None:
        self.token: trio.lowlevel.TrioToken | None = None
        self.outcome: outcome.Outcome[Any] | None = None
        self._root: trio.CancelScope | None = None
        self._done: asyncio.Future[outcome.Outcome[Any]] | None = None
        self._on_done: Callable[[outcome.Outcome[Any]], None] = lambda result: None

    @property
    def running(self) -> bool:
        return self._done is not None and not self._done.done()

    def start(
        self, main: Callable[[], Awaitable[Any]], on_done: Callable[[outcome.Outcome[Any]], None]
    ) -> None:
        """Start `main` as a guest on the running asyncio loop; `on_done(outcome)` when it ends."""
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self._on_done = on_done

        async def root() -> Any:
            self.token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as self._root:
                return await main()

        trio.lowlevel.start_guest_run(
            root,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            done_callback=self._finished,
            host_uses_signal_set_wakeup_fd=True,
        )

    def _finished(self, result: outcome.Outcome[Any]) -> None:
        self.outcome = result
        if self._done is not None and not self._done.done():
            self._done.set_result(result)
        self._on_done(result)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` inside the Trio run, soon (no-op once it has ended)."""
        if self.token is not None and self.running:
            with contextlib.suppress(trio.RunFinishedError):
                self.token.run_sync_soon(fn, *args)

    def cancel(self) -> None:
        """Cancel the whole guest run (the last resort: prefer a graceful stop)."""
        if self._root is not None:
            self.call(self._root.cancel)

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run to end; False if `timeout` passed first."""
        if self._done is None:
            return True
        try:
            await asyncio.wait_for(asyncio.shield(self._done), timeout)
        except TimeoutError:
            return False
        return True
