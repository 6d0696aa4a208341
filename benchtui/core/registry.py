"""Runner kinds by name, imported lazily so choosing one never imports what another needs.

A kind is a built-in short name, an entry point in the `benchtui.runners` group (third-party
packages), or a full `package.module:Class` path.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from benchtui.core.contract import AgentRunner, RunnerProfile
from benchtui.core.executor import ExecutorConfig, supported

ENTRY_POINT_GROUP = "benchtui.runners"

BUILTIN: dict[str, str] = {
    "fake": "benchtui.runners.fake:FakeRunner",
    "mini-swe-agent": "benchtui.runners.mini:MiniSweRunner",
    "command": "benchtui.runners.command:CommandRunner",
}


class UnknownRunner(LookupError):
    """No runner of that kind is installed."""


def available() -> list[str]:
    """Names of every installed runner kind."""
    names = set(BUILTIN) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(names)


def _import(path: str) -> type[AgentRunner]:
    module_name, _, attr = path.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not isinstance(cls, type):
        raise AttributeError(f"{path} is not a class")
    return cls


def runner_class(kind: str) -> type[AgentRunner]:
    """The class implementing `kind`; raises UnknownRunner naming the installed kinds."""
    if kind in BUILTIN:
        return _import(BUILTIN[kind])
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=kind):
        loaded: type[AgentRunner] = ep.load()
        return loaded
    if ":" in kind:
        try:
            return _import(kind)
        except (ImportError, AttributeError) as exc:
            raise UnknownRunner(f"cannot import runner {kind!r}: {exc}") from None
    raise UnknownRunner(f"unknown runner kind {kind!r} (installed: {', '.join(available())})")


def validate_profile(table: dict[str, Any]) -> RunnerProfile:
    """Validate a `[runners.*]` table against its kind's Profile (pydantic ValidationError on error)."""
    kind = table.get("kind")
    if not isinstance(kind, str):
        raise UnknownRunner("runner profile has no 'kind'")
    return runner_class(kind).Profile.model_validate(table)


def create(profile: RunnerProfile, *, run_dir: Path, executor: ExecutorConfig | None = None) -> AgentRunner:
    """Instantiate the runner for a validated profile; a remote `executor` goes to runners that
    declare it in their `executors` (the others never see the keyword)."""
    cls = runner_class(profile.kind)
    if executor is None or not executor.remote:
        return cls(profile, run_dir=run_dir)
    if not supported(cls, executor.kind):
        raise UnknownRunner(f"runner kind {profile.kind!r} cannot run on [executor] kind = {executor.kind!r}")
    return cls(profile, run_dir=run_dir, executor=executor)  # type: ignore[call-arg]
