"""Killing a process tree for sure, without cgroups: freeze it, then kill it.

mini-swe-agent starts every command in a new session, so a process-group kill misses them, and a
command may fork on its own. The worker is a child subreaper (orphans of its commands stay under
it), so while it lives, everything the session started is in its /proc tree. We SIGSTOP that
tree until it stops growing (a stopped process cannot fork), then SIGKILL all of it: nothing
escapes, whether a process ignores SIGTERM or is paused already.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections import defaultdict

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def state(pid: int) -> str | None:
    """The process state letter (R, S, T, Z, …), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rindex(b")") + 2 :].split(maxsplit=1)[0].decode()


def is_alive(pid: int) -> bool:
    return state(pid) not in (None, "Z", "X")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        tree[int(fields[1])].append(int(entry.name))
    return tree


def descendants(root: int) -> set[int]:
    tree, found, todo = _children(), set(), [root]
    while todo:
        for child in tree.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_tree(root: int, *, include_root: bool = True) -> set[int]:
    """Freeze `root`'s tree until it stops growing, then SIGKILL it; returns the pids signalled."""
    stopped: set[int] = set()
    for _ in range(100):
        tree = descendants(root) | ({root} if include_root else set())
        new = tree - stopped
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped |= new
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
        _signal(pid, signal.SIGCONT)
    return stopped
