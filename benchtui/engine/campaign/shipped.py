"""The runner profiles shipped with benchtui (`runners/` beside `campaigns/`), and a campaign's
`[runners.<name>] use = "…"` resolved against them.

A shipped profile is a TOML file: `description`, `[needs]` (`program`: the executable its sessions
run, `keys`: environment variables it needs beyond each model's `api_key_env`, `extra`: the pip
extra, `install`: how to get them) and `[profile]`, the `[runners.<name>]` table itself. A
campaign's table that says `use = "codex"` (a shipped name) or `use = "my/agent.toml"` (a file of
that shape, relative to the campaign file) gets that table, its own keys on top (a key it names
replaces the profile's, a table whole); the validated result is what the campaign's identity and
its run dir's frozen copy hold, so a resume does not depend on the shipped file.

Where they are (docs/runners/index.md#shipped-profiles): `benchtui/profiles/`, a link to the
checkout's `runners/` (editable installs and checkouts read the folder itself); a built wheel holds
copies of the files there (package data), so a non-editable install finds the same ones.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchtui.core import inputs, registry
from benchtui.core.errors import BadInput

SHIPPED = Path(__file__).resolve().parents[2] / "profiles"
"""benchtui/profiles: the checkout's runners/ (a link), or the wheel's copy of it."""


@dataclass(frozen=True, slots=True)
class Shipped:
    """One runner profile file."""

    name: str
    path: Path
    description: str
    table: dict[str, Any]
    """The `[runners.<name>]` table it stands for."""
    program: str = ""
    keys: tuple[str, ...] = ()
    extra: str = ""
    install: str = ""

    @property
    def kind(self) -> str:
        return str(self.table.get("kind", ""))

    def here(self) -> list[str]:
        """What this machine lacks to run it, as its kind's preflight finds it ([]: it would run
        here; the target's programs and the models' keys are each campaign's own checks)."""
        try:
            profile = registry.validate_profile(self.table)
        except (ValidationError, registry.UnknownKind) as exc:
            return [f"not a valid profile: {str(exc).splitlines()[0]}"]
        kind = registry.runner_class(profile.kind)
        found = kind.preflight(profile, tasks=None, full=False)
        missing = [f"{c.what}: {c.problem}" for c in found if not c.ok]
        return missing + [f"{key} not set" for key in self.keys if key not in os.environ]


def read(path: Path, name: str | None = None) -> Shipped:
    """A profile file (BadInput: one line naming it)."""
    try:
        data = tomllib.loads(inputs.read_text(path, inputs.CAMPAIGN_MAX_BYTES, "the runner profile"))
    except FileNotFoundError:
        raise BadInput(f"{path}: no such runner profile") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: malformed TOML: {exc}") from None
    table = data.get("profile", data)
    needs = data.get("needs", {}) if "profile" in data else {}
    if not isinstance(table, dict) or not isinstance(needs, dict):
        raise BadInput(f"{path}: [profile] and [needs] must be tables")
    return Shipped(
        name or path.stem,
        path,
        str(data.get("description", "")) if "profile" in data else "",
        dict(table),
        str(needs.get("program", "")),
        tuple(map(str, needs.get("keys", []))),
        str(needs.get("extra", "")),
        str(needs.get("install", "")),
    )


def shipped() -> dict[str, Shipped]:
    """Every shipped profile, by name (its file's stem)."""
    if not SHIPPED.is_dir():
        return {}
    return {p.stem: read(p) for p in sorted(SHIPPED.glob("*.toml"), key=lambda p: p.stem)}


def resolve(name: str, table: dict[str, Any], base: Path) -> dict[str, Any]:
    """The `[runners.<name>]` table with its `use` resolved: the profile's table, then the
    campaign's own keys (BadInput: one line, listing the shipped profiles for an unknown name)."""
    use = table["use"]
    if not isinstance(use, str) or not use:
        raise BadInput(f"runners.{name}.use must be a profile name or a file path")
    if use.endswith(".toml") or "/" in use:
        profile = read((base / use).expanduser().resolve())
    else:
        found = shipped()
        if use not in found:
            names = ", ".join(found) or "none"
            raise BadInput(f"runners.{name}: use = {use!r}: no such runner profile (shipped: {names})")
        profile = found[use]
    return {**profile.table, **{k: v for k, v in table.items() if k != "use"}}
