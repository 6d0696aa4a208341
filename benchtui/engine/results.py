"""Per-model results files in the target benchmark's schema, derived from the journal.

Rows are the current attempt of every session that ran (done, error, killed), keyed by session
id, so a row can never appear twice; bulky details (certificates) come from the journal's details
lines, read one model at a time to keep memory flat. The files are written from a `Snapshot`
(immutable records and copied numbers, and the journal position they reflect), so a worker
thread can write them while the campaign goes on.

The benchmark's format admits no key of ours at the top of a results file, so what the files were
derived from is said beside them: `results.position` holds the journal position the snapshot
reflected and each file's sha256. They are up to date when that position is the journal's size
and every file is the one written then; never by modification times (a refresh that took its
snapshot before the last session's end and finished writing after it is newer than the journal,
yet misses that session). Not fsynced: a power cut may leave any of them old or torn, and the next
open rewrites them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchtui.core import inputs
from benchtui.core.atomic import atomic_write, gc_paused
from benchtui.core.errors import BenchtuiError
from benchtui.core.outcome import OutcomeDetails
from benchtui.core.workspace import library_commit
from benchtui.engine.counting import Counted, counted_bugs
from benchtui.engine.ledger import Ledger
from benchtui.engine.plan import PlannedSession, slug
from benchtui.engine.records import RAN, JournalRecord
from benchtui.engine.results_format import INSTANCE_VIOLATIONS

POSITION = "results.position"
"""Beside `results/`: `{"journal_bytes": N, "sha256": {"<file>": "<hex>", …}}`."""


@dataclass(frozen=True, slots=True)
class ModelRun:
    """One model's sessions that ran (current records, in plan order) and its totals."""

    spent: Decimal
    tokens: int
    records: tuple[JournalRecord, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    models: dict[str, ModelRun]
    fingerprint: str
    journal_bytes: int
    """The journal position this snapshot reflects (its size once what was queued is written)."""

    @classmethod
    def of(
        cls,
        plan: list[PlannedSession],
        journal: dict[str, JournalRecord],
        ledger: Ledger,
        fingerprint: str,
        journal_bytes: int,
    ) -> Snapshot:
        ran: dict[str, list[JournalRecord]] = {model: [] for model in ledger.models}
        for planned in plan:
            rec = journal.get(planned.id)
            if rec is not None and rec.state in RAN and not planned.triage:  # triage: no bug hunt
                ran[planned.model].append(rec)
        models = {
            name: ModelRun(account.spent_usd, account.tokens, tuple(ran[name]))
            for name, account in ledger.models.items()
        }
        return cls(models, fingerprint, journal_bytes)


def results_path(run_dir: Path, model: str) -> Path:
    return run_dir / "results" / f"{slug(model)}.json"


def up_to_date(run_dir: Path, models: list[str], journal_bytes: int) -> bool:
    """The results files reflect the journal's first `journal_bytes` bytes (its size now) and
    each is the file written then."""
    try:
        said = inputs.loads_json(inputs.read_text(run_dir / POSITION, inputs.SMALL_MAX_BYTES, "positions"))
        if not isinstance(said, dict) or said.get("journal_bytes") != journal_bytes:
            return False
        digests = said.get("sha256")
        return isinstance(digests, dict) and all(
            digests.get(path.name) == _sha256(inputs.read_bytes(path, None, "results"))
            for path in (results_path(run_dir, m) for m in models)
        )
    except (OSError, ValueError, BenchtuiError):  # missing, torn, not a file: rewrite (or say why not)
        return False


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_details(run_dir: Path, model: str) -> dict[tuple[str, int], OutcomeDetails]:
    """The outcome details of a model's attempts (the run dir's one reader: engine.reader)."""
    from benchtui.engine.reader import RunDir

    return RunDir(run_dir).details(model)


def is_schema_certificate(cert: Any) -> bool:
    """The shape the results schema requires; which violation names exist is the runner's business
    (its verifier rejects unknown ones as malformed and never hands them on as certificates)."""
    return (
        isinstance(cert, dict)
        and isinstance(cert.get("rule"), str)
        and isinstance(cert.get("violation"), str)
        and cert["violation"] not in INSTANCE_VIOLATIONS
        and isinstance(cert.get("source"), dict)
        and isinstance(cert.get("bundle"), dict)
    )


def is_instance_certificate(cert: Any) -> bool:
    """A rule that fails on a valid instance: a rule and a source (a row's `instance_certificate`)."""
    return (
        isinstance(cert, dict)
        and isinstance(cert.get("rule"), str)
        and cert.get("violation") in INSTANCE_VIOLATIONS
        and isinstance(cert.get("source"), dict)
    )


def _row(rec: JournalRecord, detail: OutcomeDetails | None) -> tuple[dict[str, Any], Counted]:
    """A results row, and what the one count needs of it."""
    result = rec.result or "error"
    cert = detail.certificate if detail else None
    judgement = detail.judgement if detail else None
    row = {
        "rule": rec.task or (cert or {}).get("rule") or "library",
        "result": result,
        "cost": float(rec.cost_usd),
        "tokens_k": rec.tokens / 1000,
        "steps": rec.steps,
        "session": rec.session,
        "attempt": rec.attempt,
        "state": rec.state,
        "reason": rec.reason,
    }
    if rec.usage is not None:
        row["usage"] = dict(rec.usage)
    if rec.ending is not None:
        row["ending"] = rec.ending.name
    if result in ("bug_found", "rejected") and is_schema_certificate(cert):
        row["certificate"] = cert
    elif result in ("bug_found", "rejected") and is_instance_certificate(cert):
        row["instance_certificate"] = cert
    if judgement is not None:
        row["verify_details"] = judgement.to_json()
    if result == "rejected":
        row["reject_reason"] = (detail.facts.reject_reason if detail else None) or rec.reason
    return row, Counted(result, str(row["rule"]), None, judgement)


def build(
    model: str, rows: list[tuple[dict[str, Any], Counted]], spent: Decimal, tokens: int, fingerprint: str
) -> dict[str, Any]:
    # The one count (engine.counting): distinct rules, a tasked session's bug counted for its task;
    # verified bugs, or the runner's claims where it has no verifier (fake, demo).
    bugs, _ = counted_bugs(counted for _, counted in rows)
    cost, tokens_k = float(spent), tokens / 1000
    return {
        "model": model,
        "library_commit": library_commit(fingerprint),
        "bugs_found": len(bugs),
        "total_cost_usd": cost,
        "total_tokens_k": tokens_k,
        "efficiency_bugs_per_ktok": len(bugs) / tokens_k if tokens_k else 0.0,
        "efficiency_bugs_per_dollar": len(bugs) / cost if cost else 0.0,
        "rules_tested": len({r["rule"] for r, _ in rows}),
        "results": [r for r, _ in rows],
    }


def write_all(run_dir: Path, snapshot: Snapshot) -> list[Path]:
    """Rewrite every model's results file atomically, then what they reflect; returns the paths
    written."""
    (run_dir / "results").mkdir(exist_ok=True)
    paths, digests = [], {}
    for model, ran in snapshot.models.items():
        with gc_paused():
            details = read_details(run_dir, model) if ran.records else {}
            rows = [_row(rec, details.get((rec.session, rec.attempt))) for rec in ran.records]
            del details
            data = json.dumps(build(model, rows, ran.spent, ran.tokens, snapshot.fingerprint)).encode()
        path = results_path(run_dir, model)
        atomic_write(path, data, durable=False)
        paths.append(path)
        digests[path.name] = _sha256(data)
    position = {"journal_bytes": snapshot.journal_bytes, "sha256": digests}
    atomic_write(run_dir / POSITION, json.dumps(position, indent=1).encode(), durable=False)
    return paths
