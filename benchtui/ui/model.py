"""The UI's view model: events folded into a small state the widgets render on a timer.

Listeners run once per event (possibly thousands a second), so `apply` only updates fields and
notes what changed; the screen redraws at most 10 times a second from `take_changes`.
No Textual here: the model is plain data, testable without a terminal.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from benchtui.core.contract import LogicalLimits
from benchtui.core.counters import Usage, flat, usage
from benchtui.core.money import ZERO
from benchtui.core.text import printable
from benchtui.engine import events as ev
from benchtui.engine.plan import PlannedSession
from benchtui.engine.records import JournalRecord, run_state

UNLIMITED = LogicalLimits()
LOG_LINES = 500
NOTES_PER_SESSION = 12


@dataclass(slots=True)
class SessionRow:
    id: str
    model: str
    index: int
    task: str | None = None
    state: str = "pending"
    attempt: int = 0
    runner: str = ""
    cost: Decimal = ZERO
    calls: int = 0
    outcome: str = ""
    reason: str = ""
    certificate: bool = False
    verified: bool = False
    """Whether a verifier judged its certificate (fake and demo runners only claim theirs)."""
    notes: deque[str] = field(default_factory=lambda: deque(maxlen=NOTES_PER_SESSION))
    counters: Usage = ()
    """(counter, used, limit) of the logical budgets (`[budget.per_session]`); empty without."""
    exhausted: tuple[str, ...] = ()
    """Counters whose limit refused the ended attempt a unit."""
    ending: str = ""
    """Why the ended attempt ended (core/endings.py)."""

    def load(self, record: JournalRecord, limits: LogicalLimits = UNLIMITED) -> None:
        """Take the state a journal line records (a resumed run starts from its journal)."""
        self.state = record.state
        self.attempt = record.attempt
        self.runner = record.runner
        self.cost = record.cost_usd
        self.calls = record.calls
        self.outcome = record.result or ""
        self.reason = printable(record.reason)
        self.certificate = record.certificate
        self.ending = record.ending.name if record.ending is not None and record.ended else ""
        self.ended_counters(record.counters, record.exhausted, limits)

    def ended_counters(
        self, nested: dict[str, Any] | None, exhausted: tuple[str, ...], limits: LogicalLimits
    ) -> None:
        """The units an ended attempt used, as its journal end line has them."""
        if nested is not None:
            self.counters, self.exhausted = usage(flat(nested), limits), exhausted


@dataclass(slots=True)
class Changes:
    """What to redraw: ids of sessions that changed, new log lines, new notices to toast."""

    sessions: set[str]
    log: list[str]
    notices: list[ev.Notice]
    header: bool
    accounts: ev.AccountsCommitted | None


class ViewModel:
    def __init__(
        self,
        campaign: str,
        runner: str,
        parallelism: int,
        plan: Iterable[PlannedSession],
        journal: dict[str, JournalRecord],
        clock: Callable[[], float],
        *,
        limits: LogicalLimits = UNLIMITED,
        verifying: frozenset[str] = frozenset(),
    ) -> None:
        self.campaign = campaign
        self.verifying = verifying
        """Runner profiles whose certificates a verifier judges (else the runner claims them)."""
        self.runner = runner
        self.parallelism = parallelism
        self.paused = False
        self.stopping = False
        self.ended: ev.CampaignEnded | None = None
        self.run_dir = ""
        self.accounts: ev.AccountsCommitted | None = None
        self.clock = clock
        self.started_at = clock()
        self.ended_at: float | None = None
        self.limits = limits
        self.sessions: dict[str, SessionRow] = {}
        for planned in plan:
            view = SessionRow(planned.id, planned.model, planned.index, planned.task)
            if planned.id in journal:
                view.load(journal[planned.id], limits)
                view.verified = view.runner in verifying
            self.sessions[planned.id] = view
        self.states = Counter(view.state for view in self.sessions.values())
        """How many sessions are in each state (kept up to date, never recounted)."""
        self.log: deque[str] = deque(maxlen=LOG_LINES)
        self.events = 0
        self._changed: set[str] = set()
        self._new_log: list[str] = []
        self._notices: list[ev.Notice] = []
        self._header = True
        self._accounts_changed = False

    # -- derived ------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self.ended is not None:
            return "finished" if self.ended.finished else "stopped"
        return run_state(paused=self.paused, stopping=self.stopping)

    @property
    def elapsed(self) -> float:
        end = self.ended_at if self.ended_at is not None else self.clock()
        return max(end - self.started_at, 0.0)

    # -- folding events -----------------------------------------------------------------------
    def apply(self, event: ev.Event) -> None:
        """The bus listener: cheap, no I/O, no drawing."""
        self.events += 1
        match event:
            case ev.SessionProgress():
                view = self.sessions.get(event.session)
                if view is not None:
                    view.calls, view.cost = event.calls, event.cost_usd
                    if event.counters:
                        view.counters = event.counters
                    if event.note:
                        view.notes.append(printable(event.note))
                    self._changed.add(view.id)
            case ev.AccountsCommitted():
                self.accounts = event
                self._accounts_changed = True
            case ev.SessionsPlanned():  # a triage committed: its episodes join the table
                for sid, index, task in event.sessions:
                    if sid not in self.sessions:
                        self.sessions[sid] = SessionRow(sid, event.model, index, task)
                        self.states["pending"] += 1
                        self._changed.add(sid)
            case ev.SessionStarted():
                view = self.sessions[event.session]
                self._set_state(view, "running")
                view.attempt, view.runner = event.attempt, event.runner
                view.cost, view.calls, view.outcome, view.reason, view.ending = ZERO, 0, "", "", ""
                view.notes.clear()
                view.counters, view.exhausted = usage({}, self.limits) if self.limits else (), ()
                self._changed.add(view.id)
            case ev.SessionEnded():
                self._ended(event)
            case ev.ControlChanged():
                self.paused, self.stopping = event.paused, event.stopping
                self.runner, self.parallelism = event.runner, event.parallelism
                self._header = True
            case ev.Notice():
                self._notices.append(event)
            case ev.CampaignStarted():
                self.run_dir, self.runner, self.parallelism = event.run_dir, event.runner, event.parallelism
                self._header = True
                for warning in event.warnings:
                    self._say(f"note: {warning}")
            case ev.CampaignEnded():
                self.ended, self.ended_at = event, self.clock()
                self._header = True
        line = ev.describe(event)
        if line:
            self._say(line)

    def _ended(self, event: ev.SessionEnded) -> None:
        view = self.sessions[event.session]
        self._set_state(view, event.state)
        view.attempt, view.cost = event.attempt, event.cost_usd
        view.outcome = event.result or ""
        view.reason, view.certificate = printable(event.reason), event.certificate
        view.verified = view.runner in self.verifying
        view.ending = event.ending or ""
        view.ended_counters(event.counters, event.exhausted, self.limits)
        self._changed.add(view.id)

    def _set_state(self, view: SessionRow, state: str) -> None:
        self.states[view.state] -= 1
        self.states[state] += 1
        view.state = state

    def _say(self, line: str) -> None:
        seconds = int(self.elapsed)
        line = f"{seconds // 60:02d}:{seconds % 60:02d} {line}"
        self.log.append(line)
        self._new_log.append(line)

    def take_changes(self) -> Changes:
        """Everything changed since the last call (and forget it)."""
        changes = Changes(
            self._changed,
            self._new_log[-LOG_LINES:],
            self._notices,
            self._header,
            self.accounts if self._accounts_changed else None,
        )
        self._changed, self._new_log, self._notices = set(), [], []
        self._header = self._accounts_changed = False
        return changes
