"""The README's screenshots are what `python -m benchtui.ui.screenshots` draws today, byte for byte."""

from __future__ import annotations

import subprocess
import sys

from support import ROOT


def test_regenerating_the_screenshots_gives_the_committed_files(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "benchtui.ui.screenshots", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    committed = ROOT / "screenshots"
    drawn = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert drawn == sorted(p.name for p in committed.glob("*.svg"))
    stale = [name for name in drawn if (tmp_path / name).read_bytes() != (committed / name).read_bytes()]
    assert not stale, f"stale screenshots {stale}: run `python -m benchtui.ui.screenshots` and commit them"
