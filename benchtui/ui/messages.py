"""Messages from the Trio side to the app.

Trio callbacks run outside Textual's task context, so they never touch screens directly: they
post one of these, and the app handles it in its own task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import outcome
from textual.message import Message
from textual.notifications import SeverityLevel


@dataclass
class CampaignDone(Message):
    """The guest Trio run ended: `result` holds engine.run's return value or its exception."""

    result: outcome.Outcome[Any]


@dataclass
class Toast(Message):
    """A short notification for the user."""

    text: str
    severity: SeverityLevel = "information"


@dataclass
class RedrawNow(Message):
    """A change the user waits for (their own key's effect): redraw now, not at the next tick."""


@dataclass
class TerminalLost(Message):
    """The terminal is gone (a write to it failed, or it says it hung up): `why`, for the log."""

    why: str
