"""Where a run stands: rebuilt from the journal and the saved ledger, reconciled after a crash.

The journal is the history of attempts; the accounts are rebuilt from its end lines, so a
finished attempt is counted exactly once whatever instant a crash hit. The saved ledger adds
what only it knows: the spend and open holds of attempts that were in flight. An attempt that
was running when the previous process died is ended as an `error` (interrupted, retryable),
charged what it spent plus its unsettled holds at their worst case (docs/design/invariants.md#f6), and queued again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtui.core import bounds, counters, inputs
from benchtui.core.atomic import gc_paused
from benchtui.core.errors import BadInput
from benchtui.core.money import ZERO, fmt
from benchtui.engine import rundir, shortlist
from benchtui.engine.campaign import Campaign
from benchtui.engine.identity_file import RunIdentity
from benchtui.engine.ledger import ControlState, Ledger, SavedLedger
from benchtui.engine.plan import PlannedSession
from benchtui.engine.records import JournalRecord, now
from benchtui.engine.store import JOURNAL, JOURNAL_FORMAT, JOURNAL_FORMAT_FILE, LEDGER

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
            LEDGER: self.ledger.to_toml(),
            JOURNAL_FORMAT_FILE: f"{JOURNAL_FORMAT}\n".encode(),
        }

    def pending(self, plan: list[PlannedSession]) -> list[PlannedSession]:
        return [s for s in plan if s.id not in self.journal or not self.journal[s.id].is_final]


def journal_format(run_dir: Path) -> int:
    """The journal's format (0 for run dirs made before formats had numbers: the same as 1);
    BadInput for one newer than this code reads."""
    path = run_dir / JOURNAL_FORMAT_FILE
    try:
        text = inputs.read_text(path, inputs.SMALL_MAX_BYTES, "the journal's format").strip()
    except FileNotFoundError:
        return 0
    if not text.isdigit() or len(text) > 6:
        raise BadInput(f"{path}: corrupted (not a format number)")
    if int(text) > JOURNAL_FORMAT:
        raise BadInput(
            f"{path}: journal of format {int(text)}, newer than this benchtui reads ({JOURNAL_FORMAT}): "
            "upgrade benchtui to read it"
        )
    return int(text)


def read_journal(path: Path, plan_ids: dict[str, PlannedSession]) -> list[JournalRecord]:
    """Parse the journal; a torn last line is ignored, any other bad line is corruption.

    A shortlist campaign's plan grows as it is read: a triage's end line adds its episodes to
    `plan_ids` (engine/shortlist.py)."""
    journal_format(path.parent)
    try:
        text = inputs.read_bytes(path, None, "the journal").decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    lines.pop()  # "" when the file ends with a newline, else a torn last line: ignored
    try:
        values = _parse_all(lines)
    except ValueError as exc:
        raise BadInput(f"{path}: corrupted journal {exc}; use --fresh to start over") from None
    records = []
    with gc_paused():
        for number, value in enumerate(values, 1):
            try:
                rec = JournalRecord.from_json(value)
                if not bounds.sane_amount(value["cost_usd"]):  # edited by hand: inf, 1e300
                    raise ValueError(f"cost_usd {value['cost_usd']!r} is not a sane amount")
                planned = plan_ids.get(rec.session)
                if planned is None or planned.model != rec.model:
                    raise ValueError("a session this campaign does not plan")
            except ValueError as exc:
                raise BadInput(
                    f"{path}: corrupted journal at line {number} ({exc}); use --fresh to start over"
                ) from None
            records.append(rec)
            if planned.triage:
                for episode in shortlist.grown_by(rec, planned):
                    plan_ids.setdefault(episode.id, episode)
    return records


def _parse_all(lines: list[str]) -> list[Any]:
    """One JSON parse for the whole journal (4x faster than a parse a line); a line that
    does not parse, or holds more or less than one value, is found and named line by line."""
    try:
        with gc_paused():
            records: list[Any] = json.loads("[" + ",".join(lines) + "]")
        if len(records) == len(lines):
            return records
    except (ValueError, RecursionError):
        pass
    for number, line in enumerate(lines, 1):
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            raise ValueError(f"at line {number}") from None
    raise ValueError("(a line holds more than one record)")


def load(run_dir: Path, campaign: Campaign, plan: list[PlannedSession]) -> Checkpoint:
    rundir.check_layout(run_dir)
    try:
        saved = SavedLedger.read(run_dir / LEDGER, "; use --fresh")
    except FileNotFoundError:
        raise BadInput(f"{run_dir / LEDGER}: missing; use --fresh to start over") from None
    in_flight = saved.running
    ledger = new_ledger(campaign)
    logical = campaign.logical_limits
    check = Checkpoint(ledger, saved_runner=saved.control.runner)
    plan_ids = {s.id: s for s in plan}
    records = read_journal(run_dir / JOURNAL, plan_ids)
    if len(plan_ids) > len(plan):  # episodes of committed shortlists join the plan, round-robin
        plan[:] = shortlist.ordered(plan_ids.values(), [m.name for m in campaign.models])
    for rec in records:
        previous = check.journal.get(rec.session)
        if previous is not None and previous.ended:  # a retry: count sessions by current state
            ledger.supersede(rec.model, previous.state)
        check.journal[rec.session] = rec
        if rec.ended:
            ledger.record_end(
                rec.model, rec.state, rec.cost_usd, certificates=int(rec.certificate), tokens=rec.tokens
            )
    t = now()
    for sid, rec in list(check.journal.items()):
        if rec.state != "running":
            continue
        flight = in_flight.get(sid)
        # No in-flight entry: the ledger was never saved with it, so no call was authorised.
        ours = flight is not None and flight.attempt == rec.attempt
        cost = flight.spent + flight.held if flight and ours else ZERO
        used = flight.counters if flight and ours else {}
        given = logical
        if campaign.protocol is not None and plan_ids[sid].triage:  # a triage has its own budget
            given = campaign.protocol.triage.limits()
        units = counters.nest(used, given.counters) if given else None
        end = rec.but(
            state="error",
            cost_usd=cost,
            result="error",
            reason=CRASHED,
            retryable=True,
            t=t,
            counters=units,
        )
        ledger.record_end(rec.model, "error", cost)
        check.journal[sid] = end
        check.reconciled.append(end)
    _check_nothing_forgotten(run_dir, saved, ledger)
    return check


def _check_nothing_forgotten(run_dir: Path, saved: SavedLedger, rebuilt: Ledger) -> None:
    """The journal must account for everything the saved ledger says was spent or done.

    The store writes journal lines before the ledger in every batch, so after any crash the
    journal knows at least what the ledger does; less means the journal was cut or replaced,
    and resuming would silently run finished sessions again and forget money (docs/design/invariants.md#f6, #f7).
    """
    for name, account in rebuilt.models.items():
        entry = saved.models.get(name)
        if entry is None and not (account.spent or account.done or account.errors or account.killed):
            continue  # a model the campaign grew by: nothing of it was saved yet, nothing forgotten
        if entry is None:
            raise BadInput(f"{run_dir / LEDGER}: corrupted ledger (model {name!r}); use --fresh")
        spent, done = entry.spent_usd, entry.done
        if account.spent < spent or account.done < done:
            raise BadInput(
                f"cannot resume {run_dir}: the ledger says {name} spent {fmt(spent)} in {done} done "
                f"sessions but {JOURNAL} accounts for {fmt(account.spent)} in {account.done} "
                "(the journal was cut or replaced); nothing was run: use --fresh to start over"
            )
