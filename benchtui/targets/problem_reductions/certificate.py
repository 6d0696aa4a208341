"""Certificates as agents print them, the values pred prints, and the data the checks exchange."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: The violation names of the target benchmark's certificates (its results schema enumerates them):
#: the round trip fails.
VIOLATIONS = ("unsound_extraction", "incomplete_reduction", "suboptimal_extraction")
#: The rest of the benchmark's definition of a bug: the rule fails on a valid source instance. Such
#: a certificate is a rule and a source alone (the reduction never returns a bundle).
RULE_FAILURES = ("panics_on_valid_instance", "rejects_valid_instance")
KINDS = VIOLATIONS + RULE_FAILURES
"""Every violation a certificate may name."""
BLOCK = re.compile(r"^[ \t]*CERTIFICATE_START[ \t]*\r?\n(.*?)^[ \t]*CERTIFICATE_END[ \t]*$", re.M | re.S)
START_LINE = re.compile(r"^[ \t]*CERTIFICATE_START[ \t]*\r?\n", re.M)
END_LINE = re.compile(r"^[ \t]*CERTIFICATE_END[ \t]*$", re.M)
FENCE = re.compile(r"^```[\w-]*\s*\n(.*)\n```\s*$", re.S)
# Bounds on what an agent may print as a certificate: past them it is malformed (the model's
# outcome, final), never a crash (deep nesting raised RecursionError) or an unbounded message.
MAX_CERTIFICATE_CHARS = 1_000_000
MAX_CERTIFICATE_DEPTH = 64


@dataclass(frozen=True, slots=True)
class PredCall:
    args: tuple[str, ...]
    files: dict[str, Any] = field(default_factory=dict)
    """Written as JSON into the call's working directory first."""


@dataclass(frozen=True, slots=True)
class PredResult:
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    failure: Literal["timeout", "missing"] | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Literal["accepted", "rejected", "inconclusive"]
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    def to_json(self) -> dict[str, Any]:
        return {
            "verifier": "benchtui.targets.problem_reductions (pred round trip)",
            "judged_by": "verifier",
            **asdict(self),
        }


# -- certificate blocks in agent output ---------------------------------------------------------
def find_blocks(text: str) -> list[str]:
    """The raw text of every CERTIFICATE_START … CERTIFICATE_END block (lines of their own).

    What BLOCK.finditer finds, in linear time: the lazy regex rescans the rest of the text from
    every START line without an END after it (100,000 of them, 1.8 MB, took about half an hour)."""
    blocks, pos = [], 0
    while (start := START_LINE.search(text, pos)) and (end := END_LINE.search(text, start.end())):
        blocks.append(text[start.end() : end.start()])
        pos = end.end()
    return blocks


def parse_block(raw: str) -> tuple[dict[str, Any] | None, str]:
    """(certificate, "") or (None, why it is malformed)."""
    body = raw.strip()
    fenced = FENCE.match(body)
    body = fenced.group(1) if fenced else body
    if len(body) > MAX_CERTIFICATE_CHARS:
        return None, f"larger than {MAX_CERTIFICATE_CHARS:,} characters"
    if _nesting(body) > MAX_CERTIFICATE_DEPTH:
        return None, f"nested deeper than {MAX_CERTIFICATE_DEPTH} levels"
    try:
        cert = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON: {str(exc)[:200]}"
    if not isinstance(cert, dict):
        return None, "not a JSON object"
    return cert, ""


STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
BRACKETS = re.compile(r"[\[\]{}]")


def _nesting(text: str) -> int:
    """The bracket nesting outside JSON strings, counted up to one past the limit (no recursion)."""
    depth = deepest = 0
    for match in BRACKETS.finditer(STRINGS.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_CERTIFICATE_DEPTH:
            break
    return deepest


# -- values pred prints ("Max(2)", "Min(None)", "Or(true)", "SolutionSize(3, valid)") -----------
@dataclass(frozen=True, slots=True)
class Value:
    valid: bool
    number: float | None
    text: str


def parse_value(raw: Any) -> Value | None:
    if isinstance(raw, bool):
        return Value(raw, None, str(raw))
    if isinstance(raw, int | float):
        return Value(True, float(raw), str(raw))
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    match = re.fullmatch(r"\w+\((.*)\)", text, re.S)
    inner = (match.group(1) if match else text).strip()
    parts = [p.strip().lower() for p in inner.split(",")]
    if len(parts) == 2 and parts[1] in ("valid", "invalid"):
        return Value(parts[1] == "valid", _number(parts[0]), text)
    if parts[0] in ("none", "null", "false", "invalid", "infeasible", "true"):
        return Value(parts[0] == "true", None, text)
    number = _number(inner)
    return Value(True, number, text) if number is not None else None


def _number(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None
