"""Preflight of the `command` runner kind: the tools its sessions need on this machine.

The profile's validators are pure (a stopped campaign is read on any machine): whether the agent
CLI, `pred`, and the sandbox's bwrap and socat are here is asked only before sessions start
(the start of a campaign, `benchtui check`).
"""

from __future__ import annotations

import os
import shutil

from benchtui.core.contract import Check
from benchtui.runners.command import sandbox
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit.bubblewrap import bwrap_executable
from benchtui.targets.problem_reductions import resolve_pred


def preflight(profile: CommandProfile, *, target: str) -> list[Check]:
    argv0 = profile.command[0]
    found = sandbox.resolve(argv0)
    checks = [
        Check("agent CLI", detail=str(found))
        if found is not None
        else Check("agent CLI", f"{argv0!r} not found (install it, or give its path in `command`)")
    ]
    if target == "problem-reductions":
        pred = resolve_pred(profile.pred)
        checks.append(
            Check("pred", detail=pred)
            if os.path.isabs(pred) and os.access(pred, os.X_OK)
            else Check(
                "pred", f"{profile.pred!r} not found: install it or set the profile's `pred` to its path"
            )
        )
    if profile.environment == "bubblewrap":
        tools = {"bwrap": bwrap_executable(), "socat": shutil.which("socat")}
        missing = [tool for tool, path in tools.items() if path is None]
        checks.append(
            Check("bubblewrap sandbox", detail=", ".join(f"{t} {p}" for t, p in tools.items()))
            if not missing
            else Check(
                "bubblewrap sandbox",
                f'environment = "bubblewrap" needs {" and ".join(missing)} (apt install bubblewrap socat), '
                'or use environment = "local"',
            )
        )
    return checks
