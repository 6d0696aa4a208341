"""Files a runner collects from a session's workdir (certificates.jsonl, …): read as an agent may
have left them, which is anything it could make.

The workdir is the agent's: a name in it may be a symlink to a host file the sandbox hides (it is
followed on the host, outside the sandbox), a FIFO (an open for reading blocks until a writer
comes), a link to `/proc/self/mem` (a read fails), a 1 GiB sparse file or a million lines. So each
path component is opened relative to the one before (`openat`) without following links
(`beneath`), the file must be a regular one, and at most `limit` bytes of it are read. What is wrong is said in one
line: the model's outcome, never the engine's error. Used on the engine's machine and on Ray nodes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from benchtui.core.certificates import parse_block
from benchtui.runners.kit import beneath
from benchtui.runners.kit.beneath import Refused

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_LINES",
    "Collected",
    "Refused",
    "certificate_lines",
    "read_beneath",
    "top_files",
]

MAX_FILE_BYTES = 8 << 20
"""Of a collected file (certificates.jsonl, a trajectory): past it, the file is refused."""
MAX_LINES = 1000
"""JSON lines of certificates.jsonl looked at (each is a certificate: the runner verifies a few)."""


def read_beneath(root: Path, relative: str, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of `root/relative`, no link followed in `relative`; None when it does not exist.

    Raises Refused when it is not a regular file, is larger than `limit`, or cannot be read."""
    return beneath.read_beneath(root, relative, limit)


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
