"""The `problem-reductions` target: its verifier (pred's round trip), its task and rule inventory.

What the contract (core/target.py) asks of a target, over this package's checks: certificates in
the benchmark's shape, verified by re-deriving them with the session machine's `pred`; a task is
a rule file's stem (`spinglass_maxcut`), a certificate is on task when its rule or its instance
names it; the rule inventory is `pred list --rules` (pred 0.3, which has no `--rules`: the edges
of `pred export-graph`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from benchtui.core.checks import Check
from benchtui.core.target import (
    LEGACY_CAUSES,
    Cause,
    Program,
    TargetKind,
    TargetProfile,
    TargetTools,
    Verdict,
    is_cause,
    malformed,
    read_brief,
)
from benchtui.core.workspace import binary_digest

from .certificate import VIOLATIONS, Finding
from .drivers import INSTALL_PRED, verify, verify_async
from .tasks import canonical_certificate, on_task, rule_list, rule_of, run_pred

VERIFIER = "benchtui.targets.problem_reductions (pred round trip)"
TOOL_TIMEOUT_S = 30.0
NO_PRED = f"pred not found: {INSTALL_PRED}, or set the runner profile's `programs.pred` to its path"


class ProblemReductionsProfile(TargetProfile):
    """The Rust library problem-reductions (`environment.path`: a checkout) and its `pred` CLI:
    certificates verified by pred's round trip, tasks are its rule files, the inventory its rules.
    `pred` is where the runner profile's `programs` puts it (else on PATH)."""

    kind: Literal["problem-reductions"] = "problem-reductions"
    """The Rust library problem-reductions and its `pred` CLI (environment.path: a checkout)."""


CHECKS_CAUSES = {**LEGACY_CAUSES, "refused_by_pred": "tool_refused", "panics_elsewhere": "tool_error"}
"""The checks' causes in the contract's closed set (core/target.py `Cause`)."""
KEPT_CAUSES = frozenset(
    ("no_violation", "wrong_target", "invalid_instance", "unknown_rule", "wrong_source", "tool_refused",
     "malformed", "timeout", "tool_error", "tool_missing")
)  # fmt: skip


def typed(verdict: Finding) -> Verdict:
    """The checks' verdict as the contract's: its cause one of the closed set."""
    details = dict(verdict.details)
    raw = str(details.pop("cause", ""))
    found_by = str(details.pop("found_by", None) or "")
    named = CHECKS_CAUSES.get(raw, raw)
    cause: Cause
    if verdict.status == "accepted":
        cause = "violation"  # which one: `observed` (a round trip, a panic in the rule's file…)
    elif named in KEPT_CAUSES and is_cause(named):
        cause = named
    else:
        cause = "tool_error" if verdict.status == "inconclusive" else "no_violation"
    if raw and raw != cause:
        details["pred_cause"] = raw  # what the checks found, in this target's words
    return Verdict(verdict.status, verdict.reason, cause, VERIFIER, "verifier", found_by, details)


