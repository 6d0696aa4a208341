"""The target environment: its fingerprint (F1) and fresh per-session copies of it."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

SKIP_DIRS = {".git", "target", "__pycache__", "node_modules"}


def _git(path: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def is_git_checkout(path: Path) -> bool:
    return _git(path, "rev-parse", "--show-toplevel") == str(path.resolve())


def content_hash(path: Path) -> str:
    """sha256 over relative paths and contents of every file (build/VCS dirs skipped)."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            full = Path(root, name)
            digest.update(str(full.relative_to(path)).encode() + b"\0")
            mode = full.lstat().st_mode
            if stat.S_ISLNK(mode):
                digest.update(os.readlink(full).encode())
            elif stat.S_ISREG(mode):
                digest.update(full.read_bytes())
            else:  # a FIFO or a device: reading it would block or never end
                digest.update(f"special {stat.S_IFMT(mode):o}".encode())
            digest.update(b"\0")
    return digest.hexdigest()[:16]


def tool_version(tool: str) -> str:
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return f"{tool}=missing"
    return (
        f"{tool}={(done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else 'broken'}"
    )


def fingerprint(path: Path, tools: list[str] = ()) -> str:
    """`git:<commit>[+dirty]` for a git checkout, else `sha256:<content hash>`; plus tool versions."""
    path = path.resolve()
    if is_git_checkout(path):
        commit = _git(path, "rev-parse", "HEAD") or "unborn"
        dirty = _git(path, "status", "--porcelain", "--untracked-files=no")
        base = f"git:{commit}{'+dirty' if dirty else ''}"
    else:
        base = f"sha256:{content_hash(path)}"
    return " ".join([base, *(tool_version(t) for t in tools)])


def library_commit(fingerprint_text: str) -> str:
    """The commit (or content hash) part of a fingerprint, for results files."""
    return fingerprint_text.split()[0].split(":", 1)[1].removesuffix("+dirty")


def make_session_copy(source: Path, dest: Path) -> Path:
    """A fresh private copy of the target: a detached clone at HEAD for git, else a file copy."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if is_git_checkout(source):
        subprocess.run(
            ["git", "clone", "--quiet", "--no-hardlinks", str(source), str(dest)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        commit = _git(source, "rev-parse", "HEAD")
        subprocess.run(
            ["git", "-C", str(dest), "checkout", "--quiet", "--detach", commit],
            check=True,
            capture_output=True,
            timeout=600,
        )
    else:
        shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(*SKIP_DIRS))
    return dest
