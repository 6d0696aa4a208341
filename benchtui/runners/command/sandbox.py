"""Where an agent CLI runs: bubblewrap (the mini runner's sandbox, plus the gateway) or the host.

Inside bubblewrap the agent has no network at all: its own loopback only, where socat listens
on a fixed port and relays each connection to the gateway's unix socket, bound into the
sandbox. So the one thing the agent can reach is the gateway, with its session token.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from benchtui.runners.kit.bubblewrap import COMMAND_ENV, SYSTEM_DIRS, bubblewrap_args, bwrap_executable

PROJECT = Path(__file__).resolve().parents[3]
ETC_PROFILE = Path(__file__).with_name("etc-profile.sh")
INNER_PORT = 8787  # in the sandbox's own network namespace: the same for every session
INNER_SOCKET_DIR = "/run/benchtui"
RELAY = (
    f"socat TCP-LISTEN:{INNER_PORT},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:{INNER_SOCKET_DIR}/gateway.sock &"
    f" for i in $(seq 500); do socat -u OPEN:/dev/null TCP:127.0.0.1:{INNER_PORT} 2>/dev/null && break;"
    ' sleep 0.01; done; "$@"; status=$?; kill -KILL -1; exit $status'
)
# bwrap's init (PID 1 of the sandbox) outlives the agent while anything else in the sandbox runs
# (socat, whatever the agent left behind): so once the agent exits, the shell kills all of it.
# LIFELINE: the engine holds a pipe's write end for the session's life; when the engine closes
# it, or dies in any way (even SIGKILL), `cat` sees the end and everything in the sandbox dies.
LIFELINE = "(cat <&{fd} >/dev/null; kill -KILL -1) & exec {fd}<&-; "


def agent_bin_dirs() -> list[Path]:
    """Where agent CLIs are looked for before PATH: npm installs in $BENCHTUI_AGENTS_DIR, then in
    ./.agents; then benchtui's own environment (`mini` is a dependency)."""
    roots = [Path(os.environ["BENCHTUI_AGENTS_DIR"])] if os.environ.get("BENCHTUI_AGENTS_DIR") else []
    npm = [root / "node_modules" / ".bin" for root in [*roots, PROJECT / ".agents"]]
    return [*npm, Path(sys.executable).parent]


def resolve(executable: str) -> Path | None:
    if os.sep in executable:
        path = Path(executable)
        return path if os.access(path, os.X_OK) else None
    for folder in agent_bin_dirs():
        if os.access(folder / executable, os.X_OK):
            return folder / executable
    found = shutil.which(executable)
    return Path(found) if found else None


def _install_root(path: Path) -> Path | None:
    """The folder an executable outside the system needs visible: its package tree."""
    real = path.resolve()
    if any(real.is_relative_to(d) for d in SYSTEM_DIRS):
        return None
    if "node_modules" in real.parts:
        return Path(*real.parts[: real.parts.index("node_modules")])
    return real.parent.parent  # <prefix>/bin/tool -> <prefix> (a venv, a Python install)


def mounts_for(executable: Path) -> list[Path]:
    """Read-only binds an agent needs: its install tree and its script interpreter's."""
    found, todo = [], [executable, executable.resolve()]
    try:
        head = executable.resolve().read_bytes()[:256]
    except OSError:
        head = b""
    if head.startswith(b"#!"):
        interpreter = head[2:].split(b"\n")[0].split()[0].decode()
        todo += [Path(interpreter), Path(interpreter).resolve()]
    for path in todo:
        root = _install_root(path)
        if root and root not in found and root != Path("/"):
            found.append(root)
    return found


def bubblewrap_argv(
    argv: list[str],
    *,
    workdir: Path,
    socket_dir: Path,
    env: dict[str, str],
    pred: str | None,
    binds: list[Path],
    lifeline: int,
    gate: dict[str, Any] | None = None,
) -> list[str]:
    """`env -i bwrap ... bash -c LIFELINE+RELAY bash ARGV` (bash: the lifeline fd may be above 9): bwrap inherits nothing (its environ is readable inside)."""
    # Not --die-with-parent: Trio starts processes from a worker thread, and the kernel's
    # parent-death signal fires when that *thread* ends (idle threads exit after a while), which
    # killed agents some seconds in. The lifeline pipe does its job.
    inherited = [a for a in bubblewrap_args(pred, gate=gate) if a != "--die-with-parent"]
    args = [shutil.which("env") or "/usr/bin/env", "-i", bwrap_executable() or "bwrap", *inherited]
    for path in binds:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--ro-bind", str(ETC_PROFILE), "/etc/profile"]
    args += ["--bind", str(workdir), str(workdir), "--bind", str(socket_dir), INNER_SOCKET_DIR]
    for key, value in {**COMMAND_ENV, **env}.items():
        args += ["--setenv", key, value]
    script = LIFELINE.format(fd=lifeline) + RELAY
    return [*args, "--chdir", str(workdir), "/bin/bash", "-c", script, "bash", *argv]


def local_env(home: Path, path_dirs: list[Path], env: dict[str, str]) -> dict[str, str]:
    """The agent's whole environment on the host: built from nothing, so no secret leaks in."""
    path = os.pathsep.join([*map(str, path_dirs), "/usr/local/bin", "/usr/bin", "/bin"])
    return {**COMMAND_ENV, "PATH": path, "HOME": str(home), "TMPDIR": str(home), **env}
