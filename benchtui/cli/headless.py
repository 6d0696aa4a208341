"""The headless front end: a line per session start/end, a final per-model table.

Ctrl-C (or SIGTERM) once: stop launching, let running sessions finish. Twice: interrupt them.
Either way the state is saved and `--resume` continues. When stdin is a terminal, the keys
`p` (pause launching), `r` (resume) and `q` (stop launching) work too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import termios
import tty
from collections.abc import Callable
from typing import TextIO

import trio

from benchtui.core.errors import BenchtuiError, first_error
from benchtui.core.money import fmt
from benchtui.core.signals import first_stop_note
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.engine.scheduler import Scheduler


class LinePrinter:
    """Turns events into log-friendly lines (the same text as the TUI's event pane)."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.accounts: ev.AccountsCommitted | None = None
        self.ended: ev.CampaignEnded | None = None
        self.broken = False
        self.on_broken: Callable[[], None] = lambda: None
        """Called once if the output goes away (`| head`, a terminal that hung up): the headless
        run then stops launching."""

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.AccountsCommitted):
            self.accounts = event
            return
        if isinstance(event, ev.CampaignEnded):
            self.ended = event
        if isinstance(event, ev.CampaignStarted):
            for warning in event.warnings:
                self.write(f"note: {warning}")
        line = ev.describe(event)
        if line:
            self.write(line)

    def write(self, line: str) -> None:
        if self.broken:
            return
        try:
            print(line, file=self.out, flush=True)
        except OSError as exc:  # EPIPE: `| head` went away; EIO: the terminal hung up
            if exc.errno not in (errno.EPIPE, errno.EIO):
                raise
            self.broken = True
            with contextlib.suppress(AttributeError, OSError, ValueError):  # quiet at exit, too
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())
            self.on_broken()

    def table(self) -> str:
        return summary_table(self.accounts) if self.accounts else ""


TABLE_WIDTH = 80
"""The per-model table fits a terminal this wide (the model column gives way, a cut name ends in …)."""
NAME_WIDTH = 27
"""The model column's width at least (the table is 80 columns with it), wider for longer names where the terminal leaves room."""
COUNTS_WIDTH = 31
"""Its count columns after the model's (done, skip, error, killed, certs), with their spaces."""


def summary_table(acc: ev.AccountsCommitted, width: int = TABLE_WIDTH) -> str:
    """The per-model table (the run's closing lines, `ctl status`), never wider than `width`."""
    amounts = [
        acc.spent_usd,
        acc.budget_usd,
        acc.wasted_usd,
        *(a for m in acc.models for a in (m.spent_usd, m.cap_usd)),
    ]
    money_w = max(10, *(len(fmt(a)) for a in amounts))
    longest = max([NAME_WIDTH, *(len(m.name) for m in acc.models)])
    name_w = max(len("model"), min(longest, width - COUNTS_WIDTH - 2 * (money_w + 1)))

    def name(text: str) -> str:
        return text if len(text) <= name_w else text[: name_w - 1] + "…"

    head = (
        f"{'model':<{name_w}} {'done':>5} {'skip':>5} {'error':>5} {'killed':>6} {'certs':>5} "
        f"{'spent':>{money_w}} {'cap':>{money_w}}"
    )
    rows = [head, "-" * len(head)]
    for m in acc.models:
        rows.append(
            f"{name(m.name):<{name_w}} {m.done:>5} {m.skipped:>5} {m.errors:>5} {m.killed:>6} "
            f"{m.certificates:>5} {fmt(m.spent_usd):>{money_w}} {fmt(m.cap_usd):>{money_w}}"
        )
    rows.append(
        f"{'total':<{name_w}} {'':>5} {'':>5} {'':>5} {'':>6} {'':>5} {fmt(acc.spent_usd):>{money_w}} "
        f"{fmt(acc.budget_usd):>{money_w}}"
    )
    # Of the spent, what attempts that were interrupted or failed spent (retried on --resume).
    rows.append(
        f"{'wasted':<{name_w}} {'':>5} {'':>5} {'':>5} {'':>6} {'':>5} {fmt(acc.wasted_usd):>{money_w}}"
    )
    return "\n".join(rows)


async def _watch_signals(scheduler: Scheduler, printer: LinePrinter) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        count = 0
        async for signum in signals:
            count += 1
            if count == 1:
                printer.write(first_stop_note(signum))
                scheduler.stop()
            else:
                printer.write("interrupting running sessions (they are retried on --resume)")
                scheduler.stop(now=True)


def keys_available(fd: int = 0) -> bool:
    """Is `fd` a terminal whose foreground we own? (Else reading keys would stop the process.)"""
    try:
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False


async def _watch_keys(scheduler: Scheduler, printer: LinePrinter, fd: int = 0) -> None:
    """`p` / `r` / `q` on the terminal: cbreak mode (keys arrive one by one, Ctrl-C stays a signal)."""
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    try:
        printer.write("keys: p pause launching, r resume, q stop launching (running sessions finish)")
        while True:
            # Wait, then read: the fd stays blocking (it is shared with stdout on a terminal).
            await trio.lowlevel.wait_readable(fd)
            data = os.read(fd, 64)
            if not data:
                return
            for key in data.decode(errors="ignore").lower():
                if key == "p":
                    scheduler.pause()
                elif key == "r":
                    scheduler.resume()
                elif key == "q" and not scheduler.stopping:
                    printer.write("stopping: no new sessions; running ones finish")
                    scheduler.stop()
    finally:
        with contextlib.suppress(termios.error):  # a terminal that hung up has nothing to restore
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


async def main(prep: engine.PreparedRun, printer: LinePrinter, keys: bool = False) -> ev.CampaignEnded:
    """Run the campaign headless, to its end. `keys`: read p/r/q from stdin."""
    bus = ev.EventBus()
    bus.subscribe(printer)
    try:
        async with engine.open_run(prep, bus) as run, trio.open_nursery() as front:
            printer.on_broken = run.scheduler.stop
            front.start_soon(_watch_signals, run.scheduler, printer)
            if keys:
                front.start_soon(_watch_keys, run.scheduler, printer)
            await run.until_done()
            front.cancel_scope.cancel()
    except* BenchtuiError as group:
        raise first_error(group) from None
    assert printer.ended is not None
    return printer.ended
