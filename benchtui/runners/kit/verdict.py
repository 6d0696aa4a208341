"""From a worker's report to a SessionOutcome: parse the certificates, verify each with `pred`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from benchtui.core.atomic import atomic_write
from benchtui.core.contract import SessionOutcome
from benchtui.targets.problem_reductions import Verdict, parse_block, verify_async
from benchtui.targets.problem_reductions.tasks import on_task

EXIT_REASONS = {
    "Submitted": "submitted without a certificate",
    "BudgetExhausted": "budget_exhausted",
    "LimitsExceeded": "step_limit",
    "TimeExceeded": "wall_time",
    "RepeatedFormatError": "format_errors",
    "ContextWindowExceeded": "context_window_exceeded",
    "Accepted": "a submitted certificate was accepted",
}


@dataclass
class WorkerReport:
    """What the engine learnt from one worker."""

    copy_fingerprint: str = ""
    prompt_sha256: str = ""
    start_error: str = ""
    done: dict[str, Any] | None = None
    authorisations: int = 0
    meter_wait_s: float = 0.0
    max_output_tokens: int = 0
    prompt_tokens: int = 0
    """Of the latest authorisation: with max_output_tokens, the worst case it held."""
    cgroup: str | None = None
    """The worker's pids cgroup, removed once it is gone."""
    worst_case: list[str] = field(default_factory=list)
    """Why each attempt charged its worst case (usage missing, unusable, timed out, …)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More for the session's details (e.g. the node a remote worker ran on)."""


def _base(fingerprint: str) -> str:
    """The target's identity in a fingerprint: commit or content hash (a clone is never dirty)."""
    return fingerprint.split()[0].removesuffix("+dirty") if fingerprint else ""


def _unique(blocks: list[str]) -> list[tuple[dict[str, Any] | None, str, str]]:
    """(certificate or None, why malformed, raw block), first occurrence of each certificate."""
    seen, out = set(), []
    for raw in blocks:
        cert, problem = parse_block(raw)
        key = json.dumps(cert, sort_keys=True) if cert is not None else raw.strip()
        if key not in seen:
            seen.add(key)
            out.append((cert, problem, raw))
    return out


async def verify_certificate(cert: dict[str, Any], *, pred: str, timeout: float) -> Verdict:
    """The verifier's verdict; a certificate it cannot even handle is the model's malformed output
    (final), never a crash of the session (retried, and paid again, on every --resume)."""
    try:
        return await verify_async(cert, pred=pred, timeout=timeout)
    except Exception as exc:  # RecursionError included
        return Verdict(
            "rejected",
            f"malformed certificate: {type(exc).__name__}: {str(exc)[:200]}",
            {"cause": "malformed"},
        )


