"""The TUI after the terminal shrinks mid-run (120 × 36 to 80 × 24) and grows back: the events
pane keeps following its newest line, the footer is laid out for the new width, and the sessions
table fits it, a cut cell ending in `…`. (In a real terminal: tests/ui/test_tmux.py.)"""

from __future__ import annotations

import pytest
from support.tui import open_app, until
from textual.widgets import Footer, Log

from benchtui.ui.screens.main import MainScreen
from benchtui.ui.sessions import SessionsTable

pytestmark = pytest.mark.anyio
MODELS = ("acme/coder-xl-with-a-long-name", "acme/coder-mini", "open/hunter-7b")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def following(log: Log) -> bool:
    return log.line_count > log.size.height and log.scroll_y >= log.max_scroll_y


async def test_after_a_resize_the_events_pane_follows_and_the_table_and_footer_fit(tmp_path):
    # Long enough to be running throughout (three sizes, each waiting for new events).
    app = open_app(tmp_path, sessions=150, models=MODELS, total="100", latency=0.1, parallelism=3)
    async with app.run_test(size=(120, 36)) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        log = main.query_one(Log)
        await until(pilot, lambda: log.line_count > 2 * log.size.height, 60, "a full events pane")
        assert following(log)
        for size in ((80, 24), (120, 36), (80, 24)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            lines = log.line_count
            await until(pilot, lambda lines=lines: log.line_count > lines + 3, 60, "more events")
            await pilot.pause(0.3)
            assert following(log), (size, log.scroll_y, log.max_scroll_y)
            table = main.query_one(SessionsTable)
            assert table.virtual_size.width <= table.size.width, size
            for y in range(min(table.size.height, 6)):
                assert table.render_line(y).cell_length <= table.size.width
            footer = main.query_one(Footer)
            assert footer.compact == (size[0] < 100) and footer.size.width == size[0]
            shown = "".join(s.text for s in (footer.render_line(0),))
            assert len(shown.rstrip()) <= size[0]
        # Scrolled up by the user, it stays where it was while lines arrive.
        log.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        lines = log.line_count
        await until(pilot, lambda: log.line_count > lines + 3, 60, "more events")
        await pilot.pause(0.3)
        assert log.scroll_y == 0 and not log.following
