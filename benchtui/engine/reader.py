"""The one reader of a run dir: its frozen campaign, identity, ledger, journal and details.

`--resume` (checkpoint), the closing lines and `ctl status` of a run nobody runs (cli/closing,
cli/ctl), `benchtui report` (report/runs) and the TUI's detail pane read a run dir through a
`RunDir`: every read bounded (core/inputs), every file's format checked (a newer one is refused
in one line), and reading a stopped run never needs its target checkout (the frozen campaign is
loaded without it). What it says comes from the journal, the run's durable record: the ledger
and the details as the journal has them, whatever a crash left in their derived files. The files
and their formats: docs/reference/rundir.md.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

from benchtui.core import inputs
from benchtui.core.outcome import OutcomeDetails
from benchtui.engine import campaign as campaign_file
from benchtui.engine import checkpoint, identity_file, rundir, shortlist
from benchtui.engine import journal as wal
from benchtui.engine.campaign import Campaign, slug
from benchtui.engine.ledger import ControlState, SavedLedger
from benchtui.engine.plan import PlannedSession, build_plan
from benchtui.engine.records import JournalRecord
from benchtui.engine.store import JOURNAL, OUTCOMES

DETAILS_MAX_BYTES = 1024 * 1024 * 1024
"""outcomes/<model>.jsonl: a line per ended attempt (a few KB each, certificates included)."""


class RunDir:
    """A run dir on disk, read lazily; each part is read once per `RunDir`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @cached_property
    def campaign(self) -> Campaign:
        """The frozen campaign (loaded without its target: a stopped run is readable anywhere)."""
        rundir.require(self.path)
        return campaign_file.load(identity_file.frozen(self.path), require_target=False)

    @cached_property
    def record(self) -> identity_file.RunIdentity:
        """identity.json: the identity's hashes and the run's history (its start, each extension)."""
        return identity_file.read(self.path)

    @property
    def identity(self) -> dict[str, str]:
        return self.record.digests

    @cached_property
    def plan(self) -> list[PlannedSession]:
        return build_plan(self.campaign)

    @cached_property
    def ledger(self) -> SavedLedger:
        """The ledger as the journal says it now: what ledger.toml holds once brought up to date
        (attempts in flight still open). Only a journal of format 1 needs ledger.toml itself."""
        journal = self._journal
        saved, _ = checkpoint.judge_saved(self.path, journal, self._ledger_file)
        book, _ = checkpoint.rebuild(self.campaign, journal, saved)
        if saved is not None:
            book.control = saved.control
        else:
            book.control = ControlState(
                self.campaign.name, self.campaign.runner, False, self.campaign.parallelism
            )
        book.control.runner = journal.runner or book.control.runner
        return book.saved(journal.size)

    @cached_property
    def _ledger_file(self) -> checkpoint.LedgerFile:
        return checkpoint.read_ledger_file(self.path)

    @cached_property
    def _journal(self) -> wal.Journal:
        plan_ids = self._plan_ids
        self._ledger_file  # noqa: B018 (first: see read_ledger_file)
        journal = wal.read(self.path / JOURNAL, plan_ids)
        if len(plan_ids) > len(self.plan):  # a shortlist campaign's episodes join the plan
            self.plan[:] = shortlist.ordered(plan_ids.values(), [m.name for m in self.campaign.models])
        return journal

    @cached_property
    def _plan_ids(self) -> dict[str, PlannedSession]:
        return {s.id: s for s in self.plan}

    @property
    def journal(self) -> list[JournalRecord]:
        """Every session line of the journal, typed, in order (the reader `--resume` uses)."""
        return self._journal.records

    def checkpoint(self) -> checkpoint.Checkpoint:
        """Where the run stands, read-only: accounts rebuilt from the journal, in-flight
        attempts ended as the errors `--resume` will record."""
        journal = self._journal
        return checkpoint.reconcile(self.path, self.campaign, journal, self._ledger_file, self._plan_ids)

    def details(self, model: str) -> dict[tuple[str, int], OutcomeDetails]:
        """The outcome details of a model's attempts by (session, attempt): the journal's details
        lines, and those older releases kept only in `outcomes/<model>.jsonl` (or in the single
        `outcomes.jsonl` of runs saved before results were split by model)."""
        details = self._older_details(model)
        details.update(wal.details_of(self.path / JOURNAL, model))
        return details

    def _older_details(self, model: str) -> dict[tuple[str, int], OutcomeDetails]:
        path = self.path / OUTCOMES / f"{slug(model)}.jsonl"
        if not (self.path / OUTCOMES).is_dir() and (self.path / f"{OUTCOMES}.jsonl").exists():
            path = self.path / f"{OUTCOMES}.jsonl"
        try:
            lines = inputs.read_bytes(path, DETAILS_MAX_BYTES, "the outcome details").split(b"\n")
        except FileNotFoundError:
            return {}
        details: dict[tuple[str, int], OutcomeDetails] = {}
        for line in lines:
            if line.startswith(wal.DETAILS.encode()):
                continue  # a copy of the journal's line
            try:
                rec = OutcomeDetails.from_json(json.loads(line))
            except (ValueError, RecursionError):
                continue  # a torn last line
            if rec.model in (None, model):  # the single file of old runs holds every model's
                details[rec.session, rec.attempt] = rec
        return details

    def latest_detail(self, session: str, model: str) -> OutcomeDetails | None:
        """The outcome details of the latest ended attempt of `session` (the TUI's detail pane)."""
        found = [(attempt, rec) for (sid, attempt), rec in self.details(model).items() if sid == session]
        return max(found, key=lambda pair: pair[0])[1] if found else None
