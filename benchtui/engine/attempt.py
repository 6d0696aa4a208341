"""One attempt of one session: start it durably, run the runner within its limits, judge what
came back, then end it in the ledger, the results details and the journal, in that order.

An attempt acts only through `Accounts` and returns its end record to the launch loop, which
hands its slot and unused reservation back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_args

import trio

from benchtui.core import counters
from benchtui.core.contract import Result, SessionOutcome, SessionSpec
from benchtui.core.endings import Ending, SessionEnding
from benchtui.core.errors import StorageFailed
from benchtui.core.outcome import Judgement, OutcomeDetails, SessionFacts
from benchtui.engine import events as ev
from benchtui.engine.accounts import Accounts
from benchtui.engine.ledger import InFlight
from benchtui.engine.meter import SessionMeter
from benchtui.engine.providers import Backoff
from benchtui.engine.records import JournalRecord, SessionState, now
from benchtui.engine.runner_pool import RunnerPool

RESULTS = set(get_args(Result))
ENDING_NAMES = {None, *get_args(Ending)}


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    state: SessionState  # done | error | killed
    result: str | None
    reason: str = ""
    retryable: bool = False
    outcome: SessionOutcome | None = None
    ending: Ending = "unstated"
    """Why it ended (core/endings.py): the runner's word, or the engine's for what it ended."""


KILLED = AttemptEnd("killed", None, "killed by the user", ending="killed")
STOPPED_NOW = AttemptEnd(
    "error", "error", "interrupted: campaign stopped", retryable=True, ending="interrupted"
)


def overspent(detail: str) -> AttemptEnd:
    """Stopped by the meter: its charges passed its reservation (`detail`: what the meter saw)."""
    why = "killed: charges exceeded the session's reservation" + (f" ({detail})" if detail else "")
    return AttemptEnd("error", "error", why, ending="overspent")


def runner_ending(outcome: SessionOutcome) -> Ending:
    """The runner's ending, or what the engine can say for a runner that gives none."""
    if outcome.ending is not None:
        return outcome.ending
    if outcome.result == "bug_found":
        return "found"
    return "runner_error" if outcome.infra_error else "unstated"


def ending_of(outcome: Any) -> AttemptEnd:
    """What a runner returned, as an ending; garbage is an infrastructure error."""
    if (
        not isinstance(outcome, SessionOutcome)
        or outcome.result not in RESULTS
        or not isinstance(outcome.reason, str)
        or not (outcome.certificate is None or isinstance(outcome.certificate, dict))
        or not (outcome.judgement is None or isinstance(outcome.judgement, Judgement))
        or not isinstance(outcome.facts, SessionFacts)
        or outcome.ending not in ENDING_NAMES
        or not (outcome.actions is None or (type(outcome.actions) is int and outcome.actions >= 0))
    ):
        return AttemptEnd(
            "error",
            "error",
            f"runner returned garbage: {outcome!r:.200}",
            retryable=True,
            ending="runner_error",
        )
    ending = runner_ending(outcome)
    if outcome.infra_error:
        return AttemptEnd("error", "error", outcome.reason or "infrastructure error", True, outcome, ending)
    return AttemptEnd("done", outcome.result, outcome.reason, False, outcome, ending)


