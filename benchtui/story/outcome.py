"""An attempt's outcome as the viewer and the TUI show it, from the typed records of the run dir
(`core.outcome.OutcomeDetails`, read by `RunDir.details`; `attempt-N.certificates.json` through
`core.target.Verdict.from_json`): the certificate, the verifier's verdict with what its checks
found (`found_by`, the cause, the evidence), each certificate checked, and the session's facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchtui.core.outcome import Judgement, Looked, OutcomeDetails
from benchtui.core.target import Verdict


@dataclass(frozen=True, slots=True)
class Checked:
    """One certificate the verifier judged: its status (accepted, rejected, inconclusive,
    off_task, unverified) and why."""

    status: str
    reason: str


@dataclass(frozen=True, slots=True)
class ShownVerdict:
    status: str
    reason: str
    judged_by: str
    """`verifier` or `runner` (fake and demo runners judge their own)."""
    verifier: str
    findings: dict[str, Any]
    """What the checks found, as a table to show (`cause`, `found_by`, `path`, `round_trip`, …)."""
    checked: list[Checked] = field(default_factory=list)
    cause: str = ""
    """One of the closed set (core/target.py `Cause`)."""
    found_by: str = ""
    """The route that showed the bug, when it is one."""


@dataclass(frozen=True, slots=True)
class Outcome:
    certificate: dict[str, Any] | None
    verdict: ShownVerdict | None
    environment: str
    """The target's fingerprint the attempt was given."""
    copy_fingerprint: str
    """The session copy's own fingerprint (the same target, as the worker saw it)."""
    prompt_sha256: str
    exit_status: str
    extra: dict[str, Any]
    """Everything else the runner said (limits hit, worst-case charges, node, …)."""


SHOWN_APART = ("environment", "copy_fingerprint", "prompt_sha256", "exit_status")


def outcome(row: OutcomeDetails | None) -> Outcome | None:
    """The shown details of one attempt (None: the attempt left none)."""
    if row is None:
        return None
    facts = row.facts.as_json()
    return Outcome(
        certificate=row.certificate,
        verdict=_shown(row.judgement.verdict, row.judgement) if row.judgement else None,
        environment=row.facts.environment or "",
        copy_fingerprint=row.facts.copy_fingerprint or "",
        prompt_sha256=row.facts.prompt_sha256 or "",
        exit_status=row.facts.exit_status or "",
        extra={k: v for k, v in facts.items() if k not in SHOWN_APART},
    )


def _shown(verdict: Verdict, judgement: Judgement | None = None) -> ShownVerdict:
    findings = {"cause": verdict.cause, **dict(verdict.evidence)}
    if verdict.found_by:
        findings["found_by"] = verdict.found_by
    return ShownVerdict(
        status=verdict.status,
        reason=verdict.reason,
        judged_by=verdict.judged_by,
        verifier=verdict.verifier,
        findings=findings,
        checked=[Checked("off_task" if c.off_task else c.status, c.reason) for c in judgement.checked]
        if judgement
        else [],
        cause=verdict.cause,
        found_by=verdict.found_by,
    )


def certificates(raw: Any) -> list[tuple[Any, ShownVerdict | None, str]]:
    """`attempt-N.certificates.json`: (certificate, its verdict, why it was not verified) in the
    order judged, submitted ones first (each entry through its one decoder, `Looked`)."""
    looked = [entry for item in (raw if isinstance(raw, list) else []) if (entry := Looked.from_json(item))]
    return [(e.certificate, _shown(e.verdict) if e.verdict else None, e.refused) for e in looked]
