"""Tool calls counted by command prefix (`[budget.per_session.tools]`): a shim on the agent's PATH
asks the session's gate, which takes the units through the meter before the tool runs.

`install` writes the shims of one session; `ToolGate` answers them. Both runners that let an
agent run commands (mini-swe-agent, command) use them the same way.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from benchtui.core.contract import LogicalLimits
from benchtui.core.target import Toolbox
from benchtui.runners.kit.toolgate.server import SUBMIT, ToolGate, refusal, run_here

SHIM = Path(__file__).with_name("shim.py")
SANDBOX_SHIMS = "/opt/benchtui/shims"
SANDBOX_SHIM = "/opt/benchtui/gate/shim.py"
SANDBOX_GATE = "/run/benchtui-gate"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

__all__ = [
    "SANDBOX_GATE",
    "SANDBOX_SHIM",
    "SANDBOX_SHIMS",
    "SHIM",
    "SUBMIT",
    "ToolGate",
    "install",
    "python",
    "real_tools",
    "refusal",
    "run_here",
    "tool_names",
    "unhidden",
]


def tool_names(limits: LogicalLimits) -> list[str]:
    """The commands that get a shim: the first word of each counted prefix."""
    return sorted({prefix.split()[0] for prefix, _ in limits.tools})


def python() -> tuple[str, str]:
    """(interpreter, its installation prefix) to run shims with: the base interpreter behind this
    one (a venv's python is a link to it), which needs only its own prefix to start."""
    executable = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return executable, os.path.realpath(sys.base_prefix)


def install(shims: Path, names: list[str], *, interpreter: str, shim: str, gate: str) -> Path:
    """Write one wrapper per tool name into `shims` (paths as the agent's commands see them)."""
    shutil.rmtree(shims, ignore_errors=True)
    shims.mkdir(parents=True)
    for name in names:
        wrapper = shims / name
        wrapper.write_text(f'#!/bin/sh\nexec "{interpreter}" -I -S "{shim}" "{gate}" {name} "$@"\n')
        wrapper.chmod(0o755)
    return shims


def real_tools(names: list[str], toolbox: Toolbox | None) -> dict[str, str]:
    """Where each shimmed tool really is (as seen outside the sandbox): the target's program of
    that name (its `toolbox`), the rest on the system PATH."""
    found = {name: _real(name, toolbox) for name in names}
    return {name: path for name, path in found.items() if path}


def _real(name: str, toolbox: Toolbox | None) -> str | None:
    if toolbox is not None and name in toolbox.found:
        return toolbox.found[name]
    return shutil.which(name, path=SYSTEM_PATH)


def unhidden(names: list[str], toolbox: Toolbox | None, visible: Callable[[str], bool]) -> list[str]:
    """A problem for each counted tool the agent's sandbox shows anyway (its counter could not be
    enforced: the agent would run it directly): the tool on the system PATH, or its executable
    in a directory the sandbox binds (`visible`)."""
    problems = []
    for name in names:
        system = shutil.which(name, path=SYSTEM_PATH)
        real = toolbox.found.get(name) if toolbox is not None and name in toolbox.names else system
        if system is not None:
            problems.append(f"`{name}` is counted but the sandbox shows it at {system}")
        elif real is not None and visible(real):
            problems.append(f"`{name}` is counted but the sandbox shows its executable {real}")
    return problems
