"""Per-model results files in the target benchmark's schema, derived from the journal.

Rows are the current attempt of every session that ran (done, error, killed), keyed by session
id, so a row can never appear twice; bulky details (certificates) come from
`outcomes/<model>.jsonl`, read one model at a time to keep memory flat. The files are written
from a `Snapshot` (immutable records and copied numbers), so a worker thread can write them
while the campaign goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchtui.core.atomic import atomic_write, gc_paused
from benchtui.core.outcome import OutcomeDetails
from benchtui.core.workspace import library_commit
from benchtui.engine.counting import Counted, counted_bugs
from benchtui.engine.ledger import Ledger
from benchtui.engine.plan import PlannedSession, slug
from benchtui.engine.records import RAN, JournalRecord
from benchtui.engine.results_format import INSTANCE_VIOLATIONS
from benchtui.engine.store import JOURNAL


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

    @classmethod
    def of(
        cls, plan: list[PlannedSession], journal: dict[str, JournalRecord], ledger: Ledger, fingerprint: str
    ) -> Snapshot:
        ran: dict[str, list[JournalRecord]] = {model: [] for model in ledger.models}
        for planned in plan:
            rec = journal.get(planned.id)
            if rec is not None and rec.state in RAN and not planned.triage:  # triage: no bug hunt
                ran[planned.model].append(rec)
        models = {
            name: ModelRun(account.spent, account.tokens, tuple(ran[name]))
            for name, account in ledger.models.items()
        }
        return cls(models, fingerprint)


def results_path(run_dir: Path, model: str) -> Path:
    return run_dir / "results" / f"{slug(model)}.json"


def up_to_date(run_dir: Path, models: list[str]) -> bool:
    """Every results file exists and was written after the journal's last change (like make)."""
    try:
        written = min(results_path(run_dir, m).stat().st_mtime_ns for m in models)
        return written >= (run_dir / JOURNAL).stat().st_mtime_ns
    except OSError:  # missing, or a results dir someone replaced with a file: rewrite (or say why not)
        return False


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
    """Rewrite every model's results file atomically; returns the paths written."""
    (run_dir / "results").mkdir(exist_ok=True)
    paths = []
    for model, ran in snapshot.models.items():
        with gc_paused():
            details = read_details(run_dir, model) if ran.records else {}
            rows = [_row(rec, details.get((rec.session, rec.attempt))) for rec in ran.records]
            del details
            data = json.dumps(build(model, rows, ran.spent, ran.tokens, snapshot.fingerprint)).encode()
        path = results_path(run_dir, model)
        atomic_write(path, data)
        paths.append(path)
    return paths
