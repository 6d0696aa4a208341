"""The event stream: the only way engine state reaches the UI, the headless printer and `ctl`.

Listeners are plain callables, called synchronously in the engine's (Trio) thread; they must
return quickly (front ends coalesce and redraw on their own clock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from benchtui.core.endings import NOT_HUNTING
from benchtui.core.money import fmt
from benchtui.core.text import printable
from benchtui.engine.account import ModelAccount
from benchtui.engine.records import JournalRecord, RunState, SessionState, run_state


@dataclass(frozen=True, slots=True, kw_only=True)
class CampaignStarted:
    name: str
    run_dir: str
    runner: str
    parallelism: int
    sessions: int
    remaining: int
    resumed: bool
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStarted:
    session: str
    model: str
    index: int
    task: str | None
    attempt: int
    runner: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionProgress:
    session: str
    note: str = ""
    milestone: bool = False
    """A step worth a line of its own (`Meter.progress`): headless prints it, `ctl status` keeps it."""
    calls: int = 0
    cost_usd: Decimal = Decimal(0)
    counters: tuple[tuple[str, int, int], ...] = ()
    """(counter, used, limit) of each logical budget the campaign sets (`[budget.per_session]`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEnded:
    session: str
    model: str
    index: int
    attempt: int
    state: SessionState  # done | skipped_budget | error | killed
    result: str | None
    reason: str
    cost_usd: Decimal
    retryable: bool = False
    certificate: bool = False
    counters: dict[str, Any] | None = None
    """As on the journal's end line (campaigns with logical budgets)."""
    exhausted: tuple[str, ...] = ()
    ending: str | None = None
    """Why it ended (core/endings.py), as the journal's end line says; None for a skip."""

    @classmethod
    def of(cls, end: JournalRecord) -> SessionEnded:
        return cls(
            session=end.session,
            model=end.model,
            index=end.index,
            attempt=end.attempt,
            state=end.state,
            result=end.result,
            reason=end.reason,
            cost_usd=end.cost_usd,
            retryable=end.retryable,
            certificate=end.certificate,
            counters=end.counters,
            exhausted=end.exhausted,
            ending=end.ending.name if end.ending is not None else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountsCommitted:
    """After each durable commit: what the ledger now says (copies: the ledger's own accounts
    change in place)."""

    budget_usd: Decimal
    spent_usd: Decimal
    reserved_usd: Decimal
    wasted_usd: Decimal
    models: tuple[ModelAccount, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlChanged:
    paused: bool
    stopping: bool
    runner: str
    parallelism: int

    @property
    def state(self) -> RunState:
        return run_state(paused=self.paused, stopping=self.stopping)


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    level: str  # info | warning | error
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CampaignEnded:
    finished: bool
    """True when every session reached a final state."""
    stopped: bool = False
    """Stopped or interrupted by the user (or a signal): resumable."""
    retry: int = 0
    """Not stopped, yet not finished: sessions that ended in infrastructure errors (retried on resume)."""
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionsPlanned:
    """A shortlist campaign's triage committed: its episodes joined the plan (durably)."""

    model: str
    sessions: tuple[tuple[str, int, str | None], ...]
    """(session id, index, task) of each new session, in shortlist order."""


Event = (
    CampaignStarted
    | SessionsPlanned
    | SessionStarted
    | SessionProgress
    | SessionEnded
    | AccountsCommitted
    | ControlChanged
    | Notice
    | CampaignEnded
)
Listener = Callable[[Event], None]


def describe(event: Event) -> str | None:
    """The one line headless prints and the TUI's event pane shows (None: not worth a line)."""
    match event:
        case CampaignStarted():
            verb = "resuming" if event.resumed else "starting"
            return (
                f"{verb} campaign {event.name}: {event.remaining} of {event.sessions} sessions to run, "
                f"runner {event.runner}, parallelism {event.parallelism}, run dir {event.run_dir}"
            )
        case SessionsPlanned():
            return f"plan  {len(event.sessions)} episodes of {event.model} (its shortlist)"
        case SessionStarted():
            return f"start {event.session} (attempt {event.attempt}, runner {event.runner})"
        case SessionProgress() if event.milestone and event.note:
            return f"      {event.session} {printable(event.note)}"
        case SessionEnded():
            what = f"done {event.result}" if event.state == "done" else event.state
            ending = f" ({event.ending})" if event.ending else ""
            shown = event.reason and (event.state != "done" or event.ending in NOT_HUNTING)
            why = f" - {printable(event.reason)}" if shown else ""
            return f"end   {event.session} {what}{ending} {fmt(event.cost_usd)}{why}"
        case Notice():
            return f"{event.level}: {printable(event.message)}"
        case ControlChanged():
            return f"control: {event.state}, runner {event.runner}, parallelism {event.parallelism}"
        case CampaignEnded():
            return "campaign finished" if event.finished else f"campaign {event.message}"
    return None


@dataclass
class EventBus:
    listeners: list[Listener] = field(default_factory=list)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)
