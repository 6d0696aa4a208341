"""benchtui's private folders in the temporary directory, and those a killed process left.

A folder is made as `benchtui-<kind>-<pid>-<random>` by the process that owns it (its sockets and
scratch files), which removes it when done. A process killed with SIGKILL removes nothing: the
next campaign to start removes the folders whose owner is no longer alive (`remove_stale`).
Kinds are short (a unix socket path inside one has at most 107 bytes).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from benchtui.core import processes, volume

KINDS = ("gate", "mswea", "gw", "node", "mini", "prompt", "top50")
_NAME = re.compile(rf"benchtui-(?:{'|'.join(KINDS)})-(\d+)-")


def make(kind: str) -> Path:
    """A new private folder (mode 0700) for this process."""
    assert kind in KINDS, kind
    return Path(tempfile.mkdtemp(prefix=f"benchtui-{kind}-{os.getpid()}-"))


def remove_stale(root: Path | None = None) -> list[Path]:
    """Remove the folders whose owner process is gone; returns them. Only real folders of this
    user with a name `make` gives (no link is followed, no one else's folder touched)."""
    root = Path(tempfile.gettempdir()) if root is None else root
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    uid = os.getuid()
    for entry in entries:
        found = _NAME.match(entry.name)
        if found is None or processes.alive(int(found.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
            volume.sweep(Path(entry.path))  # a node's session copy, still mounted
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed
