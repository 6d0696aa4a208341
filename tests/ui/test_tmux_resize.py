"""The TUI in a real terminal (tmux) shrunk mid-run from 150 × 45 to 80 × 24: the events pane goes
on following its newest lines, the footer is laid out again (compact: no palette hint, no
leftovers of the wide one), and the table the TUI closes with fits the 80 columns."""

from __future__ import annotations

import time

from support import write_campaign
from test_tmux import benchtui_cmd, started, tmux, until  # noqa: F401  (tmux: the fixture)

MODELS = ("acme/a-model-with-a-long-name-for-its-column", "acme/coder-mini")


def events_pane(screen: str) -> list[str]:
    """The events pane's lines: below its `events` border title, above the footer."""
    lines = screen.splitlines()
    top = next(i for i, line in enumerate(lines) if "events" in line and "─" in line)
    return lines[top + 1 : -2]


def test_after_shrinking_mid_run_the_events_follow_the_footer_and_the_closing_table_fit(tmp_path, tmux):  # noqa: F811
    write_campaign(tmp_path, sessions=60, models=MODELS, total="10", parallelism=2, latency=0.3)
    run_dir = tmp_path / "runs" / "t"
    tmux.start("tui", f"{benchtui_cmd('t.toml', '--state-dir', 'runs')}; echo $? > rc", first=True)
    until(lambda: len(started(run_dir)) >= 6, "the TUI to run sessions", 60)
    tmux("resize-window", "-t", "t:tui", "-x", "80", "-y", "24")
    time.sleep(1.5)
    before = events_pane(tmux.screen("tui"))
    until(lambda: events_pane(tmux.screen("tui")) != before, "the events pane to show new lines", 20)
    screen = tmux.screen("tui").splitlines()
    footer = screen[-1]
    assert "palette" not in footer and "^p" not in footer, footer
    assert all(len(line) <= 80 for line in screen)

    tmux.keys("tui", "q")
    until(lambda: "Let them finish" in tmux.screen("tui"), "the quit dialog")
    tmux.keys("tui", "n")  # stop now
    until(lambda: (tmp_path / "rc").read_text().strip(), "the TUI to exit", 30)
    farewell = tmux("capture-pane", "-p", "-J", "-t", "t:tui").splitlines()  # wrapped lines joined
    table = [line for line in farewell if line.startswith(("model ", "acme/", "total ", "wasted "))]
    assert len(table) >= 4 and all(len(line.rstrip()) <= 80 for line in table), table
    assert any(line.startswith("acme/a-model-with-a-long") and "…" in line for line in table), table