class ProblemReductions(TargetKind):
    Profile: ClassVar[type[TargetProfile]] = ProblemReductionsProfile
    verifies = True
    has_inventory = True
    programs = (Program("pred", INSTALL_PRED),)
    verifier = VERIFIER
    brief = read_brief(Path(__file__).with_name("brief.toml"))
    checkout = (
        "a checkout of problem-reductions (git clone https://github.com/CodingThrust/problem-reductions; "
        "the shipped campaigns expect it beside benchtui's checkout, at commit 8df8ac04)"
    )

    @classmethod
    def looks_like(cls, value: Any) -> bool:
        """A rule name with an instance: a certificate, perhaps malformed (a results row names a
        rule alone)."""
        return (
            isinstance(value, dict)
            and isinstance(value.get("rule"), str)
            and (isinstance(value.get("source"), dict) or isinstance(value.get("bundle"), dict))
        )

    def on_task(self, certificate: Mapping[str, Any], task: str) -> bool:
        return on_task(dict(certificate), task)

    async def verify(self, certificate: dict[str, Any], tools: TargetTools) -> Verdict:
        pred = tools.programs.get("pred")
        if pred is None:
            return Verdict("inconclusive", f"cannot verify: {NO_PRED}", "tool_missing", VERIFIER)
        try:
            return typed(await verify_async(certificate, pred=pred, timeout=tools.timeout_s))
        except Exception as exc:  # RecursionError included: hostile input is the model's, final
            return malformed(f"{type(exc).__name__}: {str(exc)[:200]}")

    def verify_now(self, certificate: dict[str, Any], tools: TargetTools) -> Verdict:
        """`verify`, synchronously (`benchtui verify`, preflight)."""
        pred = tools.programs.get("pred")
        if pred is None:
            return Verdict("inconclusive", f"cannot verify: {NO_PRED}", "tool_missing", VERIFIER)
        try:
            return typed(verify(certificate, pred=pred, timeout=tools.timeout_s))
        except Exception as exc:
            return malformed(f"{type(exc).__name__}: {str(exc)[:200]}")

    @classmethod
    def certificate_schema(cls) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["rule", "violation", "source", "bundle"],
            "properties": {
                "rule": {"type": "string", "description": "the rule, as `pred list --rules` names it"},
                "violation": {"enum": list(VIOLATIONS)},
                "source": {"type": "object", "description": "the source instance (`pred create --json`)"},
                "bundle": {
                    "type": "object",
                    "description": "what `pred reduce SOURCE --to T --json` printed",
                },
                "target_config": {"description": "an optimal target configuration (list or comma list)"},
                "claimed_source_solution": {"type": "array"},
                "note": {"type": "string"},
            },
        }

    def rule_inventory(self, environment: Path, tools: TargetTools) -> list[str]:
        """Every rule of this pred (`pred list --rules`, or `export-graph`'s edges where pred has no
        `--rules`), named as certificates name them (`SOURCE -> TARGET`)."""
        pred = tools.programs.get("pred")
        if pred is None:
            raise ValueError(NO_PRED)
        rules, problem = rule_list(pred)
        if problem:
            raise ValueError(problem)
        return [f"{source} -> {target}" for source, target in rules]

    def preflight(self, tools: TargetTools, *, tasks: list[str] | None, full: bool) -> list[Check]:
        """Cheap: `pred --version` answers. Full: every task is a rule of this pred, and its
        canonical example gets a definitive verdict from the verifier within the call timeout."""
        pred = tools.programs.get("pred")
        if pred is None:
            asked = tools.missing.get("pred", "pred")
            return [
                Check(
                    "pred",
                    f"{asked!r} not found: {INSTALL_PRED}, or set the runner profile's `programs.pred` to its path",
                )
            ]
        done = run_pred(pred, ("--version",), timeout=TOOL_TIMEOUT_S)
        if done.error:
            return [Check("pred", f"{pred} --version failed: {done.error}")]
        checks = [
            Check("pred", detail=f"{done.stdout.strip()} {binary_digest(pred) or 'unreadable'} ({pred})")
        ]
        if full and tasks:
            checks += self._tasks(pred, list(dict.fromkeys(tasks)), tools)
        return checks

    def _tasks(self, pred: str, tasks: list[str], tools: TargetTools) -> list[Check]:
        rules, problem = rule_list(pred, timeout=TOOL_TIMEOUT_S)
        if problem:
            return [Check("tasks", problem)]
        checks = []
        for task in tasks:
            rule = rule_of(task, rules)
            if rule is None:
                checks.append(Check(f"task {task}", f"no such rule among this pred's {len(rules)} rules"))
                continue
            started = time.monotonic()
            cert, problem = canonical_certificate(rule, pred, timeout=tools.timeout_s)
            if cert is None:
                checks.append(Check(f"task {task}", problem))
                continue
            verdict = self.verify_now(cert, tools)
            took = f"{time.monotonic() - started:.1f} s"
            if verdict.status == "inconclusive":
                checks.append(Check(f"task {task}", f"not verifiable ({took}): {verdict.reason}"))
            else:
                checks.append(Check(f"task {task}", detail=f"canonical example {verdict.status} in {took}"))
        return checks
