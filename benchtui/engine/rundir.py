"""The run dir: layout, the single-owner lock, moving an old run aside, the latest-run pointer."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
import time
from pathlib import Path

from benchtui.core import inputs, processes, volume
from benchtui.core.atomic import atomic_write
from benchtui.core.errors import BadInput, RunDirBusy
from benchtui.engine import identity_file

CAMPAIGN = "campaign.toml"
IDENTITY = identity_file.FILE
LOCK = ".lock"
LATEST = ".latest"
CONTROL_SOCKET = "control.sock"
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
PRIVATE = 0o700
"""The run dir holds the control socket and the accounts: the user's alone, whatever the umask."""


def require(path: Path) -> Path:
    """`path` if it is a run dir benchtui made, else BadInput saying what it is (one line)."""
    if not path.exists():
        raise BadInput(f"{path}: does not exist")
    if not path.is_dir():
        raise BadInput(f"{path}: is not a directory (a run dir is, e.g. runs/fair)")
    if not (path / CAMPAIGN).is_file():
        raise BadInput(f"{path}: not a benchtui run dir (no {CAMPAIGN})")
    return path


READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
"""What opening the lock for writing answers in a run dir benchtui may read but not write."""


def read_only_message(run_dir: Path) -> str:
    return (
        f"{run_dir} is read-only: benchtui cannot run or resume a campaign there (it writes its "
        f"lock, journal and ledger); `benchtui report {run_dir}`, `view` and `ctl status` read it as it is"
    )


class RunLock:
    """An exclusive flock on `<run dir>/.lock`, held until released (`with RunLock(run_dir):`
    releases it on leaving; a process that dies releases it too)."""

    def __init__(self, run_dir: Path) -> None:
        try:
            self.fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:  # moved aside by another benchtui between our look and our lock
            raise RunDirBusy(f"{run_dir} was just taken over by another benchtui") from None
        except NotADirectoryError:
            raise BadInput(f"{run_dir} is not a run dir (a file where a directory should be)") from None
        except IsADirectoryError:
            raise BadInput(f"{run_dir / LOCK} is a directory: not a run dir benchtui made") from None
        except OSError as exc:
            if exc.errno in READ_ONLY:
                raise BadInput(read_only_message(run_dir)) from None
            raise
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise RunDirBusy(busy_message(run_dir)) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{os.getpid()}\n".encode())
        with contextlib.suppress(OSError):  # a run dir made before it was private, or by an old version
            os.chmod(run_dir, PRIVATE)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def owner(run_dir: Path) -> int | None:
    """The pid the lock holder wrote into the lock file (None: unreadable, or not yet written)."""
    try:
        text = inputs.read_text(run_dir / LOCK, inputs.SMALL_MAX_BYTES, "the lock").strip()
    except (OSError, BadInput):
        return None
    return int(text) if text.isdigit() else None


def busy_message(run_dir: Path) -> str:
    """Who holds the run dir, and what to do about it."""
    pid = owner(run_dir)
    who = f"another benchtui (pid {pid})" if pid else "another benchtui"
    return (
        f"{run_dir} is in use by {who}: let it finish, or stop it with `benchtui ctl {run_dir} stop`, "
        "or start this one with another --state-dir"
    )


def move_aside(run_dir: Path) -> Path:
    """Rename an old run out of the way (never delete it); refuses if it is in use. Session copies
    its killed engine left mounted are released first (not moved along, mounted for good)."""
    with RunLock(run_dir):
        volume.sweep(run_dir / "sessions")
        aside = run_dir.with_name(f"{run_dir.name}.{time.strftime('%Y%m%d-%H%M%S')}")
        n = 1
        while aside.exists():
            aside = run_dir.with_name(f"{run_dir.name}.{time.strftime('%Y%m%d-%H%M%S')}-{n}")
            n += 1
        run_dir.rename(aside)
    return aside


def create(run_dir: Path, files: dict[str, bytes]) -> RunLock:
    """Create a run dir whole (built aside, locked, then renamed into place), private to the user.

    Staging folders that a killed start-up left behind are removed first. If another benchtui
    renames its own new run dir into place first, this one is the loser: RunDirBusy (exit 3).
    """
    remove_stale_staging(run_dir)
    staging = run_dir.with_name(f".{run_dir.name}.new-{os.getpid()}")
    try:
        staging.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir(PRIVATE)
    except (FileExistsError, NotADirectoryError):
        raise BadInput(f"the state dir {run_dir.parent} is not a directory") from None
    try:
        with contextlib.ExitStack() as owned:  # the lock is the caller's once the run dir is in place
            lock = owned.enter_context(RunLock(staging))  # first: a locked staging folder is never stale
            try:
                for name, data in files.items():
                    atomic_write(staging / name, data)
            except FileNotFoundError:  # removed under us (another host's cleanup): that start won
                raise RunDirBusy(f"{run_dir} is being created by another benchtui") from None
            try:
                staging.rename(run_dir)
            except OSError:
                if run_dir.is_dir() and not run_dir.is_symlink():
                    raise RunDirBusy(f"{run_dir} was just created by another benchtui") from None
                if os.path.lexists(run_dir):
                    raise BadInput(
                        f"{run_dir} is not a run dir (a file or a link where a directory should be)"
                    ) from None
                raise
            owned.pop_all()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return lock


STALE_STAGING_S = 60.0
"""A start writes its staging folder in milliseconds: one this old with a free lock is left over."""


