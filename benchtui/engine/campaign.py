"""The campaign file: validated settings (TOML < env `BENCHTUI_*` < CLI) and its identity."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import tomllib
from contextvars import ContextVar
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from benchtui.core import bounds, inputs, registry
from benchtui.core.billable import model_kwargs_problem
from benchtui.core.bindings import BINDING_IDS
from benchtui.core.contract import PROBLEM_REDUCTIONS, LogicalLimits, ModelSpec, RunnerKind, RunnerProfile
from benchtui.core.errors import BadInput
from benchtui.core.executor import ExecutorConfig
from benchtui.core.money import fmt_exact, usd_floor
from benchtui.engine.providers import provider_of

# The TOML file's data while a Campaign is being built (the lowest-precedence settings source).
_toml_data: ContextVar[dict[str, Any] | None] = ContextVar("_toml_data", default=None)


def slug(model: str) -> str:
    """A model name as a file-name part (session ids, results files): `/` and `:` become `_`."""
    return model.replace("/", "_").replace(":", "_")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


MAX_UNITS = 1_000_000_000
Units = Field(default=None, gt=0, le=MAX_UNITS, strict=True)
Calls = Annotated[int, Field(gt=0, le=MAX_UNITS, strict=True)]


class PerSession(Strict):
    """`[budget.per_session]`: logical budgets, the same for every session (all optional)."""

    model_calls: int | None = Units
    """Model calls a session may make (each also needs its money hold)."""
    shell_actions: int | None = Units
    """Commands the agent may run."""
    submits: int | None = Units
    """Certificates verified; later ones are recorded as refused."""
    observation_chars: int | None = Units
    """Output the model sees of each action (head and tail kept, the cut marked)."""
    tools: dict[str, Calls] = Field(default_factory=dict, max_length=64)
    """Calls by command prefix (`pred = 24`, `"pred solve" = 10`), counted by a shim on PATH."""
    free: list[str] = Field(default_factory=list, max_length=64)
    """Calls of counted tools that take no unit, their answers cached per session (`"pred --help"`:
    the words start the command line, only options follow)."""
    keep_hunting: bool = Field(default=False, strict=True)
    """An accepted `submit` does not end the session (default: it does)."""

    @field_validator("free")
    @classmethod
    def _free_calls(cls, value: list[str]) -> list[str]:
        for call in value:
            bounds.check_text(call, "a free call")
            if not re.fullmatch(r"[A-Za-z0-9._+-]+( [A-Za-z0-9._+=-]+)*", call):
                raise ValueError(f"free call {call!r}: a command name and words, one space apart")
        return value

    @model_validator(mode="after")
    def _free_of_counted_tools(self) -> PerSession:
        names = {prefix.split()[0] for prefix in self.tools}
        for call in self.free:
            if call.split()[0] not in names:
                raise ValueError(f"free call {call!r}: {call.split()[0]} is not a counted tool (tools)")
        return self

    @field_validator("tools")
    @classmethod
    def _prefixes(cls, value: dict[str, int]) -> dict[str, int]:
        for prefix in value:
            bounds.check_text(prefix, "a tool prefix")
            if not re.fullmatch(r"[A-Za-z0-9._+-]+( [A-Za-z0-9._+=-]+)*", prefix):
                raise ValueError(f"tool prefix {prefix!r}: a command name and words, one space apart")
        return value

    def limits(self) -> LogicalLimits:
        data = self.model_dump(exclude={"tools", "free"})
        return LogicalLimits(**data, tools=tuple(sorted(self.tools.items())), free=tuple(self.free))


class Budget(Strict):
    total_usd: Decimal = Field(gt=0, le=bounds.MAX_USD)
    """The whole campaign never spends more than this (with `enforce`)."""
    per_model_usd: Decimal | None = Field(default=None, gt=0, le=bounds.MAX_USD)
    """Each model's cap; default total_usd / number of models."""
    per_session_usd: Decimal | None = Field(default=None, gt=0, le=bounds.MAX_USD)
    """Reserved in full before a session starts; default per_model_usd / sessions per model."""
    enforce: bool = True
    """False: no reservations, no refusals, no skips (the campaign may overspend)."""
    per_session: PerSession | None = None
    """Logical budgets per session (model calls, shell actions, tool calls, submits)."""


