"""What the benchmark's runner has written so far: its `submission.json`, read while it runs (the
progress) and once it ended (the outcome), without trusting the file.

The runner rewrites the file after every episode (a temporary file renamed over it), and first
after episode 1: before it, the run is in triage. The file is opened beneath its folder without
following a link (a link, a FIFO or a device there is refused, never opened as what it names),
bounded in size; what it says is read by the one reader of the format (`core.submission`).
"""

from __future__ import annotations

from pathlib import Path

from benchtui.core import submission
from benchtui.runners.kit.beneath import Refused, read_beneath

NAME = "submission.json"


class Unreadable(Exception):
    """The file is there but cannot be read as a file (the message says why, in one line)."""


def read(folder: Path) -> bytes | None:
    """The file's bytes; None when there is none yet. Raises Unreadable."""
    try:
        return read_beneath(folder, NAME, submission.MAX_BYTES)
    except Refused as exc:
        raise Unreadable(str(exc)) from None


def progress(folder: Path) -> submission.Progress:
    """How far the run got (never raises)."""
    try:
        return submission.progress(read(folder))
    except Unreadable as exc:
        return submission.Progress("unreadable", problem=str(exc))
