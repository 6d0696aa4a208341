"""From a session's end report to a SessionOutcome: find its certificates, verify each, classify.

The steps, each small: `facts` (what the report says of how the session ran), `found` (the
distinct certificates it printed, less those `submit` verified already), `verify_each` (a
`submits` unit, then the target's verdict, off-task where the session has a task), and
`classify` (the session's result from the verdicts and its end). The target is the campaign's
(core/target.py): a target without a verifier gives `unverified` verdicts, recorded as claims of
nothing (the session ends `no_certificate`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import trio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchtui.core.atomic import atomic_write
from benchtui.core.certificates import identity_key
from benchtui.core.endings import FORMAT_ERRORS, Ending
from benchtui.core.outcome import Checked, Judgement, Looked, SessionFacts, SessionOutcome
from benchtui.core.target import TargetKind, TargetTools, Verdict, malformed

EXIT_REASONS = {
    "Submitted": "submitted without a certificate",
    "BudgetExhausted": "budget_exhausted",
    "LimitsExceeded": "step_limit",
    "TimeExceeded": "wall_time",
    "RepeatedFormatError": "format_errors",
    "ContextWindowExceeded": "context_window_exceeded",
    "Accepted": "a submitted certificate was accepted",
}
EXIT_ENDINGS: dict[str, Ending] = {
    "Submitted": "model_done",
    "BudgetExhausted": "budget_exhausted",
    "LimitsExceeded": "step_limit",
    "TimeExceeded": "wall_time",
    "ContextWindowExceeded": "context_window",
    "Accepted": "found",
    "ResourceLimit": "resource_limit",
    "ApiError": "provider_error",
    "ParentGone": "runner_error",
    "WorkerError": "runner_error",
    "exit 0": "model_done",
}
"""Why a session ended, by its exit status (mini-swe-agent's, or an agent CLI's `exit N`)."""


def ending_of_exit(done: WorkerDone) -> Ending:
    if done.exit_status == "RepeatedFormatError":  # which format error: the last one's kind
        return done.format_error if done.format_error in FORMAT_ERRORS else "unstated"
    if done.exit_status.startswith("exit "):  # an agent CLI: 0 it said it was done, else it failed
        return EXIT_ENDINGS.get(done.exit_status, "agent_failed")
    return EXIT_ENDINGS.get(done.exit_status, "unstated")


class WorkerDone(BaseModel):
    """A session's end report: written by the mini-swe-agent worker (sent as its `done` message)
    and by the command runner, read here. Unknown keys (another version's) are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    exit_status: str = ""
    """How the agent loop ended (mini-swe-agent's exit status, `exit 3`, `ResourceLimit`…)."""
    steps: int = Field(default=0, ge=0)
    blocks: list[str] = Field(default_factory=list)
    """Certificate blocks the agent printed (raw text), in order."""
    limits: list[str] = Field(default_factory=list)
    """Resource limits hit (output cut, processes, disk); the last one ended the session."""
    error: str | None = None
    infra_error: bool = False
    """The machinery failed (the model API after retries, the worker): retried on resume."""
    meter_rtt_ms: float | None = None
    collect_problem: str = ""
    """What was wrong with a collected file (certificates.jsonl a link, a FIFO, too large…)."""
    format_error: str = ""
    """The kind of the last answer the agent could not act on (`no_action`, `malformed_action`,
    `several_actions`, `empty_answer`), what a RepeatedFormatError was; with `format_detail`."""
    format_detail: str = ""
    actions: int | None = Field(default=None, ge=0)
    """Shell commands the model's answers ran (None: not counted, e.g. an agent CLI)."""

    @classmethod
    def read(cls, message: dict[str, Any]) -> WorkerDone | str:
        """The report in a worker's message, or why it is unreadable."""
        try:
            return cls.model_validate(message)
        except ValidationError as exc:
            return f"the worker's report is unreadable: {str(exc).splitlines()[0][:200]}"


@dataclass
class WorkerReport:
    """What the engine learnt from one worker."""

    copy_fingerprint: str = ""
    prompt_sha256: str = ""
    start_error: str = ""
    done: WorkerDone | None = None
    authorisations: int = 0
    meter_wait_s: float = 0.0
    max_output_tokens: int = 0
    prompt_tokens: int = 0
    """Of the latest authorisation: with max_output_tokens, the worst case it held."""
    cgroup: str | None = None
    """The worker's pids cgroup, removed once it is gone."""
    worst_case: list[str] = field(default_factory=list)
    """Why each attempt charged its worst case (usage missing, unusable, timed out, …)."""
    facts: SessionFacts = field(default_factory=SessionFacts)
    """More for the session's details (e.g. the node a remote worker ran on)."""


SESSION = SessionOutcome("no_certificate")
"""What `classify` starts from: no certificate, ended as its exit status says."""

Found = tuple[dict[str, Any] | None, str, str]
"""(certificate or None, why malformed, the raw block)."""
Submitted = list[tuple[dict[str, Any] | None, Verdict]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Verification:
    """How a session's certificates are verified: against which target, with what, and how many."""

    target: TargetKind
    tools: TargetTools
    max_certificates: int
    certificates_file: Path
    """`attempt-N.certificates.json`: every certificate looked at, with its verdict."""
    admit: Callable[[], Awaitable[str | None]] | None = None
    """Takes a `submits` unit before each certificate is verified (None when granted, else the
    refusal: that certificate and the later ones are not verified)."""
    task: str | None = None

    async def verify(self, cert: dict[str, Any]) -> Verdict:
        """The target's verdict; a certificate it cannot even handle is the model's malformed output
        (final), never a crash of the session (retried, and paid again, on every --resume)."""
        try:
            verdict = await self.target.verify(cert, self.tools)
        except Exception as exc:  # RecursionError included
            return malformed(f"{type(exc).__name__}: {str(exc)[:200]}")
        return self.target.for_task(verdict, cert, self.task)


def _base(fingerprint: str) -> str:
    """The target's identity in a fingerprint: commit or content hash (a clone is never dirty)."""
    return fingerprint.split()[0].removesuffix("+dirty") if fingerprint else ""


def facts_of(report: WorkerReport, fingerprint: str) -> SessionFacts:
    """What the report says of how the session ran (whatever its outcome)."""
    done = report.done
    facts = report.facts.but(
        environment=fingerprint,
        copy_fingerprint=report.copy_fingerprint,
        prompt_sha256=report.prompt_sha256,
        worst_case_charges=len(report.worst_case) or None,
        worst_case_reasons=report.worst_case[:20] or None,
        meter_wait_ms=round(1000 * report.meter_wait_s / report.authorisations, 3)
        if report.authorisations
        else None,
    )
    if done is not None:
        facts = facts.but(
            exit_status=done.exit_status,
            limits_hit=[hit[:300] for hit in done.limits][:51] or None,
            meter_rtt_ms=done.meter_rtt_ms if report.authorisations else None,
            collect_problem=done.collect_problem[:300] or None,
        )
    return facts


def found_in(target: TargetKind, blocks: list[str], submitted: Submitted) -> list[Found]:
    """The distinct certificates in the blocks, first occurrence each, less what `submit` verified."""
    seen = {identity_key(c) for c, _ in submitted if c is not None}
    out: list[Found] = []
    for raw in blocks:
        cert, problem = target.parse(raw)
        key = identity_key(cert) if cert is not None else raw.strip()
        if key not in seen:
            seen.add(key)
            out.append((cert, problem, raw))
    return out


async def verify_each(
    how: Verification, found: list[Found], submitted: Submitted
) -> tuple[Submitted, list[Looked]]:
    """(every certificate checked, submitted ones first; those refused for want of a unit)."""
    checked: Submitted = list(submitted)
    refused: list[Looked] = []
    if any(v.accepted for _, v in checked):
        return checked, refused  # the session's bug is found: nothing more to verify
    if not how.target.verifies:  # nothing to verify: its well-formed certificates, unverified
        found = [f for f in found if f[0] is not None]
    for cert, problem, raw in found[: max(0, how.max_certificates - len(checked))]:
        admit = how.admit if how.target.verifies else None  # a claim of nothing costs no unit
        why = refused[0].refused if refused else (await admit() if admit else None)
        if why is not None:  # past the session's submits: recorded, never verified
            refused.append(Looked(cert if cert is not None else raw[:2000], refused=why))
            continue
        verdict = await how.verify(cert) if cert is not None else malformed(problem)
        checked.append((cert, verdict))
        if verdict.accepted:
            break
    return checked, refused


def _save(path: Path, checked: Submitted, refused: list[Looked]) -> None:
    data = [Looked(c, v).to_json() for c, v in checked] + [r.to_json() for r in refused]
    atomic_write(path, json.dumps(data, indent=1, default=str).encode())


def classify(checked: Submitted, done: WorkerDone, facts: SessionFacts) -> SessionOutcome:
    """The session's outcome from its verdicts and its end."""
    steps = done.steps
    lines = tuple(Checked(v.status, v.reason, v.cause) for _, v in checked)
    outcome = replace(SESSION, steps=steps, facts=facts, ending=ending_of_exit(done), actions=done.actions)
    for cert, verdict in checked:
        if verdict.accepted:
            judgement = Judgement(verdict, lines)
            return replace(
                outcome,
                result="bug_found",
                reason=verdict.reason,
                certificate=cert,
                judgement=judgement,
                ending="found",
            )
    if done.infra_error:
        ending = outcome.ending if outcome.ending in ("provider_error", "runner_error") else "runner_error"
        return replace(outcome, result="error", reason=str(done.error), infra_error=True, ending=ending)
    unverified = [(c, v) for c, v in checked if v.status == "unverified"]
    if unverified:
        n, verdict = len(unverified), unverified[0][1]
        reason = f"{n} certificate{'s' if n != 1 else ''} {verdict.reason}"
        facts = facts.but(unverified_certificates=n)
        judgement = Judgement(verdict, lines)
        return replace(outcome, reason=reason, certificate=unverified[0][0], judgement=judgement, facts=facts)
    if checked:
        if all(v.cause == "tool_missing" for _, v in checked):
            # The verifier's program is missing: not the model's doing (retried on --resume).
            why = f"cannot verify: {checked[0][1].reason}"
            return replace(outcome, result="error", reason=why, infra_error=True, ending="setup_error")
        # A malformed certificate is not handed on as one: our results schema admits only the
        # target's certificate shape (its own text stays in certificates.json).
        well_formed = [(c, v) for c, v in checked if v.cause != "malformed"]
        off = [(c, v) for c, v in well_formed if v.cause == "off_task"]
        cert, verdict = (off or well_formed)[0] if well_formed else (None, checked[0][1])
        facts = facts.but(reject_reason=verdict.reason)
        judgement = Judgement(verdict, lines)
        return replace(
            outcome,
            result="rejected",
            reason=verdict.reason,
            certificate=cert,
            judgement=judgement,
            facts=facts,
        )
    if done.collect_problem:
        # A certificates file the agent made a link, a FIFO, a device, too large…: its outcome
        # (final), never the engine's error (retried, and paid again, on every --resume).
        why = f"certificates not collected: {done.collect_problem[:300]}"
        return replace(outcome, result="rejected", reason=why, facts=facts.but(reject_reason=why))
    reason = EXIT_REASONS.get(done.exit_status, done.exit_status or "no certificate")
    if done.exit_status == "ResourceLimit":
        last = done.limits[-1] if done.limits else "?"
        reason = f"resource_limit: {last.split(': ', 1)[-1]}"
    elif done.exit_status == "RepeatedFormatError" and done.format_detail:
        reason = f"format_errors: {done.format_detail[:300]}"
    elif done.exit_status == "ContextWindowExceeded" and done.error:
        reason = f"{reason}: {done.error.split(': ', 1)[-1][:300]}"
    return replace(outcome, reason=reason)


async def judge(
    report: WorkerReport, how: Verification, *, fingerprint: str, submitted: Submitted | None = None
) -> SessionOutcome:
    """The session's outcome. `submitted`: what `submit FILE` verified during the session (in
    order, each already paid a unit); they come first, and a printed block that repeats one is
    not verified again."""
    facts = facts_of(report, fingerprint)
    if report.start_error:
        return SessionOutcome(
            "error", report.start_error, infra_error=True, facts=facts, ending="runner_error"
        )
    done = report.done
    if done is None:
        why = "the worker ended without a report (see its log)"
        return SessionOutcome("error", why, infra_error=True, facts=facts, ending="runner_error")
    if report.copy_fingerprint and _base(report.copy_fingerprint) != _base(fingerprint):
        why = f"the session copy ({report.copy_fingerprint}) is not the target ({fingerprint})"
        return SessionOutcome("error", why, done.steps, infra_error=True, facts=facts, ending="setup_error")
    earlier = list(submitted or [])
    # Parsing megabytes of hostile blocks takes a while: never on the engine's event loop.
    found = await trio.to_thread.run_sync(found_in, how.target, list(done.blocks), earlier)
    checked, refused = await verify_each(how, found, earlier)
    if refused:
        facts = facts.but(certificates_refused=len(refused))
    if checked or refused:
        await trio.to_thread.run_sync(_save, how.certificates_file, checked, refused)
    return classify(checked, done, facts)
