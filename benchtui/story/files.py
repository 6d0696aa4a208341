"""A session's files, read as an agent may have left them: bounded, in ranges, never through a link.

`sessions/<id>/` is written by benchtui's worker, but an agent on the host (`environment =
"local"`) or in its sandbox's bound folders can put a symlink to a host file there, a FIFO (an
open for reading blocks until a writer comes), or a 1 GiB sparse file. So every component below
the run dir is opened relative to the one before (`openat`) without following links, only a
regular file is read, and at most the range asked for: a viewer that shows the head of a 1 GiB
trajectory reads a few MB of it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Unreadable(Exception):
    """A file that exists but is not one the viewer reads (a link, a FIFO, …): one line why."""


@dataclass(frozen=True, slots=True)
class Chunk:
    data: bytes
    offset: int
    size: int
    """The file's whole size when it was read."""

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@contextlib.contextmanager
def open_beneath(root: Path, relative: str) -> Iterator[int]:
    """A descriptor of the regular file `root/relative`, no link followed below `root`.

    FileNotFoundError when it is not there; Unreadable when it is not a regular file."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Unreadable(f"{relative!r}: not a path beneath the run dir")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            try:
                nxt = os.open(part, _FLAGS | (0 if last else os.O_DIRECTORY), dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise Unreadable(f"{relative}: {_why(exc)}") from None
            os.close(fd)
            fd = nxt
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable(f"{relative}: not a regular file")
        yield fd
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a symbolic link (not followed)"
    return exc.strerror or str(exc)


def read_range(root: Path, relative: str, offset: int, limit: int) -> Chunk:
    """At most `limit` bytes of `root/relative` from `offset` (fewer at its end)."""
    with open_beneath(root, relative) as fd:
        size = os.fstat(fd).st_size
        offset = max(0, min(offset, size))
        try:
            data = os.pread(fd, max(0, min(limit, size - offset)), offset)
        except OSError as exc:
            raise Unreadable(f"{relative}: {_why(exc)}") from None
        return Chunk(data, offset, size)


def read_whole(root: Path, relative: str, limit: int) -> bytes | None:
    """The file whole if it is at most `limit` bytes; None when it is missing; Unreadable when
    it is larger (the caller says so and pages it instead)."""
    try:
        chunk = read_range(root, relative, 0, limit + 1)
    except FileNotFoundError:
        return None
    if chunk.size > limit or len(chunk.data) > limit:
        raise Unreadable(f"{relative}: {chunk.size:,} bytes, more than the {limit:,} read whole")
    return chunk.data


def size_of(root: Path, relative: str) -> tuple[int, int] | None:
    """(size, mtime in ns) of a file, for telling whether it changed; None when missing or not
    a regular file."""
    try:
        with open_beneath(root, relative) as fd:
            info = os.fstat(fd)
            return info.st_size, info.st_mtime_ns
    except (FileNotFoundError, NotADirectoryError, Unreadable, OSError):
        return None
