"""What a session came to, typed: the runner's `SessionOutcome`, and its details as the run dir keeps them.

Why a session ended is one of a closed set (`Ending`, core/endings.py), apart from its result: a
session can end `model_done` with a rejected certificate, or `no_action` without one. One definition per record, written and read through it: the judgement of a session's certificates
(`Judgement`, stored as `verify_details`), the facts a runner reports on how the session ran
(`SessionFacts`: fingerprints, limits hit, meter latencies, where it ran), and the line of
`outcomes/<model>.jsonl` that keeps both (`OutcomeDetails`). Keys this version does not know (an
older or newer benchtui, a third-party runner) are kept and written back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from benchtui.core.endings import Cause, Ending
from benchtui.core.target import Status, Verdict

#: Per-session results, as in our results format's rows (engine/results_format.py).
Result = Literal["bug_found", "known_issue", "no_certificate", "rejected", "no_bug", "error"]


@dataclass(frozen=True, slots=True)
class Checked:
    """One certificate a session's verification looked at, in one line."""

    status: Status
    reason: str
    cause: str = ""

    @property
    def off_task(self) -> bool:
        return self.cause == "off_task"

    def to_json(self) -> dict[str, Any]:
        # `off_task` as a status: what the report counts it as (older run dirs say so too).
        return {
            "status": "off_task" if self.off_task else self.status,
            "reason": self.reason,
            "cause": self.cause,
        }

    @classmethod
    def from_json(cls, data: Any) -> Checked:
        if not isinstance(data, Mapping):
            return cls("rejected", "unreadable", "malformed")
        status = str(data.get("status"))
        cause = str(data.get("cause") or ("off_task" if status == "off_task" else ""))
        if status not in ("accepted", "rejected", "inconclusive", "unverified"):
            status = "rejected" if status == "off_task" else "unverified"
        return cls(status, str(data.get("reason") or ""), cause)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verification of a session's certificates: the verdict that decided the session (its
    accepted certificate's, else the one shown), and a line for every certificate checked."""

    verdict: Verdict
    checked: tuple[Checked, ...] = ()

    @property
    def judged_by(self) -> str:
        return self.verdict.judged_by

    def to_json(self) -> dict[str, Any]:
        return {**self.verdict.to_json(), "checked": [c.to_json() for c in self.checked]}

    @classmethod
    def from_json(cls, data: Any) -> Judgement | None:
        """The one decoder of `verify_details`, this version's and older ones; None when absent."""
        if not isinstance(data, Mapping):
            return None
        checked = data.get("checked")
        lines = tuple(Checked.from_json(c) for c in checked) if isinstance(checked, list) else ()
        return cls(Verdict.from_json(data), lines)


