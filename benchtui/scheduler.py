"""The scheduler: launches sessions in plan order under a CapacityLimiter, within the budget.

Control calls (`pause`, `resume`, `stop`, `kill`, `set_runner`, `set_parallelism`) are plain
methods called from the Trio thread; every state change goes out as an event on the bus.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import trio

from benchtui import events as ev
from benchtui.attempt import INTERRUPTED, KILLED, OVERSPENT, Attempt, journal_record
from benchtui.campaign import Campaign
from benchtui.checkpoint import Checkpoint, is_final
from benchtui.ledger import InFlight, Ledger
from benchtui.plan import PlannedSession
from benchtui.store import Store
from runners import registry
from runners.base import AgentRunner


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
        self._attempts: dict[str, Attempt] = {}
        self.ended = 0
        """Sessions ended (or skipped) in this run."""
        self._released = trio.Event()
        self._runners: dict[str, AgentRunner] = {}
        self._services: trio.Nursery
        self._campaign_over = trio.Event()
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
            for attempt in self._attempts.values():
                attempt.cancel(INTERRUPTED)
        self._control_changed()

    def kill(self, session: str) -> bool:
        """Kill one running session: it ends `killed` (final), its spend kept."""
        attempt = self._attempts.get(session)
        if attempt is None:
            return False
        attempt.cancel(KILLED)
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
        return list(self._attempts)

    def _control_changed(self) -> None:
        self.ledger.meta["paused"] = self.paused
        self.store.mark_dirty()
        self.bus.emit(ev.ControlChanged(self.paused, self.stopping, self.runner, self.parallelism))

    # -- the launch loop ----------------------------------------------------------------------
    async def run(self) -> bool:
        """Run every pending session; returns True when all sessions reached a final state."""
        async with trio.open_nursery() as self._services:  # runners with a lifetime (see runner_for)
            finished = await self._launch_all()
            self._campaign_over.set()
        return finished

    async def _launch_all(self) -> bool:
        async with trio.open_nursery() as nursery:
            with self._launching:
                for session in self.queue:
                    await self.limiter.acquire_on_behalf_of(session.id)
                    flight = await self._reserve(session)
                    if flight is None:
                        self.limiter.release_on_behalf_of(session.id)
                        await self._skip(session)
                    else:
                        attempt = self._attempts[session.id] = Attempt(self, session, flight)
                        nursery.start_soon(attempt.run)
        return all(s.id in self.last and is_final(self.last[s.id]) for s in self.plan)

    async def _reserve(self, session: PlannedSession) -> InFlight | None:
        """F3: reserve the full per-session budget, waiting while running sessions might free it."""
        amount = self.campaign.per_session_usd
        while True:
            while self.paused:  # re-checked after every wait: pause means no launch, no skip
                await self._unpaused.wait()
            if self.ledger.fits_now(session.model, amount):
                break
            if not self.ledger.may_fit_later(session.model, amount):
                return None
            await self._released.wait()
        previous = self.last.get(session.id)
        attempt = previous["attempt"] + 1 if previous else 1
        return self.ledger.open(session.id, session.model, session.index, attempt, self.runner, amount)

    async def _skip(self, session: PlannedSession) -> None:
        previous = self.last.get(session.id)
        record = journal_record(
            session,
            "skipped_budget",
            runner=self.runner,
            attempt=previous["attempt"] if previous else 0,
            cost=Decimal(0),
            reason="budget: the full per-session budget no longer fits",
        )
        self.ledger.record_end(session.model, "skipped_budget", Decimal(0))
        self.record(record)
        self.ended += 1
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

    # -- attempts ---------------------------------------------------------------------------
    def record(self, record: dict[str, Any]) -> None:
        """Queue a journal line; it becomes the session's current record."""
        self.last[record["session"]] = record
        self.store.append(record)

    def runner_for(self, profile: str) -> AgentRunner:
        if profile not in self._runners:
            runner = registry.create(self.campaign.runners[profile], run_dir=self.run_dir)
            self._runners[profile] = runner
            if hasattr(runner, "__aenter__"):  # e.g. the command runner's gateway: open until the run ends
                self._services.start_soon(self._keep_open, runner)
        return self._runners[profile]

    async def _keep_open(self, runner: Any) -> None:
        async with runner:
            await self._campaign_over.wait()

    def attempt_ended(self, session: str) -> None:
        """Hand the slot and the unused reservation back; waiting launches re-check the budget."""
        del self._attempts[session]
        self.ended += 1
        self.limiter.release_on_behalf_of(session)
        self._released.set()
        self._released = trio.Event()

    def overspent(self, session: str) -> None:
        """Called by a meter whose charges passed the reservation: stop that session now."""
        if session in self._attempts:
            self._attempts[session].cancel(OVERSPENT)
