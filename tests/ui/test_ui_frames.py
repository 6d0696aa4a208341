"""What a frame costs: the answer to a key paints the status line alone, the events pane and
the detail pane lay the screen out only when they must, unchanged table rows are not drawn
again, and an agent's control characters reach the screen as text (issue 25's TUI target)."""

from __future__ import annotations

from decimal import Decimal as D

import pytest
from rich.cells import cell_len
from support.tui import SIZE, open_app, until
from textual.geometry import Region
from textual.theme import Theme
from textual.widgets import Log

from benchtui.core.text import printable
from benchtui.engine import events as ev
from benchtui.ui import app as app_module
from benchtui.ui.detail import SessionDetail
from benchtui.ui.sessions import SEPARATOR, SessionsTable
from benchtui.ui.widgets import StatusLine

pytestmark = pytest.mark.anyio
FIRST = "fake_model-a-0000"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def no_timers(monkeypatch):
    """The app's redraw and log timers slowed to once in 100 s: only what a test does redraws."""
    monkeypatch.setattr(app_module, "REDRAW_HZ", 0.01)
    monkeypatch.setattr(app_module, "LOG_HZ", 0.01)


def spy(monkeypatch, cls, name):
    """Record each call of cls.name: (args, kwargs, what it returned)."""
    calls = []
    original = getattr(cls, name)

    def recorded(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append((args, kwargs, result))
        return result

    monkeypatch.setattr(cls, name, recorded)
    return calls


def test_control_characters_of_an_agent_become_text():
    assert printable("a\x1b[2Jb\nc\td\r\x07\x9b5m\x7f") == "a\ufffd[2Jb c d \ufffd\ufffd5m\ufffd"
    assert printable("ünïcode → fine") == "ünïcode → fine"


def test_bidi_controls_of_an_agent_cannot_reorder_what_the_screen_shows():
    """U+202E (right-to-left override) would show "done 0.10$" for a reason written "$01.0 enod";
    marks, embeddings, overrides and isolates become �, joiners of emoji stay."""
    assert (
        printable("ok \u202edecnalab\u202c \u2067x\u2069 \u200f")
        == "ok \ufffddecnalab\ufffd \ufffdx\ufffd \ufffd"
    )
    assert printable("👩\u200d💻 café") == "👩\u200d💻 café"


def test_the_headless_line_of_an_ended_session_shows_its_reason_as_text():
    """The headless front end prints `describe`'s line to a terminal: an agent's escape codes in a
    reason would run there (clear the screen, retitle the window)."""
    ended = ev.SessionEnded(
        session="m-0000", model="m", index=0, attempt=1, state="error", result=None, cost_usd=D("0.1"),
        reason="agent said \x1b]0;owned\x07\x1b[2J\u202eok", certificate=False,
    )  # fmt: skip
    line = ev.describe(ended)
    assert line is not None and "\x1b" not in line and "\x07" not in line and "\u202e" not in line
    assert line.endswith("agent said \ufffd]0;owned\ufffd\ufffd[2J\ufffdok")


def test_the_detail_pane_shows_a_certificate_as_text():
    """The agent wrote the certificate, and the verifier's details quote pred about it: before,
    its rule, source type and violation reached the pane raw (C1, escapes, bidi overrides)."""
    hostile = "x\x1b[2J\u009b5m\u0085\u202eevil"
    from benchtui.core.outcome import Judgement, OutcomeDetails
    from benchtui.core.target import Verdict

    verdict = Verdict("rejected", f"pred said {hostile}", "no_violation")
    cert = {"rule": hostile, "source": {"type": hostile}, "violation": hostile}
    row = OutcomeDetails("s", 1, cert, Judgement(verdict))
    shown = SessionDetail._certificate(row).plain
    assert not [c for c in shown if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) < 0xA0 or c == "\u202e"]
    assert shown.count("x\ufffd[2J\ufffd5m\ufffd\ufffdevil") == 4