class Attempt:
    def __init__(
        self,
        accounts: Accounts,
        runners: RunnerPool,
        spec: SessionSpec,
        flight: InFlight,
        *,
        wall_time_s: float | None,
        conclude: Callable[[JournalRecord, SessionOutcome | None], tuple[JournalRecord, list[JournalRecord]]]
        | None = None,
        backoff: Backoff | None = None,
        on_recorded: Callable[[JournalRecord], None] = lambda end: None,
    ) -> None:
        self.accounts = accounts
        self.conclude = conclude
        """Completes the end line (a triage's shortlist) and gives lines to write with it."""
        self.on_recorded = on_recorded
        """Called with the end line once it is queued, before it is durable: the slot may go to
        the next launch, whose start line follows this end in the journal (so it can act only
        once this end is durable too) and rides its commit when it is ready in time."""
        self.runners = runners
        self.spec = spec
        self.flight = flight
        self.wall_time_s = wall_time_s
        self.meter = SessionMeter(
            accounts,
            flight,
            spec.model,
            spec.budget_usd,
            limits=spec.limits,
            on_overspent=lambda detail: self.cancel(overspent(detail)),
            backoff=backoff,
        )
        self.scope = trio.CancelScope()
        self.stopped_by: AttemptEnd | None = None

    def cancel(self, why: AttemptEnd) -> None:
        """Stop the attempt now (kill, overspend, stop-now); the first reason given wins."""
        if self.stopped_by is None:
            self.stopped_by = why
            self.scope.cancel()

    def _line(self, state: SessionState, **fields: Any) -> JournalRecord:
        s, f = self.spec, self.flight
        return JournalRecord(
            session=s.id,
            model=s.model.name,
            index=s.index,
            task=s.task,
            state=state,
            attempt=f.attempt,
            runner=f.runner,
            t=now(),
            **fields,
        )

    async def run(self) -> JournalRecord:
        """Run to the end, whatever happens; returns the attempt's end record (durable)."""
        s, flight = self.spec, self.flight
        self.accounts.record(
            self._line("running", reserved_usd=flight.reservation, environment=s.environment_fingerprint)
        )
        self.accounts.after_commit(
            ev.SessionStarted(
                session=s.id,
                model=s.model.name,
                index=s.index,
                task=s.task,
                attempt=flight.attempt,
                runner=flight.runner,
            )
        )
        ending = None
        try:
            with self.scope:
                await self.accounts.commit()
                runner = await self.runners.get(flight.runner)
                with trio.move_on_after(self.wall_time_s or math.inf) as wall:
                    outcome = await runner.run(s, self.meter)
                ending = (
                    ending_of(outcome)
                    if not wall.cancelled_caught
                    else AttemptEnd(
                        "error",
                        "error",
                        f"wall-clock limit of {self.wall_time_s:g} s reached",
                        ending="wall_time",
                    )
                )
        except StorageFailed:
            raise
        except Exception as exc:  # a crashing runner is an infrastructure error: retried on resume
            why = f"runner failed: {type(exc).__name__}: {exc}"
            ending = AttemptEnd("error", "error", why, retryable=True, ending="runner_error")
        return await self._end(self.stopped_by or ending or STOPPED_NOW)

    async def _end(self, ending: AttemptEnd) -> JournalRecord:
        outcome, meter = ending.outcome, self.meter
        certificate = bool(outcome and outcome.certificate)
        cost = self.accounts.close(
            self.flight, ending.state, certificate=certificate, tokens=meter.tokens, usage=meter.usage
        )
        details = OutcomeDetails.of(self.spec.id, self.flight.attempt, outcome) if outcome else None
        if details is not None and details.worth_keeping:
            self.accounts.record_details(self.spec.model.name, details.to_json())
        end = self._line(
            ending.state,
            cost_usd=cost,
            result=ending.result,
            reason=ending.reason,
            retryable=ending.retryable,
            steps=outcome.steps if outcome else 0,
            calls=meter.calls,
            tokens=meter.tokens,
            usage=dict(meter.usage) if meter.usage else None,
            provider_cost=meter.reconciled if meter.reconciled.calls else None,
            certificate=certificate,
            counters=counters.nest(self.flight.counters, self.spec.limits.counters)
            if self.spec.limits
            else None,
            exhausted=tuple(meter.exhausted),
            throttling=meter.throttling(),
            ending=SessionEnding(
                ending.ending,
                outcome.actions if outcome else None,
                cause=outcome.cause if outcome else None,
            ),
        )
        more: list[JournalRecord] = []
        if self.conclude is not None:
            end, more = self.conclude(end, outcome)
        self.accounts.record(end)
        for line in more:
            self.accounts.record(line)
        self.on_recorded(end)
        with trio.CancelScope(shield=True):
            await self.accounts.commit()
        return end
