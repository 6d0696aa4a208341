"""The circuit breaker: a model whose sessions keep failing the same way gets no more launches.

When a provider is down, refuses the key or has no such host, every further session of its model
would fail the same way and cost requests, retries and time (measured before: 180 s and 150
requests to learn nothing listens). After `TRIP_AFTER` sessions of one model in a row ended in an
infrastructure error of the same kind, the scheduler launches none of its sessions in this run:
they stay pending, and `--resume` runs them once the cause is fixed. Other models go on.

The kind is read from the end record's reason (runners word their errors; the engine knows no
provider library), so only errors that name their cause trip it; anything else resets the streak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchtui.engine.records import JournalRecord

TRIP_AFTER = 3
"""Sessions in a row with the same kind of infrastructure error (a small count: each costs)."""

# (kind, pattern), first match wins: DNS before "connection", as a DNS failure is also one.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
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


class Breaker:
    """Per model, the kind of the last session ends in a row; `tripped` once a streak is long."""

    def __init__(self, trip_after: int = TRIP_AFTER) -> None:
        self.trip_after = trip_after
        self.streaks: dict[str, Streak] = {}
        self.tripped: dict[str, str] = {}
        """Model -> the kind that tripped it (no more launches of its sessions in this run)."""

    def ended(self, record: JournalRecord) -> str | None:
        """Count one session end; returns the kind when this end trips the model's breaker."""
        if record.state == "skipped_budget" or record.model in self.tripped:
            return None
        kind = infra_kind(record)
        streak = self.streaks.setdefault(record.model, Streak())
        if kind is None or kind != streak.kind:
            streak.kind, streak.count = kind, 0
        if kind is None:
            return None
        streak.count += 1
        if streak.count < self.trip_after:
            return None
        self.tripped[record.model] = kind
        return kind
