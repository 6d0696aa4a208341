"""Helpers for the hostile-input tests: the CLI in-process, and the one-line error check."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from benchtui.cli import main as cli
from benchtui.core.signals import STOP_SIGNALS


def run_cli(capsys, cwd: Path, *argv: str | Path) -> tuple[int, str]:
    """`benchtui ARGV` in-process, for inputs refused before any campaign runs (an escaping
    exception fails the test, like a traceback would). The signal handlers (and the unraisable
    hook) it installs are undone."""
    old = Path.cwd()
    handlers = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    unraisable = sys.unraisablehook
    os.chdir(cwd)
    try:
        rc = cli.main([str(a) for a in argv])
    finally:
        os.chdir(old)
        sys.unraisablehook = unraisable
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return rc, capsys.readouterr().err


def assert_one_line(rc: int, err: str, phrase: str, code: int = 2) -> None:
    assert rc == code, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert phrase in lines[0], lines[0]
