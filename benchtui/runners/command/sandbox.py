"""Where an agent CLI runs: bubblewrap (the mini runner's sandbox, plus the gateway) or the host.

Inside bubblewrap the agent has no network at all: its own loopback only, where socat listens
on a fixed port and relays each connection to the gateway's unix socket, bound into the
sandbox. So the one thing the agent can reach is the gateway, with its session token. Its copy
is at WORKDIR and its prompt file at PROMPT_FILE, the same for every session; bwrap reads its
options from a pipe (`sealed`): its command line names no host path.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from benchtui.core import inputs
from benchtui.core.errors import BadInput
from benchtui.core.target import Toolbox
from benchtui.runners.kit.bubblewrap import (
    COMMAND_ENV,
    SYSTEM_DIRS,
    WORKDIR,
    bubblewrap_args,
    bwrap_command,
    sealed,
)

PROJECT = Path(__file__).resolve().parents[3]
ETC_PROFILE = Path(__file__).with_name("etc-profile.sh")
INNER_PORT = 8787  # in the sandbox's own network namespace: the same for every session
INNER_SOCKET_DIR = "/run/benchtui"
PROMPT_FILE = "/opt/benchtui/prompt.md"
RELAY = (
    f"socat TCP-LISTEN:{INNER_PORT},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:{INNER_SOCKET_DIR}/gateway.sock &"
    f" for i in $(seq 500); do socat -u OPEN:/dev/null TCP:127.0.0.1:{INNER_PORT} 2>/dev/null && break;"
    ' sleep 0.01; done; "$@"; status=$?; kill -KILL -1; exit $status'
)
# bwrap's init (PID 1 of the sandbox) outlives the agent while anything else in the sandbox runs
# (socat, whatever the agent left behind): so once the agent exits, the shell kills all of it.
# WATCH, on the host, outside the sandbox's PID namespace (nothing inside can see, stop or kill
# it): the engine holds a pipe's write end for the session's life; when the engine closes it, or
# dies in any way (even SIGKILL), `cat` sees the end and the watcher kills its process group;
# bwrap (--die-with-parent: its parent is this one-thread shell) takes the sandbox along. It
# first joins the session's pids cgroup ($1, when there is one), so all it starts is counted.
WATCH = (  # /bin/cat: the agent's PATH (its shims first) is its own, left as it is
    '[ -z "$1" ] || echo $$ 2>/dev/null >"$1/cgroup.procs"; shift;'
    ' "$@" {fd}<&- & agent=$!; /bin/cat <&{fd} >/dev/null {fd}<&- & exec {fd}<&-;'
    " wait -n $agent $!; status=$?; kill -0 $agent 2>/dev/null && kill -KILL 0; kill $! 2>/dev/null;"
    " exit $status"
)


def watched(argv: list[str], lifeline: int, cgroup: Path | None = None) -> list[str]:
    """`argv` under a watcher on the host that kills it (and its sandbox) once `lifeline`'s write
    end closes; in the pids cgroup `cgroup` if given. bash: the lifeline's descriptor may be above 9."""
    return ["/bin/bash", "-c", WATCH.format(fd=lifeline), "watch", str(cgroup or ""), *argv]


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
    """The folder an executable outside the system needs visible: its package tree. `path` as
    named, not resolved: a venv's bin/python is a link to the Python it was made from, and the
    sandbox needs the venv (its pyvenv.cfg, its site-packages) as much as that Python."""
    path = Path(os.path.abspath(path))
    if any(path.is_relative_to(d) for d in SYSTEM_DIRS):
        return None
    if "node_modules" in path.parts:
        return Path(*path.parts[: path.parts.index("node_modules")])
    return path.parent.parent  # <prefix>/bin/tool -> <prefix> (a venv, a Python install)


def named_files(args: list[str], workdir: Path) -> list[Path]:
    """Existing regular files the agent's arguments name by absolute path (`python /x/agent.py`),
    outside the system folders and the workdir: bound read-only, so the agent finds them. Files
    only: a named folder could hold the run dir (every session's copy)."""
    found: list[Path] = []
    for arg in args:
        path = Path(arg)
        if not path.is_absolute() or len(arg) > 4096 or path in found:
            continue
        try:
            if not path.is_file() or path.is_relative_to(workdir):
                continue
        except (OSError, ValueError):
            continue
        if not any(path.is_relative_to(d) for d in SYSTEM_DIRS):
            found.append(path)
    return found


def mounts_for(executable: Path) -> list[Path]:
    """Read-only binds an agent needs: its install tree and its script interpreter's."""
    found, todo = [], [executable, executable.resolve()]
    try:
        head = inputs.read_head(executable.resolve(), 256, "the agent's executable")
    except (OSError, BadInput):
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
    socket: Path,
    prompt_file: Path,
    env: dict[str, str],
    toolbox: Toolbox | None,
    binds: list[Path],
    lifeline: int,
    gate: dict[str, Any] | None = None,
    cgroup: Path | None = None,
    tmp_bytes: int | None = None,
) -> list[str]:
    """`bash -c WATCH env -i bwrap --args FD bash -c RELAY bash ARGV`: bwrap inherits nothing (its
    environ is readable inside) and shows no option (`sealed`). The gateway's `socket` is the only
    thing in the sandbox's own /run/benchtui, a read-only tmpfs: no agent can move it, listen in its
    place or reach another's. `prompt_file` (a host path naming no session) is at PROMPT_FILE."""
    # --die-with-parent is safe here: bwrap's parent is the watcher (one thread). Started by Trio
    # from a worker thread, the parent-death signal fired when that *thread* ended.
    options = bubblewrap_args(toolbox, tmp_bytes, gate=gate)
    for path in binds:
        options += ["--ro-bind", str(path), str(path)]
    options += ["--ro-bind", str(ETC_PROFILE), "/etc/profile", "--ro-bind", str(prompt_file), PROMPT_FILE]
    options += ["--bind", str(workdir), WORKDIR, "--tmpfs", INNER_SOCKET_DIR]
    options += [
        "--ro-bind",
        str(socket),
        f"{INNER_SOCKET_DIR}/gateway.sock",
        "--remount-ro",
        INNER_SOCKET_DIR,
    ]
    for key, value in {**COMMAND_ENV, **env}.items():
        options += ["--setenv", key, value]
    options += ["--chdir", WORKDIR]
    inner = sealed(bwrap_command(), options, ["/bin/bash", "-c", RELAY, "bash", *argv])
    return watched(inner, lifeline, cgroup)


def local_env(home: Path, path_dirs: list[Path], env: dict[str, str]) -> dict[str, str]:
    """The agent's whole environment on the host: built from nothing, so no secret leaks in."""
    path = os.pathsep.join([*map(str, path_dirs), "/usr/local/bin", "/usr/bin", "/bin"])
    return {**COMMAND_ENV, "PATH": path, "HOME": str(home), "TMPDIR": str(home), **env}
