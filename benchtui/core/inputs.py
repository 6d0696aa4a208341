"""Reading files that a user, or someone tampering with a run dir, handed us.

Only regular files are read (a FIFO or a device would block or never end, a folder is no file),
within a size bound (a huge file would be loaded whole; a sparse one costs nothing to make), and
without following the path twice (open, then fstat the descriptor). Every problem is a one-line BadInput; a missing file stays FileNotFoundError so each
caller can say what a missing file means for it.
"""

from __future__ import annotations

import hashlib
import io
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
DOTENV_MAX_BYTES = 1024 * 1024
DOTENV_MAX_LINES = 10_000
""".env: a few keys, a few hundred bytes (a 1 GiB sparse one took python-dotenv a minute and
gigabytes of memory before benchtui said a word)."""
TEMPLATE_MAX_BYTES = 1024 * 1024
"""A prompt template (mini-swe-agent's YAML, the command runner's prompt): a few KB."""


def _open_regular(path: Path, what: str) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file `path` (opened without blocking: a FIFO or a device is
    refused, never read), and its fstat."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise BadInput(f"{path}: {what} is not a regular file ({_kind(info.st_mode)})")
    return fd, info


def _kind(mode: int) -> str:
    kinds = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}
    return kinds.get(stat.S_IFMT(mode), "a device")


def read_bytes(path: Path, limit: int | None, what: str) -> bytes:
    """The content of the regular file `path` (at most `limit` bytes), without ever blocking."""
    fd, info = _open_regular(path, what)
    try:
        if limit is not None and info.st_size > limit:
            raise BadInput(f"{path}: {what} is too large ({info.st_size:,} bytes, at most {limit:,})")
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


def read_head(path: Path, size: int, what: str) -> bytes:
    """The first `size` bytes of the regular file `path` (a script's `#!` line, say)."""
    fd, _ = _open_regular(path, what)
    try:
        return os.read(fd, size)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def sha256(path: Path, what: str) -> str:
    """The sha256 (hex) of the regular file `path`, read a MiB at a time (a file of any size)."""
    fd, _ = _open_regular(path, what)
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return digest.hexdigest()


def read_dotenv(path: Path) -> dict[str, str]:
    """The variables a `.env` file sets ({} when there is none), read within DOTENV_MAX_BYTES and
    DOTENV_MAX_LINES; one BadInput line naming it when it is a folder, a FIFO, a device, too
    large or not UTF-8."""
    try:
        text = read_text(path, DOTENV_MAX_BYTES, "the .env file")
    except FileNotFoundError:
        return {}
    lines = text.count("\n") + 1
    if lines > DOTENV_MAX_LINES:
        raise BadInput(f"{path}: the .env file has {lines:,} lines (at most {DOTENV_MAX_LINES:,})")
    from dotenv import dotenv_values  # pydantic-settings' own dependency

    return {k: v for k, v in dotenv_values(stream=io.StringIO(text)).items() if v is not None}


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
