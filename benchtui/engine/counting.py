"""The one count of bugs: verified distinct-rule bugs (docs/guide/reports.md).

Used by the results files (`engine.results`), the report (`report.leaderboard`) and, through the
report, the TUI: they never disagree. A session counts once, for one rule: its task when it has one
(a certificate for another rule is `off_task` and never reaches here as `bug_found`), else its
certificate's rule. Who judged the certificate is kept apart: `verifier` (re-derived with pred)
or `runner` (the runner's own claim: the fake and demo runners).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchtui.core.outcome import Judgement
from benchtui.core.target import JudgedBy


@dataclass(frozen=True, slots=True)
class Counted:
    """What the count needs of one session's current attempt."""

    result: str | None
    task: str | None
    certificate: Mapping[str, Any] | None
    judgement: Judgement | None


def judged_by(judgement: Judgement | None) -> JudgedBy:
    """`verifier` when a verifier re-derived the verdict, else `runner` (a claim, or nothing)."""
    return judgement.verdict.judged_by if judgement is not None else "runner"


def bug_rule(session: Counted) -> str | None:
    """The rule a session's bug counts for, or None when it found none."""
    if session.result != "bug_found":
        return None
    if session.task:
        return session.task
    rule = (session.certificate or {}).get("rule")
    return rule if isinstance(rule, str) and rule else "library"


def distinct_bug_rules(sessions: Iterable[Counted], *, by: JudgedBy | None = "verifier") -> tuple[str, ...]:
    """The distinct rules with a bug, sorted: judged by the verifier (`by="verifier"`, the verified
    bugs), by the runner alone (`"runner"`, claimed), or either (`None`)."""
    rules = {
        rule
        for s in sessions
        if (rule := bug_rule(s)) is not None and (by is None or judged_by(s.judgement) == by)
    }
    return tuple(sorted(rules))


def basis(sessions: Iterable[Counted]) -> JudgedBy:
    """What bugs are counted by: `verifier` when any certificate was judged by one, else `runner`
    (a runner without a verifier: its claims are all there is, and are labelled as claims)."""
    judged = (judged_by(s.judgement) for s in sessions if s.judgement)
    return "verifier" if any(j == "verifier" for j in judged) else "runner"


def counted_bugs(sessions: Iterable[Counted]) -> tuple[tuple[str, ...], JudgedBy]:
    """(the distinct bug rules the ranking counts, what judged them)."""
    listed = list(sessions)
    by = basis(listed)
    return distinct_bug_rules(listed, by=by), by
