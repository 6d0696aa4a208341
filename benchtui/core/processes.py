"""Is a process (by pid, in this PID namespace) still there?"""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True unless no process has `pid` (another user's process counts as alive; so does a pid
    too large to be one, or 0 and below, which name a group: never treated as gone)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
