"""Read run dirs for a report, never writing into them: the frozen campaign, identity, ledger,
journal and outcome details, folded into one `SessionHistory` per session.

Works on finished, stopped and running campaigns alike: the journal is append-only (a torn last
line is ignored), the ledger is replaced by rename, so a reader sees a consistent state.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchtui.core import counters
from benchtui.core.endings import SessionEnding
from benchtui.core.errors import BadInput
from benchtui.core.money import ZERO
from benchtui.core.outcome import Judgement, OutcomeDetails
from benchtui.engine.campaign import Campaign, Model
from benchtui.engine.checkpoint import CRASHED
from benchtui.engine.identity_file import RunIdentity
from benchtui.engine.plan import PlannedSession
from benchtui.engine.reader import RunDir
from benchtui.engine.records import JournalRecord, ProviderCost
from benchtui.engine.store import JOURNAL

RAN = ("done", "error", "killed")


@dataclass(slots=True)
class SessionHistory:
    """One planned session of one run, as the journal (and its outcome details) tell it."""

    run: str
    planned: PlannedSession
    state: str = "pending"
    result: str | None = None
    retryable: bool = False
    attempt: int = 0
    runner: str | None = None
    reserved_usd: Decimal | None = None
    environment: str | None = None
    started: float | None = None
    ended: float | None = None
    tokens: int = 0
    """Over every attempt: tokens an interrupted attempt used were spent all the same."""
    usage: dict[str, int] = field(default_factory=dict)
    """`tokens` by bucket (input, cache_read, cache_write, output, reasoning), over every attempt
    (attempts written before buckets add nothing here)."""
    provider_cost: ProviderCost | None = None
    """Over every attempt: what the provider said its calls cost, beside ours (where it said)."""
    certificate: dict[str, Any] | None = None
    judgement: Judgement | None = None
    prompt_sha256: str | None = None
    counters: dict[str, int] | None = None
    """Logical budget units the last attempt used, by flat counter name (None: no logical budget)."""
    exhausted: tuple[str, ...] = ()
    """Counters whose limit refused a unit in the last attempt."""
    submitted: bool = False
    """The last attempt ended with a certificate."""
    throttled: int = 0
    """Over every attempt: 429 answers its provider gave it."""
    throttle_wait_s: float = 0.0
    """Over every attempt: seconds it waited for its provider's shared backoff after a 429."""
    ending: SessionEnding | None = None
    """Why its last attempt ended (core/endings.py); None while it has not ended."""

    @property
    def ran(self) -> bool:
        return self.state in RAN

    @property
    def infra_error(self) -> bool:
        return self.state == "error" and self.retryable

    @property
    def wall_s(self) -> float | None:
        if self.ran and self.started is not None and self.ended is not None:
            return max(self.ended - self.started, 0.0)
        return None


