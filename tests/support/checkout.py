"""A fresh checkout of this repository, as a newcomer's clone would be, for tests that run the
docs' commands in it.

It holds the files `git clone` would give (tracked, and new files not ignored), as they are in
the working tree now (so a test sees uncommitted changes too), committed in a new repository
(so `git status` in it says what the commands wrote). The commands run the `benchtui` this test
session installed (its console script, as a user types it; `python -m benchtui` from the checkout
would import the checkout's copy instead).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from support import ROOT

BENCHTUI = Path(sys.executable).with_name("benchtui")
"""The console script of the benchtui under test."""


def fresh_checkout(dest: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a fresh checkout"]):
        subprocess.run([*git, *args], cwd=dest, check=True, capture_output=True, timeout=120)
    return dest


def git_status(checkout: Path) -> str:
    """What `git status` shows as changed or new (ignored files, like runs/, are not)."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
