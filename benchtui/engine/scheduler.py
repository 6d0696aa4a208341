"""The scheduler: launches sessions in plan order under a CapacityLimiter, within the budget.

Control calls (`pause`, `resume`, `stop`, `kill`, `set_runner`, `set_parallelism`) are plain
methods called from the Trio thread; every state change goes out as an event. Attempts act
through `Accounts` and return their end record here, where their slot is handed back.
"""

from __future__ import annotations

from pathlib import Path

import trio

from benchtui.core.contract import SessionSpec
from benchtui.engine import events as ev
from benchtui.engine.accounts import Accounts
from benchtui.engine.attempt import KILLED, STOPPED_NOW, Attempt
from benchtui.engine.campaign import Campaign
from benchtui.engine.ledger import ControlState, InFlight
from benchtui.engine.plan import PlannedSession
from benchtui.engine.records import JournalRecord, RunState, now, run_state
from benchtui.engine.runner_pool import RunnerPool

SKIPPED_REASON = "budget: the full per-session budget no longer fits"


class Scheduler:
    def __init__(
        self,
        campaign: Campaign,
        run_dir: Path,
        queue: list[PlannedSession],
        accounts: Accounts,
        runners: RunnerPool,
        control: ControlState,
        *,
        fingerprint: str,
    ) -> None:
        self.campaign = campaign
        self.run_dir = run_dir
        self.queue = queue
        """The sessions this run launches, in plan order."""
        self.accounts = accounts
        self.runners = runners
        self.control = control
        self.fingerprint = fingerprint
        self.limits = campaign.logical_limits
        self.limiter = trio.CapacityLimiter(control.parallelism)
        self.stopping = False
        self._unpaused = trio.Event()
        if not control.paused:
            self._unpaused.set()
        self._launching = trio.CancelScope()
        self._attempts: dict[str, Attempt] = {}
        self._released = trio.Event()
        self.ended = 0
        """Sessions ended (or skipped) in this run."""

    # -- control calls ------------------------------------------------------------------------
    @property
    def runner(self) -> str:
        return self.control.runner

    @property
    def paused(self) -> bool:
        return self.control.paused

    @property
    def parallelism(self) -> int:
        return self.control.parallelism

    @property
    def state(self) -> RunState:
        return run_state(paused=self.paused, stopping=self.stopping)

    def pause(self) -> None:
        """Stop launching; running sessions go on."""
        if not self.paused:
            self.control.paused = True
            self._unpaused = trio.Event()
            self._control_changed()

    def resume(self) -> None:
        if self.paused:
            self.control.paused = False
            self._unpaused.set()
            self._control_changed()

    def stop(self, *, now: bool = False) -> None:
        """Stop launching; with `now`, also interrupt running sessions (retried on resume)."""
        self.stopping = True
        self._launching.cancel()
        if now:
            for attempt in self._attempts.values():
                attempt.cancel(STOPPED_NOW)
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
        self.control.runner = profile
        used = {r.runner for r in self.accounts.journal.values() if r.runner and r.state != "skipped_budget"}
        if used - {profile}:
            self.accounts.emit(
                ev.Notice(
                    level="warning",
                    message=f"fairness: sessions already ran on {', '.join(sorted(used))}; "
                    f"from now on they run on {profile}, so models may be compared across runners",
                )
            )
        self._control_changed()

    def set_parallelism(self, n: int) -> None:
        if n < 1:
            raise ValueError("parallelism must be at least 1")
        self.limiter.total_tokens = n
        self.control.parallelism = n
        self._control_changed()

    def running_sessions(self) -> list[str]:
        return list(self._attempts)

    def _control_changed(self) -> None:
        self.accounts.mark_dirty()
        self.accounts.emit(
            ev.ControlChanged(
                paused=self.paused, stopping=self.stopping, runner=self.runner, parallelism=self.parallelism
            )
        )

    # -- the launch loop ----------------------------------------------------------------------
    async def run(self) -> None:
        """Launch every queued session (until stopped); returns when every attempt has ended."""
        async with trio.open_nursery() as nursery:
            with self._launching:
                for session in self.queue:
                    await self.limiter.acquire_on_behalf_of(session.id)
                    flight = await self._reserve(session)
                    if flight is None:
                        self.limiter.release_on_behalf_of(session.id)
                        await self._skip(session)
                    else:
                        attempt = self._attempts[session.id] = self._attempt(session, flight)
                        nursery.start_soon(self._run_attempt, attempt)

    async def _reserve(self, session: PlannedSession) -> InFlight | None:
        """docs/design/invariants.md#f3: reserve the full per-session budget, waiting while running sessions might free it."""
        amount = self.campaign.per_session_usd
        while True:
            await self._unpaused.wait()  # re-checked after every wait: pause means no launch, no skip
            if self.accounts.fits_now(session.model, amount):
                break
            if not self.accounts.may_fit_later(session.model, amount):
                return None
            await self._released.wait()
        return self.accounts.open(session, self.runner, amount)

    def _attempt(self, session: PlannedSession, flight: InFlight) -> Attempt:
        campaign = self.campaign
        spec = SessionSpec(
            session.id,
            campaign.models_by_name[session.model].spec(),
            session.index,
            session.task,
            flight.attempt,
            campaign.per_session_usd,
            self.run_dir / "sessions" / session.id,
            campaign.environment.path,
            self.fingerprint,
            self.limits,
            campaign.target.kind,
        )
        wall = campaign.runners[flight.runner].wall_time_s
        return Attempt(
            self.accounts,
            self.runners,
            spec,
            flight,
            wall_time_s=wall,
            on_recorded=lambda: self._release(session.id),
        )

    async def _run_attempt(self, attempt: Attempt) -> None:
        # The slot is released when the end line is queued, not once it is durable: the next
        # launch's start line then rides the same commit (a session costs two commits, not
        # three), and it still acts only after its own start line, so after this end, is on disk.
        end = await attempt.run()
        self._ended(end)

    def _release(self, session: str) -> None:
        """Hand the slot and the unused reservation back; waiting launches re-check the budget."""
        del self._attempts[session]
        self.accounts.expect_followers()
        self.limiter.release_on_behalf_of(session)
        self._released.set()
        self._released = trio.Event()

    async def _skip(self, session: PlannedSession) -> None:
        previous = self.accounts.journal.get(session.id)
        record = JournalRecord(
            session=session.id,
            model=session.model,
            index=session.index,
            task=session.task,
            state="skipped_budget",
            attempt=previous.attempt if previous else 0,
            runner=self.runner,
            t=now(),
            reason=SKIPPED_REASON,
        )
        self.accounts.skip(session)
        self.accounts.record(record)
        with trio.CancelScope(shield=True):  # like an end: once in memory, it must reach the disk
            await self.accounts.commit()
        self._ended(record)

    def _ended(self, record: JournalRecord) -> None:
        self.ended += 1
        self.accounts.emit(ev.SessionEnded.of(record))