@dataclass
class RecordedRun:
    path: Path
    campaign: Campaign
    identity: dict[str, str]
    spent: dict[str, Decimal]
    wasted: dict[str, Decimal]
    sessions: list[SessionHistory]
    ends: list[JournalRecord] = field(default_factory=list)
    """Every attempt's end line (cost, time), in journal order: the spend over time."""
    t0: float | None = None
    """When the run's first journal line was written."""
    triages: dict[str, JournalRecord] = field(default_factory=dict)
    """A shortlist campaign: each model's triage, its last journal line (the shortlist it
    committed, the refused entries); the triage is not among `sessions` (it hunts no bug)."""
    record: RunIdentity = field(default_factory=lambda: RunIdentity({}))
    """identity.json's history: the run's start and each extension (empty for older runs)."""
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per model, the times of its first and last journal line in this run."""


MAX_TIME = 10**11
"""Seconds since 1970 (the year 5138): a later time is a tampered journal."""


def identity_key(identity: dict[str, str]) -> str:
    """One short string for the whole identity (its parts are hashes already)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def read_run(run_dir: Path) -> RecordedRun:
    saved = RunDir(run_dir)
    journal = saved.journal  # first: a shortlist campaign's episodes join the plan as it is read
    campaign, identity, plan = saved.campaign, saved.identity, saved.plan
    accounts = saved.ledger.models
    spent = {m: a.spent_usd for m, a in accounts.items()}
    wasted = {m: a.wasted_usd for m, a in accounts.items()}
    views = {s.id: SessionHistory(str(run_dir), s) for s in plan}
    hunts = [v for v in views.values() if not v.planned.triage]  # a triage hunts no bug
    run = RecordedRun(run_dir, campaign, identity, spent, wasted, hunts, record=saved.record)
    starts: dict[tuple[str, int], JournalRecord] = {}
    for rec in journal:
        if not (isinstance(rec.t, int | float) and 0 <= rec.t <= MAX_TIME):  # inf: inf wall times
            raise BadInput(f"{run_dir / JOURNAL}: session {rec.session}: not a plausible time t = {rec.t!r}")
        view = views[rec.session]
        if view.planned.triage:
            run.triages[rec.model] = rec
        if run.t0 is None:
            run.t0 = rec.t
        first, last = run.spans.get(rec.model, (rec.t, rec.t))
        run.spans[rec.model] = (min(first, rec.t), max(last, rec.t))
        if rec.state == "running":
            starts[view.planned.id, rec.attempt] = rec
        else:
            run.ends.append(rec)
            view.tokens += rec.tokens
            for bucket, count in (rec.usage or {}).items():
                view.usage[bucket] = view.usage.get(bucket, 0) + count
            if rec.provider_cost is not None:
                theirs = rec.provider_cost
                was = view.provider_cost or ProviderCost()
                view.provider_cost = was.plus(theirs.usd, theirs.ours_usd, theirs.calls)
            if rec.throttling is not None:  # what its provider's 429s cost (the engine's meter)
                view.throttled += rec.throttling.answers
                view.throttle_wait_s += rec.throttling.wait_s
        _take(view, rec, starts.get((view.planned.id, rec.attempt)))
    by_model: dict[str, list[SessionHistory]] = defaultdict(list)
    for view in views.values():
        if view.ran:
            by_model[view.planned.model].append(view)
    for model, ran in by_model.items():
        details = saved.details(model)
        for view in ran:
            _take_details(view, details.get((view.planned.id, view.attempt)))
    return run


def _take(view: SessionHistory, rec: JournalRecord, start: JournalRecord | None) -> None:
    """The last line of a session is its state; its attempt's `running` line says how it started."""
    view.state, view.attempt = rec.state, rec.attempt
    view.result, view.retryable = rec.result, rec.retryable
    view.runner = rec.runner or None
    # An attempt ended by a later --resume (interrupted) has no meaningful wall time.
    view.ended = rec.t if rec.state != "running" and rec.reason != CRASHED else None
    view.reserved_usd = start.reserved_usd if start else None
    view.environment = start.environment if start else None
    view.started = start.t if start else None
    view.certificate = view.judgement = view.prompt_sha256 = None
    ended = rec.state != "running"
    view.counters = counters.flat(rec.counters) if ended and rec.counters is not None else None
    view.exhausted = rec.exhausted if ended else ()
    view.submitted = ended and rec.certificate
    view.ending = rec.ending if ended else None


def _take_details(view: SessionHistory, detail: OutcomeDetails | None) -> None:
    if detail is None:
        return
    view.certificate = detail.certificate
    view.judgement = detail.judgement
    view.prompt_sha256 = detail.facts.prompt_sha256 or None


def read_runs(run_dirs: list[Path]) -> list[RecordedRun]:
    """The runs to pool (whether they may be pooled: report/pooling.py)."""
    return [read_run(path) for path in run_dirs]


def models_of(runs: list[RecordedRun]) -> list[Model]:
    """Every model of the pooled runs, in the order they first appear (a campaign's own order
    first); a model's table as the first run that has it gives it."""
    found: dict[str, Model] = {}
    for run in runs:
        for model in run.campaign.models:
            found.setdefault(model.name, model)
    return list(found.values())


def sessions_by_model(runs: list[RecordedRun]) -> dict[str, list[SessionHistory]]:
    """Every session of the pooled runs, by model, in campaign order of the models (a model in
    several runs: its sessions of each, in the order the runs were given)."""
    grouped: dict[str, list[SessionHistory]] = {m.name: [] for m in models_of(runs)}
    for run in runs:
        for view in run.sessions:
            grouped[view.planned.model].append(view)
    return grouped


def total(values: list[Decimal]) -> Decimal:
    return sum(values, ZERO)
