"""The scheduler: launches sessions in plan order under a CapacityLimiter, within the budget.

Control calls (`pause`, `resume`, `stop`, `kill`, `set_runner`, `set_parallelism`) are plain
methods called from the Trio thread; every state change goes out as an event. Attempts act
through `Accounts` and hand their end record here as soon as it is queued: in one step, with no
checkpoint between, the circuit breaker counts it and its slot is handed back, so the next launch
sees this end whatever the timing, and its start line follows this end in the journal (riding
its commit when ready in time: two commits a session, not three). Starts and ends are announced
once durable, in journal order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import trio

from benchtui.core.contract import SessionOutcome, SessionSpec, Triage
from benchtui.engine import events as ev
from benchtui.engine import phases, shortlist
from benchtui.engine.accounts import Accounts
from benchtui.engine.attempt import KILLED, STOPPED_NOW, Attempt
from benchtui.engine.breaker import Breaker
from benchtui.engine.campaign import Campaign
from benchtui.engine.ledger import ControlState, InFlight
from benchtui.engine.plan import PlannedSession
from benchtui.engine.providers import Providers, provider_of
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
        inventory: tuple[str, ...] = (),
        on_grow: Callable[[list[PlannedSession]], None] = lambda sessions: None,
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
        self.breaker = Breaker(no_action_after=campaign.stop_model_after_no_action)
        """Models whose sessions keep failing the same way: their sessions are not launched."""
        self.held = 0
        """Sessions left pending in this run because their model's breaker tripped."""
        self.held_by: Counter[str] = Counter()
        """`held`, by model."""
        self._reserving: str | None = None
        """The model of the session at the launch step (its slot and reservation awaited)."""
        self.inventory = inventory
        """A shortlist campaign's rule inventory (frozen at its start)."""
        self.on_grow = on_grow
        """Called with the episodes a triage planned, once they are durable."""
        self.providers = Providers(
            {m.name: m.max_connections for m in campaign.models},
            {m.name: provider_of(m.name, m.api_base) for m in campaign.models},
            {p.rstrip("/"): v.max_connections for p, v in campaign.providers.items()},
        )
        """Sessions at once per model and per provider, and each provider's shared 429 backoff."""
        self._queued = Counter(s.model for s in queue)
        """Sessions not launched yet, by model (the search for one that can start stops when it
        has seen every model that has any)."""
        self._cursor = 0
        self._grown: dict[str, list[PlannedSession]] = {}
        caps = campaign.per_model_usd * len(campaign.models)
        self._shared_total = (
            campaign.protocol is not None and campaign.budget.enforce and caps > campaign.budget.total_usd
        )
        """Models' caps add up to more than the total, so the total is shared first come, first
        served: a shortlist campaign's episodes then wait until every triage has ended, so one
        model's episodes cannot run ahead into the total while another's triage still runs (docs/design/invariants.md#f4)."""

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
        if self.campaign.protocol is not None and not shortlist.can_triage(self.campaign.profiles[profile]):
            waiting = shortlist.untriaged(self.queue, self.accounts.journal)
            if waiting:
                raise ValueError(
                    f"runner profile {profile!r} cannot run a triage, and {len(waiting)} "
                    "triage(s) are still to run"
                )
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
        self._released.set()  # a launch waiting for a free slot looks again
        self._released = trio.Event()
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
                while True:
                    triaging = any(a.spec.triage for a in self._attempts.values())
                    if self._cursor == len(self.queue):
                        if not triaging:
                            break
                        await self._released.wait()  # a triage may still plan episodes
                        continue
                    if self.providers.limited and (
                        self.limiter.available_tokens <= 0 or not self._bring_forward_one_that_can_start()
                    ):
                        # Who may start depends on who ended: choose once a slot is free and a
                        # waiting model is below its connection limit.
                        await self._released.wait()
                        continue
                    if triaging and self._shared_total and not self.queue[self._cursor].triage:
                        await self._released.wait()  # see _shared_total
                        continue
                    session = self.queue[self._cursor]
                    self._cursor += 1
                    self._queued[session.model] -= 1
                    if session.model in self.breaker.tripped:  # stays pending: --resume runs it
                        self._hold(session)
                        continue
                    self._reserving = session.model
                    try:
                        await self.limiter.acquire_on_behalf_of(session.id)
                        flight = await self._reserve(session)
                    finally:
                        self._reserving = None
                    if not isinstance(flight, InFlight):
                        self.limiter.release_on_behalf_of(session.id)
                        if flight == "skip":
                            self._skip(session)
                        else:
                            self._hold(session)
                    else:
                        attempt = self._attempts[session.id] = self._attempt(session, flight)
                        nursery.start_soon(self._run_attempt, attempt)

    def _hold(self, session: PlannedSession) -> None:
        self.held += 1
        self.held_by[session.model] += 1

    def _bring_forward_one_that_can_start(self) -> bool:
        """Put the first queued session whose model is within its connection limits (and its
        provider's) at the cursor; False when there is none. Those passed over keep their order
        and their place ahead of the rest: a model at its limit is skipped for now, and its next
        session is the first to start once one of its own ends (docs/design/invariants.md#f4)."""
        running = Counter(a.spec.model.name for a in self._attempts.values())
        blocked: set[str] = set()
        for i in range(self._cursor, len(self.queue)):
            model = self.queue[i].model
            if model in blocked:
                continue
            if model in self.breaker.tripped or self.providers.can_start(model, running):
                if i != self._cursor:
                    self.queue.insert(self._cursor, self.queue.pop(i))
                return True
            blocked.add(model)
            if len(blocked) == sum(n > 0 for n in self._queued.values()):
                return False
        return False

    async def _reserve(self, session: PlannedSession) -> InFlight | Literal["skip", "hold"]:
        """docs/design/invariants.md#f3: reserve the full per-session budget, waiting while running
        sessions might free it ("skip": it can never fit; "hold": its model's breaker tripped
        meanwhile, not launched)."""
        amount = self.campaign.per_session_usd
        while True:
            await self._unpaused.wait()  # re-checked after every wait: pause means no launch, no skip
            if session.model in self.breaker.tripped:
                return "hold"
            if self.limiter.borrowed_tokens > self.limiter.total_tokens:
                # Its slot was taken before parallelism was lowered (while paused, or waiting for
                # budget): the limit holds for it too, so it waits for running ones to end.
                await self._released.wait()
                continue
            if self.accounts.fits_now(session.model, amount):
                break
            if not self.accounts.may_fit_later(session.model, amount):
                return "skip"
            await self._released.wait()
        return self.accounts.open(session, self.runner, amount)

    def _attempt(self, session: PlannedSession, flight: InFlight) -> Attempt:
        campaign = self.campaign
        protocol = campaign.protocol
        triage = protocol is not None and session.triage
        spec = SessionSpec(
            id=session.id,
            model=campaign.models_by_name[session.model].spec(),
            index=session.index,
            task=session.task,
            attempt=flight.attempt,
            budget_usd=campaign.per_session_usd,
            session_dir=self.run_dir / "sessions" / session.id,
            environment=campaign.environment.path,
            environment_fingerprint=self.fingerprint,
            limits=protocol.triage.limits() if protocol is not None and triage else self.limits,
            triage=Triage(self.inventory, protocol.shortlist_size)
            if protocol is not None and triage
            else None,
            hypothesis=session.hypothesis,
        )
        wall = campaign.runners[flight.runner].wall_time_s
        conclude = self._conclude_triage if triage else None
        return Attempt(
            self.accounts,
            self.runners,
            spec,
            flight,
            wall_time_s=wall,
            conclude=conclude,
            backoff=self.providers.backoff(session.model),
            on_recorded=self._recorded,
        )

    def _conclude_triage(
        self, end: JournalRecord, outcome: SessionOutcome | None
    ) -> tuple[JournalRecord, list[JournalRecord]]:
        """A triage's end line carries its judged shortlist; its episodes' `pending` lines go in
        the same commit, so the grown plan is durable before any episode runs."""
        protocol = self.campaign.protocol
        assert protocol is not None
        given = phases.Triage(size=protocol.shortlist_size, limits=protocol.triage.model_dump())
        if not end.is_final or end.state != "done" or outcome is None:
            return end.but(phase=given), []  # retried on resume, or killed: no shortlist
        verdict = shortlist.judge(outcome.shortlist, self.inventory, protocol.shortlist_size)
        why = f" ({outcome.reason})" if outcome.shortlist is None and outcome.reason else ""
        end = end.but(reason=verdict.reason + why, phase=verdict.of(given))
        sessions = shortlist.episodes(end.model, verdict.shortlist)
        self._grown[end.session] = sessions
        return end, [shortlist.pending_line(s, end.runner, end.t) for s in sessions]

    def _grow(self, triage: str) -> None:
        """Queue a triage's episodes among those not launched yet, round-robin (docs/design/invariants.md#f4);
        their `pending` lines precede any of their start lines in the journal."""
        sessions = self._grown.pop(triage, [])
        if not sessions:
            return
        models = [m.name for m in self.campaign.models]
        tail = self.queue[self._cursor :] + sessions
        self._queued.update(s.model for s in sessions)
        self.queue[self._cursor :] = shortlist.ordered(tail, models)
        self.on_grow(sessions)
        self.accounts.after_commit(
            ev.SessionsPlanned(
                model=sessions[0].model, sessions=tuple((s.id, s.index, s.task) for s in sessions)
            )
        )

    async def _run_attempt(self, attempt: Attempt) -> None:
        await attempt.run()

    def _recorded(self, end: JournalRecord) -> None:
        """An attempt's end line is queued: count it, then hand its slot on (one step)."""
        self._grow(end.session)  # a triage's episodes are queued before its slot is released
        self._ended(end)
        self._release(end.session)

    def _release(self, session: str) -> None:
        """Hand the slot and the unused reservation back; waiting launches re-check the budget."""
        del self._attempts[session]
        self.limiter.release_on_behalf_of(session)
        self._released.set()
        self._released = trio.Event()

    def _skip(self, session: PlannedSession) -> None:
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
        self.accounts.record(record)  # durable with the next commit, before any later start acts
        self._ended(record)

    def _ended(self, record: JournalRecord) -> None:
        self.ended += 1
        self.accounts.after_commit(ev.SessionEnded.of(record))
        if self.breaker.ended(record) is not None:
            # An error only when it leaves sessions undone: with none left the run may still finish.
            level = "error" if self.left_of(record.model) else "warning"
            self.accounts.after_commit(ev.Notice(level=level, message=self.tripped_message(record.model)))

    def left_of(self, model: str) -> int:
        """`model`'s sessions this run has not launched, nor will (its breaker tripped): those
        held, those still queued, and the one at the launch step."""
        return self.held_by[model] + self._queued[model] + (self._reserving == model)

    def tripped_message(self, model: str) -> str:
        """Why `model`'s sessions are no longer launched, and exactly what that leaves (said once,
        and again at the end)."""
        base = self.campaign.models_by_name[model].api_base
        where = f"api_base {base}" if base else "the provider's default endpoint"
        trip = self.breaker.tripped[model]
        left = self.left_of(model)
        if trip.no_action:
            action_format = self.campaign.runners[self.runner].model_dump().get("action_format")
            head = f"{model} ({where}): {trip.cause(self.breaker.no_action_after, action_format)}."
            if not left:
                return f"{head} None of its sessions is left to launch."
            return (
                f"{head} No more of its sessions are launched in this run: {left} stay pending, and "
                "--resume runs them once that is fixed (a change of action_format is another campaign: --fresh)"
            )
        head = f"{model}: {trip.cause(self.breaker.trip_after, None)}, {where})"
        if not left:
            return f"{head}; none of its sessions is left to launch"
        return (
            f"{head}; no more of its sessions are launched in this run: {left} stay pending, --resume "
            "runs them once that is fixed"
        )