async def judge(
    report: WorkerReport,
    *,
    fingerprint: str,
    pred: str | None,
    timeout: float,
    max_certificates: int,
    certificates_file: Path,
    admit: Callable[[], Awaitable[str | None]] | None = None,
    task: str | None = None,
    submitted: list[tuple[dict[str, Any] | None, Verdict]] | None = None,
) -> SessionOutcome:
    """The session's outcome; `admit` takes a `submits` unit before each certificate is verified
    (None when granted, else a refusal: that certificate and the later ones are not verified).
    `submitted`: what `submit FILE` verified during the session (in order, each already paid a
    unit); they come first, and a printed block that repeats one is not verified again.
    `pred=None`: the campaign's target has no verifier; well-formed certificates are recorded
    unverified (the session ends `no_certificate`: nothing confirmed, nothing rejected).

    With the session's `task`, a certificate the verifier accepts for another rule is `off_task`:
    kept and shown (status `off_task` in `checked`), never the session's bug."""
    extra = {
        "environment": fingerprint,
        "copy_fingerprint": report.copy_fingerprint,
        "prompt_sha256": report.prompt_sha256,
        **report.extra,
    }
    if report.worst_case:  # docs/design/invariants.md#f6: each charge above the usage reported, and why
        extra["worst_case_charges"] = len(report.worst_case)
        extra["worst_case_reasons"] = report.worst_case[:20]
    if report.authorisations:
        extra["meter_wait_ms"] = round(1000 * report.meter_wait_s / report.authorisations, 3)
    if report.start_error:
        return SessionOutcome("error", reason=report.start_error, infra_error=True, extra=extra)
    done = report.done
    if done is None:
        return SessionOutcome(
            "error", reason="the worker ended without a report (see its log)", infra_error=True, extra=extra
        )
    steps, status = int(done.get("steps") or 0), str(done.get("exit_status") or "")
    extra["exit_status"] = status
    if done.get("limits"):  # resource limits hit: output cut, processes or disk (then it ended)
        extra["limits_hit"] = [str(hit)[:300] for hit in done["limits"]][:51]
    if done.get("meter_rtt_ms") is not None and report.authorisations:
        extra["meter_rtt_ms"] = done["meter_rtt_ms"]  # the worker's view: socket + engine
    if report.copy_fingerprint and _base(report.copy_fingerprint) != _base(fingerprint):
        return SessionOutcome(
            "error",
            steps=steps,
            infra_error=True,
            extra=extra,
            reason=f"the session copy ({report.copy_fingerprint}) is not the target ({fingerprint})",
        )
    checked: list[tuple[dict[str, Any] | None, Verdict]] = list(submitted or [])
    refused: list[dict[str, Any]] = []
    # Parsing megabytes of hostile blocks takes a while: never on the engine's event loop.
    unique = await trio.to_thread.run_sync(_unique, [str(b) for b in done.get("blocks") or []])
    seen = {json.dumps(c, sort_keys=True) for c, _ in checked if c is not None}
    unique = [u for u in unique if u[0] is None or json.dumps(u[0], sort_keys=True) not in seen]
    if any(v.accepted for _, v in checked):
        unique = []  # the session's bug is found: nothing more to verify
    if pred is None:
        return await _unverified(unique[:max_certificates], steps, extra, certificates_file)
    for cert, problem, raw in unique[: max(0, max_certificates - len(checked))]:
        why = refused[0]["refused"] if refused else (await admit() if admit else None)
        if why is not None:  # past the session's submits: recorded, never verified
            refused.append({"certificate": cert if cert is not None else raw[:2000], "refused": why})
            continue
        verdict = (
            await verify_certificate(cert, pred=pred, timeout=timeout)
            if cert is not None
            else Verdict("rejected", f"malformed certificate: {problem}", {"cause": "malformed"})
        )
        if verdict.accepted and task and cert is not None and not on_task(cert, task):
            verdict = Verdict(
                "rejected",
                f"off_task: the certificate is for {str(cert.get('rule'))[:200]!r}, not this session's "
                f"task {task!r} (the verifier: {verdict.reason})",
                {**verdict.details, "cause": "off_task", "task": task},
            )
        checked.append((cert, verdict))
        if verdict.accepted:
            break
    if refused:
        extra["certificates_refused"] = len(refused)
    if checked or refused:
        data = json.dumps(
            [{"certificate": c, "verdict": v.to_json()} for c, v in checked] + refused, indent=1, default=str
        )
        await trio.to_thread.run_sync(atomic_write, certificates_file, data.encode())
    summary = [
        {"status": "off_task" if v.details.get("cause") == "off_task" else v.status, "reason": v.reason}
        for _, v in checked
    ]
    for cert, verdict in checked:
        if verdict.accepted:
            return SessionOutcome(
                "bug_found",
                reason=verdict.reason,
                steps=steps,
                certificate=cert,
                verify_details={**verdict.to_json(), "checked": summary},
                extra=extra,
            )
    if done.get("infra_error"):
        return SessionOutcome(
            "error", reason=str(done.get("error")), steps=steps, infra_error=True, extra=extra
        )
    if done.get("collect_problem"):
        extra["collect_problem"] = str(done["collect_problem"])[:300]
    if checked:
        if all(v.details.get("cause") == "pred_missing" for _, v in checked):
            return SessionOutcome(  # the verifier's tool is missing, not the model's doing
                "error",
                reason=f"cannot verify: {checked[0][1].reason}",
                steps=steps,
                extra=extra,
                infra_error=True,
            )
        # A malformed certificate is not handed on as one: the results schema admits only the
        # benchmark's certificate shape (its own text stays in certificates.json).
        well_formed = [(c, v) for c, v in checked if v.details.get("cause") != "malformed"]
        off = [(c, v) for c, v in well_formed if v.details.get("cause") == "off_task"]
        cert, verdict = (off or well_formed)[0] if well_formed else (None, checked[0][1])
        return SessionOutcome(
            "rejected",
            reason=verdict.reason,
            steps=steps,
            certificate=cert,
            verify_details={**verdict.to_json(), "checked": summary},
            extra={**extra, "reject_reason": verdict.reason},
        )
    if done.get("collect_problem"):
        # A certificates file the agent made a link, a FIFO, a device, too large…: its outcome
        # (final), never the engine's error (retried, and paid again, on every --resume).
        why = f"certificates not collected: {str(done['collect_problem'])[:300]}"
        return SessionOutcome("rejected", reason=why, steps=steps, extra={**extra, "reject_reason": why})
    reason = EXIT_REASONS.get(status, status or "no certificate")
    if status == "ResourceLimit":
        reason = f"resource_limit: {str(done.get('limits', ['?'])[-1]).split(': ', 1)[-1]}"
    return SessionOutcome(
        "no_certificate",
        reason=reason,
        steps=steps,
        extra=extra,
    )


UNVERIFIED = 'unverified: the campaign\'s target has no verifier ([target] kind = "none")'


async def _unverified(
    unique: list[tuple[dict[str, Any] | None, str, str]],
    steps: int,
    extra: dict[str, Any],
    certificates_file: Path,
) -> SessionOutcome:
    """The outcome of a session on a target without a verifier: its certificates, unverified."""
    certs = [cert for cert, _, _ in unique if cert is not None]
    if not certs:
        reason = EXIT_REASONS.get(str(extra.get("exit_status")), "no certificate")
        return SessionOutcome("no_certificate", reason=reason, steps=steps, extra=extra)
    checked = [{"status": "unverified", "reason": UNVERIFIED} for _ in certs]
    data = json.dumps(
        [{"certificate": c, "verdict": v} for c, v in zip(certs, checked, strict=True)], indent=1
    )
    await trio.to_thread.run_sync(atomic_write, certificates_file, data.encode())
    return SessionOutcome(
        "no_certificate",
        reason=f"{len(certs)} certificate{'s' if len(certs) != 1 else ''} {UNVERIFIED}",
        steps=steps,
        certificate=certs[0],
        verify_details={"status": "unverified", "reason": UNVERIFIED, "checked": checked},
        extra={**extra, "unverified_certificates": len(certs)},
    )
