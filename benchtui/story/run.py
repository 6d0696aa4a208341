"""A run dir as the viewer and the TUI's session screen tell it: the campaign, its sessions (one
row each, filterable), and each session's attempts — read through `engine.reader.RunDir`, the one
reader of a run dir, never written.

A `RunStory` is a snapshot: it reads each file once. A live front end asks `changed()` (the
journal's and the ledger's size and time, a stat each) and takes a new snapshot when they moved.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any

from benchtui.core import counters, processes
from benchtui.core.money import ZERO
from benchtui.core.outcome import OutcomeDetails
from benchtui.engine import rundir
from benchtui.engine.account import ModelAccount
from benchtui.engine.campaign import Campaign, Model
from benchtui.engine.ledger import InFlight, SavedLedger
from benchtui.engine.reader import RunDir
from benchtui.engine.records import JournalRecord
from benchtui.engine.store import JOURNAL, LEDGER
from benchtui.story.outcome import Outcome, outcome


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One planned session as the journal last left it (costs of every attempt added up)."""

    id: str
    model: str
    index: int
    task: str | None
    state: str
    attempt: int
    result: str
    reason: str
    cost_usd: Decimal
    calls: int
    tokens: int
    certificate: bool
    runner: str
    triage: bool = False
    ending: str = ""
    """Why it ended, by name (core/endings.py); empty while it runs or waits, or for a skip."""

    @property
    def why(self) -> str:
        """Why it ended, in a word or a line (empty while it runs or waits): its ending by name,
        then what the runner said."""
        if self.state in ("pending", "running"):
            return ""
        said = self.reason or self.result or self.state
        return f"{self.ending}: {said}" if self.ending and said != self.ending else said


@dataclass
class Attempt:
    number: int
    start: JournalRecord | None = None
    end: JournalRecord | None = None
    details: Outcome | None = None
    budget: str = ""
    """The logical budget it used (`calls 3/10  actions 5/12 …`), for campaigns that set one."""
    then_skipped: JournalRecord | None = None
    """After it ended, the session was skipped (its budget no longer fitted): a line of its own,
    never this attempt's end (the skip ran nothing and cost nothing; this attempt's charge stays)."""

    @property
    def retried(self) -> bool:
        """It ended in an infrastructure error and the session was to run again (not skipped)."""
        return (
            self.end is not None
            and self.end.state == "error"
            and self.end.retryable
            and self.then_skipped is None
        )


@dataclass
class ModelStory:
    model: Model
    account: ModelAccount | None
    planned: int
    rows: list[SessionRow] = field(default_factory=list)


class RunStory:
    """One run dir, read once (see `changed` for a live one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.saved = RunDir(path)
        self.stamp = stamp(path)
        self._details: dict[str, dict[tuple[str, int], OutcomeDetails]] = {}

    def changed(self) -> bool:
        return stamp(self.path) != self.stamp

    @property
    def campaign(self) -> Campaign:
        return self.saved.campaign

    @cached_property
    def ledger(self) -> SavedLedger:
        return self.saved.ledger

    @cached_property
    def journal(self) -> dict[str, list[JournalRecord]]:
        """Every journal line, by session, in order."""
        lines: dict[str, list[JournalRecord]] = defaultdict(list)
        for rec in self.saved.journal:
            lines[rec.session].append(rec)
        return lines

    @property
    def running(self) -> bool:
        """A live benchtui holds the run (its pid in the lock, its control socket in place)."""
        pid = rundir.owner(self.path)
        return bool(pid and processes.alive(pid) and (self.path / rundir.CONTROL_SOCKET).exists())

    @cached_property
    def sessions(self) -> list[SessionRow]:
        journal = self.journal  # first: a shortlist campaign's episodes join the plan as it is read
        rows = []
        for planned in self.saved.plan:
            lines = journal.get(planned.id, [])
            last = lines[-1] if lines else None
            cost = sum((r.cost_usd for r in lines if r.state != "running"), ZERO)
            if last is not None and last.state == "running" and (flight := self.in_flight(planned.id)):
                cost += flight.spent
            rows.append(
                SessionRow(
                    planned.id,
                    planned.model,
                    planned.index,
                    planned.task,
                    last.state if last else "pending",
                    last.attempt if last else 0,
                    (last.result or "") if last else "",
                    last.reason if last else "",
                    cost,
                    sum(r.calls for r in lines),
                    sum(r.tokens for r in lines),
                    bool(last and last.certificate),
                    last.runner if last else "",
                    planned.triage,
                    last.ending.name if last and last.ended and last.ending else "",
                )
            )
        return rows

    @cached_property
    def _by_id(self) -> dict[str, SessionRow]:
        return {row.id: row for row in self.sessions}

    def cells(self) -> dict[tuple[str, str | None], list[str]]:
        """The sessions of each (model, task), in plan order (a task × model cell's sessions)."""
        return self._cells

    @cached_property
    def _cells(self) -> dict[tuple[str, str | None], list[str]]:
        cells: dict[tuple[str, str | None], list[str]] = defaultdict(list)
        for row in self.sessions:
            cells[row.model, row.task].append(row.id)
        return dict(cells)

    def session(self, session_id: str) -> SessionRow | None:
        return self._by_id.get(session_id)

    def in_flight(self, session_id: str) -> InFlight | None:
        return self.ledger.running.get(session_id)

    def models(self) -> list[ModelStory]:
        by_model: dict[str, ModelStory] = {
            m.name: ModelStory(m, self.ledger.models.get(m.name), 0) for m in self.campaign.models
        }
        for row in self.sessions:
            story = by_model[row.model]
            story.planned += 1
            story.rows.append(row)
        return list(by_model.values())

    def attempts(self, session_id: str) -> list[Attempt]:
        """The session's attempts in order, each with its journal lines and outcome details."""
        row = self.session(session_id)
        if row is None:
            return []
        attempts: dict[int, Attempt] = {}
        for rec in self.journal.get(session_id, []):
            ended = attempts.get(rec.attempt)
            if rec.state == "skipped_budget" and ended is not None and ended.end is not None:
                ended.then_skipped = rec  # a skip carries the number of the attempt before it
                continue
            attempt = attempts.setdefault(rec.attempt, Attempt(rec.attempt))
            if rec.state == "running":
                attempt.start = rec
            else:
                attempt.end = rec
        if row.model not in self._details:
            self._details[row.model] = self.saved.details(row.model)
        details = self._details[row.model]
        limits = self.campaign.logical_limits
        for attempt in attempts.values():
            attempt.details = outcome(details.get((session_id, attempt.number)))
            end = attempt.end
            if limits and end is not None and end.counters is not None:
                attempt.budget = counters.line(
                    counters.usage(counters.flat(end.counters), limits), end.exhausted
                )
        return [attempts[n] for n in sorted(attempts)]


def stamp(path: Path) -> tuple[Any, ...]:
    """What changes when the run moves on: the journal's and the ledger's size and time."""
    out: list[Any] = []
    for name in (JOURNAL, LEDGER):
        try:
            info = (path / name).stat()
            out += [info.st_size, info.st_mtime_ns]
        except OSError:
            out += [None, None]
    return tuple(out)
