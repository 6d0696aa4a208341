"""The runner boundary: what the engine hands an agent runner and what it gets back.

A runner is constructed once per campaign runner profile and then asked to `run` one session
at a time (concurrently, from many Trio tasks). It must spend money only through the `Meter`:
`await meter.authorise(worst_case)` before every model call (the hold is durable when it
returns True), then `meter.charge(usage)` with the call's real token usage. A runner whose
session makes parallel calls (agent CLIs behind the gateway) settles each call's own hold with
`meter.charge(usage, settles=worst_case)`; without `settles`, `charge` settles every open hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

#: Per-session results, as in the target benchmark's results schema.
Result = Literal["bug_found", "known_issue", "no_certificate", "rejected", "no_bug", "error"]


class RunnerProfile(BaseModel):
    """Keys shared by every `[runners.<name>]` table; each runner kind extends it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    path_keys: ClassVar[tuple[str, ...]] = ()
    """Keys holding file paths; relative ones are resolved against the campaign file's folder."""

    kind: str
    """Registry name of the runner (`fake`, `mini-swe-agent`, an entry point, or `pkg.mod:Class`)."""
    wall_time_s: float | None = None
    """Wall-clock limit of one session; past it the session is cancelled and ends as `error`."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One `[[models]]` entry, as a runner sees it."""

    name: str
    input_usd_per_mtok: Decimal
    output_usd_per_mtok: Decimal
    max_output_tokens: int
    api_base: str | None = None
    api_key_env: str | None = None
    litellm: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """Everything a runner needs to run one session."""

    id: str
    model: ModelSpec
    index: int
    task: str | None
    attempt: int
    budget_usd: Decimal
    session_dir: Path
    """`<run dir>/sessions/<id>/`, created lazily by the runner if it writes anything."""
    environment: Path
    """The target checkout; runners that let an agent touch files work on a fresh copy of it."""
    environment_fingerprint: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call; `flat_usd` prices simulated calls (the FakeRunner)."""

    input_tokens: int = 0
    output_tokens: int = 0
    flat_usd: Decimal = Decimal(0)


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """What a session produced. `infra_error` marks failures of the machinery, retried on resume."""

    result: Result
    reason: str = ""
    steps: int = 0
    certificate: dict[str, Any] | None = None
    verify_details: dict[str, Any] | None = None
    infra_error: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Meter(Protocol):
    """The session's budget, as the engine exposes it to a runner."""

    @property
    def budget_usd(self) -> Decimal: ...

    @property
    def remaining_usd(self) -> Decimal:
        """Reservation left for this session (budget − spent − held)."""
        ...

    def worst_case_usd(self, prompt_tokens: int) -> Decimal:
        """prompt_tokens × input price + max_output_tokens × output price."""
        ...

    def price(self, usage: Usage) -> Decimal:
        """The cost of a usage at the campaign's declared prices."""
        ...

    async def authorise(self, worst_case_usd: Decimal) -> bool:
        """Hold `worst_case_usd` for the next call; True once the hold is durable."""
        ...

    def charge(self, usage: Usage, settles: Decimal | None = None) -> Decimal:
        """Settle the hold of `settles` (None: every open hold) with the real usage; returns the cost."""
        ...

    def progress(self, note: str) -> None:
        """A short human-readable note on what the session is doing."""
        ...


@runtime_checkable
class AgentRunner(Protocol):
    """A runner kind. `Profile` validates its `[runners.*]` table."""

    Profile: ClassVar[type[RunnerProfile]]

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome: ...