def remove_stale_staging(run_dir: Path) -> None:
    """Remove `.<name>.new-<pid>` folders whose creator is gone: it is dead, or its lock has been
    free for a minute (its pid reused). A live creator's folder is never removed on a free lock
    alone: between creating its lock file and taking the lock, the lock looks free."""
    prefix = f".{run_dir.name}.new-"
    try:
        candidates = [p for p in run_dir.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for staging in candidates:
        pid = staging.name[len(prefix) :]
        if not pid.isdigit() or staging.is_symlink():
            continue
        if (
            int(pid) == os.getpid()
            or not processes.alive(int(pid))
            or (_lock_is_free(staging) and _old(staging))
        ):
            shutil.rmtree(staging, ignore_errors=True)


def _old(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > STALE_STAGING_S
    except OSError:
        return False


def _lock_is_free(staging: Path) -> bool:
    try:
        fd = os.open(staging / LOCK, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False  # no lock yet: its creator may be between mkdir and lock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def state_dir(given: Path | None = None) -> Path:
    """Where run dirs live: `--state-dir`, else $BENCHTUI_STATE_DIR, else `runs`."""
    return given or Path(os.environ.get("BENCHTUI_STATE_DIR") or "runs")  # set but empty: unset


def set_latest(state_dir: Path, name: str) -> None:
    atomic_write(state_dir / LATEST, (name + "\n").encode())


def latest(state_dir: Path, *, nothing: str = "nothing to resume") -> Path:
    """The most recently started run under the state dir (for `--resume` without a campaign);
    `nothing` starts the message when there is none ("no run to report")."""
    try:
        name = inputs.read_text(state_dir / LATEST, inputs.SMALL_MAX_BYTES, "the latest-run pointer").strip()
    except FileNotFoundError:
        raise BadInput(
            f"{nothing}: no run under {state_dir} (start one with `benchtui CAMPAIGN.toml`)"
        ) from None
    except NotADirectoryError:
        raise BadInput(f"{nothing}: {state_dir} is not a directory") from None
    if not RUN_NAME.fullmatch(name):  # it must name a run dir here, not a path elsewhere
        raise BadInput(f"{state_dir / LATEST}: corrupted (not a run name); give the campaign file")
    run_dir = state_dir / name
    if not (run_dir / CAMPAIGN).exists():
        raise BadInput(f"{nothing}: {run_dir} has no {CAMPAIGN}")
    return run_dir


RESUME_TAKES = (
    "--resume takes a run dir (runs/fair), a campaign's name under the state dir (fair), its "
    "campaign file (fair.toml), or nothing (the latest run)"
)


def resume_target_problem(given: Path, state_dir: Path) -> str:
    """Why `--resume GIVEN` finds no run (GIVEN neither a file nor a run): one line."""
    if RUN_NAME.fullmatch(str(given)) and not given.exists():
        return f"--resume {given}: no run named {str(given)!r} under {state_dir} ({RESUME_TAKES})"
    what = "does not exist" if not given.exists() else f"not a benchtui run dir (no {CAMPAIGN})"
    return f"--resume {given}: {what} ({RESUME_TAKES})"


def named_run(given: Path | None, state_dir: Path) -> Path | None:
    """The run `benchtui --resume GIVEN` means when GIVEN is not a campaign file: a run dir
    (`runs/fair`), or the name of a run under the state dir (`fair`); None otherwise."""
    if given is None or given.is_file():
        return None
    if (given / CAMPAIGN).is_file():
        return given
    if RUN_NAME.fullmatch(str(given)) and (state_dir / given / CAMPAIGN).is_file():
        return state_dir / given
    return None


def running(state_dir: Path) -> list[Path]:
    """Run dirs under `state_dir` that a live benchtui holds (its pid in the lock, its control
    socket in place), newest first. Read-only: never takes a lock another start could need."""
    try:
        dirs = [p for p in state_dir.iterdir() if RUN_NAME.fullmatch(p.name) and (p / CAMPAIGN).is_file()]
    except OSError:
        return []
    live = [d for d in dirs if (pid := owner(d)) and processes.alive(pid) and (d / CONTROL_SOCKET).exists()]
    return sorted(live, key=lambda d: (d / LOCK).stat().st_mtime, reverse=True)


def read_identity(run_dir: Path) -> dict[str, str]:
    """The identity's hashes (identity_file.read has its history too)."""
    return identity_file.read(run_dir).digests


APPENDED = ("sessions.jsonl",)
"""Files appended to in place (outcomes/* too): a link there would make benchtui write elsewhere."""
FOLDERS = ("outcomes", "results", "sessions")


def check_layout(run_dir: Path) -> None:
    """Before resuming: every file benchtui will read or append to is a regular file (a FIFO would
    block it, a link would redirect its writes), every folder a folder. Missing ones are fine."""
    entries = [run_dir / name for name in APPENDED]
    for folder in FOLDERS:
        path = run_dir / folder
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise BadInput(f"{path}: not a folder; use --fresh")
    for folder in ("outcomes", "results"):
        with contextlib.suppress(FileNotFoundError):
            entries += list((run_dir / folder).iterdir())
    for path in entries:
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise BadInput(f"{path}: not a regular file (a link, a FIFO or a folder); use --fresh")
    # A runner cleans its session folder (workdir/, bin/, tmp/): through a link, that is elsewhere.
    with contextlib.suppress(FileNotFoundError):
        for path in (run_dir / "sessions").iterdir():
            if path.is_symlink() or not path.is_dir():
                raise BadInput(f"{path}: not a session folder (a link or a file); use --fresh")
