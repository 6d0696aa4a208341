"""Runner kinds by name, imported lazily so choosing one never imports what another needs.

A kind is a built-in short name, an entry point in the `benchtui.runners` group (third-party
packages), or a full `package.module:Class` path. Every spelling of a kind is normalised first
(`canonical`): the dotted paths of the layout before `benchtui/` held everything (`runners.fake:
FakeRunner`, `benchtui.ui.demo:DemoRunner`, …) still name their kinds, so frozen campaigns of old
run dirs load; `identity_spelling` gives the spelling the campaign identity digests, the one the
release before the move digested, so an old run's identity still matches.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from benchtui.core.contract import AgentRunner, RunnerKind, RunnerProfile
from benchtui.core.executor import ExecutorConfig

ENTRY_POINT_GROUP = "benchtui.runners"

BUILTIN: dict[str, str] = {
    "fake": "benchtui.runners.fake:FakeRunner",
    "demo": "benchtui.runners.demo:DemoRunner",
    "mini-swe-agent": "benchtui.runners.mini:MiniSweRunner",
    "command": "benchtui.runners.command:CommandRunner",
}
PING = "benchtui.runners.mini.ping:PingRunner"
"""The `benchtui check --ping` runner of mini-swe-agent profiles (no short name: not for campaigns)."""

LEGACY: dict[str, str] = {
    "benchtui.ui.demo:DemoRunner": "demo",
    "runners.fake:FakeRunner": "fake",
    "runners.minisweagent:MiniSweRunner": "mini-swe-agent",
    "runners.minisweagent.runner:MiniSweRunner": "mini-swe-agent",
    "runners.command:CommandRunner": "command",
    "runners.command.runner:CommandRunner": "command",
    "runners.minisweagent.ping:PingRunner": PING,
}
"""Kinds as the release before the move (0a81a35) spelled them → their kind now."""

IDENTITY_SPELLING: dict[str, str] = {
    "demo": "benchtui.ui.demo:DemoRunner",
    PING: "runners.minisweagent.ping:PingRunner",
}
"""Kinds the identity digests in their old spelling (they had no short name then); the others
(fake, mini-swe-agent, command) had one, which their old profiles required."""


class UnknownRunner(LookupError):
    """No runner of that kind is installed."""


def available() -> list[str]:
    """Names of every installed runner kind."""
    names = set(BUILTIN) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(names)


def canonical(kind: str) -> str:
    """One spelling per kind: a built-in's short name (for its dotted paths, old and new too)."""
    kind = LEGACY.get(kind, kind)
    for short, path in BUILTIN.items():
        if kind == path:
            return short
    return kind


def identity_spelling(kind: str) -> str:
    """How the campaign identity spells a kind: what the release before the move digested."""
    found = canonical(kind)
    return IDENTITY_SPELLING.get(found, found)


def _import(path: str) -> type:
    module_name, _, attr = path.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not isinstance(cls, type):
        raise AttributeError(f"{path} is not a class")
    return cls


def runner_class(kind: str) -> type[RunnerKind]:
    """The class implementing `kind` (resolved once per process, whatever its spelling); raises
    UnknownRunner naming the installed kinds, or saying the class is not a runner kind."""
    return _resolve(canonical(kind))


@cache
def _resolve(kind: str) -> type[RunnerKind]:
    cls: Any = None
    if kind in BUILTIN:
        cls = _import(BUILTIN[kind])
    else:
        for ep in entry_points(group=ENTRY_POINT_GROUP, name=kind):
            cls = ep.load()
            break
        else:
            if ":" not in kind:
                raise UnknownRunner(f"unknown runner kind {kind!r} (installed: {', '.join(available())})")
            try:
                cls = _import(kind)
            except (ImportError, AttributeError) as exc:
                raise UnknownRunner(f"cannot import runner {kind!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, RunnerKind)):
        raise UnknownRunner(
            f"runner {kind!r} is not a runner kind (subclass benchtui.core.contract.RunnerKind)"
        )
    found: type[RunnerKind] = cls
    return found


def validate_profile(table: dict[str, Any]) -> RunnerProfile:
    """Validate a `[runners.*]` table against its kind's Profile (pydantic ValidationError on
    error); its `kind` is stored normalised."""
    kind = table.get("kind")
    if not isinstance(kind, str):
        raise UnknownRunner("runner profile has no 'kind'")
    return runner_class(kind).Profile.model_validate({**table, "kind": canonical(kind)})


def create(profile: RunnerProfile, *, run_dir: Path, executor: ExecutorConfig | None = None) -> AgentRunner:
    """Instantiate the runner for a validated profile, on `executor` (None: this machine)."""
    cls = runner_class(profile.kind)
    if executor is not None and not cls.supports(executor.kind):
        raise UnknownRunner(f"runner kind {profile.kind!r} cannot run on [executor] kind = {executor.kind!r}")
    runner: AgentRunner = cls(profile, run_dir=run_dir, executor=executor)
    return runner
