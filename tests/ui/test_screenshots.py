"""The README's screenshots are what `python -m benchtui.ui.screenshots` draws today, byte for byte
but for the lines of the events pane: the order in which two sessions' start and end lines land
there depends on thread timing (the store's writer), not on anything the screenshot shows."""

from __future__ import annotations

import re
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
    stale = [name for name in drawn if drawing(tmp_path / name) != drawing(committed / name)]
    assert not stale, f"stale screenshots {stale}: run `python -m benchtui.ui.screenshots` and commit them"


TEXT = re.compile(r"<text [^>]*>([^<]*)</text>")
EVENT_LINE = re.compile(r"^\d\d:\d\d&#160;(?:start|end|control:)&#160;")


def drawing(path) -> list[str]:
    """What the SVG writes, in order (every text run), without the events pane's lines (`mm:ss
    start …`, `end …`, `control: …`): a changed word, value, layout or screen still shows."""
    return [text for text in TEXT.findall(path.read_text()) if not EVENT_LINE.match(text)]


def test_the_comparison_ignores_only_event_lines(tmp_path):
    svg = tmp_path / "a.svg"
    svg.write_text(
        '<text class="r1" x="0">13:43&#160;end&#160;&#160;&#160;open_hunter-7b-0001&#160;done</text>'
        '<text class="r2" x="9">fake/model-a&#160;&#160;3&#160;done</text>'
    )
    assert drawing(svg) == ["fake/model-a&#160;&#160;3&#160;done"]
