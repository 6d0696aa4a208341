"""The campaign file as one validated model: settings from TOML < env `BENCHTUI_*` < CLI, the
checks across tables, and what a campaign derives (computed once: it is frozen).

A validated campaign resolves each runner profile's kind once (`profiles`); the steps that ask a
kind something (preflight, the rule inventory, a triage's check) are handed the resolved
profile, never the campaign to look it up again.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from benchtui.core import bounds, registry
from benchtui.core.contract import LogicalLimits, RunnerKind, RunnerProfile
from benchtui.core.executor import ExecutorConfig
from benchtui.core.money import fmt_exact, usd_floor
from benchtui.core.target import TargetKind, TargetProfile
from benchtui.engine.campaign.identity import identity_digest, identity_parts
from benchtui.engine.campaign.messages import first_errors, profile_class, target_class
from benchtui.engine.campaign.tables import (
    Budget,
    Environment,
    Model,
    Protocol,
    Provider,
    Ui,
    default_target,
    slug,
)
from benchtui.engine.providers import provider_of

toml_data: ContextVar[dict[str, Any] | None] = ContextVar("toml_data", default=None)
"""The TOML file's data while a Campaign is being built (the lowest-precedence settings source)."""


@dataclass(frozen=True, slots=True)
class ResolvedProfile:
    """A `[runners.<name>]` profile with its runner kind resolved."""

    name: str
    profile: RunnerProfile
    kind: type[RunnerKind]


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
    stop_model_after_no_action: int = Field(default=3, ge=0, le=bounds.MAX_SESSIONS)
    """A model whose sessions end this many times in a row without executing a single action (every
    answer without a tool call, empty, or over its context window) gets no more launches in this
    run: its other sessions stay pending for `--resume` once its server is fixed, and the reason is
    said once. 0 turns this off. Not part of the identity (free to change on resume)."""
    runner: str
    """The active profile from [runners.*]."""
    budget: Budget
    """Money: the total, each model's cap, each session's reservation."""
    target: TargetProfile = Field(default_factory=default_target)
    """What kind of target `environment.path` is: its verifier, its inventory (`kind`:
    `problem-reductions`, `none`, `command`, an installed kind; part of the identity when not
    the default). Validated before `runners`: their prompts take its brief."""
    runners: dict[str, RunnerProfile] = Field(min_length=1)
    """Runner profiles by name; each table's `kind` picks the runner."""
    models: list[Model] = Field(min_length=1)
    """The models compared; each gets the same sessions, prompt and budget."""
    environment: Environment
    """The target every session works on (a fresh copy each, for real runners)."""
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
        return init_settings, env_settings, InitSettingsSource(settings_cls, toml_data.get() or {})

    @field_validator("tasks")
    @classmethod
    def _task_names(cls, value: list[str] | None) -> list[str] | None:
        return value and [bounds.check_text(task, "a task name") for task in value]

    @field_validator("runners", mode="before")
    @classmethod
    def _profiles(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, dict):
            return value
        target = info.data.get("target")  # validated before (None: it was refused)
        kind = registry.target_class(target.kind) if isinstance(target, TargetProfile) else None
        out = {}
        for name, table in value.items():
            bounds.check_text(name, "a runner profile name")
            if isinstance(table, RunnerProfile):
                out[name] = table
                continue
            if not isinstance(table, dict):
                raise ValueError(f"runners.{name} must be a table")
            try:
                out[name] = registry.validate_profile(table, kind)
            except registry.UnknownRunner as exc:
                raise ValueError(f"runners.{name}: {exc}") from None
            except ValidationError as exc:
                raise ValueError(f"runners.{name}: {first_errors(exc, profile_class(table))}") from None
        return out

    @field_validator("target", mode="before")
    @classmethod
    def _target(cls, value: Any) -> Any:
        if isinstance(value, TargetProfile) or not isinstance(value, dict):
            return value
        try:
            return registry.validate_target(value)
        except registry.UnknownKind as exc:
            raise ValueError(str(exc)) from None
        except ValidationError as exc:
            raise ValueError(first_errors(exc, target_class(value))) from None

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
        active = self.profiles[self.runner].kind
        if active.targets is not None and self.target.kind not in active.targets:
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

    # -- what a campaign derives: computed once (cached on the frozen model) ------------------
    @cached_property
    def profiles(self) -> dict[str, ResolvedProfile]:
        """Every runner profile with its kind, resolved when the campaign is validated."""
        return {
            name: ResolvedProfile(name, profile, registry.runner_class(profile.kind))
            for name, profile in self.runners.items()
        }

    def kind(self, profile: str) -> type[RunnerKind]:
        """The runner kind of a profile (resolved when the campaign was validated)."""
        return self.profiles[profile].kind

    def make_target(self) -> TargetKind:
        """The campaign's target (its kind resolved when the campaign was validated)."""
        return registry.create_target(self.target)

    @cached_property
    def logical_limits(self) -> LogicalLimits:
        return self.budget.per_session.limits() if self.budget.per_session else LogicalLimits()

    @property
    def models_by_name(self) -> dict[str, Model]:
        return {m.name: m for m in self.models}

    @cached_property
    def sessions_per_model_count(self) -> int:
        """Sessions each model runs (a shortlist campaign: its triage and at most one episode
        per shortlisted rule, which is what the per-session share divides by)."""
        if self.protocol is not None:
            return 1 + self.protocol.shortlist_size
        if self.tasks:
            return len(self.tasks) * self.repeats
        assert self.sessions_per_model is not None  # _consistent: one of the two is given
        return self.sessions_per_model

    @cached_property
    def per_model_usd(self) -> Decimal:
        return self.budget.per_model_usd or usd_floor(self.budget.total_usd / len(self.models))

    @cached_property
    def per_session_usd(self) -> Decimal:
        return self.budget.per_session_usd or usd_floor(self.per_model_usd / self.sessions_per_model_count)

    def warnings(self) -> list[str]:
        free = [m.name for m in self.models if not (m.input_usd_per_mtok and m.output_usd_per_mtok)]
        if free:
            return [f"zero price for {', '.join(free)}: the money cap cannot bound those calls"]
        return []

    # -- what a run dir records of it ---------------------------------------------------------
    def to_toml(self) -> str:
        """The campaign as TOML (the frozen copy in the run dir)."""
        data = self.model_dump(mode="python", exclude_none=True)
        if not self.executor.remote:
            data.pop("executor")  # the default: frozen copies stay as they were
        if self.target == default_target():
            data.pop("target")  # the default: frozen copies stay as they were
        else:
            data["target"] = self.target.model_dump(exclude_none=True)
        data["runners"] = {n: _frozen_profile(p) for n, p in self.runners.items()}
        return tomli_w.dumps(_plain(data))

    def identity(self, environment_fingerprint: str) -> dict[str, str]:
        """The identity as the run dir stores it: a short hash per part."""
        return identity_digest(self.identity_parts(environment_fingerprint))

    def identity_parts(self, environment_fingerprint: str) -> dict[str, Any]:
        """Everything that makes sessions comparable; `--resume` refuses if any part changed."""
        return identity_parts(
            models=self.models,
            sessions={
                "sessions_per_model": self.sessions_per_model,
                "tasks": self.tasks,
                "repeats": self.repeats,
            },
            budget=self.budget,
            runners=self.runners,
            environment=environment_fingerprint,
            target=None if self.target == default_target() else self.target.model_dump(),
            protocol=self.protocol,
        )


def _frozen_profile(profile: RunnerProfile) -> dict[str, Any]:
    """A profile as the frozen copy keeps it: `programs` left out when it names none (the
    copies of campaigns that set none stay as they were)."""
    data = profile.model_dump(exclude_none=True)
    if data.get("programs") == {}:
        del data["programs"]
    return data


def _plain(value: Any) -> Any:
    """TOML-able: no None, money as the number it is (an integer when whole), paths as text."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and "E" not in str(value) else float(value)
    if isinstance(value, Path):
        return str(value)
    return value
