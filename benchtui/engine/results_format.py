"""The results format (`results/<model>.json`) as our own models: `benchtui schema --results`
prints their JSON Schema, and the tests check every results file benchtui writes against it.

It follows the target benchmark's per-model results format (its issue #3) so leaderboards built
on that format read our files; the keys benchtui adds to a row (`session`, `attempt`, `state`,
`reason`, `ending`) are allowed there. The writer (engine/results.py) builds plain dicts for speed (100,000
rows are rewritten while a campaign runs); these models say what those dicts must be.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchtui.core.contract import Result
from benchtui.core.endings import Ending

#: The results format's own: the violations the benchmark's results schema enumerates for a row's
#: `certificate` (a round trip that fails, with its bundle).
VIOLATIONS = ("unsound_extraction", "incomplete_reduction", "suboptimal_extraction")
#: Certificates of a rule that fails on a valid instance: a rule and a source, no bundle. The
#: benchmark's `certificate` requires a bundle and names only VIOLATIONS, so a row keeps these as
#: its `instance_certificate` (its schema allows more keys in a row), and the file still follows it.
INSTANCE_VIOLATIONS = ("panics_on_valid_instance", "rejects_valid_instance")


class Certificate(BaseModel):
    """A counterexample to a reduction rule (present only when the result is bug_found or rejected)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    rule: str
    """The rule it claims a bug in."""
    violation: str
    """What the rule gets wrong (its names are the target's: `TargetKind.certificate_schema`)."""
    source: dict[str, Any]
    """The source problem instance."""
    bundle: dict[str, Any]
    """The reduction bundle (`pred reduce --json`)."""


class InstanceCertificate(BaseModel):
    """A rule that panics on, or rejects, a valid source instance: the rule and the instance alone
    (the reduction never returns a bundle). Present only when the result is bug_found or rejected."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    rule: str
    """The rule it claims a bug in."""
    violation: Literal["panics_on_valid_instance", "rejects_valid_instance"]
    """What the rule does to the valid instance (INSTANCE_VIOLATIONS)."""
    source: dict[str, Any]
    """The source problem instance."""


class ResultRow(BaseModel):
    """One session's outcome (its current attempt)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    rule: str
    """The session's task (rule name), or the certificate's rule, or `library`."""
    result: Result
    cost: float = Field(ge=0)
    """USD spent by the attempt."""
    tokens_k: float = Field(ge=0)
    usage: dict[str, int] | None = None
    """The attempt's tokens by bucket (`input`, `cache_read`, `cache_write`, `output`,
    `reasoning`: docs/guide/budgets.md); absent for attempts written before buckets."""
    steps: int = Field(default=0, ge=0)
    session: str
    """Session id (`<model slug>-<index>`)."""
    attempt: int = Field(ge=1)
    state: str
    """The journal's state of the attempt: done, error, killed."""
    reason: str = ""
    ending: Ending | None = None
    """Why the session ended (core/endings.py: `model_done`, `no_action`, `found`, …)."""
    certificate: Certificate | None = None
    instance_certificate: InstanceCertificate | None = None
    """In place of `certificate` for a rule that fails on a valid instance (no bundle)."""
    verify_details: dict[str, Any] | None = None
    """The verifier's verdict and the certificates it checked."""
    reject_reason: str | None = None
    """Why the certificate was rejected (only when result = rejected)."""


class ResultsFile(BaseModel):
    """`results/<model>.json`: one model's sessions that ran, and its totals."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model: str
    library_commit: str
    """The target's commit (its content hash when it is not a git checkout)."""
    bugs_found: int = Field(ge=0)
    """Distinct (rule, violation, source) of the bug_found rows."""
    total_cost_usd: float = Field(ge=0)
    total_tokens_k: float = Field(ge=0)
    efficiency_bugs_per_ktok: float = Field(ge=0)
    efficiency_bugs_per_dollar: float = Field(ge=0)
    rules_tested: int = Field(ge=0)
    results: list[ResultRow]


def json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a results file."""
    schema = ResultsFile.model_json_schema(ref_template="#/$defs/{model}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "benchtui.results.schema.json",
        **schema,
    }
