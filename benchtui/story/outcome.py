"""An attempt's outcome details (`outcomes/<model>.jsonl`, read by `RunDir.details`) as a typed
record: the one place the viewer and the TUI read those dicts by key.

The details are what a runner's `SessionOutcome` carried past the journal's end line: the
certificate, the verifier's verdict (`verify_details`: status, reason, the checks' findings such as
`found_by`, and each certificate checked), and `extra` spread flat (the environment fingerprint
and the session copy's, the prompt's hash, the agent's exit status, resource limits hit, why a
call was charged its worst case, the node it ran on). When these become typed records
(`SessionOutcome.extra` as a model), this module is what changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KNOWN = ("session", "attempt", "certificate", "verify_details")
"""Keys that are not `extra` (the rest of a details row is)."""


@dataclass(frozen=True, slots=True)
class Checked:
    """One certificate the verifier judged: its status (accepted, rejected, inconclusive,
    off_task, unverified) and why."""

    status: str
    reason: str


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    reason: str
    judged_by: str
    """`verifier` or `runner` (fake and demo runners judge their own)."""
    verifier: str
    findings: dict[str, Any]
    """What the checks found (`found_by`, `path`, `round_trip`, `source_optimum`, `observed`, …)."""
    checked: list[Checked] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Outcome:
    certificate: dict[str, Any] | None
    verdict: Verdict | None
    environment: str
    """The target's fingerprint the attempt was given."""
    copy_fingerprint: str
    """The session copy's own fingerprint (the same target, as the worker saw it)."""
    prompt_sha256: str
    exit_status: str
    extra: dict[str, Any]
    """Everything else the runner said (limits hit, worst-case charges, node, …)."""


def outcome(row: dict[str, Any] | None) -> Outcome | None:
    """The typed details of one attempt (None: the attempt left none)."""
    if not isinstance(row, dict):
        return None
    cert = row.get("certificate")
    return Outcome(
        certificate=cert if isinstance(cert, dict) else None,
        verdict=_verdict(row.get("verify_details")),
        environment=_str(row.get("environment")),
        copy_fingerprint=_str(row.get("copy_fingerprint")),
        prompt_sha256=_str(row.get("prompt_sha256")),
        exit_status=_str(row.get("exit_status")),
        extra={
            k: v
            for k, v in row.items()
            if k not in KNOWN and k not in ("environment", "copy_fingerprint", "prompt_sha256", "exit_status")
        },
    )


def _verdict(raw: Any) -> Verdict | None:
    if not isinstance(raw, dict):
        return None
    findings = raw.get("details")
    checked = raw.get("checked")
    return Verdict(
        status=_str(raw.get("status")),
        reason=_str(raw.get("reason")),
        judged_by=_str(raw.get("judged_by")) or "verifier",
        verifier=_str(raw.get("verifier")),
        findings=findings if isinstance(findings, dict) else {},
        checked=[
            Checked(_str(c.get("status")), _str(c.get("reason")))
            for c in (checked if isinstance(checked, list) else [])
            if isinstance(c, dict)
        ],
    )


def certificates(raw: Any) -> list[tuple[Any, Verdict | None, str]]:
    """`attempt-N.certificates.json`: (certificate, its verdict, why it was not verified) in the
    order judged, submitted ones first."""
    out: list[tuple[Any, Verdict | None, str]] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict):
            refused = _str(item.get("refused"))
            out.append((item.get("certificate"), None if refused else _verdict(item.get("verdict")), refused))
    return out


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
