"""Runner and target kinds by name, imported lazily so choosing one never imports what another needs.

A kind is a built-in short name, an entry point (`benchtui.runners`, `benchtui.targets`: third-party
packages), or a full `package.module:Class` path. Every spelling of a kind is normalised first
(`canonical`): the dotted paths of the layout before `benchtui/` held everything (`runners.fake:
FakeRunner`, `benchtui.ui.demo:DemoRunner`, …) still name their kinds, so frozen campaigns of old
run dirs load; `identity_spelling` gives the spelling the campaign identity digests, the one the
release before the move digested, so an old run's identity still matches.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

from benchtui.core.contract import AgentRunner, RunnerKind, RunnerProfile
from benchtui.core.executor import ExecutorConfig
from benchtui.core.target import TargetKind, TargetProfile

K = TypeVar("K")


class UnknownKind(LookupError):
    """No kind of that name is installed, or the class named is not one."""


UnknownRunner = UnknownKind  # the name earlier releases (and third-party code) caught


@dataclass(frozen=True, eq=False)  # hashed by identity: kinds are cached per family
class Family(Generic[K]):
    """One family of plugins: its built-ins, its entry-point group and the base its kinds subclass."""

    what: str
    """`runner` or `target`, as messages name it."""
    group: str
    base: type[K]
    builtin: dict[str, str]
    legacy: dict[str, str] = field(default_factory=dict)
    """Old spellings of a kind → its kind now."""

    def available(self) -> list[str]:
        """Names of every installed kind."""
        return sorted(set(self.builtin) | {ep.name for ep in entry_points(group=self.group)})

    def canonical(self, kind: str) -> str:
        """One spelling per kind: a built-in's short name (for its dotted paths, old and new too)."""
        kind = self.legacy.get(kind, kind)
        for short, path in self.builtin.items():
            if kind == path:
                return short
        return kind

    def kind_class(self, kind: str) -> type[K]:
        """The class implementing `kind` (resolved once per process, whatever its spelling);
        raises UnknownKind naming the installed kinds, or saying the class is not of this family."""
        return _resolve(self, self.canonical(kind))


