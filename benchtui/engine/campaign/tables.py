"""The tables of a campaign file (`[budget]`, `[[models]]`, `[environment]`, `[target]`,
`[protocol]`, `[ui]`), each a strict pydantic model: every key checked, unknown keys are errors."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from benchtui.core import bounds, registry
from benchtui.core.billable import model_kwargs_problem
from benchtui.core.bindings import BINDING_IDS
from benchtui.core.contract import LogicalLimits, ModelSpec
from benchtui.core.target import TargetProfile


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


SCHEDULING = {"max_connections"}
"""Model keys that only say when sessions start, not what they get: outside the identity."""
ADDED_LATER = ("cache_read_usd_per_mtok", "cache_write_usd_per_mtok", "prices_from")
"""Model keys added after run dirs were written: outside the identity when not given."""


class Model(Strict):
    name: str = Field(min_length=1)
    """A litellm model id (for real runners)."""
    input_usd_per_mtok: Decimal = Field(ge=0, le=bounds.MAX_USD_PER_MTOK)
    """USD per million input tokens; charges are computed from it, never from the provider."""
    output_usd_per_mtok: Decimal = Field(ge=0, le=bounds.MAX_USD_PER_MTOK)
    """USD per million output tokens (reasoning included)."""
    cache_read_usd_per_mtok: Decimal | None = Field(default=None, ge=0, le=bounds.MAX_USD_PER_MTOK)
    """USD per million prompt tokens the provider read from its cache (OpenAI, llama.cpp and vLLM:
    `cached_tokens`; Anthropic: `cache_read_input_tokens`; Gemini: `cachedContentTokenCount`).
    Default: the input price (cached tokens cost what fresh ones do)."""
    cache_write_usd_per_mtok: Decimal | None = Field(default=None, ge=0, le=bounds.MAX_USD_PER_MTOK)
    """USD per million prompt tokens written to the provider's cache (Anthropic:
    `cache_creation_input_tokens`). Default: the input price. The worst case a call is held at
    prices its prompt at the dearest of the three prompt prices, never at a discount."""
    prices_from: str | None = Field(default=None, max_length=200)
    """Where the prices came from when the campaign file gave none (`input_usd_per_mtok` and
    `output_usd_per_mtok` both left out): litellm's price map, read offline by the front end
    (`"litellm 1.110.2 price map"`), the prices frozen into the run's campaign copy. Not set by hand."""
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

    def identity(self) -> dict[str, Any]:
        """The keys that make its sessions comparable: not scheduling, and a price added later
        left out at its default (the identity of campaigns before it stays what it was)."""
        data = self.model_dump(exclude=SCHEDULING)
        for key in ADDED_LATER:
            if data.get(key) is None:
                del data[key]
        return data

    def spec(self) -> ModelSpec:
        return ModelSpec(**{k: getattr(self, k) for k in ModelSpec.__slots__})


PriceLookup = Callable[[list[str]], dict[str, dict[str, Any]]]
"""Model names -> the price keys to add for each one priced (runners/mini/prices.py: litellm's map)."""


class Environment(Strict):
    path: Path
    """The target checkout, relative to the campaign file."""
    tools: list[str] = Field(default_factory=list)
    """Executables whose `--version` is part of the environment fingerprint (e.g. ["pred"])."""

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: list[str]) -> list[str]:
        return [bounds.check_text(tool, "a tool name") for tool in value]


def default_target() -> TargetProfile:
    """`[target]` when a campaign has none: problem-reductions (every campaign before the table)."""
    return registry.validate_target({"kind": registry.DEFAULT_TARGET})


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
