"""The suite's hang guard (conftest): a hung test ends the run with every thread's traceback on
the terminal, not silently (during a test, fd 2 is pytest's capture file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_a_hung_test_ends_the_run_with_its_traceback_on_the_terminal():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(TESTS / "support" / "hangs.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "BENCHTUI_HANG_GUARD_S": "1"},
        cwd=TESTS.parent,
        timeout=60,
    )
    assert done.returncode != 0
    assert "Timeout (0:00:01)!" in done.stderr, done.stderr[-2000:]
    assert "in test_hangs" in done.stderr
