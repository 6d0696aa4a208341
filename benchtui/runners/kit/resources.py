"""A session's process and disk bounds, shared by the runners: how many processes it runs (a pids
cgroup where one can be made, else a /proc scan) and how much disk its files take.

A pids cgroup is a hard limit (the kernel refuses the fork) and cheap to read, so a fork bomb is
seen at once. Without one (not root, cgroup v2 without delegation), the worker's descendants are
counted in /proc (it is a child subreaper, so orphans of its commands stay under it), at most
SCAN_SHARE of the time: a scan costs ~2 ms per 100 processes on the machine, and hundreds of
sessions scanning often would eat the CPU their commands need.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from pathlib import Path

from benchtui.core import volume
from benchtui.core.cgroups import new_pids_cgroup, remove_cgroup
from benchtui.runners.kit import reaper

__all__ = ["ProcessCount", "copy_notes", "disk_used", "join_pids_cgroup", "new_pids_cgroup", "remove_cgroup"]

SCAN_SHARE = 0.02
INODE_BYTES = 512
WORKER_THREADS = 32  # a pids cgroup counts threads too: the worker's own (litellm, httpx) are allowed


class ProcessCount:
    """The session's processes: a pids cgroup (a hard limit, cheap to read) when one can be made,
    else a scan of /proc for the worker's descendants (it is a child subreaper) now and then."""

    def __init__(self, max_processes: int, cgroup: Path | None, root: int | None = None) -> None:
        self.max = max_processes
        self.cgroup = cgroup
        self.root = root
        """Whose descendants are counted without a cgroup (default: this process, a subreaper)."""
        self._events: int | None = None
        """pids.events, open: each poll is one pread (an engine polls every session's count on
        the TUI's loop; opening the file each time cost 14% of that loop at 64 sessions)."""
        if cgroup is not None:
            with contextlib.suppress(OSError):
                self._events = os.open(cgroup / "pids.events", os.O_RDONLY | os.O_CLOEXEC)
        self.refused = self._refused()
        self.next_scan = 0.0

    def close(self) -> None:
        if self._events is not None:
            with contextlib.suppress(OSError):
                os.close(self._events)
            self._events = None

    def over(self) -> str:
        if self.cgroup is not None:
            refused = self._refused()
            return (
                f"process limit: {refused - self.refused} forks refused at {self.max}"
                if refused > self.refused
                else ""
            )
        now = time.monotonic()
        if now < self.next_scan:
            return ""
        count = len(reaper.descendants(self.root or os.getpid()))
        self.next_scan = now + (time.monotonic() - now) / SCAN_SHARE
        return (
            f"process limit: the session ran {count} processes (at most {self.max})"
            if count > self.max
            else ""
        )

    def _refused(self) -> int:
        if self._events is None:
            return 0
        try:
            return int(os.pread(self._events, 256, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return 0


def join_pids_cgroup(max_processes: int) -> Path | None:
    """Move this process (the worker; its commands inherit it) into a new pids cgroup limited to
    max_processes (+ the worker's threads). None where cgroups cannot be used (not root, v2 without
    delegation): the caller then counts processes in /proc."""
    group = new_pids_cgroup(max_processes + WORKER_THREADS, f"benchtui-worker-{os.getpid()}")
    if group is None:
        return None
    try:
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        remove_cgroup(str(group), wait_s=0)
        return None
    return group


def copy_notes(environment: str) -> list[str]:
    """What a session's copy lacks where it cannot be a volume of its own (`core.volume`)."""
    why = volume.unavailable()
    if not why:
        return []
    shown = ", and a sandbox's mount table shows its copy's host path (which names its model)"
    return [
        f"session copies cannot be mounted here ({why}): their disk bound (max_disk_mb) is polled "
        f"every 5 s, so a burst between two polls gets past it{shown if environment == 'bubblewrap' else ''}"
    ]


def disk_used(*roots: Path, stop_at: float = math.inf) -> int:
    """Bytes of disk the files under `roots` occupy: allocated blocks (a sparse file counts what it
    uses) plus INODE_BYTES per entry (a million empty files are not free, and made every walk slow).
    Stops counting past `stop_at`, so a walk over a flood of files stays short. The walk is the
    agent's tree: `os.fwalk` opens each folder relative to its parent without following links, so
    a link or a folder swapped for one never takes it outside (it counted a host folder's size)."""
    total = 0
    for root in roots:
        for _path, dirs, files, folder in os.fwalk(root):
            for name in (*dirs, *files):
                try:
                    total += os.stat(name, dir_fd=folder, follow_symlinks=False).st_blocks * 512 + INODE_BYTES
                except OSError:
                    continue
            if total > stop_at:
                return total
    return total
