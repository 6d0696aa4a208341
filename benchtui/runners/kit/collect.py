"""Files a runner collects from a session's workdir (certificates.jsonl, …): read as an agent may
have left them, which is anything it could make.

The workdir is the agent's: a name in it may be a symlink to a host file the sandbox hides (it is
followed on the host, outside the sandbox), a FIFO (an open for reading blocks until a writer
comes), a link to `/proc/self/mem` (a read fails), a 1 GiB sparse file or a million lines. So each
path component is opened relative to the one before (`openat`) without following links, the file
must be a regular one, and at most `limit` bytes of it are read. What is wrong is said in one
line: the model's outcome, never the engine's error. Used on the engine's machine and on Ray nodes.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from benchtui.core.certificates import parse_block

MAX_FILE_BYTES = 8 << 20
"""Of a collected file (certificates.jsonl, a trajectory): past it, the file is refused."""
MAX_LINES = 1000
"""JSON lines of certificates.jsonl looked at (each is a certificate: the runner verifies a few)."""
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Refused(Exception):
    """A collected file is not a bounded regular file: the message says why, in one line."""


def read_beneath(root: Path, relative: str, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of `root/relative`, no link followed in `relative`; None when it does not exist.

    Raises Refused when it is not a regular file, is larger than `limit`, or cannot be read."""
    parts = [p for p in Path(relative).parts if p not in ("", ".")]
    if not parts or ".." in parts or os.path.isabs(relative):
        raise ValueError(f"not a relative path beneath the workdir: {relative!r}")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            try:
                nxt = os.open(part, _FLAGS | (0 if last else os.O_DIRECTORY), dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise Refused(f"{relative}: {_why(exc)}") from None
            os.close(fd)
            fd = nxt
        return _read_regular(fd, relative, limit)
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
        return "a symbolic link (not followed) or not a folder"
    return f"cannot be opened ({exc.strerror or exc})"


def _read_regular(fd: int, name: str, limit: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{name}: not a regular file ({_kind(info.st_mode)})")
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


def _kind(mode: int) -> str:
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


@dataclass
class Collected:
    """JSON-object lines of certificates.jsonl, and what was wrong with the file (if anything)."""

    lines: list[str] = field(default_factory=list)
    problem: str = ""


def certificate_lines(workdir: Path, name: str = "certificates.jsonl") -> Collected:
    """Each line of `workdir/name` that looks like a JSON object (the verifier parses it, bounded),
    at most MAX_LINES of them."""
    try:
        data = read_beneath(workdir, name)
    except Refused as exc:
        return Collected(problem=str(exc))
    if data is None:
        return Collected()
    found = Collected()
    for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
        if not line.lstrip().startswith("{"):
            continue  # chatter, as in the agent's output
        cert, why = parse_block(line)
        if cert is None:
            if not why.startswith("not JSON"):  # too deep or too large: the model's malformed output
                found.problem = found.problem or f"{name}: line {number}: {why}"
            continue
        if len(found.lines) == MAX_LINES:
            found.problem = f"{name}: more than {MAX_LINES:,} certificate lines (the rest ignored)"
            break
        found.lines.append(line)
    return found


def top_files(folder: Path, limit: int = MAX_FILE_BYTES, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """The regular files directly in `folder` (none followed through a link), each bounded: a file
    past `limit` is cut, and says so."""
    found: dict[str, bytes] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name in skip or not entry.is_file(follow_symlinks=False):
                continue
            try:
                found[entry.name] = read_beneath(folder, entry.name, limit) or b""
            except Refused as exc:
                found[entry.name] = f"[benchtui: not collected: {exc}]\n".encode()
    return found
