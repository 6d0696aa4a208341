"""The signals that stop a campaign, and what the first one says (the TUI and headless alike)."""

from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Each acts like one Ctrl-C: the first stops launching, the second interrupts running sessions."""


def first_stop_note(signum: int | None = None) -> str:
    """What the first stop says (headless and TUI alike), naming what was used: Ctrl-C for the
    key (or SIGINT), else the signal, so a SIGTERM sent by a supervisor is not told to press a key."""
    if signum is None or signum == signal.SIGINT:
        return "stopping: no new sessions; running ones finish (Ctrl-C again to interrupt them)"
    name = signal.Signals(signum).name
    return f"stopping: no new sessions; running ones finish ({name} received: a second {name} or Ctrl-C interrupts them)"
