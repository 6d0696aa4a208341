"""Where a run stands: the ledger rebuilt from the journal, and reconciled after a crash.

The journal is the write-ahead record (engine/journal.py): the accounts are rebuilt from its end
lines, so a finished attempt is counted exactly once whatever instant a crash hit, and an attempt
in flight from its last flight line (its spend, open holds and logical units). ledger.toml is
derived: an older one is simply brought up to date, one a power cut left empty or zero-filled is
rebuilt; one that reflects more than the journal holds means the journal was cut or replaced, and
one corrupted otherwise was edited: both are refused.
Journals of format 1 kept an attempt's holds in ledger.toml alone: for them its `[running]` entry
still says what an attempt in flight had spent.

An attempt that was running when the previous process died is ended as an `error` (interrupted,
retryable), charged what it spent plus its unsettled holds at their worst case
(docs/design/invariants.md#f6), and queued again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchtui.core import counters, inputs
from benchtui.core.errors import BadInput
from benchtui.core.money import ZERO, fmt
from benchtui.engine import journal as wal
from benchtui.engine import rundir, shortlist
from benchtui.engine.campaign import Campaign
from benchtui.engine.identity_file import RunIdentity
from benchtui.engine.ledger import ControlState, Ledger, SavedLedger, power_cut
from benchtui.engine.plan import PlannedSession
from benchtui.engine.records import JournalRecord, now
from benchtui.engine.store import LEDGER

CRASHED = "interrupted: benchtui stopped while the session ran"


def new_ledger(campaign: Campaign) -> Ledger:
    caps = {m.name: campaign.per_model_usd for m in campaign.models}
    return Ledger(campaign.budget.total_usd, caps, enforce=campaign.budget.enforce)


@dataclass
class Checkpoint:
    ledger: Ledger
    journal: dict[str, JournalRecord] = field(default_factory=dict)
    """The current (last) journal record of every session that has one."""
    reconciled: list[JournalRecord] = field(default_factory=list)
    """End lines for interrupted attempts, to append to the journal before anything runs."""
    saved_runner: str | None = None
    """The active runner profile when the run was last saved (it may have been switched)."""
    journaled_runner: str | None = None
    """The active runner as the journal alone says it (None: the campaign's)."""
    notes: list[str] = field(default_factory=list)
    """What opening the run found and mended (e.g. a ledger a power cut left unreadable)."""

    @classmethod
    def fresh(cls, campaign: Campaign, runner: str) -> Checkpoint:
        """A run that has not started: a new ledger, the controls as the campaign sets them."""
        check = cls(new_ledger(campaign))
        check.ledger.control = ControlState(campaign.name, runner, False, campaign.parallelism)
        return check

    def first_files(self, campaign: Campaign, identity: RunIdentity) -> dict[str, bytes]:
        """The files a new run dir is created with (rundir.create), format numbers included."""
        return {
            rundir.CAMPAIGN: campaign.to_toml().encode(),
            rundir.IDENTITY: identity.to_bytes(),
            LEDGER: self.ledger.to_toml(journal_bytes=0),
            wal.FORMAT_FILE: f"{wal.FORMAT}\n".encode(),
        }

    def pending(self, plan: list[PlannedSession]) -> list[PlannedSession]:
        return [s for s in plan if s.id not in self.journal or not self.journal[s.id].is_final]


LedgerFile = SavedLedger | str | None
"""ledger.toml as read: parsed; what a power cut left of it (a string saying so); or missing."""


def read_ledger_file(run_dir: Path) -> LedgerFile:
    """Read it before the journal: a live run's journal only grows, so a ledger read first
    never reflects more of it than the reader then finds. A ledger that is corrupted in any
    way a power cut cannot explain is BadInput."""
    path = run_dir / LEDGER
    try:
        data = inputs.read_bytes(path, inputs.LEDGER_MAX_BYTES, "the ledger")
    except FileNotFoundError:
        return None
    if power_cut(data):
        return f"{path}: {'zero-filled' if data else 'empty'}, as a power cut leaves a file not yet on disk"
    return SavedLedger.parse(path, data, "; use --fresh")


def judge_saved(
    run_dir: Path, journal: wal.Journal, found: LedgerFile
) -> tuple[SavedLedger | None, str | None]:
    """The saved ledger checked against the journal, and a note. What a power cut left of it is
    rebuilt from a journal of format 2 (the note says so); of a journal of format 1 it was the
    only record of its attempts' holds: BadInput."""
    path = run_dir / LEDGER
    if found is None:
        raise BadInput(f"{path}: missing; use --fresh to start over")
    if isinstance(found, str):
        if journal.format < 2:
            raise BadInput(
                f"{found}; the journal of format {journal.format} cannot say what it held: use --fresh"
            )
        return None, f"{found}: rebuilt from the journal"
    if found.journal_bytes is not None and found.journal_bytes > journal.size:
        raise BadInput(
            f"{run_dir / wal.JOURNAL}: holds {journal.size} bytes but {LEDGER} reflects "
            f"{found.journal_bytes} (the journal was cut or replaced); use --fresh to start over"
        )
    return found, None


def rebuild(
    campaign: Campaign, journal: wal.Journal, saved: SavedLedger | None
) -> tuple[Ledger, dict[str, JournalRecord]]:
    """The ledger as the journal says it (attempts still in flight open, with their last
    recorded state), and each session's current record."""
    ledger = new_ledger(campaign)
    current: dict[str, JournalRecord] = {}
    for rec in journal.records:
        previous = current.get(rec.session)
        if previous is not None and previous.ended:  # a retry: count sessions by current state
            ledger.supersede(rec.model, previous.state)
        current[rec.session] = rec
        if rec.ended:
            ledger.record_end(
                rec.model,
                rec.state,
                rec.cost_usd,
                certificates=int(rec.certificate),
                tokens=rec.tokens,
                usage=rec.usage,
            )
    for sid, rec in current.items():
        if rec.state != "running":
            continue
        ledger.open(sid, rec.model, rec.index, rec.attempt, rec.runner, rec.reserved_usd or ZERO)
        last = journal.flight(sid, rec.attempt)
        legacy = saved.running.get(sid) if saved is not None else None
        if last is not None:
            ledger.restore(sid, last.spent, last.held, last.counters)
        elif legacy is not None and legacy.attempt == rec.attempt:
            # Format 1: only the ledger knew (nothing else: a hold is journaled before a call).
            ledger.restore(sid, legacy.spent, legacy.held, legacy.counters)
    return ledger, current


def load(run_dir: Path, campaign: Campaign, plan: list[PlannedSession]) -> Checkpoint:
    rundir.check_layout(run_dir)
    plan_ids = {s.id: s for s in plan}
    found = read_ledger_file(run_dir)
    journal = wal.read(run_dir / wal.JOURNAL, plan_ids)
    if len(plan_ids) > len(plan):  # episodes of committed shortlists join the plan, round-robin
        plan[:] = shortlist.ordered(plan_ids.values(), [m.name for m in campaign.models])
    return reconcile(run_dir, campaign, journal, found, plan_ids)


def reconcile(
    run_dir: Path,
    campaign: Campaign,
    journal: wal.Journal,
    found: LedgerFile,
    plan_ids: dict[str, PlannedSession],
) -> Checkpoint:
    """The checkpoint `--resume` starts from: attempts in flight ended as interrupted errors."""
    saved, note = judge_saved(run_dir, journal, found)
    ledger, current = rebuild(campaign, journal, saved)
    runner = journal.runner or (saved.control.runner if saved is not None else None)
    check = Checkpoint(
        ledger, current, saved_runner=runner, journaled_runner=journal.runner, notes=[note] if note else []
    )
    logical = campaign.logical_limits
    t = now()
    for sid, flight in list(ledger.running.items()):
        given = logical
        if campaign.protocol is not None and plan_ids[sid].triage:  # a triage has its own budget
            given = campaign.protocol.triage.limits()
        units = counters.nest(flight.counters, given.counters) if given else None
        cost = ledger.close(sid, "error")  # unsettled holds charged at their worst case
        end = current[sid].but(
            state="error", cost_usd=cost, result="error", reason=CRASHED, retryable=True, t=t, counters=units
        )
        check.journal[sid] = end
        check.reconciled.append(end)
    if saved is not None:
        _check_nothing_forgotten(run_dir, saved, ledger)
    return check


def _check_nothing_forgotten(run_dir: Path, saved: SavedLedger, rebuilt: Ledger) -> None:
    """The journal must account for everything the saved ledger says was spent or done.

    The store fsyncs journal lines before it writes the ledger, so after any crash the journal
    knows at least what the ledger does; less means the journal was cut or replaced, and resuming
    would silently run finished sessions again and forget money (docs/design/invariants.md#f6, #f7).
    """
    for name, account in rebuilt.models.items():
        entry = saved.models.get(name)
        if entry is None and not (account.spent_usd or account.done or account.errors or account.killed):
            continue  # a model the campaign grew by: nothing of it was saved yet, nothing forgotten
        if entry is None:
            raise BadInput(f"{run_dir / LEDGER}: corrupted ledger (model {name!r}); use --fresh")
        spent, done = entry.spent_usd, entry.done
        if account.spent_usd < spent or account.done < done:
            raise BadInput(
                f"cannot resume {run_dir}: the ledger says {name} spent {fmt(spent)} in {done} done "
                f"sessions but {wal.JOURNAL} accounts for {fmt(account.spent_usd)} in {account.done} "
                "(the journal was cut or replaced); nothing was run: use --fresh to start over"
            )
