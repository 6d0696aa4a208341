"""Processes by what their command line holds (the kill tests: nothing of a session outlives it)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def pids_matching(text: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if text in cmdline and state != "Z":
                found.append(int(entry.name))
    return found


def cgroup_possible() -> bool:
    """Whether a pids cgroup can be made here (root, or a delegated cgroup v2)."""
    from benchtui.core import cgroups

    group = cgroups.new_pids_cgroup(4, f"benchtui-probe-{uuid.uuid4().hex[:8]}-{os.getpid()}")
    if group is not None:
        cgroups.remove_cgroup(str(group))
    return group is not None