@dataclass(frozen=True, slots=True)
class Looked:
    """One entry of `attempt-N.certificates.json`: a certificate the runner looked at, with its
    verdict, or why it was not verified (`refused`: the session's submits were spent)."""

    certificate: Any
    """What the agent wrote (a JSON object; a malformed one's text, cut to 2,000 characters)."""
    verdict: Verdict | None = None
    refused: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.verdict is None:
            return {"certificate": self.certificate, "refused": self.refused}
        return {"certificate": self.certificate, "verdict": self.verdict.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> Looked | None:
        """None for an entry that is not an object; a verdict through its one decoder."""
        if not isinstance(data, Mapping):
            return None
        refused = data.get("refused")
        if isinstance(refused, str) and refused:
            return cls(data.get("certificate"), None, refused)
        return cls(data.get("certificate"), Verdict.from_json(data.get("verdict")))


def claimed(runner: str, *, bug: bool = True) -> Judgement:
    """A certificate judged only by its runner (fake, demo: no verifier): a claim, never confirmed."""
    if bug:
        return Judgement(Verdict("accepted", "claimed by the runner", "violation", runner, "runner"))
    return Judgement(Verdict("rejected", "rejected by the runner", "no_violation", runner, "runner"))


class SessionFacts(BaseModel):
    """How a session ran, as its runner reports it (the audit and the viewer read these)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    environment: str | None = None
    """The target's fingerprint the session was given."""
    copy_fingerprint: str | None = None
    """The fingerprint of the session's own copy, taken inside it."""
    prompt_sha256: str | None = None
    """The rendered prompt's hash (the same for every model on a task: docs/design/invariants.md#f2)."""
    exit_status: str | None = None
    """How the agent loop ended (mini-swe-agent's exit status, an agent CLI's exit code)."""
    limits_hit: list[str] | None = None
    """Resource limits the session met (output cut, processes, disk)."""
    meter_rtt_ms: float | None = None
    meter_wait_ms: float | None = None
    worst_case_charges: int | None = None
    """Charges made at their authorised worst case (usage missing, unusable, timed out)."""
    worst_case_reasons: list[str] | None = None
    certificates_refused: int | None = None
    """Certificates not verified: the session's submits were spent."""
    collect_problem: str | None = None
    """What was wrong with a file collected from the session's copy (a link, a FIFO, too large)."""
    reject_reason: str | None = None
    unverified_certificates: int | None = None
    executor: str | None = None
    node: dict[str, Any] | str | None = None
    """Where a remote session ran (a Ray node's address and name)."""

    def but(self, **changes: Any) -> SessionFacts:
        """A copy with some facts changed or added (None values dropped)."""
        data = {**self.as_json(), **{k: v for k, v in changes.items() if v is not None}}
        return SessionFacts.model_validate(data)

    def merged(self, other: SessionFacts) -> SessionFacts:
        return self.but(**other.as_json())

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionFacts:
        """Facts from a stored line; a fact of the wrong type (an older writer's) is dropped."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            bad = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
            return cls.model_validate({k: v for k, v in data.items() if k not in bad})


NO_FACTS = SessionFacts()


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """What a session produced. `infra_error` marks failures of the machinery, retried on resume."""

    result: Result
    reason: str = ""
    steps: int = 0
    certificate: dict[str, Any] | None = None
    judgement: Judgement | None = None
    """The verification of its certificates (None: none was looked at)."""
    infra_error: bool = False
    facts: SessionFacts = NO_FACTS
    shortlist: list[Any] | None = None
    """A triage session's commit, as the model wrote it: `{"rule": ..., "hypothesis": ...}`
    objects in priority order (the engine validates them against the rule inventory)."""
    ending: Ending | None = None
    """Why it ended (core/endings.py); None: the runner does not say (the engine then says
    `found` for a bug, `runner_error` for an infrastructure error, else `unstated`)."""
    actions: int | None = None
    """Actions (shell commands) the model's answers had run; None: the runner cannot count them."""
    cause: Cause | None = None
    """For a model that could not act, what stood in the way, where the runner found out
    (core/endings.py `Cause`: the server, the model's chat template, or the model itself)."""


DETAIL_KEYS = frozenset({"session", "attempt", "model", "certificate", "verify_details"})


@dataclass(frozen=True, slots=True)
class OutcomeDetails:
    """One line of `outcomes/<model>.jsonl`: the bulky part of an ended attempt's outcome."""

    session: str
    attempt: int
    certificate: dict[str, Any] | None = None
    judgement: Judgement | None = None
    facts: SessionFacts = field(default=NO_FACTS)
    model: str | None = None

    @classmethod
    def of(cls, session: str, attempt: int, outcome: SessionOutcome) -> OutcomeDetails:
        return cls(session, attempt, outcome.certificate, outcome.judgement, outcome.facts)

    @property
    def worth_keeping(self) -> bool:
        return bool(self.certificate or self.judgement or self.facts.as_json())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session": self.session,
            "attempt": self.attempt,
            "certificate": self.certificate,
            "verify_details": self.judgement.to_json() if self.judgement else None,
            **self.facts.as_json(),
        }
        if self.model is not None:
            out["model"] = self.model
        return out

    @classmethod
    def from_json(cls, data: Any) -> OutcomeDetails:
        """Parse one stored line; ValueError when it is not one (a torn line)."""
        if not isinstance(data, Mapping):
            raise ValueError("not a JSON object")
        session, attempt = data.get("session"), data.get("attempt")
        if not isinstance(session, str) or not isinstance(attempt, int) or isinstance(attempt, bool):
            raise ValueError("no session and attempt")
        cert = data.get("certificate")
        return cls(
            session,
            attempt,
            cert if isinstance(cert, dict) else None,
            Judgement.from_json(data.get("verify_details")),
            SessionFacts.from_json({k: v for k, v in data.items() if k not in DETAIL_KEYS}),
            data.get("model") if isinstance(data.get("model"), str) else None,
        )
