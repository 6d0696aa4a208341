"""The host's reads and writes inside a tree an agent writes (the session's copy): nothing it made
is followed.

Any name in the copy may be a symbolic link (to a host folder, to another session's copy), a
FIFO (an open for reading blocks until a writer comes), a device, or a folder swapped for one of
those between two calls. A host process (the mini worker runs as root, outside the sandbox) that
opens `copy/a/b` by its path follows all of that: `mkdir(exist_ok=True)` and `O_NOFOLLOW` on the
last component only let an agent aim the host's writes at any folder. Here each component is
opened relative to the one before (`openat`) with `O_NOFOLLOW` (`O_DIRECTORY` for a folder,
`O_NONBLOCK` so a FIFO never blocks); a file is written only as a new one (`O_EXCL`) and read only
when regular. What is wrong is refused in one line (`Refused`), never followed. Used on the
engine's machine and on Ray nodes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class Refused(Exception):
    """A name in the agent's tree is not what the host may use: the message says why, in one line."""


def parts_of(relative: str) -> list[str]:
    """The components of a path relative to the tree (ValueError for one that leaves it)."""
    parts = [p for p in Path(relative).parts if p not in ("", ".")]
    if not parts or ".." in parts or os.path.isabs(relative):
        raise ValueError(f"not a relative path beneath the workdir: {relative!r}")
    return parts


def open_root(root: Path) -> int | None:
    """The tree's top folder, opened (None when it does not exist); a link there is refused too."""
    try:
        return os.open(root, _FOLDER)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused(f"{root.name}: {why(exc)}") from None


def open_folder(top: int, parts: list[str], *, create: bool = False, shown: str = "") -> int | None:
    """The folder `parts` beneath the open folder `top`, each component opened without following
    it (`create`: made when missing); None when one is missing. The caller closes the result."""
    fd = os.dup(top)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _FOLDER, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return None
                with contextlib.suppress(FileExistsError):  # made in the meantime: opened as it is, below
                    os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = nxt
        done, fd = fd, -1
        return done
    except OSError as exc:
        raise Refused(f"{shown or '/'.join(parts)}: {why(exc)}") from None
    finally:
        if fd >= 0:
            os.close(fd)


def why(exc: OSError) -> str:
    """What an open without following links says about the name it met."""
    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
        return "a symbolic link (not followed) or not a folder"
    if exc.errno == errno.EEXIST:
        return "already there (a file, a link or a FIFO the agent made): not replaced"
    return f"cannot be opened ({exc.strerror or exc})"


def write_new(top: int, relative: str, data: bytes, mode: int = 0o444) -> None:
    """Write `data` as the new file `relative` beneath the open folder `top` (its folders made as
    needed). Refused: a component is a link, a FIFO or no folder, or the name is taken."""
    *folders, name = parts_of(relative)
    folder = open_folder(top, folders, create=True, shown=relative)
    assert folder is not None
    try:
        fd = os.open(name, _CREATE, mode, dir_fd=folder)
    except OSError as exc:
        raise Refused(f"{relative}: {why(exc)}") from None
    finally:
        os.close(folder)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise Refused(f"{relative}: cannot be written ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_beneath(root: Path, relative: str, limit: int) -> bytes | None:
    """The bytes of `root/relative`, no link followed at any depth; None when it does not exist.

    Raises Refused when it is not a regular file, is larger than `limit`, or cannot be read."""
    *folders, name = parts_of(relative)
    top = open_root(root)
    if top is None:
        return None
    try:
        folder = open_folder(top, folders, shown=relative)
    finally:
        os.close(top)
    if folder is None:
        return None
    try:
        fd = os.open(name, _READ, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Refused(f"{relative}: {why(exc)}") from None
    finally:
        os.close(folder)
    try:
        return _read_regular(fd, relative, limit)
    finally:
        os.close(fd)


def _read_regular(fd: int, name: str, limit: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{name}: not a regular file ({kind(info.st_mode)})")
    if info.st_size > limit:
        raise Refused(f"{name}: larger than {limit:,} bytes ({info.st_size:,})")
    chunks, size = [], 0
    try:
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Refused(f"{name}: cannot be read ({exc.strerror or exc})") from None
    if size > limit:  # it grew while read
        raise Refused(f"{name}: larger than {limit:,} bytes")
    return b"".join(chunks)


def kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "a special file"