@cache
def _resolve(family: Family[Any], kind: str) -> type[Any]:
    cls: Any = None
    if kind in family.builtin:
        cls = _import(family.builtin[kind])
    else:
        for ep in entry_points(group=family.group, name=kind):
            try:
                cls = ep.load()
            except Exception as exc:  # a broken plugin is one line, not a traceback
                raise UnknownKind(f"cannot load {family.what} kind {kind!r} ({ep.value}): {exc}") from None
            break
        else:
            if ":" not in kind:
                raise UnknownKind(
                    f"unknown {family.what} kind {kind!r} (installed: {', '.join(family.available())})"
                )
            try:
                cls = _import(kind)
            except (ImportError, AttributeError) as exc:
                raise UnknownKind(f"cannot import {family.what} {kind!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, family.base)):
        base = f"{family.base.__module__}.{family.base.__name__}"
        raise UnknownKind(f"{family.what} {kind!r} is not a {family.what} kind (subclass {base})")
    return cls


def _import(path: str) -> type:
    module_name, _, attr = path.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not isinstance(cls, type):
        raise AttributeError(f"{path} is not a class")
    return cls


# -- runners -----------------------------------------------------------------------------------------
PING = "benchtui.runners.mini.ping:PingRunner"
"""The `benchtui check --ping` runner of mini-swe-agent profiles (no short name: not for campaigns)."""

RUNNERS: Family[RunnerKind] = Family(
    "runner",
    "benchtui.runners",
    RunnerKind,
    {
        "fake": "benchtui.runners.fake:FakeRunner",
        "demo": "benchtui.runners.demo:DemoRunner",
        "mini-swe-agent": "benchtui.runners.mini:MiniSweRunner",
        "command": "benchtui.runners.command:CommandRunner",
        "top50": "benchtui.runners.top50:Top50Runner",
    },
    {  # kinds as the release before the move (0a81a35) spelled them
        "benchtui.ui.demo:DemoRunner": "demo",
        "runners.fake:FakeRunner": "fake",
        "runners.minisweagent:MiniSweRunner": "mini-swe-agent",
        "runners.minisweagent.runner:MiniSweRunner": "mini-swe-agent",
        "runners.command:CommandRunner": "command",
        "runners.command.runner:CommandRunner": "command",
        "runners.minisweagent.ping:PingRunner": PING,
    },
)
ENTRY_POINT_GROUP = RUNNERS.group
BUILTIN = RUNNERS.builtin

IDENTITY_SPELLING: dict[str, str] = {
    "demo": "benchtui.ui.demo:DemoRunner",
    PING: "runners.minisweagent.ping:PingRunner",
}
"""Kinds the identity digests in their old spelling (they had no short name then); the others
(fake, mini-swe-agent, command) had one, which their old profiles required."""


def available() -> list[str]:
    """Names of every installed runner kind."""
    return RUNNERS.available()


def canonical(kind: str) -> str:
    return RUNNERS.canonical(kind)


def identity_spelling(kind: str) -> str:
    """How the campaign identity spells a runner kind: what the release before the move digested."""
    found = canonical(kind)
    return IDENTITY_SPELLING.get(found, found)


def runner_class(kind: str) -> type[RunnerKind]:
    """The class implementing runner kind `kind`."""
    return RUNNERS.kind_class(kind)


def validate_profile(table: dict[str, Any], target: type[TargetKind] | None = None) -> RunnerProfile:
    """Validate a `[runners.*]` table against its kind's Profile (pydantic ValidationError on
    error), for the campaign's `target` kind (default: the default target's): its brief is what
    the profile's prompt says about the library, in its digest. Its `kind` is stored normalised."""
    kind = table.get("kind")
    if not isinstance(kind, str):
        raise UnknownKind("runner profile has no 'kind'")
    brief = (target or target_class(DEFAULT_TARGET)).brief
    return runner_class(kind).Profile.model_validate(
        {**table, "kind": canonical(kind)}, context={"brief": brief}
    )


def create(
    profile: RunnerProfile,
    *,
    run_dir: Path,
    target: TargetKind,
    executor: ExecutorConfig | None = None,
) -> AgentRunner:
    """Instantiate the runner for a validated profile, against `target`, on `executor` (None: here)."""
    cls = runner_class(profile.kind)
    if executor is not None and not cls.supports(executor.kind):
        raise UnknownKind(f"runner kind {profile.kind!r} cannot run on [executor] kind = {executor.kind!r}")
    runner: AgentRunner = cls(profile, run_dir=run_dir, executor=executor, target=target)
    return runner


# -- targets -----------------------------------------------------------------------------------------
TARGETS: Family[TargetKind] = Family(
    "target",
    "benchtui.targets",
    TargetKind,
    {
        "problem-reductions": "benchtui.targets.problem_reductions.kind:ProblemReductions",
        "none": "benchtui.targets.none:NoTarget",
        "command": "benchtui.targets.command:CommandTarget",
    },
)
DEFAULT_TARGET = "problem-reductions"
"""`[target] kind` when a campaign has no `[target]` (every campaign before that table existed)."""


def target_class(kind: str) -> type[TargetKind]:
    """The class implementing target kind `kind`."""
    return TARGETS.kind_class(kind)


def validate_target(table: dict[str, Any]) -> TargetProfile:
    """Validate a `[target]` table against its kind's Profile (pydantic ValidationError on error)."""
    kind = table.get("kind", DEFAULT_TARGET)
    if not isinstance(kind, str):
        raise UnknownKind("[target] kind must be a string")
    return target_class(kind).Profile.model_validate({**table, "kind": TARGETS.canonical(kind)})


def create_target(profile: TargetProfile) -> TargetKind:
    """The target of a campaign, from its validated `[target]` profile."""
    return target_class(profile.kind)(profile)
