"""Runner kinds by name, imported lazily so choosing one never imports what another needs.

A kind is a built-in short name, an entry point in the `benchtui.runners` group (third-party
packages), or a full `package.module:Class` path.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from pathlib import Path

from runners.base import AgentRunner, RunnerProfile
from runners.executors import ExecutorConfig, supported

ENTRY_POINT_GROUP = "benchtui.runners"

BUILTIN: dict[str, str] = {
    "fake": "runners.fake:FakeRunner",
    "mini-swe-agent": "runners.minisweagent:MiniSweRunner",
    "command": "runners.command:CommandRunner",
}


class UnknownRunner(LookupError):
    """No runner of that kind is installed."""


def available() -> list[str]:
    """Names of every installed runner kind."""
    names = set(BUILTIN) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(names)


def _import(path: str) -> type:
    module_name, _, attr = path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def runner_class(kind: str) -> type[AgentRunner]:
    """The class implementing `kind`; raises UnknownRunner naming the installed kinds."""
    if kind in BUILTIN:
        return _import(BUILTIN[kind])
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=kind):
        return ep.load()
    if ":" in kind:
        try:
            return _import(kind)
        except (ImportError, AttributeError) as exc:
            raise UnknownRunner(f"cannot import runner {kind!r}: {exc}") from None
    raise UnknownRunner(f"unknown runner kind {kind!r} (installed: {', '.join(available())})")


def validate_profile(table: dict) -> RunnerProfile:
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
