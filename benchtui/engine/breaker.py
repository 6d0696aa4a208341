"""The circuit breaker: a model whose sessions keep failing the same way gets no more launches.

When a provider is down, refuses the key or has no such host, every further session of its model
would fail the same way and cost requests, retries and time (measured before: 180 s and 150
requests to learn nothing listens). After `TRIP_AFTER` sessions of one model in a row ended in an
infrastructure error of the same kind, the scheduler launches none of its sessions in this run:
they stay pending, and `--resume` runs them once the cause is fixed. Other models go on.

The kind is read from the end record's reason (runners word their errors; the engine knows no
provider library), so only errors that name their cause trip it; anything else resets the streak.

A model that cannot act is stopped the same way: after the campaign's
`stop_model_after_no_action` sessions of one model in a row ended without a single executed
action (every answer without a tool call, empty, or over its context window: core/endings.py),
its money would only buy more of the same. Those are the model's outcomes (final, trials), so the
sessions that ended stay as they are; its later sessions stay pending for `--resume` after the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchtui.core.endings import CAUSE_WORDS, MEANING, SERVER_FIX, SERVER_WITHOUT_TOOLS, Cause, Ending, fix
from benchtui.engine.records import JournalRecord

TRIP_AFTER = 3
"""Sessions in a row with the same kind of infrastructure error (a small count: each costs)."""
NO_ACTION_AFTER = 3
"""The default of the campaign's `stop_model_after_no_action`."""

# (kind, pattern), first match wins: DNS before "connection", as a DNS failure is also one.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (  # first: litellm words a refusal before sending as a server error ("InternalServerError")
        "the client refused to send the call (a key or the model name, not the server)",
        re.compile(r"the client refused to send the call"),
    ),
    # Before "5xx": llama.cpp refuses tools without --jinja with a 500.
    (f"{CAUSE_WORDS['server']} (it refused the bash tool); fix: {SERVER_FIX}", SERVER_WITHOUT_TOOLS),
    (
        "DNS: the host name does not resolve",
        re.compile(
            r"name or service not known|nodename nor servname|temporary failure in name resolution"
            r"|no address associated with hostname|getaddrinfo failed|name resolution|\bdns\b",
            re.I,
        ),
    ),
    (
        "connection refused",
        re.compile(r"connection refused|econnrefused|errno 111\b|all connection attempts failed", re.I),
    ),
    (
        "cannot connect",  # a connection error whose cause was not named
        re.compile(r"APIConnectionError|connection error|connecterror|connection reset", re.I),
    ),
    (
        "the key is refused (401/403)",
        re.compile(
            r"authenticationerror|permissiondeniederror|\b40[13]\b|unauthori[sz]ed|forbidden"
            r"|invalid[ _]api[ _]key|incorrect api key",
            re.I,
        ),
    ),
    (
        "the server fails (5xx after retries)",
        re.compile(
            r"internalservererror|serviceunavailable|badgateway|gatewaytimeout|\b5\d\d\b"
            r"|server error|overloaded",
            re.I,
        ),
    ),
    ("the API key variable is not set", re.compile(r"API key variable \S+ is not set")),
    ("the agent CLI cannot start", re.compile(r"agent CLI .* not found|cannot start the agent", re.I)),
)


def infra_kind(record: JournalRecord) -> str | None:
    """The kind of infrastructure error a session ended in, when its reason names one."""
    if record.state != "error" or not record.retryable:
        return None
    return next((kind for kind, pattern in KINDS if pattern.search(record.reason)), None)


@dataclass
class Streak:
    kind: str | None = None
    count: int = 0


@dataclass(frozen=True, slots=True)
class Trip:
    """Why a model's launches stopped."""

    kind: str
    """The infrastructure error's kind, or the ending of the sessions that could not act."""
    no_action: bool = False
    obstacle: Cause | None = None
    """For a model that could not act: what stood in the way, as its runner found out (the last
    session's ending says; None: not known)."""

    def cause(self, sessions: int, action_format: str | None) -> str:
        """`3 sessions in a row ended …`, with the fix when the model could not act."""
        if not self.no_action:
            return f"{sessions} sessions in a row ended in the same infrastructure error ({self.kind}"
        ending: Ending = self.kind  # type: ignore[assignment]  # a no-action trip's kind is its ending
        why = f"; {CAUSE_WORDS[self.obstacle]}" if self.obstacle is not None else ""
        return (
            f"{sessions} sessions in a row ended without executing any action ({ending}: {MEANING[ending]}{why}); "
            f"fix: {fix(ending, action_format, self.obstacle)}"
        )


class Breaker:
    """Per model, the kind of the last session ends in a row; `tripped` once a streak is long."""

    def __init__(self, trip_after: int = TRIP_AFTER, no_action_after: int = NO_ACTION_AFTER) -> None:
        self.trip_after = trip_after
        self.no_action_after = no_action_after
        """Sessions in a row that could not act before the model is stopped (0: never)."""
        self.streaks: dict[str, Streak] = {}
        self.idle: dict[str, Streak] = {}
        """Per model, its sessions in a row that ended without an executed action."""
        self.tripped: dict[str, Trip] = {}
        """Model -> why it tripped (no more launches of its sessions in this run)."""

    def ended(self, record: JournalRecord) -> Trip | None:
        """Count one session end; returns the trip when this end trips the model's breaker."""
        if record.state == "skipped_budget" or record.model in self.tripped:
            return None
        trip = self._could_not_act(record)
        if trip is None:
            trip = self._infra(record)
        if trip is not None:
            self.tripped[record.model] = trip
        return trip

    def _infra(self, record: JournalRecord) -> Trip | None:
        kind = infra_kind(record)
        streak = self.streaks.setdefault(record.model, Streak())
        if kind is None or kind != streak.kind:
            streak.kind, streak.count = kind, 0
        if kind is None:
            return None
        streak.count += 1
        return Trip(kind) if streak.count >= self.trip_after else None

    def _could_not_act(self, record: JournalRecord) -> Trip | None:
        """A session that could not act adds to its model's streak; one that acted, or ended
        otherwise by the model's doing, ends it (an infrastructure error says nothing of it)."""
        if not self.no_action_after or (record.state == "error" and record.retryable):
            return None
        streak = self.idle.setdefault(record.model, Streak())
        ending = record.ending
        if ending is None or not ending.could_not_act:
            streak.kind, streak.count = None, 0
            return None
        streak.kind, streak.count = ending.name, streak.count + 1
        if streak.count < self.no_action_after:
            return None
        return Trip(ending.name, no_action=True, obstacle=ending.cause)
