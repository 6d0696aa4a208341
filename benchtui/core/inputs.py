"""Reading files that a user, or someone tampering with a run dir, handed us.

Only regular files are read (a FIFO or a device would block or never end), within a size bound
(a huge file would be loaded whole), and without following the path twice (open, then fstat the
descriptor). Every problem is a one-line BadInput; a missing file stays FileNotFoundError so each
caller can say what a missing file means for it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from benchtui.core.errors import BadInput

CAMPAIGN_MAX_BYTES = 8 * 1024 * 1024
"""A campaign file is a few KB; 10,000 task names are ~300 KB."""
LEDGER_MAX_BYTES = 64 * 1024 * 1024
"""The ledger holds accounts and the attempts in flight: a few KB, ~200 bytes per running session."""
SMALL_MAX_BYTES = 1024 * 1024
"""identity.json, .latest: a few hundred bytes when benchtui wrote them."""


def read_bytes(path: Path, limit: int | None, what: str) -> bytes:
    """The content of the regular file `path` (at most `limit` bytes), without ever blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: {what} is not a regular file")
        if limit is not None and info.st_size > limit:
            raise BadInput(f"{path}: {what} is too large ({info.st_size} bytes, at most {limit})")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:  # it grew while we read
                raise BadInput(f"{path}: {what} is too large (at most {limit} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text(path: Path, limit: int | None, what: str) -> str:
    """Like `read_bytes`, decoded as UTF-8 (anything else is a one-line BadInput)."""
    try:
        return read_bytes(path, limit, what).decode()
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def loads_json(text: str | bytes) -> Any:
    """json.loads whose every failure is a ValueError (deep nesting raises RecursionError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
