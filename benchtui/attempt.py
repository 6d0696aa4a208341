"""One attempt of one session: start it durably, run the runner within its limits, judge what
came back, then end it in the ledger, the results details and the journal, in that order."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, get_args

import trio

from benchtui import events as ev
from benchtui.errors import StorageFailed
from benchtui.ledger import InFlight
from benchtui.meter import SessionMeter
from benchtui.plan import PlannedSession, slug
from runners.base import Result, SessionOutcome, SessionSpec

if TYPE_CHECKING:
    from benchtui.scheduler import Scheduler

RESULTS = set(get_args(Result))


@dataclass(frozen=True, slots=True)
class Ending:
    state: str  # done | error | killed
    result: str | None
    reason: str = ""
    retryable: bool = False
    outcome: SessionOutcome | None = None


KILLED = Ending("killed", "error", "killed by the user")
OVERSPENT = Ending("error", "error", "killed: charges exceeded the session's reservation")
INTERRUPTED = Ending("error", "error", "interrupted: campaign stopped", retryable=True)


def journal_record(
    session: PlannedSession, state: str, *, attempt: int, runner: str, cost: Decimal, **extra: Any
) -> dict[str, Any]:
    """One line of sessions.jsonl: a session's state change."""
    return {
        "session": session.id,
        "model": session.model,
        "index": session.index,
        "task": session.task,
        "state": state,
        "attempt": attempt,
        "runner": runner,
        "cost_usd": float(cost),
        "t": round(time.time(), 3),
        **extra,
    }


def judge(outcome: Any) -> Ending:
    """What a runner returned, as an ending; garbage is an infrastructure error."""
    if (
        not isinstance(outcome, SessionOutcome)
        or outcome.result not in RESULTS
        or not isinstance(outcome.reason, str)
        or not (outcome.certificate is None or isinstance(outcome.certificate, dict))
    ):
        return Ending("error", "error", f"runner returned garbage: {outcome!r:.200}", retryable=True)
    if outcome.infra_error:
        return Ending("error", "error", outcome.reason or "infrastructure error", True, outcome)
    return Ending("done", outcome.result, outcome.reason, False, outcome)


class Attempt:
    def __init__(self, scheduler: Scheduler, session: PlannedSession, flight: InFlight) -> None:
        self.scheduler = scheduler
        self.session = session
        self.flight = flight
        campaign = scheduler.campaign
        self.model = campaign.models_by_name[session.model].spec()
        self.meter = SessionMeter(scheduler, flight, self.model, campaign.per_session_usd)
        self.scope = trio.CancelScope()
        self.stopped_by: Ending | None = None

    def cancel(self, why: Ending) -> None:
        """Stop the attempt now (kill, overspend, stop-now); the first reason given wins."""
        if self.stopped_by is None:
            self.stopped_by = why
            self.scope.cancel()

    async def run(self) -> None:
        s, flight, sched = self.session, self.flight, self.scheduler
        sched.record(
            journal_record(
                s,
                "running",
                attempt=flight.attempt,
                runner=flight.runner,
                cost=Decimal(0),
                reserved_usd=float(flight.reservation),
                environment=sched.fingerprint,
            )
        )
        profile = sched.campaign.runners[flight.runner]
        ending = None
        try:
            with self.scope:
                await sched.store.commit()
                sched.bus.emit(
                    ev.SessionStarted(s.id, s.model, s.index, s.task, flight.attempt, flight.runner)
                )
                spec = SessionSpec(
                    s.id,
                    self.model,
                    s.index,
                    s.task,
                    flight.attempt,
                    sched.campaign.per_session_usd,
                    sched.run_dir / "sessions" / s.id,
                    sched.campaign.environment.path,
                    sched.fingerprint,
                )
                with trio.move_on_after(profile.wall_time_s or math.inf) as wall:
                    outcome = await sched.runner_for(flight.runner).run(spec, self.meter)
                ending = (
                    judge(outcome)
                    if not wall.cancelled_caught
                    else Ending("error", "error", f"wall-clock limit of {profile.wall_time_s:g} s reached")
                )
        except StorageFailed:
            raise
        except Exception as exc:  # a crashing runner is an infrastructure error: retried on resume
            ending = Ending("error", "error", f"runner failed: {type(exc).__name__}: {exc}", retryable=True)
        await self.end(self.stopped_by or ending or INTERRUPTED)

    async def end(self, ending: Ending) -> None:
        s, flight, sched, meter = self.session, self.flight, self.scheduler, self.meter
        outcome = ending.outcome
        certificate = bool(outcome and outcome.certificate)
        cost = sched.ledger.close(s.id, ending.state, certificates=certificate, tokens=meter.tokens)
        if outcome and (outcome.certificate or outcome.verify_details or outcome.extra):
            sched.store.append_row(
                slug(s.model),
                {
                    "session": s.id,
                    "attempt": flight.attempt,
                    "certificate": outcome.certificate,
                    "verify_details": outcome.verify_details,
                    **outcome.extra,
                },
            )
        sched.record(
            journal_record(
                s,
                ending.state,
                attempt=flight.attempt,
                runner=flight.runner,
                cost=cost,
                result=ending.result,
                reason=ending.reason,
                retryable=ending.retryable,
                steps=outcome.steps if outcome else 0,
                calls=meter.calls,
                tokens=meter.tokens,
                certificate=certificate,
            )
        )
        with trio.CancelScope(shield=True):
            await sched.store.commit()
        sched.attempt_ended(s.id)
        sched.bus.emit(
            ev.SessionEnded(
                s.id,
                s.model,
                s.index,
                flight.attempt,
                ending.state,
                ending.result,
                ending.reason,
                cost,
                ending.retryable,
                certificate,
            )
        )
