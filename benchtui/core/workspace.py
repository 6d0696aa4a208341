"""The target environment: its fingerprint (docs/design/invariants.md#f1) and fresh per-session copies of it."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchtui.core import inputs, volume
from benchtui.core.atomic import atomic_write
from benchtui.core.errors import BadInput

SKIP_DIRS = {".git", "target", "__pycache__", "node_modules"}
#: Never copied into a session copy (an agent could read them and send them to its model), and so
#: not part of the content hash either (the copy must hash like the target). Matched on the name of
#: each file or directory, at any depth, case-insensitively.
SECRET_FILES = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".ssh",
    ".aws",
    ".gnupg",
    ".docker",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "credentials.json",
)


def is_secret_file(name: str) -> bool:
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in SECRET_FILES)


def _ignored(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIP_DIRS or is_secret_file(n)}


def remove_secret_files(root: Path) -> list[Path]:
    """Delete secret files from a session copy (a git clone brings committed ones along)."""
    removed = []
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *files]:
            if is_secret_file(name):
                path = Path(current, name)
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(path)
        dirs[:] = [d for d in dirs if not is_secret_file(d)]
    return removed


def _git(path: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def is_git_checkout(path: Path) -> bool:
    return _git(path, "rev-parse", "--show-toplevel") == str(path.resolve())


@dataclass(slots=True)
class HashStats:
    """What hashing a plain directory took: its files and bytes, and the bytes actually read (0
    when the cache answered)."""

    files: int = 0
    bytes: int = 0
    read_bytes: int = 0


RACY_S = 2.0
"""A listing is cached only if no file changed within this many seconds of the hash: a file
rewritten in the same timestamp tick (coarse-mtime filesystems) could otherwise keep its stat."""


def _entries(path: Path) -> Iterator[tuple[Path, str, os.stat_result]]:
    """Every file hashed, in hash order (build/VCS dirs and secret files skipped), with its lstat."""
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not is_secret_file(d))
        for name in sorted(n for n in files if not is_secret_file(n)):
            full = Path(root, name)
            yield full, str(full.relative_to(path)), full.lstat()


def content_hash(path: Path, *, cache: Path | None = None, stats: HashStats | None = None) -> str:
    """sha256 over relative paths and contents of every file (build/VCS dirs skipped).

    With `cache` (a directory), a target whose every file has the same path, size, inode, mtime
    and ctime as when last hashed is not read again (a venv inside the target: 2.4 s per start);
    the hash itself is the same either way. A cache that cannot be read or written is ignored."""
    stats = stats if stats is not None else HashStats()
    entries = list(_entries(path))
    listing = hashlib.sha256()
    newest = 0
    for _full, rel, st in entries:
        stats.files += 1
        stats.bytes += st.st_size
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
        listing.update(
            f"{rel}\0{st.st_mode} {st.st_size} {st.st_dev} {st.st_ino} {st.st_mtime_ns} {st.st_ctime_ns}\0".encode()
        )
    key = listing.hexdigest()
    slot = cache / f"{hashlib.sha256(str(path).encode()).hexdigest()[:32]}.json" if cache else None
    cached = _cached(slot, key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    for full, rel, st in entries:
        digest.update(rel.encode() + b"\0")
        if stat.S_ISLNK(st.st_mode):
            digest.update(os.readlink(full).encode())
        elif stat.S_ISREG(st.st_mode):
            stats.read_bytes += _hash_into(digest, full)
        else:  # a FIFO or a device: reading it would block or never end
            digest.update(f"special {stat.S_IFMT(st.st_mode):o}".encode())
        digest.update(b"\0")
    result = digest.hexdigest()[:16]
    if slot is not None and time.time_ns() - newest > RACY_S * 1e9:
        _store(slot, key, result)
    return result


def _hash_into(digest: Any, path: Path) -> int:
    """Add the file's bytes, a MiB at a time (read whole before: a 10 GB file in the target took
    10 GB of memory); a file that became a FIFO or a folder since its lstat adds what it is."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    read = 0
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            digest.update(f"special {stat.S_IFMT(mode):o}".encode())
            return 0
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            read += len(chunk)
    finally:
        os.close(fd)
    return read


def default_cache() -> Path | None:
    """Where content hashes of plain-directory targets are cached (`$XDG_CACHE_HOME/benchtui`)."""
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        return Path(base or Path.home() / ".cache") / "benchtui" / "fingerprints"
    except RuntimeError:  # no home directory: no cache
        return None


def _cached(slot: Path | None, key: str) -> str | None:
    if slot is None:
        return None
    try:
        data = inputs.loads_json(inputs.read_bytes(slot, 4096, "fingerprint cache"))
    except (OSError, ValueError, BadInput):  # missing, tampered with, or not ours: hash again
        return None
    if not isinstance(data, dict) or data.get("listing") != key:
        return None
    value = data.get("hash")
    return value if isinstance(value, str) and len(value) == 16 else None


def _store(slot: Path, key: str, value: str) -> None:
    try:
        slot.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(slot, json.dumps({"listing": key, "hash": value}).encode())
    except OSError:
        pass  # only a cache: the next start hashes again


