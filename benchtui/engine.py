"""Opening a run (fresh, or resumed from its checkpoint) and running it to the end.

`prepare` does every check before it writes anything, so bad input never overwrites a file.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import trio

from benchtui import campaign as campaign_file
from benchtui import checkpoint, control, environment, results, rundir
from benchtui import events as ev
from benchtui.campaign import Campaign, identity_digest
from benchtui.errors import BadInput, StorageFailed, first_error
from benchtui.ledger import Ledger
from benchtui.plan import PlannedSession, build_plan
from benchtui.scheduler import Scheduler
from benchtui.store import LEDGER, Store


@dataclass
class Options:
    campaign: Path | None = None
    state_dir: Path = Path("runs")
    resume: bool = False
    fresh: bool = False
    runner: str | None = None
    parallelism: int | None = None


@dataclass
class PreparedRun:
    campaign: Campaign
    run_dir: Path
    lock: rundir.RunLock
    plan: list[PlannedSession]
    checkpoint: checkpoint.Checkpoint
    fingerprint: str
    runner: str
    resumed: bool
    notes: list[str] = field(default_factory=list)


def prepare(opts: Options) -> PreparedRun:
    """Validate, lock and open the run dir; raises BadInput / RunDirBusy with one clear line."""
    overrides = {"runner": opts.runner, "parallelism": opts.parallelism}
    if opts.campaign is None:
        if not opts.resume:
            raise BadInput("give a campaign file, or --resume to continue the latest run")
        run_dir = rundir.latest(opts.state_dir)
        campaign = campaign_file.load(run_dir / rundir.CAMPAIGN, **overrides)
        if campaign.name != run_dir.name:  # an edited frozen copy: .latest would point elsewhere
            raise BadInput(f"{run_dir / rundir.CAMPAIGN}: names the run {campaign.name!r}, not {run_dir.name!r}")
    else:
        campaign = campaign_file.load(opts.campaign, **overrides)
        run_dir = opts.state_dir / campaign.name
    notes = list(campaign.warnings())
    fingerprint = environment.fingerprint(campaign.environment.path, campaign.environment.tools)
    if "+dirty" in fingerprint.split()[0]:
        notes.append(f"{campaign.environment.path} has uncommitted changes: sessions get copies of "
                     "its last commit, without them")
    digest = identity_digest(campaign.identity_parts(fingerprint))
    plan = build_plan(campaign)
    runner = campaign.runner
    if opts.resume and (run_dir / rundir.CAMPAIGN).exists():
        lock = rundir.RunLock(run_dir)
        try:
            stored = rundir.read_identity(run_dir)
            changed = [key for key in digest if stored.get(key) != digest[key]]
            if changed:
                raise BadInput(
                    f"cannot resume {run_dir}: changed since it started: "
                    f"{', '.join(changed)} (use --fresh to start over)"
                )
            check = checkpoint.load(run_dir, campaign, plan)
        except BaseException:
            lock.release()
            raise
        saved_runner = check.saved_runner
        if opts.runner is None and saved_runner in campaign.runners:
            runner = saved_runner
        resumed = True
    else:
        if opts.resume:
            notes.append(f"no run to resume in {run_dir}: starting one")
        if run_dir.exists():
            notes.append(f"previous run moved to {rundir.move_aside(run_dir)}")
        check = checkpoint.Checkpoint(checkpoint.new_ledger(campaign))
        lock = rundir.create(
            run_dir,
            {
                rundir.CAMPAIGN: campaign.to_toml().encode(),
                rundir.IDENTITY: json.dumps(digest, indent=1).encode(),
                LEDGER: check.ledger.to_toml(),
            },
        )
        resumed = False
    rundir.set_latest(opts.state_dir, campaign.name)
    return PreparedRun(campaign, run_dir, lock, plan, check, fingerprint, runner, resumed, notes)


def accounts(ledger: Ledger, planned: Counter[str]) -> ev.AccountsCommitted:
    models = tuple(
        ev.ModelTotals(
            name,
            m.cap,
            m.spent,
            m.reserved,
            m.wasted,
            m.done,
            m.skipped,
            m.errors,
            m.killed,
            m.running,
            m.certificates,
            planned[name],
        )
        for name, m in ledger.models.items()
    )
    return ev.AccountsCommitted(ledger.budget, ledger.spent, ledger.reserved, ledger.wasted, models)


def write_results(prep: PreparedRun, scheduler: Scheduler) -> None:
    try:
        results.write_all(prep.run_dir, prep.plan, scheduler.last, prep.checkpoint.ledger, prep.fingerprint)
    except OSError as exc:
        raise StorageFailed(
            f"cannot write results in {prep.run_dir}: {exc.strerror or exc}; the "
            "campaign state is saved: fix this, then --resume rewrites them"
        ) from None


async def refresh_results(
    prep: PreparedRun, scheduler: Scheduler, bus: ev.EventBus, interval: float = 30.0
) -> None:
    """Rewrite the results files now and then while a long campaign runs (exactly at its end).

    The interval grows to 20x the time a rewrite takes, so huge campaigns spend under 5% on it.
    """
    written = 0
    while True:
        await trio.sleep(interval)
        if scheduler.ended != written:
            written, start = scheduler.ended, time.perf_counter()
            try:
                write_results(prep, scheduler)
            except StorageFailed as exc:  # the journal stays the truth; try again later
                bus.emit(ev.Notice("warning", str(exc)))
            interval = max(interval, 20 * (time.perf_counter() - start))


async def run(
    prep: PreparedRun, bus: ev.EventBus, *, task_status: trio.TaskStatus[Scheduler] = trio.TASK_STATUS_IGNORED
) -> bool:
    """Run the campaign; `task_status.started(scheduler)` hands front ends the control calls.

    Returns True when every session reached a final state (False: stopped, resumable).
    """
    campaign, ledger = prep.campaign, prep.checkpoint.ledger
    planned = Counter(s.model for s in prep.plan)
    store = Store(prep.run_dir, ledger, snapshot=lambda: accounts(ledger, planned), on_commit=bus.emit)
    scheduler = Scheduler(
        campaign,
        prep.run_dir,
        prep.plan,
        prep.checkpoint,
        store,
        bus,
        runner=prep.runner,
        parallelism=campaign.parallelism,
        fingerprint=prep.fingerprint,
    )
    finished = False
    try:
        async with trio.open_nursery() as services:
            await services.start(store.serve)
            await services.start(control.serve, prep.run_dir, scheduler, bus)  # for `benchtui ctl`
            services.start_soon(refresh_results, prep, scheduler, bus)
            for line in prep.checkpoint.reconciled:
                store.append(line)
            await store.commit()
            bus.emit(
                ev.CampaignStarted(
                    campaign.name,
                    str(prep.run_dir),
                    scheduler.runner,
                    scheduler.parallelism,
                    len(prep.plan),
                    len(scheduler.queue),
                    prep.resumed,
                    tuple(prep.notes),
                )
            )
            task_status.started(scheduler)
            finished = await scheduler.run()
            services.cancel_scope.cancel()
        with trio.CancelScope(shield=True):
            await store.flush()
    except* StorageFailed as group:
        raise first_error(group) from None
    finally:
        store.close()
        try:
            # A resume that ran nothing keeps results that are current (100k rows take seconds).
            if store.failure is None and not results.up_to_date(prep.run_dir, list(ledger.models)):
                write_results(prep, scheduler)
        finally:
            prep.lock.release()
    bus.emit(ev.CampaignEnded(finished, "" if finished else "stopped: resume with --resume"))
    return finished