async def test_a_keys_frame_paints_the_status_line_and_nothing_the_campaign_changed(
    tmp_path, monkeypatch, no_timers
):
    app = open_app(tmp_path, sessions=3, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the engine")
        app.redraw()
        await pilot.pause()
        status_paints = spy(monkeypatch, StatusLine, "render")
        rows = spy(monkeypatch, SessionsTable, "render_line")
        lines_before = app.main.query_one(Log).line_count
        # A call of a session on screen, and an event-pane line, wait for the timers...
        started = ev.SessionStarted(
            session=FIRST, model="fake/model-a", index=0, task=None, attempt=1, runner="fake"
        )
        app.view.apply(started)
        app.view.apply(
            ev.SessionProgress(session=FIRST, note="\x1b]0;owned\x07hi", calls=7, cost_usd=D("0.5"))
        )
        app.view.apply(ev.Notice(level="info", message="a line for the events pane"))
        painted = f"parallelism {app.view.parallelism + 1}"
        await pilot.press("plus")  # ...while the key's answer is painted at once
        await until(pilot, lambda: any(painted in text.plain for *_, text in status_paints), what="the key")
        await pilot.pause(0.1)
        assert rows == [], "the key's frame drew table rows"
        assert app.main.query_one(Log).line_count == lines_before, "the key's frame wrote the events pane"
        app.redraw()  # the timers' work: the table and the events pane catch up
        await pilot.pause(0.1)
        assert rows, "the changed row was not drawn"
        table = app.main.table
        table.render_lines(Region(0, 0, table.size.width, table.size.height))
        row = "".join(segment.text for segment in table.render_line(1))
        assert " 7 " in row and "\x1b" not in row and "\ufffd]0;owned\ufffdhi" in row, row
        await until(pilot, lambda: app.main.query_one(Log).line_count > lines_before, what="the events pane")


async def test_the_detail_pane_repaints_only_a_change_and_lays_out_only_a_new_height(
    tmp_path, monkeypatch, no_timers
):
    app = open_app(tmp_path, sessions=3, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        detail: SessionDetail = app.main.detail
        view = app.view.sessions[FIRST]
        updates = spy(monkeypatch, SessionDetail, "update")
        detail.show(view)
        detail.show(view)
        assert len(updates) <= 1  # the same text twice: at most one repaint (none if on screen already)
        updates.clear()
        view.calls, view.cost = 3, D("0.25")
        detail.show(view)
        detail.show(view)
        assert [kw["layout"] for _, kw, _ in updates] == [False]  # same height: a repaint, no layout
        view.notes.append("one more line of progress")
        detail.show(view)
        assert [kw["layout"] for _, kw, _ in updates] == [False, True]  # taller: laid out for its scrollbar
        view.notes.append("x" * 300)  # a note that wraps: taller again though one line was added
        detail.show(view)
        assert [kw["layout"] for _, kw, _ in updates] == [False, True, True]
        await pilot.pause()
        assert "one more line of progress" in detail.render().plain


async def test_unchanged_rows_are_not_drawn_again_and_a_new_theme_redraws_them(tmp_path, no_timers):
    app = open_app(tmp_path, sessions=3, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.main.table
        table.render_lines(Region(0, 0, table.size.width, table.size.height))
        first, second = table.render_line(1), table.render_line(2)
        assert table.render_line(1) is first and table.render_line(2) is second
        app.view.sessions[FIRST].calls = 4
        changed = table.render_line(1)
        assert changed is not first and " 4 " in changed.text and table.render_line(2) is second
        # Two themes alike but for the primary colour (the header's): the background, so the
        # widget's own style, stays the same, yet the header is drawn again in the new colour.
        app.register_theme(Theme("same-a", primary="#ff0000", background="#000000", dark=True))
        app.register_theme(Theme("same-b", primary="#00ff00", background="#000000", dark=True))
        app.theme = "same-a"
        await pilot.pause()
        table.render_lines(Region(0, 0, table.size.width, table.size.height))
        header = table.render_line(0)
        app.theme = "same-b"
        await pilot.pause()
        table.render_lines(Region(0, 0, table.size.width, table.size.height))
        again = table.render_line(0)
        assert again.text == header.text
        assert [s.style for s in again] != [s.style for s in header]  # the new theme's colour


async def test_a_note_of_wide_and_combining_characters_keeps_the_row_its_width(tmp_path, no_timers):
    """Each cell is cut or padded by terminal cells, not characters: a note of CJK, emoji and
    combining accents (the outcome column) neither pushes the row past the pane nor leaves a gap."""
    app = open_app(tmp_path, sessions=3, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        started = ev.SessionStarted(
            session=FIRST, model="fake/model-a", index=0, task=None, attempt=1, runner="fake"
        )
        app.view.apply(started)
        app.view.apply(
            ev.SessionProgress(session=FIRST, note="漢字😀e\u0301 " * 40, calls=1, cost_usd=D("0.1"))
        )
        table = app.main.table
        table.render_lines(Region(0, 0, table.size.width, table.size.height))
        row, header = table.render_line(1), table.render_line(0)
        assert cell_len(row.text) == cell_len(header.text) == table.size.width
        columns = [cell_len(cell) for cell in row.text.split(SEPARATOR)]
        assert columns == [cell_len(cell) for cell in header.text.split(SEPARATOR)]  # aligned
        assert "漢字" in row.text


async def test_a_notice_quoting_markup_is_shown_as_text(tmp_path):
    """A notice quotes model names and reasons: `[/bold]` or `[red]` in one is text on the toast,
    never a tag (a closing tag with no opening one stopped the app)."""
    app = open_app(tmp_path, sessions=1, start_paused=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the engine")
        said = "model x[/bold] stopped: [red]runner_error[/]"
        app.view.apply(ev.Notice(level="warning", message=said))
        app.redraw()
        await pilot.pause(0.2)
        await pilot.pause(0.5)  # the toast drawn (with notifications on, as in a real terminal)
        (shown,) = [n for n in app._notifications if n.message == said]
        assert app.is_running and not shown.markup
