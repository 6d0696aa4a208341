"""The run dir: layout, the single-owner lock, moving an old run aside, the latest-run pointer."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from pathlib import Path

from benchtui.atomic import atomic_write
from benchtui.errors import BadInput, RunDirBusy

CAMPAIGN = "campaign.toml"
IDENTITY = "identity.json"
LOCK = ".lock"
LATEST = ".latest"
CONTROL_SOCKET = "control.sock"


class RunLock:
    """An exclusive flock on `<run dir>/.lock`, held for the life of the process."""

    def __init__(self, run_dir: Path) -> None:
        self.fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise RunDirBusy(f"{run_dir} is in use by another benchtui") from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def move_aside(run_dir: Path) -> Path:
    """Rename an old run out of the way (never delete it); refuses if it is in use."""
    lock = RunLock(run_dir)
    try:
        aside = run_dir.with_name(f"{run_dir.name}.{time.strftime('%Y%m%d-%H%M%S')}")
        n = 1
        while aside.exists():
            aside = run_dir.with_name(f"{run_dir.name}.{time.strftime('%Y%m%d-%H%M%S')}-{n}")
            n += 1
        run_dir.rename(aside)
    finally:
        lock.release()
    return aside


def create(run_dir: Path, files: dict[str, bytes]) -> RunLock:
    """Create a run dir whole (built aside, then renamed into place) and lock it."""
    staging = run_dir.with_name(f".{run_dir.name}.new-{os.getpid()}")
    staging.mkdir(parents=True)
    try:
        for name, data in files.items():
            atomic_write(staging / name, data)
        lock = RunLock(staging)
        staging.rename(run_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return lock


def set_latest(state_dir: Path, name: str) -> None:
    atomic_write(state_dir / LATEST, (name + "\n").encode())


def latest(state_dir: Path) -> Path:
    """The most recently started run under the state dir (for `--resume` without a campaign)."""
    try:
        name = (state_dir / LATEST).read_text().strip()
    except FileNotFoundError:
        raise BadInput(f"nothing to resume: no run under {state_dir}") from None
    run_dir = state_dir / name
    if not (run_dir / CAMPAIGN).exists():
        raise BadInput(f"nothing to resume: {run_dir} has no {CAMPAIGN}")
    return run_dir


def read_identity(run_dir: Path) -> dict[str, str]:
    try:
        return json.loads((run_dir / IDENTITY).read_text())
    except (OSError, ValueError) as exc:
        raise BadInput(f"{run_dir / IDENTITY}: unreadable ({exc}); use --fresh") from None
