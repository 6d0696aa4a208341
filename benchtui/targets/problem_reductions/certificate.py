"""Certificates as agents print them, the values pred prints, and the data the checks exchange."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# The block protocol is benchtui's, the same for every target (re-exported for older imports).
from benchtui.core.certificates import FENCE as FENCE
from benchtui.core.certificates import MAX_CERTIFICATE_CHARS as MAX_CERTIFICATE_CHARS
from benchtui.core.certificates import MAX_CERTIFICATE_DEPTH as MAX_CERTIFICATE_DEPTH
from benchtui.core.certificates import find_blocks as find_blocks
from benchtui.core.certificates import parse_block as parse_block

#: The violation names of the target benchmark's certificates (our results format's rows name them too):
#: the round trip fails.
VIOLATIONS = ("unsound_extraction", "incomplete_reduction", "suboptimal_extraction")
#: The rest of the benchmark's definition of a bug: the rule fails on a valid source instance. Such
#: a certificate is a rule and a source alone (the reduction never returns a bundle).
RULE_FAILURES = ("panics_on_valid_instance", "rejects_valid_instance")
KINDS = VIOLATIONS + RULE_FAILURES
"""Every violation a certificate may name."""
BLOCK = re.compile(r"^[ \t]*CERTIFICATE_START[ \t]*\r?\n(.*?)^[ \t]*CERTIFICATE_END[ \t]*$", re.M | re.S)


@dataclass(frozen=True, slots=True)
class PredCall:
    args: tuple[str, ...]
    files: dict[str, Any] = field(default_factory=dict)
    """Written as JSON into the call's working directory first."""
    reads: tuple[str, ...] = ()
    """Files the call writes (`-o FILE`) that are read back into `PredResult.outputs`."""


@dataclass(frozen=True, slots=True)
class PredResult:
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    failure: Literal["timeout", "missing"] | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    """The call's `reads` that exist afterwards, by name (text)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """What the checks conclude (`details["cause"]` says why); the target kind (kind.py) hands it
    on as the contract's typed verdict."""

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
