"""Opening a run (fresh, or resumed from its checkpoint) and running it to the end.

`prepare` does every check before it writes anything, so bad input never overwrites a file;
it returns the run with its directory locked, the lock owned by the returned PreparedRun
(`with prepare(opts) as prep:` releases it).
`open_run` then owns everything a running campaign needs (store, control socket, runners,
result refreshes) for the life of an `async with` block, and saves and releases it all on exit.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any

import trio

from benchtui.core import tempdirs, volume
from benchtui.core.errors import BadInput, StorageFailed, first_error
from benchtui.core.money import fmt
from benchtui.engine import campaign as campaign_file
from benchtui.engine import (
    checkpoint,
    control,
    existing,
    identity_file,
    preflight,
    results,
    rundir,
    shortlist,
)
from benchtui.engine import events as ev
from benchtui.engine.accounts import Accounts
from benchtui.engine.campaign import Campaign, ResolvedProfile
from benchtui.engine.campaign.tables import PriceLookup
from benchtui.engine.campaign.trial import cut
from benchtui.engine.identity_file import RunIdentity, Trial
from benchtui.engine.ledger import ControlState, Ledger
from benchtui.engine.plan import PlannedSession, build_plan
from benchtui.engine.records import JournalRecord
from benchtui.engine.runner_pool import RunnerPool
from benchtui.engine.scheduler import Scheduler
from benchtui.engine.store import Store, mend_derived_files


@dataclass
class Options:
    campaign: Path | None = None
    state_dir: Path = Path("runs")
    resume: bool = False
    fresh: bool = False
    runner: str | None = None
    parallelism: int | None = None
    preflight: bool = True
    """Probe every `api_base` with a TCP connection before starting (`--no-preflight`: don't)."""
    limit: int | None = None
    """A quick trial: at most this many sessions per model (`--limit N`)."""
    models: list[str] | None = None
    """A quick trial: only these of the campaign's models (`--models a,b`)."""
    prices: PriceLookup | None = None
    """How the front end prices a model the campaign file gives no price (litellm's map)."""

    @property
    def trial(self) -> Trial | None:
        if self.limit is None and self.models is None:
            return None
        return Trial(limit=self.limit, models=self.models)


@dataclass
class PreparedRun:
    """A run ready to open: its campaign and plan, where it stands, and its run dir's lock, which
    it owns (`with prepare(opts) as prep:` releases it on leaving; `open_run` on closing)."""

    campaign: Campaign
    run_dir: Path
    lock: rundir.RunLock
    plan: list[PlannedSession]
    checkpoint: checkpoint.Checkpoint
    fingerprint: str
    runner: str
    resumed: bool
    notes: list[str] = field(default_factory=list)
    inventory: tuple[str, ...] = ()
    """A shortlist campaign's rule inventory (its hash is part of the identity)."""
    finished_before: bool = False
    """Started again without a flag, the run had finished: nothing to run (show its summary)."""

    def __enter__(self) -> PreparedRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.lock.release()


def prepare(opts: Options) -> PreparedRun:
    """Validate, lock and open the run dir; raises BadInput / RunDirBusy with one clear line.

    One pass down: the campaign (its runner kinds resolved once, as it is validated), every check,
    the identity, the plan; then the run dir is locked, and from that moment its lock is owned:
    here until the PreparedRun holding it is returned (a failure on the way releases it), then
    by that PreparedRun. Bad input writes nothing. A run dir that exists is continued, grown,
    shown finished or refused (engine/existing.py): only `--fresh` starts over."""
    campaign, run_dir, trial = _campaign_and_run_dir(opts)
    active, target = campaign.profiles[campaign.runner], campaign.make_target()
    # Every check, before anything is written: bad input is exit 2 with nothing on disk.
    start = preflight.at_start(campaign, active, target, network=opts.preflight)
    identity = campaign.identity(start.fingerprint)
    inventory: list[str] = []
    if campaign.protocol is not None:  # the triage chooses among these: the same for every model
        size = campaign.protocol.shortlist_size
        inventory = shortlist.inventory_of(
            campaign.profiles, campaign.runner, target, campaign.environment.path, size
        )
        identity["inventory"] = shortlist.inventory_digest(inventory)
    if trial is not None:
        identity[existing.TRIAL] = existing.trial_digest(trial)
    tempdirs.remove_stale()  # what killed campaigns' gates, gateways and workers left
    plan = build_plan(campaign)
    notes = start.notes
    resumed = (run_dir / rundir.CAMPAIGN).exists() and not opts.fresh
    finished_before = False
    with contextlib.ExitStack() as owned:
        if resumed:
            lock = owned.enter_context(rundir.RunLock(run_dir))
            volume.sweep(run_dir / "sessions")  # copies a killed engine left mounted: ours now
            commands = existing.Commands.of(opts.campaign, opts.state_dir, trial)
            check, finished_before, grew = existing.reopen(
                run_dir, campaign, plan, identity, start, commands, resume=opts.resume
            )
            notes += grew
            saved = check.saved_runner
            runner = saved if opts.runner is None and saved in campaign.runners else campaign.runner
            _refuse_untriaged(campaign, campaign.profiles[runner], plan, check.journal)
            check.ledger.control = ControlState(campaign.name, runner, False, campaign.parallelism)
        else:
            runner = campaign.runner
            _refuse_untriaged(campaign, active, plan, {})  # before anything is written or moved aside
            if opts.resume:
                notes.append(f"no run to resume in {run_dir}: starting one")
            if run_dir.exists():
                notes.append(f"previous run moved to {rundir.move_aside(run_dir)}")
            check = checkpoint.Checkpoint.fresh(campaign, runner)
            record = RunIdentity(
                identity, (existing.start_entry(campaign, start.fingerprint, start.programs, trial),)
            )
            files = check.first_files(campaign, record)
            if inventory:
                files[shortlist.INVENTORY] = shortlist.inventory_bytes(inventory)
            lock = owned.enter_context(rundir.create(run_dir, files))
        if not finished_before:
            rundir.set_latest(run_dir.parent, campaign.name)
        prepared = PreparedRun(
            campaign, run_dir, lock, plan, check, start.fingerprint, runner, resumed, notes, tuple(inventory),
            finished_before,
        )  # fmt: skip
        owned.pop_all()  # the lock is the PreparedRun's now
    return prepared


def _campaign_and_run_dir(opts: Options) -> tuple[Campaign, Path, Trial | None]:
    """The campaign to start (its file, cut to a quick trial if asked) or resume (the run dir's
    frozen copy, a trial as it was cut), its run dir, and the trial."""
    overrides: dict[str, Any] = {"runner": opts.runner, "parallelism": opts.parallelism}
    named = rundir.named_run(opts.campaign, opts.state_dir) if opts.resume else None
    if opts.resume and opts.campaign is not None and named is None and not opts.campaign.is_file():
        raise BadInput(rundir.resume_target_problem(opts.campaign, opts.state_dir))
    if opts.campaign is not None and named is None:
        campaign = campaign_file.load(  # the target is checked below
            opts.campaign, require_target=False, prices=opts.prices, **overrides
        )
        trial = opts.trial
        if trial is not None:
            campaign = cut(campaign, trial)
        return campaign, opts.state_dir / campaign.name, trial
    if not opts.resume:
        raise BadInput("give a campaign file, or --resume to continue the latest run")
    if opts.trial is not None:
        raise BadInput(
            "--limit and --models cut a campaign file: give it (`benchtui CAMPAIGN.toml --limit N`)"
        )
    run_dir = named or rundir.latest(opts.state_dir)
    campaign = campaign_file.load(identity_file.frozen(run_dir), require_target=False, **overrides)
    if campaign.name != run_dir.name:  # an edited frozen copy: .latest would point elsewhere
        raise BadInput(f"{run_dir / rundir.CAMPAIGN}: names the run {campaign.name!r}, not {run_dir.name!r}")
    return campaign, run_dir, identity_file.read(run_dir).trial  # a trial goes on as the trial it is


def _refuse_untriaged(
    campaign: Campaign, runner: ResolvedProfile, plan: list[PlannedSession], journal: dict[str, JournalRecord]
) -> None:
    """A shortlist campaign's triages never run on a runner that cannot triage (BadInput)."""
    if campaign.protocol is None or shortlist.can_triage(runner):
        return
    waiting = shortlist.untriaged(plan, journal)
    if waiting:
        raise BadInput(
            f"runner {runner.name!r} cannot run a triage (its kind cannot), and the "
            f"triage of {', '.join(waiting)} is still to run: choose another --runner"
        )


def accounts_event(ledger: Ledger, planned: Counter[str]) -> ev.AccountsCommitted:
    """What the ledger says now, as the front ends see it: copies of its accounts, each with the
    sessions the plan has for its model."""
    models = []
    for name, account in ledger.models.items():
        copy = account.copy()
        copy.planned = planned[name]
        models.append(copy)
    return ev.AccountsCommitted(
        budget_usd=ledger.budget,
        spent_usd=ledger.spent,
        reserved_usd=ledger.reserved,
        wasted_usd=ledger.wasted,
        models=tuple(models),
    )


@dataclass
class OpenRun:
    """A campaign run that is open: `scheduler` takes the control calls, `until_done` runs it."""

    prep: PreparedRun
    scheduler: Scheduler
    journal: dict[str, JournalRecord]
    ledger: Ledger
    store: Store
    finished: bool = False

    async def until_done(self) -> bool:
        """Launch every pending session; True when all sessions of the plan reached a final state."""
        await self.scheduler.run()
        self.finished = all((r := self.journal.get(s.id)) is not None and r.is_final for s in self.prep.plan)
        return self.finished

    def retry_later(self) -> int:
        """Sessions whose current attempt ended in an infrastructure error (`--resume` retries)."""
        return sum(
            1 for s in self.prep.plan if (r := self.journal.get(s.id)) and r.state == "error" and r.retryable
        )

    def ending(self) -> ev.CampaignEnded:
        if self.finished:
            return ev.CampaignEnded(finished=True)
        if self.scheduler.stopping:
            return ev.CampaignEnded(finished=False, stopped=True, message="stopped: resume with --resume")
        n = self.retry_later()
        tripped = "".join(f"; {self.scheduler.tripped_message(m)}" for m in self.scheduler.breaker.tripped)
        return ev.CampaignEnded(
            finished=False,
            retry=n + self.scheduler.held,
            message=(
                f"not finished: {n} session{'s' if n != 1 else ''} ended in infrastructure errors"
                + (f", {self.scheduler.held} not launched" if self.scheduler.held else "")
                if n or not self.scheduler.held
                else f"not finished: {self.scheduler.held} sessions not launched"
            )
            + f"; --resume {'retries' if n else 'runs'} them{tripped}",
        )

    def results_snapshot(self) -> results.Snapshot:
        """What the results files say of the run as it is now (taken on the event loop, cheap)."""
        return results.Snapshot.of(
            self.prep.plan, self.journal, self.ledger, self.prep.fingerprint, self.store.position
        )

    async def write_results(self, snapshot: results.Snapshot | None = None) -> None:
        """Rewrite the results files in a worker thread, from a snapshot (never on the event loop:
        in the TUI that loop is shared with the screen and with every `authorise`); by default
        one taken now."""
        snapshot = snapshot if snapshot is not None else self.results_snapshot()
        try:
            await trio.to_thread.run_sync(results.write_all, self.prep.run_dir, snapshot)
        except OSError as exc:
            raise StorageFailed(
                f"cannot write results in {self.prep.run_dir}: {exc.strerror or exc}; the "
                "campaign state is saved: fix this, then --resume rewrites them"
            ) from None


async def _refresh_results(run: OpenRun, bus: ev.EventBus, interval: float = 30.0) -> None:
    """Rewrite the results files now and then while a long campaign runs (exactly at its end).

    The interval grows to 20x the time a rewrite takes, so huge campaigns spend under 5% on it.
    """
    written = 0
    while True:
        await trio.sleep(interval)
        if run.scheduler.ended != written:
            written, start = run.scheduler.ended, time.perf_counter()
            try:
                await run.write_results()
            except StorageFailed as exc:  # the journal stays the truth; try again later
                bus.emit(ev.Notice(level="warning", message=str(exc)))
            interval = max(interval, 20 * (time.perf_counter() - start))  # the real cost of a rewrite


def _grow_plan(plan: list[PlannedSession], planned: Counter[str], sessions: list[PlannedSession]) -> None:
    """A triage committed: its episodes join the plan (and each model's planned count)."""
    plan.extend(sessions)
    planned.update(s.model for s in sessions)


def interrupted_line(ends: list[JournalRecord]) -> str:
    """What a resume says of the attempts benchtui's stop (a crash, a kill -9) left running: each
    one by name, and what it was charged as wasted (`--resume` runs its session again)."""
    if not ends:
        return ""
    each = ", ".join(f"{e.session} attempt {e.attempt} ({fmt(e.cost_usd)})" for e in ends)
    total = fmt(sum((e.cost_usd for e in ends), Decimal(0)))
    n = len(ends)
    return (
        f"interrupted: {n} attempt{'s' if n != 1 else ''} ran when benchtui stopped, charged {total} as "
        f"wasted: {each}; their sessions are pending again"
    )


@asynccontextmanager
async def open_run(prep: PreparedRun, bus: ev.EventBus) -> AsyncIterator[OpenRun]:
    """Open a prepared run: its store, control socket, runners and result refreshes.

    First the files derived from the journal are brought up to date (a crash, even a power cut,
    may have left them behind it): the journal's format, the outcome details' copies, then the
    ledger with the first commit (which also ends the attempts a crash interrupted). On exit
    (normal, stopped, or cancelled) every change is flushed, the results files are rewritten
    unless they reflect the whole journal already, the lock is released and `CampaignEnded` is
    emitted. Storage failures come out as one `StorageFailed`, not as an exception group.
    """
    campaign, check = prep.campaign, prep.checkpoint
    ledger, journal = check.ledger, check.journal
    planned = Counter(s.model for s in prep.plan)
    try:
        await trio.to_thread.run_sync(mend_derived_files, prep.run_dir, [m.name for m in campaign.models])
    except BaseException:
        prep.lock.release()
        raise
    store = Store(
        prep.run_dir,
        ledger,
        snapshot=lambda: accounts_event(ledger, planned),
        on_commit=bus.emit,
        emit=bus.emit,
        runner=check.journaled_runner or campaign.runner,
    )
    accounts = Accounts(ledger, store, bus, journal)
    queue = check.pending(prep.plan)
    run: OpenRun | None = None
    try:
        try:
            async with trio.open_nursery() as services:
                await services.start(store.serve)
                target = campaign.make_target()  # one per campaign, for every runner
                runners = RunnerPool(
                    campaign.runners, prep.run_dir, services, campaign.executor, target=target
                )
                scheduler = Scheduler(
                    campaign,
                    prep.run_dir,
                    queue,
                    accounts,
                    runners,
                    ledger.control,
                    fingerprint=prep.fingerprint,
                    inventory=prep.inventory,
                    on_grow=lambda sessions: _grow_plan(prep.plan, planned, sessions),
                )
                run = OpenRun(prep, scheduler, journal, ledger, store)
                await services.start(control.serve, prep.run_dir, scheduler, bus)  # for `benchtui ctl`
                services.start_soon(_refresh_results, run, bus)
                for end in prep.checkpoint.reconciled:
                    store.append(end.to_json())
                await store.commit()
                said = interrupted_line(prep.checkpoint.reconciled)
                bus.emit(
                    ev.CampaignStarted(
                        name=campaign.name,
                        run_dir=str(prep.run_dir),
                        runner=scheduler.runner,
                        parallelism=scheduler.parallelism,
                        sessions=len(prep.plan),
                        remaining=len(queue),
                        resumed=prep.resumed,
                        warnings=(*prep.notes, *check.notes, *([said] if said else [])),
                    )
                )
                yield run
                services.cancel_scope.cancel()
        except* StorageFailed as group:
            raise first_error(group) from None
        with trio.CancelScope(shield=True):
            await store.flush()
            # A resume that ran nothing keeps results that are current (100k rows take seconds).
            models = list(ledger.models)
            if not await trio.to_thread.run_sync(results.up_to_date, prep.run_dir, models, store.size):
                await run.write_results()
    finally:
        store.close()
        prep.lock.release()
    assert run is not None
    bus.emit(run.ending())


async def run(prep: PreparedRun, bus: ev.EventBus) -> bool:
    """OpenRun a prepared campaign to its end, with no front end; True when it finished."""
    async with open_run(prep, bus) as opened:
        return await opened.until_done()
