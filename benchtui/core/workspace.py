"""The target environment: its fingerprint (docs/design/invariants.md#f1) and fresh per-session copies of it."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

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


def content_hash(path: Path) -> str:
    """sha256 over relative paths and contents of every file (build/VCS dirs skipped)."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not is_secret_file(d))
        for name in sorted(n for n in files if not is_secret_file(n)):
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


def fingerprint(path: Path, tools: Sequence[str] = ()) -> str:
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
    """A fresh private copy of the target, without secret files: a detached clone at HEAD for
    git, else a file copy."""
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
            ["git", "-C", str(dest), "checkout", "--quiet", "--detach", str(commit)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        remove_secret_files(dest)
    else:
        shutil.copytree(source, dest, symlinks=True, ignore=_ignored)
    return dest
