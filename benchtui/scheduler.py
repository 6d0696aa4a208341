"""The scheduler: launches sessions in plan order under a CapacityLimiter, within the budget.

Control calls (`pause`, `resume`, `stop`, `kill`, `set_runner`, `set_parallelism`) are plain
methods called from the Trio thread; every state change goes out as an event on the bus.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, get_args

import trio

from benchtui import events as ev
from benchtui.campaign import Campaign
from benchtui.checkpoint import Checkpoint, is_final
from benchtui.errors import StorageFailed
from benchtui.ledger import InFlight, Ledger
from benchtui.meter import SessionMeter
from benchtui.plan import PlannedSession, slug
from benchtui.store import Store
from runners import registry
from runners.base import AgentRunner, Result, SessionOutcome, SessionSpec

RESULTS = set(get_args(Result))


@dataclass(slots=True)
class Ending:
    state: str
    result: str | None
    reason: str = ""
    retryable: bool = False
    outcome: SessionOutcome | None = None


class Scheduler:
    def __init__(
        self,
        campaign: Campaign,
        run_dir: Path,
        plan: list[PlannedSession],
        checkpoint: Checkpoint,
        store: Store,
        bus: ev.EventBus,
        *,
        runner: str,
        parallelism: int,
        fingerprint: str,
    ) -> None:
        self.campaign = campaign
        self.run_dir = run_dir
        self.plan = plan
        self.ledger: Ledger = checkpoint.ledger
        self.last = checkpoint.last
        self.queue = checkpoint.pending(plan)
        self.store = store
        self.bus = bus
        self.runner = runner
        self.fingerprint = fingerprint
        self.limiter = trio.CapacityLimiter(parallelism)
        self.paused = False
        self.stopping = False
        self._unpaused = trio.Event()
        self._unpaused.set()
        self._launching = trio.CancelScope()
        self._scopes: dict[str, trio.CancelScope] = {}
        self._meters: dict[str, SessionMeter] = {}
        self._killed: set[str] = set()
        self._overspent: set[str] = set()
        self._released = trio.Event()
        self._runners: dict[str, AgentRunner] = {}
        self._models = {m.name: m.spec() for m in campaign.models}
        self.ledger.meta.update(campaign=campaign.name, runner=runner, paused=False, parallelism=parallelism)

    # -- control calls ------------------------------------------------------------------------
    @property
    def parallelism(self) -> int:
        return int(self.limiter.total_tokens)

    def pause(self) -> None:
        """Stop launching; running sessions go on."""
        if not self.paused:
            self.paused = True
            self._unpaused = trio.Event()
            self._control_changed()

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self._unpaused.set()
            self._control_changed()

    def stop(self, *, now: bool = False) -> None:
        """Stop launching; with `now`, also interrupt running sessions (retried on resume)."""
        self.stopping = True
        self._launching.cancel()
        if now:
            for scope in self._scopes.values():
                scope.cancel()
        self._control_changed()

    def kill(self, session: str) -> bool:
        """Kill one running session: it ends `killed` (final), its spend kept."""
        scope = self._scopes.get(session)
        if scope is None:
            return False
        self._killed.add(session)
        scope.cancel()
        return True

    def set_runner(self, profile: str) -> None:
        """Sessions not yet started use `profile`; raises ValueError for an unknown profile."""
        if profile not in self.campaign.runners:
            raise ValueError(
                f"unknown runner profile {profile!r} (campaign has: {', '.join(self.campaign.runners)})"
            )
        if profile == self.runner:
            return
        self.runner = profile
        self.ledger.meta["runner"] = profile
        self.store.mark_dirty()
        used = {r["runner"] for r in self.last.values() if r.get("runner") and r["state"] != "skipped_budget"}
        if used - {profile}:
            self.bus.emit(
                ev.Notice(
                    "warning",
                    f"fairness: sessions already ran on {', '.join(sorted(used))}; "
                    f"from now on they run on {profile}, so models may be compared across runners",
                )
            )
        self._control_changed()

    def set_parallelism(self, n: int) -> None:
        if n < 1:
            raise ValueError("parallelism must be at least 1")
        self.limiter.total_tokens = n
        self.ledger.meta["parallelism"] = n
        self.store.mark_dirty()
        self._control_changed()

    def running_sessions(self) -> list[str]:
        return list(self._scopes)

    def _control_changed(self) -> None:
        self.ledger.meta["paused"] = self.paused
        self.store.mark_dirty()
        self.bus.emit(ev.ControlChanged(self.paused, self.stopping, self.runner, self.parallelism))

    # -- the launch loop ----------------------------------------------------------------------
    async def run(self) -> bool:
        """Run every pending session; returns True when all sessions reached a final state."""
        async with trio.open_nursery() as nursery:
            with self._launching:
                for session in self.queue:
                    await self.limiter.acquire_on_behalf_of(session.id)
                    await self._unpaused.wait()
                    flight = await self._reserve(session)
                    if flight is None:
                        self.limiter.release_on_behalf_of(session.id)
                        await self._skip(session)
                    else:
                        nursery.start_soon(self._session, session, flight)
        return all(s.id in self.last and is_final(self.last[s.id]) for s in self.plan)

    async def _reserve(self, session: PlannedSession) -> InFlight | None:
        """F3: reserve the full per-session budget, waiting while running sessions might free it."""
        amount = self.campaign.per_session_usd
        while not self.ledger.fits_now(session.model, amount):
            if not self.ledger.may_fit_later(session.model, amount):
                return None
            await self._released.wait()
        previous = self.last.get(session.id)
        attempt = previous["attempt"] + 1 if previous else 1
        return self.ledger.open(session.id, session.model, session.index, attempt, self.runner, amount)

    async def _skip(self, session: PlannedSession) -> None:
        previous = self.last.get(session.id)
        record = self._record(
            session,
            "skipped_budget",
            runner=self.runner,
            attempt=previous["attempt"] if previous else 0,
            cost=Decimal(0),
            reason="budget: the full per-session budget no longer fits",
        )
        self.ledger.record_end(session.model, "skipped_budget", Decimal(0))
        self.store.append(record)
        await self.store.commit()
        self.bus.emit(
            ev.SessionEnded(
                session.id,
                session.model,
                session.index,
                record["attempt"],
                "skipped_budget",
                None,
                record["reason"],
                Decimal(0),
            )
        )

    def _record(
        self, session: PlannedSession, state: str, *, attempt: int, runner: str, cost: Decimal, **extra: Any
    ) -> dict[str, Any]:
        record = {
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
        self.last[session.id] = record
        return record

    # -- one session --------------------------------------------------------------------------
    def _runner_for(self, profile: str) -> AgentRunner:
        if profile not in self._runners:
            self._runners[profile] = registry.create(self.campaign.runners[profile], run_dir=self.run_dir)
        return self._runners[profile]

    async def _session(self, session: PlannedSession, flight: InFlight) -> None:
        sid = session.id
        self.store.append(
            self._record(
                session,
                "running",
                attempt=flight.attempt,
                runner=flight.runner,
                cost=Decimal(0),
                reserved_usd=float(flight.reservation),
                environment=self.fingerprint,
            )
        )
        meter = SessionMeter(self, flight, self._models[session.model], self.campaign.per_session_usd)
        self._meters[sid] = meter
        scope = self._scopes[sid] = trio.CancelScope()
        profile = self.campaign.runners[flight.runner]
        ending: Ending | None = None
        try:
            with scope:
                await self.store.commit()
                self.bus.emit(
                    ev.SessionStarted(
                        sid, session.model, session.index, session.task, flight.attempt, flight.runner
                    )
                )
                spec = SessionSpec(
                    sid,
                    self._models[session.model],
                    session.index,
                    session.task,
                    flight.attempt,
                    self.campaign.per_session_usd,
                    self.run_dir / "sessions" / sid,
                    self.campaign.environment.path,
                    self.fingerprint,
                )
                with trio.move_on_after(profile.wall_time_s or math.inf) as wall:
                    outcome = await self._runner_for(flight.runner).run(spec, meter)
                ending = (
                    Ending("error", "error", f"wall-clock limit of {profile.wall_time_s:g} s reached")
                    if wall.cancelled_caught
                    else self._judge(outcome)
                )
        except StorageFailed:
            raise
        except Exception as exc:  # a crashing runner is an infrastructure error: retried on resume
            ending = Ending("error", "error", f"runner failed: {type(exc).__name__}: {exc}", retryable=True)
        if sid in self._overspent:
            ending = Ending("error", "error", "killed: charges exceeded the session's reservation")
        elif sid in self._killed:
            ending = Ending("killed", "error", "killed by the user")
        elif ending is None:
            ending = Ending("error", "error", "interrupted: campaign stopped", retryable=True)
        await self._end(session, flight, meter, ending)

    def _judge(self, outcome: Any) -> Ending:
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

    async def _end(
        self, session: PlannedSession, flight: InFlight, meter: SessionMeter, ending: Ending
    ) -> None:
        sid = session.id
        outcome = ending.outcome
        certificate = bool(outcome and outcome.certificate)
        cost = self.ledger.close(sid, ending.state, certificates=certificate, tokens=meter.tokens)
        if outcome and (outcome.certificate or outcome.verify_details or outcome.extra):
            self.store.append_row(
                slug(session.model),
                {
                    "session": sid,
                    "attempt": flight.attempt,
                    "certificate": outcome.certificate,
                    "verify_details": outcome.verify_details,
                    **outcome.extra,
                }
            )
        self.store.append(
            self._record(
                session,
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
        del self._scopes[sid], self._meters[sid]
        self._killed.discard(sid)
        self._overspent.discard(sid)
        with trio.CancelScope(shield=True):
            await self.store.commit()
        self.limiter.release_on_behalf_of(sid)
        self._released.set()
        self._released = trio.Event()
        self.bus.emit(
            ev.SessionEnded(
                sid,
                session.model,
                session.index,
                flight.attempt,
                ending.state,
                ending.result,
                ending.reason,
                cost,
                ending.retryable,
                certificate,
            )
        )

    def overspent(self, session: str) -> None:
        """Called by a meter whose charges passed the reservation: stop that session now."""
        if session in self._scopes:
            self._overspent.add(session)
            self._scopes[session].cancel()
