"""pids cgroups: a hard bound on the processes a session (or a one-shot program) runs.

The kernel refuses a fork past `pids.max`, so a fork bomb is stopped at once and cheaply; where no
group can be made (not root, cgroup v2 without delegation) callers fall back to counting in /proc
or to their time bound. Groups are named `benchtui-<what>-<pid of their owner>`, so the groups of an
owner that was SIGKILLed are swept by the next one made.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from benchtui.core.processes import alive


def new_pids_cgroup(limit: int, name: str) -> Path | None:
    """An empty pids cgroup `name` (ending in `-<pid of its owner>`) allowing `limit` tasks; a
    process joins it by writing its pid to its cgroup.procs. None where none can be made."""
    if os.environ.get("BENCHTUI_PIDS_CGROUP") == "0":  # opt out: count in /proc instead
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = Path("/sys/fs/cgroup/pids") / path.lstrip("/")
        elif controllers == "" and "pids" in _read(
            Path("/sys/fs/cgroup", path.lstrip("/"), "cgroup.subtree_control")
        ):
            base = Path("/sys/fs/cgroup") / path.lstrip("/")
        else:
            continue
        _sweep(base)
        group = base / name
        try:
            group.mkdir()
            (group / "pids.max").write_text(str(limit))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        return group
    return None


def remove_cgroup(group: str | None, wait_s: float = 2.0) -> None:
    """Once its processes are gone (the engine calls this after the worker died; a killed process
    stays in its cgroup until it is reaped, a moment later)."""
    deadline = time.monotonic() + wait_s
    while group:
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def _sweep(base: Path) -> None:
    """Empty groups of workers that are gone (their engine was SIGKILLed before removing them)."""
    for group in base.glob("benchtui-*-*"):
        pid = group.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not alive(int(pid)):
            with contextlib.suppress(OSError):
                group.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def kill_all(group: Path) -> None:
    """SIGKILL every process in `group` (`cgroup.kill` where the kernel has it, else by pid, until
    none is left: a process forking meanwhile is caught by the next round)."""
    with contextlib.suppress(OSError):
        (group / "cgroup.kill").write_text("1")
        return
    for _ in range(100):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)


def refused_forks(group: Path) -> int:
    """How many forks the group's `pids.max` refused so far."""
    try:
        return int((group / "pids.events").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
