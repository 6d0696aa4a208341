"""The TUI in a 120 × 36 and an 80 × 24 terminal: every column header whole, nothing scrolled
sideways, columns left out by priority rather than cut; `?` lays the keys over the screen
without resizing a pane. (The snapshots of the same screens: test_ui_snapshots.py.)"""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console
from support.tui import open_app, until
from textual.widgets import DataTable, Static

from benchtui.ui.screens.keys import KeysScreen
from benchtui.ui.screens.summary import SummaryScreen
from benchtui.ui.sessions import COLUMNS, SessionsTable, fitted
from benchtui.ui.widgets import COUNTS, ModelPanel, StatusLine

pytestmark = pytest.mark.anyio
MODELS = ("acme/coder-xl", "acme/coder-mini", "open/hunter-7b")
SIZES = [(120, 36), (80, 24)]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def plain(renderable: object) -> str:
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(renderable)
    return console.export_text()


def header_words(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("│")]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_every_header_is_whole_and_nothing_scrolls_sideways(tmp_path, size):
    app = open_app(tmp_path, sessions=4, models=MODELS, total="10", latency=0.01)
    async with app.run_test(size=size) as pilot:
        await until(
            pilot, lambda: isinstance(app.screen, SummaryScreen) and app.screen.report, 30, "the summary"
        )
        summary = app.screen
        dialog = summary.query_one("#dialog").content_size.width
        for table in summary.query(DataTable):
            shown = [c.label.plain for c in table.columns.values()]
            assert shown and "model" in shown
            assert sum(c.get_render_width(table) for c in table.columns.values()) <= dialog, shown
        board = summary.query_one("#leaderboard-table", DataTable)
        assert "certs c/cl/r/o/i/u" in [c.label.plain for c in board.columns.values()]
        legend = summary.query_one("#legend", Static)
        assert legend.display and "certs c/cl/r/o/i/u: certificates by verdict: confirmed" in str(
            legend.content
        )
        shown_text = "\n".join(s.render_line(y).text for s in (legend,) for y in range(s.size.height))
        assert "bug rate [95% CI]: sessions" in shown_text.replace("\n", " ")  # text, not a markup tag
        app.pop_screen()
        app.redraw()
        await pilot.pause()
        table = app.main.query_one(SessionsTable)
        assert table.virtual_size.width <= table.size.width  # no horizontal scrollbar
        headers = header_words(table.render_line(0).text)
        assert headers == [COLUMNS[i][0] for i in table.shown]
        assert {"session", "state", "outcome"} <= set(headers)
        rows = [header_words(table.render_line(y).text) for y in range(1, 5)]
        assert all(row[-1].startswith(("bug_found", "no_certificate")) for row in rows), rows
        panel = app.main.query_one(ModelPanel).render().plain.splitlines()
        assert panel[0].split() == ["model", *panel[0].split()[1:]]
        assert panel[0].rstrip().endswith(" ".join(label for label, _ in COUNTS))
        assert all(cell_len(line) <= app.main.query_one(ModelPanel).size.width for line in panel)
        status = app.main.query_one(StatusLine)
        assert cell_len(status.render().plain) <= status.size.width


async def test_the_summarys_tables_are_drawn_whole_before_their_next_idle(tmp_path):
    # A DataTable measures auto-width columns on idle: drawn before it (under load, a snapshot
    # was), each column was its header's width and cut its cells ('fake/', '$0.').
    app = open_app(tmp_path, sessions=4, models=MODELS, total="10", latency=0.01)
    async with app.run_test(size=(120, 36)) as pilot:
        await until(
            pilot, lambda: isinstance(app.screen, SummaryScreen) and app.screen.report, 30, "the summary"
        )
        summary = app.screen
        summary.fill()  # no await: nothing idles between this and the checks
        for table in summary.query(DataTable):
            for column in table.columns.values():
                cells = [str(table.get_cell(key, column.key)) for key in table.rows]
                widest = max([cell_len(column.label.plain), *map(cell_len, cells)])
                assert column.get_render_width(table) >= widest + 2, (table.id, column.label.plain, cells)


async def test_a_narrow_table_leaves_out_model_calls_cost_then_ending_and_never_cuts_a_header(tmp_path):
    app = open_app(tmp_path, sessions=2, models=MODELS, start_paused=True)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the scheduler")
        table = app.main.query_one(SessionsTable)
        names = {}
        for width in (120, 80, 60, 48):
            table.fit(width)
            names[width] = [COLUMNS[i][0] for i in table.shown]
        assert names[120] == ["session", "model", "state", "ending", "cost", "calls", "outcome"]
        assert names[80] == ["session", "state", "ending", "cost", "outcome"]
        assert names[60] == names[48] == ["session", "state", "outcome"]  # the outcome then names the ending
        table.fit(40)  # narrower than the session ids: they give way, the headers stay whole
        assert header_words(table.render_line(0).text) == ["session", "state", "outcome"]
        assert table.render_line(1).text.split("│")[0].strip().endswith("…")


def test_a_cut_cell_says_so():
    assert fitted("no_certificate", 14) == "no_certificate"
    assert fitted("budget: the full per-session budget", 10) == "budget: t…"
    assert fitted("ok", 5) == "ok   "


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_question_mark_shows_the_keys_over_the_screen_and_resizes_no_pane(tmp_path, size):
    app = open_app(
        tmp_path, sessions=2, models=MODELS, start_paused=True, extra='ui = { keys = { kill = "ctrl+k" } }\n'
    )
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.view.accounts is not None, what="the ledger")
        app.redraw()  # the money panel at its full height first (it waits for the ledger)
        await until(pilot, lambda: app.main.models.shown is not None, what="the money panel")
        await pilot.pause()
        panes = {w.id: w.region for w in app.main.query("#models, #sessions, #log")}
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, KeysScreen), what="the keys")
        assert {w.id: w.region for w in app.main.query("#models, #sessions, #log")} == panes
        text = plain(app.screen._keys())
        assert "^k" in text and "Kill the selected running session" in text  # remapped, as remapped
        assert "?" in text and "pgdn" in text
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main, what="the main screen")