class TriageBudget(Strict):
    """`[protocol.triage]`: the triage session's logical budget, the same for every model."""

    model_calls: int = Field(gt=0, le=MAX_UNITS, strict=True)
    """Model generations the triage may make (T)."""
    shell_actions: int = Field(gt=0, le=MAX_UNITS, strict=True)
    """Commands the triage may run on the target's source (E_t)."""

    def limits(self) -> LogicalLimits:
        return LogicalLimits(model_calls=self.model_calls, shell_actions=self.shell_actions)


MAX_SHORTLIST = 10_000


class Protocol(Strict):
    """`[protocol]`: how a model's sessions are chosen. `kind = "shortlist"`: per model, a triage
    session on the target's source commits `shortlist_size` distinct rules of the target's rule
    inventory (a one-line hypothesis each); then one episode per rule, in shortlist order, each
    with the per-session budget."""

    kind: Literal["shortlist"]
    """The only protocol so far: triage, then one episode per shortlisted rule."""
    shortlist_size: int = Field(gt=0, le=MAX_SHORTLIST, strict=True)
    """Distinct rules each model's triage commits (the benchmark's Top50: 50)."""
    triage: TriageBudget
    """The triage session's budget (model calls and shell actions; money: per_session_usd)."""


class Model(Strict):
    name: str = Field(min_length=1)
    """A litellm model id (for real runners)."""
    input_usd_per_mtok: Decimal = Field(ge=0, le=bounds.MAX_USD_PER_MTOK)
    """USD per million input tokens; charges are computed from it, never from the provider."""
    output_usd_per_mtok: Decimal = Field(ge=0, le=bounds.MAX_USD_PER_MTOK)
    """USD per million output tokens."""
    max_output_tokens: int = Field(default=4096, gt=0, le=bounds.MAX_OUTPUT_TOKENS)
    """Sent with every call; bounds the worst case that is authorised."""
    api_base: str | None = None
    """The API's base URL (an OpenAI-compatible server, a proxy, a local model)."""
    api_key_env: str | None = None
    """Name of the environment variable holding this model's API key (never the key itself); not
    needed for a server that takes no key (a local model)."""
    litellm: dict[str, Any] = Field(default_factory=dict)
    """Extra litellm keyword arguments."""
    max_connections: int | None = Field(default=None, gt=0, le=bounds.MAX_PARALLELISM, strict=True)
    """Sessions of this model at once (a provider's limit on concurrent requests): a model at its
    limit is passed over until one of its sessions ends, the others fill the free slots. Not part
    of the identity (free to change on resume, like parallelism)."""

    @field_validator("name")
    @classmethod
    def _file_name(cls, value: str) -> str:
        return bounds.check_file_name(value, "the model name")  # it names session dirs and files

    @field_validator("litellm")
    @classmethod
    def _bounded_kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        problem = model_kwargs_problem(value)  # the hold covers one choice, priced tokens
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        return None if value is None else bounds.check_text(value, "api_key_env")

    def spec(self) -> ModelSpec:
        return ModelSpec(**{k: getattr(self, k) for k in ModelSpec.__slots__})


class Environment(Strict):
    path: Path
    """The target checkout, relative to the campaign file."""
    tools: list[str] = Field(default_factory=list)
    """Executables whose `--version` is part of the environment fingerprint (e.g. ["pred"])."""

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: list[str]) -> list[str]:
        return [bounds.check_text(tool, "a tool name") for tool in value]


class Target(Strict):
    kind: Literal["problem-reductions", "none"] = "problem-reductions"
    """What the target brings. `problem-reductions` (the default: campaigns before this key had
    it): its verifier, its task inventory, its `pred` CLI. `none`: a target without them; the
    sessions' certificates are recorded unverified."""