def binary_digest(tool: str) -> str | None:
    """`sha256:<first 16 hex>` of the executable `tool` resolves to, or None when there is none.

    Two builds may print one version (pred's v0.5.0 release and a later commit both print
    `pred 0.5.0`, with different bugs): the binary's content tells them apart."""
    found = shutil.which(tool)
    if found is None:
        return None
    try:  # a FIFO named like the tool would block an open that waits for a writer
        return f"sha256:{inputs.sha256(Path(os.path.realpath(found)), 'a tool')[:16]}"
    except (OSError, BadInput):
        return None


def tool_version(tool: str) -> str:
    """`tool=<first line of --version>@sha256:<binary>` (the digest only where the binary is found)."""
    return f"{tool}={program_version(tool)}"


def program_version(tool: str) -> str:
    """`<first line of --version>@sha256:<binary>` (`missing`, `broken`; the digest only where the
    binary is found): what a run records of each of its target's programs (pred)."""
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    text = (done.stdout or done.stderr).strip().splitlines()
    version = text[0] if done.returncode == 0 and text else "broken"
    digest = binary_digest(tool)
    return version + (f"@{digest}" if digest else "")


def fingerprint(
    path: Path, tools: Sequence[str] = (), *, cache: Path | None = None, stats: HashStats | None = None
) -> str:
    """`git:<commit>[+dirty]` for a git checkout, else `sha256:<content hash>` (see `content_hash`
    for `cache` and `stats`); plus tool versions."""
    path = path.resolve()
    if is_git_checkout(path):
        commit = _git(path, "rev-parse", "HEAD") or "unborn"
        dirty = _git(path, "status", "--porcelain", "--untracked-files=no")
        base = f"git:{commit}{'+dirty' if dirty else ''}"
    else:
        base = f"sha256:{content_hash(path, cache=cache, stats=stats)}"
    return " ".join([base, *(tool_version(t) for t in tools)])


def library_commit(fingerprint_text: str) -> str:
    """The commit (or content hash) part of a fingerprint, for results files."""
    return fingerprint_text.split()[0].split(":", 1)[1].removesuffix("+dirty")


def make_session_copy(source: Path, dest: Path, free_bytes: int | None = None) -> Path:
    """A fresh private copy of the target, without secret files: a detached clone at HEAD for
    git, else a file copy. With `free_bytes`, the copy is a filesystem of its own with that much
    left (`core.volume`: the kernel's disk bound; VolumeError when it cannot be made)."""
    if free_bytes is not None:
        size, entries = copy_size(source)
        for grow in (1, 2, 4):  # the size is estimated from above; a checkout filter may still differ
            volume.create(dest, size * grow, entries * grow, free_bytes)
            try:
                return _copy_into(source, dest)
            except (OSError, subprocess.CalledProcessError, shutil.Error):
                if volume.free_bytes(dest) > free_bytes:  # not a full filesystem: a real failure
                    volume.release(dest)
                    raise
        volume.release(dest)
        raise volume.VolumeError(f"the copy of {source} did not fit in {4 * size:,} bytes")
    if dest.exists():
        volume.release(dest)  # a volume an earlier attempt (or a killed engine) left mounted
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    return _copy_into(source, dest)


def _copy_into(source: Path, dest: Path) -> Path:
    """Copy the target into `dest` (missing, or an empty folder)."""
    if is_git_checkout(source):
        subprocess.run(
            ["git", "clone", "--quiet", "--no-hardlinks", str(source), str(dest)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        commit = _git(source, "rev-parse", "HEAD")
        subprocess.run(
            ["git", "-C", str(dest), "checkout", "--quiet", "--detach", str(commit)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        remove_secret_files(dest)
    else:
        shutil.copytree(source, dest, symlinks=True, ignore=_ignored, dirs_exist_ok=True)
    return dest


def copy_size(source: Path) -> tuple[int, int]:
    """(bytes, entries) a session copy of `source` takes, from above: for git, its objects and
    the files of HEAD (`git ls-tree`); else every file copied; each rounded up to whole blocks."""
    if is_git_checkout(source):
        common = _git(source, "rev-parse", "--git-common-dir")
        listing = _git(source, "ls-tree", "-r", "-t", "-l", "HEAD") or ""
        total, entries = _blocks_under(source / common / "objects") if common else (0, 0)
        for line in listing.splitlines():
            meta = line.split("\t", 1)[0].split()
            total += _whole_blocks(int(meta[3])) if len(meta) == 4 and meta[3].isdigit() else BLOCK
            entries += 1
        return total + 64 * 1024 + 128 * entries, entries  # the clone's index, refs and config
    total, entries = 0, 0
    for root, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d not in _ignored(root, dirs)]
        kept = [n for n in files if n not in _ignored(root, files)]
        total += BLOCK * (len(dirs) + 1)
        for name in kept:
            with contextlib.suppress(OSError):
                total += _whole_blocks(os.lstat(os.path.join(root, name)).st_size)
        entries += len(dirs) + len(kept)
    return total, entries


BLOCK = 4096


def _whole_blocks(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _blocks_under(root: Path) -> tuple[int, int]:
    total, entries = BLOCK, 0
    for current, dirs, files in os.walk(root):
        total += BLOCK * len(dirs)
        for name in files:
            with contextlib.suppress(OSError):
                total += _whole_blocks(os.lstat(os.path.join(current, name)).st_size)
        entries += len(dirs) + len(files)
    return total, entries
