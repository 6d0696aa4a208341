"""The runner boundary: what the engine hands an agent runner and what it gets back.

A runner is constructed once per campaign runner profile (`Runner(profile, run_dir=...,
target=...)`), against the campaign's target (core/target.py: its verifier, its inventory), and
then asked to `run` sessions (concurrently, from many Trio tasks). It must spend money only
through the `Meter`: `await meter.authorise(worst_case)` before every model call (the hold is
durable when it returns True), then `meter.charge(usage, settles=worst_case)` with the call's
real token usage (`settles=None` settles every open hold of the session).

A runner that owns services (a pre-warmed process, a gateway) may also be an async context
manager: the engine enters it once, in a task of the campaign that lives until the campaign
ends, before the first session runs on it, and exits it at the end. This module imports
nothing of the engine or of any target's package: it is the whole contract between the two.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from benchtui.core.checks import Check
from benchtui.core.outcome import Result, SessionOutcome
from benchtui.core.target import TargetKind, TargetTools
from benchtui.core.usage import Usage

__all__ = [
    "AgentRunner",
    "Check",
    "LogicalLimits",
    "Meter",
    "ModelSpec",
    "Result",
    "RunnerKind",
    "RunnerProfile",
    "SessionOutcome",
    "SessionSpec",
    "Triage",
    "Usage",
]


class RunnerProfile(BaseModel):
    """Keys shared by every `[runners.<name>]` table; each runner kind extends it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    path_keys: ClassVar[tuple[str, ...]] = ()
    """Keys holding file paths; relative ones are resolved against the campaign file's folder."""

    kind: str
    """Registry name of the runner (`fake`, `mini-swe-agent`, an entry point, or `pkg.mod:Class`)."""
    wall_time_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Wall-clock limit of one session; past it the session is cancelled and ends as `error`."""

    added_later: ClassVar[dict[str, Any]] = {}
    """Keys a kind gained after run dirs were written, with the default that is what those runs
    did: left out of the identity at that default, so those runs keep theirs."""

    calls_model_api: ClassVar[bool] = False
    """True for kinds whose sessions call each model's real API (its key and `api_base` are then
    checked before a campaign starts); fake and demo kinds call none."""

    def key_variable(self, model: ModelSpec) -> str | None:
        """The environment variable that must hold `model`'s API key for sessions of this profile
        (None: none is needed, or the provider library's own default applies)."""
        return model.api_key_env if self.calls_model_api else None


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
    cache_read_usd_per_mtok: Decimal | None = None
    """None: the input price (a cache read costs what a fresh prompt token does)."""
    cache_write_usd_per_mtok: Decimal | None = None
    """None: the input price."""

    @property
    def cache_read_price(self) -> Decimal:
        return (
            self.input_usd_per_mtok if self.cache_read_usd_per_mtok is None else self.cache_read_usd_per_mtok
        )

    @property
    def cache_write_price(self) -> Decimal:
        return (
            self.input_usd_per_mtok
            if self.cache_write_usd_per_mtok is None
            else self.cache_write_usd_per_mtok
        )

    @property
    def dearest_prompt_price(self) -> Decimal:
        """What a prompt token of unknown bucket may cost: the worst case holds prompts at it."""
        return max(self.input_usd_per_mtok, self.cache_read_price, self.cache_write_price)


MODEL_CALLS = "model_calls"
COUNTERS = (MODEL_CALLS, "shell_actions", "submits")
"""Logical counters every runner may meet; tool counters are named `tools.<command prefix>`."""
TOOLS = "tools."


@dataclass(frozen=True, slots=True)
class LogicalLimits:
    """`[budget.per_session]`: the same logical budget for every session (None: no limit).

    A unit of a counter is taken, durably, before the action it allows (`Meter.use`): a model
    call (`model_calls`, taken by `Meter.authorise`), a command the agent runs (`shell_actions`),
    a certificate verified (`submits`), a call of a tool by command prefix (`tools`, e.g.
    `pred = 24`, `"pred solve" = 10`). `observation_chars` bounds the output the model sees.
    """

    model_calls: int | None = None
    shell_actions: int | None = None
    submits: int | None = None
    observation_chars: int | None = None
    tools: tuple[tuple[str, int], ...] = ()
    """(command prefix, calls) pairs, e.g. (("pred", 24), ("pred solve", 10))."""
    free: tuple[str, ...] = ()
    """Calls of counted tools that take no unit (`pred --help`); their answers are cached."""
    keep_hunting: bool = False
    """An accepted `submit` does not end the session."""

    def __bool__(self) -> bool:
        return any(getattr(self, c) is not None for c in (*COUNTERS, "observation_chars")) or bool(self.tools)

    def limit(self, counter: str) -> int | None:
        """The limit of a counter (`model_calls`, …, `tools.pred solve`), None if it has none."""
        if counter.startswith(TOOLS):
            return dict(self.tools).get(counter[len(TOOLS) :])
        return getattr(self, counter, None) if counter in COUNTERS else None

    @property
    def counters(self) -> list[str]:
        """Every counter with a limit."""
        named = [c for c in COUNTERS if getattr(self, c) is not None]
        return named + [TOOLS + prefix for prefix, _ in self.tools]

    def tool_counters(self, argv: list[str]) -> list[str]:
        """The tool counters one command line takes a unit of: a prefix matches when its first
        word is the command's name and its other words come, in order, among the arguments
        (options and their values may sit between: `pred -o x.json solve p.json` is a solve)."""
        if not argv:
            return []
        name = argv[0].rsplit("/", 1)[-1]
        return [TOOLS + prefix for prefix, _ in self.tools if _runs(prefix.split(), name, argv[1:])]


def _runs(words: list[str], name: str, args: list[str]) -> bool:
    rest = iter(args)  # `in` consumes it: the words must come in order
    return words[0] == name and all(word in rest for word in words[1:])


@dataclass(frozen=True, slots=True)
class Triage:
    """What a triage session of a shortlist campaign (`[protocol] kind = "shortlist"`) is given:
    the target's rule inventory and how many distinct rules to commit, each with a one-line
    hypothesis. It works on the target's source only (no `pred`): its outcome's `shortlist`."""

    rules: tuple[str, ...]
    """The rule inventory (rule ids as `pred list --rules` names them: `SOURCE -> TARGET`)."""
    size: int
    """Rules to commit, in priority order; fewer is the model's outcome (fewer episodes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
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
    limits: LogicalLimits = LogicalLimits()
    """The campaign's logical budget (`[budget.per_session]`); empty when it sets none."""
    triage: Triage | None = None
    """Set for the triage session of a shortlist campaign (`task` is None then)."""
    hypothesis: str = ""
    """An episode of a shortlist campaign: the triage's one-line hypothesis for its rule."""


@runtime_checkable
class Meter(Protocol):
    """The session's budget, as the engine exposes it to a runner."""

    @property
    def budget_usd(self) -> Decimal: ...

    @property
    def limits(self) -> LogicalLimits:
        """The session's logical budget (empty when the campaign sets none)."""
        ...

    @property
    def remaining_usd(self) -> Decimal:
        """Reservation left for this session (budget − spent − held)."""
        ...

    def worst_case_usd(self, prompt_tokens: int, output_tokens: int | None = None) -> Decimal:
        """prompt_tokens × the dearest prompt price (input, cache read or write: never a
        discount) + output_tokens (default max_output_tokens) × output price."""
        ...

    def price(self, usage: Usage) -> Decimal:
        """The cost of a usage at the campaign's declared prices."""
        ...

    async def authorise(self, worst_case_usd: Decimal) -> bool:
        """Hold `worst_case_usd` for the next call; True once the hold is durable."""
        ...

    def charge(self, usage: Usage, *, settles: Decimal | None = None, served: bool = True) -> Decimal:
        """Charge the real usage, settling the hold of `settles` (None: every open hold); returns the cost.

        `served=False`: the provider surely did not serve the call (a refused connection, a 429):
        its `model_calls` unit is given back, so a flaky provider costs a model no calls."""
        ...

    def throttled(self, retry_after_s: float | None = None) -> None:
        """The provider answered 429 (too many requests), asking for `retry_after_s` (its
        Retry-After; None: it named none). The engine keeps one backoff per provider: the next
        `authorise` of every session of that provider waits until it has passed, so a runner
        does not sleep on a 429 itself. Charge the refused call with `served=False` as well."""
        ...

    async def use(self, *counters: str) -> str | None:
        """Take one unit of each counter (all or none) before the action they allow; durable when
        it returns None. Returns the name of a counter whose limit is spent (nothing taken)."""
        ...

    def used(self, counter: str) -> int:
        """Units of `counter` taken so far in this attempt."""
        ...

    @property
    def exhausted(self) -> list[str]:
        """Counters whose limit refused a unit in this attempt, in the order they did."""
        ...

    def progress(self, note: str) -> None:
        """A short human-readable note on what the session is doing."""
        ...


@runtime_checkable
class AgentRunner(Protocol):
    """A runner kind, as the engine uses it. `Profile` validates its `[runners.*]` table;
    `enforces` names the logical budgets it applies, `executors` where its agents can run.
    Built-in and third-party kinds get all of it by subclassing `RunnerKind`."""

    Profile: ClassVar[type[RunnerProfile]]
    enforces: ClassVar[frozenset[str]]
    executors: ClassVar[tuple[str, ...]]
    targets: ClassVar[tuple[str, ...] | None]
    uses_target: ClassVar[bool]

    def __init__(self, profile: Any, *, run_dir: Path, target: TargetKind, executor: Any = None) -> None:
        """`profile` is an instance of `Profile`; `run_dir` the campaign's run dir; `target` the
        campaign's target; `executor` the campaign's `[executor]` (an `ExecutorConfig`; None or
        local: this machine)."""
        ...

    @classmethod
    def preflight(cls, profile: Any, *, tasks: list[str] | None, full: bool) -> list[Check]: ...

    @classmethod
    def target_tools(cls, profile: Any, target: type[TargetKind]) -> TargetTools: ...

    @classmethod
    def ping_profile(cls, profile: Any) -> dict[str, Any] | None: ...

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome: ...


class RunnerKind:
    """The base of every runner kind: what it declares, with defaults for what it need not.

    A subclass sets `Profile` (and, when it has them, `enforces` and `executors`), implements
    `run`, and overrides `preflight` (the machine probes its sessions need: tools, sandboxes;
    never inside the profile's validators, so reading a stopped campaign needs none of them) and
    `ping_profile` (the `[runners.*]` table of a runner making one tiny metered call per model,
    for `benchtui check --ping`; None: the kind cannot ping).
    """

    Profile: ClassVar[type[RunnerProfile]] = RunnerProfile
    enforces: ClassVar[frozenset[str]] = frozenset()
    """Logical budgets it applies besides `model_calls` (the meter applies that one for every kind)."""
    executors: ClassVar[tuple[str, ...]] = ("local",)
    """`[executor]` kinds it can run its agents on (every kind runs on this machine)."""
    targets: ClassVar[tuple[str, ...] | None] = None
    """`[target]` kinds its sessions can work on (None: any; the mini-swe-agent runner's prompts
    hunt in problem-reductions)."""
    uses_target: ClassVar[bool] = False
    """Whether its sessions use the target (its programs, its verifier): then the target's
    preflight must pass before they start (mini-swe-agent, command). A kind that scripts its
    claims (fake, demo) does not."""

    def __init__(self, profile: Any, *, run_dir: Path, target: TargetKind, executor: Any = None) -> None:
        self.profile = profile
        self.run_dir = run_dir
        self.target = target
        self.executor = executor

    @classmethod
    def preflight(cls, profile: Any, *, tasks: list[str] | None, full: bool) -> list[Check]:
        """Checks of what its sessions need on this machine (`full`: also the slow ones); what the
        target needs is the target's preflight, run with this kind's `target_tools`."""
        return []

    @classmethod
    def target_tools(cls, profile: Any, target: type[TargetKind]) -> TargetTools:
        """What its sessions give the target's verifier on this machine: the target's programs as
        found on PATH (kinds whose profiles name them, e.g. `pred`, override this)."""
        found = {name: shutil.which(name) for name in target.programs}
        return TargetTools({name: path for name, path in found.items() if path})

    @classmethod
    def ping_profile(cls, profile: Any) -> dict[str, Any] | None:
        return None

    @classmethod
    def model_checks(cls, profile: Any, models: Sequence[ModelSpec]) -> list[Check]:
        """Problems with the campaign's models as its sessions would call them (the mini kind: a
        name litellm routes to no provider), found before a campaign starts; none by default."""
        return []

    @classmethod
    def notes(cls, profile: Any) -> list[str]:
        """What its sessions will not have on this machine though the docs promise it (e.g. a
        bound the kernel cannot enforce here, polled instead): said when a campaign starts and by
        `benchtui check`, one line each."""
        return []

    runs_triage: ClassVar[bool] = False
    """Whether it can run a shortlist campaign's triage (`[protocol] kind = "shortlist"`): the
    session's `SessionSpec.triage` says so (with the target's rule inventory), and the triage's
    commit comes back as `SessionOutcome.shortlist`."""

    @classmethod
    def scripted_inventory(cls, profile: Any) -> list[str] | None:
        """A rule inventory the profile scripts in place of the target's (the fake runner's
        `rules`, for tests and demos); None: the target's own."""
        return None

    @classmethod
    def check_limits(cls, profile: Any, limits: LogicalLimits) -> list[Check]:
        """Checks of the campaign's logical budget as this kind would apply it: a limit it could
        not enforce as written (e.g. a counted tool its sandbox shows anyway) is a problem, so the
        campaign is refused when it loads."""
        return []

    @classmethod
    def supports(cls, executor_kind: str) -> bool:
        """Whether it can run its agents on executors of `executor_kind`."""
        return executor_kind == "local" or executor_kind in cls.executors

    async def run(self, session: SessionSpec, meter: Meter) -> SessionOutcome:
        raise NotImplementedError