class Provider(Strict):
    max_connections: int = Field(gt=0, le=bounds.MAX_PARALLELISM, strict=True)
    """Sessions at once across every model of this provider (its concurrent-request limit per key
    or organisation); each model's own `max_connections` applies as well."""


class Ui(Strict):
    keys: dict[str, str] = Field(default_factory=dict)
    """Keys by binding id, replacing the defaults: `kill = "ctrl+k"` (a comma separates
    alternatives: `quit = "q,ctrl+q"`). Ids: docs/guide/tui.md."""

    @field_validator("keys")
    @classmethod
    def _known_ids(cls, keys: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(keys) - set(BINDING_IDS))
        if unknown:
            raise ValueError(f"unknown binding id {', '.join(unknown)} (ids: {', '.join(BINDING_IDS)})")
        blank = sorted(k for k, v in keys.items() if not v.strip(" ,"))
        if blank:
            raise ValueError(f"no key given for {', '.join(blank)}")
        return keys


class Campaign(BaseSettings):
    """A campaign file. Every key is checked; unknown keys are errors."""

    model_config = SettingsConfigDict(
        env_prefix="BENCHTUI_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=bounds.NAME_MAX_BYTES)
    """Run dir name: <state-dir>/<name>/."""
    sessions_per_model: int | None = Field(default=None, gt=0, le=bounds.MAX_SESSIONS)
    """Whole-library sessions per model (or give `tasks`)."""
    tasks: list[str] | None = Field(default=None, min_length=1)
    """Task names (e.g. reduction rules); sessions per model = len(tasks) × repeats."""
    repeats: int = Field(default=1, gt=0, le=bounds.MAX_SESSIONS)
    """How many times each task is run per model."""
    parallelism: int = Field(default=4, gt=0, le=bounds.MAX_PARALLELISM)
    """Sessions running at once (free to change on resume)."""
    runner: str
    """The active profile from [runners.*]."""
    budget: Budget
    """Money: the total, each model's cap, each session's reservation."""
    runners: dict[str, RunnerProfile] = Field(min_length=1)
    """Runner profiles by name; each table's `kind` picks the runner."""
    models: list[Model] = Field(min_length=1)
    """The models compared; each gets the same sessions, prompt and budget."""
    environment: Environment
    """The target every session works on (a fresh copy each, for real runners)."""
    target: Target = Field(default_factory=Target)
    """What kind of target `environment.path` is (part of the identity when not the default)."""
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    """Where the agents run: this machine (default) or a Ray cluster (not part of the identity)."""
    ui: Ui = Field(default_factory=Ui)
    """Terminal UI options (not part of the campaign's identity: free to change on resume)."""
    protocol: Protocol | None = None
    """`kind = "shortlist"`: a triage session per model chooses the rules its episodes hunt in."""
    providers: dict[str, Provider] = Field(default_factory=dict, max_length=64)
    """Limits per provider, keyed by a model's `api_base` (`[providers."http://127.0.0.1:8000/v1"]`)
    or, for models without one, by the provider part of their name (`[providers.openai]`). Not
    part of the identity (free to change on resume)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: explicit (CLI) > BENCHTUI_* environment > the TOML file.
        return init_settings, env_settings, InitSettingsSource(settings_cls, _toml_data.get() or {})

    @field_validator("tasks")
    @classmethod
    def _task_names(cls, value: list[str] | None) -> list[str] | None:
        return value and [bounds.check_text(task, "a task name") for task in value]

    @field_validator("runners", mode="before")
    @classmethod
    def _profiles(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out = {}
        for name, table in value.items():
            bounds.check_text(name, "a runner profile name")
            if isinstance(table, RunnerProfile):
                out[name] = table
                continue
            if not isinstance(table, dict):
                raise ValueError(f"runners.{name} must be a table")
            try:
                out[name] = registry.validate_profile(table)
            except registry.UnknownRunner as exc:
                raise ValueError(f"runners.{name}: {exc}") from None
            except ValidationError as exc:
                raise ValueError(f"runners.{name}: {_first_errors(exc, _profile_class(table))}") from None
        return out

    @model_validator(mode="after")
    def _consistent(self) -> Campaign:
        if self.protocol is not None:
            if self.sessions_per_model is not None or self.tasks is not None:
                raise ValueError(
                    "[protocol] kind = shortlist: the triage chooses the tasks; "
                    "give neither sessions_per_model nor tasks"
                )
            if self.repeats != 1:
                raise ValueError("[protocol] kind = shortlist: repeats must be 1")
        elif (self.sessions_per_model is None) == (self.tasks is None):
            raise ValueError("give exactly one of sessions_per_model or tasks")
        if self.sessions_per_model_count * len(self.models) > bounds.MAX_SESSIONS:
            raise ValueError(
                f"{self.sessions_per_model_count} sessions for each of {len(self.models)} models "
                f"is more than {bounds.MAX_SESSIONS:,} sessions"
            )
        names = [m.name for m in self.models]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate model names: {', '.join(dupes)}")
        slugs = [slug(n) for n in names]
        clash = sorted({n for n in names if slugs.count(slug(n)) > 1})
        if clash:
            raise ValueError(f"models {', '.join(clash)} map to the same file name (/ and : become _)")
        if self.runner not in self.runners:
            raise ValueError(f"runner {self.runner!r} is not one of [runners.*]: {', '.join(self.runners)}")
        active = self.kind(self.runner)
        if self.target.kind not in active.targets:
            raise ValueError(
                f"runner {self.runner!r} (kind {self.runners[self.runner].kind!r}) needs a target of kind "
                f"{' or '.join(map(repr, active.targets))}, not [target] kind = {self.target.kind!r}"
            )
        if not active.supports(self.executor.kind):
            raise ValueError(
                f"runner {self.runner!r} (kind {self.runners[self.runner].kind!r}) cannot run on "
                f"[executor] kind = {self.executor.kind!r}"
            )
        known = {provider_of(m.name, m.api_base) for m in self.models}
        unknown = [p for p in self.providers if p.rstrip("/") not in known]
        if unknown:
            raise ValueError(
                f"[providers] {', '.join(map(repr, unknown))}: no model goes there "
                f"(the models' providers: {', '.join(map(repr, sorted(known)))})"
            )
        if self.per_model_usd > self.budget.total_usd:
            raise ValueError(
                f"per_model_usd {fmt_exact(self.per_model_usd)} exceeds total_usd "
                f"{fmt_exact(self.budget.total_usd)}"
            )
        if self.per_session_usd > self.per_model_usd:
            raise ValueError(
                f"per_session_usd {fmt_exact(self.per_session_usd)} exceeds a model's cap "
                f"{fmt_exact(self.per_model_usd)}"
            )
        if not self.per_session_usd:
            raise ValueError(
                f"each session's share of {self.per_model_usd:f} rounds to $0: give per_session_usd"
            )
        return self

    def kind(self, profile: str) -> type[RunnerKind]:
        """The runner kind of a profile, resolved when the campaign was validated (its class is
        imported once: every later ask is a lookup)."""
        return registry.runner_class(self.runners[profile].kind)  # cached since validation

    @property
    def logical_limits(self) -> LogicalLimits:
        return self.budget.per_session.limits() if self.budget.per_session else LogicalLimits()

    @property
    def models_by_name(self) -> dict[str, Model]:
        return {m.name: m for m in self.models}

    @property
    def sessions_per_model_count(self) -> int:
        """Sessions each model runs (a shortlist campaign: its triage and at most one episode
        per shortlisted rule, which is what the per-session share divides by)."""
        if self.protocol is not None:
            return 1 + self.protocol.shortlist_size
        if self.tasks:
            return len(self.tasks) * self.repeats
        assert self.sessions_per_model is not None  # _consistent: one of the two is given
        return self.sessions_per_model

    @property
    def per_model_usd(self) -> Decimal:
        return self.budget.per_model_usd or usd_floor(self.budget.total_usd / len(self.models))

    @property
    def per_session_usd(self) -> Decimal:
        return self.budget.per_session_usd or usd_floor(self.per_model_usd / self.sessions_per_model_count)

    def warnings(self) -> list[str]:
        free = [m.name for m in self.models if not (m.input_usd_per_mtok and m.output_usd_per_mtok)]
        if free:
            return [f"zero price for {', '.join(free)}: the money cap cannot bound those calls"]
        return []

    def task_for(self, index: int) -> str | None:
        return self.tasks[index % len(self.tasks)] if self.tasks else None

    def to_toml(self) -> str:
        """The campaign as TOML (the frozen copy in the run dir)."""
        data = self.model_dump(mode="python", exclude_none=True)
        if not self.executor.remote:
            data.pop("executor")  # the default: frozen copies stay as they were
        if self.target.kind == PROBLEM_REDUCTIONS:
            data.pop("target")
        data["runners"] = {n: p.model_dump(exclude_none=True) for n, p in self.runners.items()}
        return tomli_w.dumps(_plain(data))

    def identity(self, environment_fingerprint: str) -> dict[str, str]:
        """The identity as the run dir stores it: a short hash per part."""
        return identity_digest(self.identity_parts(environment_fingerprint))

    def identity_parts(self, environment_fingerprint: str) -> dict[str, Any]:
        """Everything that makes sessions comparable; `--resume` refuses if any part changed."""
        parts: dict[str, Any] = _canonical(
            {
                "models": [m.model_dump(exclude=SCHEDULING) for m in self.models],
                "sessions": {
                    "sessions_per_model": self.sessions_per_model,
                    "tasks": self.tasks,
                    "repeats": self.repeats,
                },
                "budget": _budget_identity(self.budget),
                "runners": {
                    n: {**p.model_dump(), "kind": registry.identity_spelling(p.kind)}
                    for n, p in sorted(self.runners.items())
                },
                "environment": environment_fingerprint,
            }
        )
        if self.target.kind != PROBLEM_REDUCTIONS:  # the identity of older campaigns stays what it was
            parts["target"] = self.target.kind
        if self.protocol is not None:  # campaigns without one keep the identity they had
            parts["protocol"] = _canonical(self.protocol.model_dump())
        return parts


SCHEDULING = {"max_connections"}
"""Model keys that only say when sessions start, not what they get: outside the identity."""


def _budget_identity(budget: Budget) -> dict[str, Any]:
    data = budget.model_dump()
    if data["per_session"] is None:  # the identity of campaigns without one stays what it was
        del data["per_session"]
    else:  # keys added later, at their defaults: the identity stays what it was
        for key, default in (("free", []), ("keep_hunting", False)):
            if data["per_session"].get(key) == default:
                del data["per_session"][key]
    return data


def identity_digest(parts: dict[str, Any]) -> dict[str, str]:
    """A short hash per identity part (stored in the run dir, compared on resume)."""
    return {
        key: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
        for key, value in parts.items()
    }


def _canonical(value: Any) -> Any:
    """JSON-able, with numbers spelled one way (0.20 == 0.2, 3 == 3.0) so equal means equal."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float | int) and not isinstance(value, bool):
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, Path):
        return str(value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and "E" not in str(value) else float(value)
    if isinstance(value, Path):
        return str(value)
    return value


def _first_errors(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """Every error as `where: what`; an unknown key says which known key it may be a typo of."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key" + _did_you_mean(model or Campaign, err["loc"])
        parts.append(f"{where}: {msg}" if where else msg)
    return "; ".join(parts)


def _profile_class(table: dict[str, Any]) -> type[BaseModel] | None:
    try:
        return registry.runner_class(str(table.get("kind"))).Profile
    except registry.UnknownRunner:  # reported as such already
        return None


def _did_you_mean(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """` (did you mean `key`?)` for the known key of the table at `loc` closest to its last part."""
    table: type[BaseModel] | None = model
    skip = 0
    for part in loc[:-1]:
        if skip:  # a list index or a table's own key name (runners.<name>, tools.<prefix>)
            skip -= 1
            continue
        field = table.model_fields.get(str(part)) if table else None
        if field is None:
            return ""
        table, skip = _table_of(field.annotation)
    if table is None or not loc:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(table.model_fields), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _table_of(annotation: Any) -> tuple[type[BaseModel] | None, int]:
    """The model a field's values are validated by, and how many loc parts sit between (list
    indexes, dict keys)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, 0
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (list, tuple, dict) and args:
        inner, skip = _table_of(args[-1])
        return inner, skip + 1
    for arg in args:  # X | None
        inner, skip = _table_of(arg)
        if inner is not None:
            return inner, skip
    return None, 0


def _env_variable(loc: tuple[int | str, ...]) -> str | None:
    """The BENCHTUI_* variable that set the value at `loc` (or a table holding it), if one did."""
    names = {name.upper(): name for name in os.environ}
    keys = [str(part) for part in loc if isinstance(part, str)]
    for n in range(len(keys), 0, -1):
        found = names.get("BENCHTUI_" + "__".join(keys[:n]).upper())
        if found is not None:
            return found
    return None


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Relative paths in the file mean relative to the file (the frozen copy stores them absolute)."""
    tables = [(data.get("environment"), "path")]
    for table in (data.get("runners") or {}).values():
        if isinstance(table, dict) and isinstance(table.get("kind"), str):
            try:
                keys = registry.runner_class(table["kind"]).Profile.path_keys
            except (registry.UnknownRunner, AttributeError):
                continue  # reported by validation
            tables += [(table, key) for key in keys]
    for table, key in tables:
        if isinstance(table, dict) and isinstance(table.get(key), str):
            table[key] = str((base / table[key]).expanduser().resolve())


def load(path: Path, *, require_target: bool = True, **overrides: Any) -> Campaign:
    """Load and validate a campaign file; every problem is a one-line BadInput.

    `require_target=False` lets `benchtui check` report a missing target among its other checks."""
    try:
        text = inputs.read_text(path, inputs.CAMPAIGN_MAX_BYTES, "the campaign file")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such campaign file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise BadInput(f"{path}: malformed TOML: nested too deeply") from None
    if _depth(data) > MAX_DEPTH:  # deeper data would overflow the recursion of later steps
        raise BadInput(f"{path}: values nested more than {MAX_DEPTH} deep")
    _resolve_paths(data, path.parent)
    token = _toml_data.set(data)
    try:
        campaign = Campaign(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        for err in exc.errors():  # a bad BENCHTUI_* variable is the variable's fault, not the file's
            variable = _env_variable(err["loc"])
            if variable is not None:
                raise BadInput(
                    f"environment variable {variable}={os.environ[variable]!r}: "
                    f"{err['msg'].removeprefix('Value error, ')}"
                ) from None
        raise BadInput(f"{path}: {_first_errors(exc)}") from None
    except (SettingsError, RecursionError) as exc:  # a BENCHTUI_* value that is not valid JSON
        raise BadInput(_env_error(exc)) from None
    finally:
        _toml_data.reset(token)
    if require_target and not campaign.environment.path.is_dir():
        what = "does not exist" if not campaign.environment.path.exists() else "is not a directory"
        raise BadInput(f"{path}: environment.path {campaign.environment.path} {what}")
    return campaign


MAX_DEPTH = 32


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _env_error(exc: Exception) -> str:
    field = re.search(r'field "(\w+)"', str(exc))
    name = f"BENCHTUI_{field.group(1).upper()}" if field else "a BENCHTUI_* environment variable"
    return f"{name}: cannot parse its value (a table or list must be JSON, e.g. BENCHTUI_MODELS='[...]')"
