"""The main screen: status line, money panel, sessions table, detail pane, event log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer

from benchtui.core.outcome import OutcomeDetails
from benchtui.ui.detail import SessionDetail, find_certificate
from benchtui.ui.model import LOG_LINES, ViewModel
from benchtui.ui.screens.session import SessionScreen
from benchtui.ui.sessions import SessionsTable
from benchtui.ui.widgets import EventsLog, ModelPanel, StatusLine

NARROW_BELOW = 100
"""Columns: narrower, the session pane is hidden (app.tcss) so the sessions table fits."""
SHORT_BELOW = 30
"""Rows: shorter, the events pane shrinks (app.tcss) so the sessions table keeps some rows."""


class MainScreen(Screen[None]):
    BINDINGS = [
        Binding("p", "app.pause", "Pause", tooltip="Stop launching new sessions", id="pause"),
        Binding("r", "app.resume", "Resume", tooltip="Launch sessions again", id="resume"),
        Binding("k", "app.kill", "Kill", tooltip="Kill the selected running session", id="kill"),
        Binding("c", "app.change_runner", "Runner", tooltip="Change the runner profile", id="change_runner"),
        Binding(
            "plus,equals_sign",
            "app.parallelism(1)",
            "Parallel+",
            key_display="+",
            tooltip="One more session at once",
            id="parallelism_up",
        ),
        Binding(
            "minus",
            "app.parallelism(-1)",
            "Parallel-",
            key_display="-",
            tooltip="One session fewer at once",
            id="parallelism_down",
        ),
        Binding(
            "s", "app.summary", "Summary", tooltip="Per-model results, leaderboard, fairness", id="summary"
        ),
        Binding("q", "app.quit", "Quit", tooltip="Stop the campaign and leave (it asks how)", id="quit"),
        Binding("question_mark", "app.keys", "Keys", key_display="?", tooltip="This list", id="help"),
    ]

    def __init__(self, view: ViewModel, run_dir: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.run_dir = run_dir
        self.certificates: dict[str, OutcomeDetails | None] = {}
        self._log: list[str] = []
        """Lines for the events pane not written yet (see `write_log`)."""

    def compose(self) -> ComposeResult:
        yield StatusLine(self.view, id="status")
        yield ModelPanel(self.view, id="models")
        with Horizontal(id="body"):
            yield SessionsTable(self.view, id="sessions")
            yield SessionDetail(id="detail")
        yield EventsLog(id="log", max_lines=1000)
        yield Footer()

    def on_mount(self) -> None:
        # Kept, not queried per redraw: cheaper, and safe while the app shuts down.
        self.status = self.query_one(StatusLine)
        self.models = self.query_one(ModelPanel)
        self.table = self.query_one(SessionsTable)
        self.detail = self.query_one(SessionDetail)
        self.log_view = self.query_one(EventsLog)
        self.detail.border_title = "session"
        self.log_view.border_title = "events"
        self.models.border_title = "money"
        self.table.focus()

    def on_resize(self) -> None:
        """A narrow terminal: a compact footer without the palette's hint (Ctrl-P still opens
        it), so every key's label is whole."""
        footer = self.query_one(Footer)
        narrow = self.size.width < NARROW_BELOW
        if (footer.compact, footer.show_command_palette) != (narrow, not narrow):
            footer.compact = narrow
            footer.show_command_palette = not narrow
            footer.refresh(layout=True, recompose=True)  # every key laid out again: no leftovers

    def redraw(self) -> None:
        """Apply what changed since the last redraw (called on the app's timer, and at once for
        the answer to a key). New lines for the events pane wait for `write_log`."""
        changes = self.view.take_changes()
        self.status.sync()
        if changes.accounts is not None:
            self.models.refresh(layout=self.models.shown is None)  # its height is set by the first
        if changes.sessions:
            self.table.sync(changes.sessions)
            if self.table.selected in changes.sessions:
                self.show_selected()
        self._log = (self._log + changes.log)[-LOG_LINES:]
        for notice in changes.notices:
            severity: SeverityLevel = (
                "warning"
                if notice.level == "warning"
                else "error"
                if notice.level == "error"
                else "information"
            )
            # text, not markup: a notice quotes model names and reasons (a '[/x]' in one stopped the app)
            self.app.notify(notice.message, severity=severity, timeout=8, markup=False)

    def write_log(self) -> None:
        """Write the new lines to the events pane. Textual's log lays the whole screen out again
        when its lines grow (twice: its width is measured in a thread), so it is written on a
        slower timer than the rest, and never in the frame that answers a key."""
        if self._log:
            self.log_view.write_lines(self._log)
            self._log = []

    @on(SessionsTable.Highlighted)
    def show_selected(self) -> None:
        sid = self.table.selected
        view = self.view.sessions.get(sid) if sid else None
        self.detail.show(view, self.certificates.get(sid) if sid else None)
        if view is not None and view.certificate and sid not in self.certificates:
            self.load_certificate(sid, view.model)

    @on(SessionsTable.Opened)
    def open_session(self, message: SessionsTable.Opened) -> None:
        self.app.push_screen(SessionScreen(self.run_dir, message.session))

    @work(exclusive=True, group="certificate")
    async def load_certificate(self, session: str, model: str) -> None:
        self.certificates[session] = await asyncio.to_thread(find_certificate, self.run_dir, session, model)
        if self.table.selected == session:
            self.show_selected()
