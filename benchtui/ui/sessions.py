"""The sessions table: every planned session, drawn only where visible."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from benchtui.core.money import fmt
from benchtui.ui.model import SessionRow, ViewModel

STATE_STYLES = {
    "pending": "dim",
    "running": "bold green",
    "done": "cyan",
    "skipped_budget": "yellow",
    "error": "bold red",
    "killed": "bold red",
}
LABELS = {"skipped_budget": "skipped"}  # keeps the state column narrow
COLUMNS = (("session", None), ("model", None), ("state", 7), ("cost", 7), ("calls", 5), ("outcome", 14))
SEPARATOR = "│"  # visible: text read out of a screenshot keeps its columns apart
CHROME = 3 * len(COLUMNS) - 1  # a space each side of every cell, a separator between cells


def outcome_text(view: SessionRow) -> str:
    if view.state == "running":
        return view.notes[-1] if view.notes else ""
    if view.state == "done":
        return view.outcome + (" ✓ cert" if view.certificate else "")
    return view.reason


class SessionsTable(ScrollView, can_focus=True):
    """One row per planned session, in launch order, drawn only where visible.

    A campaign may plan 100,000 sessions and change hundreds a second; a widget that keeps
    every row renders in time proportional to the rows on screen, whatever the campaign's size.
    """

    COMPONENT_CLASSES = {"sessions-table--header", "sessions-table--cursor"}
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False, id="sessions_up"),
        Binding("down", "move(1)", "Down", show=False, id="sessions_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="sessions_page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="sessions_page_down"),
        Binding("home", "jump(0)", "First", show=False, id="sessions_first"),
        Binding("end", "jump(-1)", "Last", show=False, id="sessions_last"),
    ]
    cursor: reactive[int] = reactive(0)

    @dataclass
    class Highlighted(Message):
        session: str

    def __init__(self, view: ViewModel, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.ids = list(view.sessions)
        self.rows = {sid: i for i, sid in enumerate(self.ids)}
        longest = {
            "session": max(map(len, self.ids), default=0),
            "model": max((len(v.model) for v in view.sessions.values()), default=0),
        }
        self.widths = [max(width or longest[key], len(key)) for key, width in COLUMNS]
        self.virtual_size = Size(sum(self.widths) + CHROME, len(self.ids) + 1)

    # -- drawing ------------------------------------------------------------------------------
    def on_resize(self) -> None:
        """The outcome column takes the width the others leave."""
        fixed = sum(self.widths[:-1]) + CHROME
        self.widths[-1] = max(COLUMNS[-1][1] or 0, self.size.width - fixed)
        self.virtual_size = Size(fixed + self.widths[-1], len(self.ids) + 1)

    def _line(self, cells: tuple[str | Text, ...]) -> Text:
        line = Text()
        for i, (cell, width) in enumerate(zip(cells, self.widths, strict=True)):
            cell = cell if isinstance(cell, Text) else Text(cell)
            cell.truncate(width, pad=True)
            if i:
                line.append(SEPARATOR, style="grey35")
            line.append(" ").append_text(cell).append(" ")
        return line

    def render_line(self, y: int) -> Strip:
        width, scroll_x = self.size.width, int(self.scroll_offset.x)
        base = self.rich_style
        style: str | None
        if y == 0:  # the header stays put; rows scroll under it
            text, style = self._line(tuple(key for key, _ in COLUMNS)), "sessions-table--header"
        else:
            row = int(self.scroll_offset.y) + y - 1
            if row >= len(self.ids):
                return Strip.blank(width, base)
            text = self._line(self._cells(self.view.sessions[self.ids[row]]))
            style = "sessions-table--cursor" if row == self.cursor and self.has_focus else None
        segments = list(text.render(self.app.console))
        if style:
            segments = list(Segment.apply_style(segments, post_style=self.get_component_rich_style(style)))
        return Strip(segments).apply_style(base).crop_extend(scroll_x, scroll_x + width, base)

    @staticmethod
    def _cells(view: SessionRow) -> tuple[str | Text, ...]:
        state = Text(LABELS.get(view.state, view.state), style=STATE_STYLES.get(view.state, ""))
        return view.id, view.model, state, fmt(view.cost), str(view.calls), outcome_text(view)

    def sync(self, ids: Iterable[str]) -> None:
        """Redraw if a session that changed is on screen (new sessions, a shortlist's episodes,
        are added at the end)."""
        if len(self.view.sessions) != len(self.ids):
            for sid in list(self.view.sessions)[len(self.ids) :]:
                self.rows[sid] = len(self.ids)
                self.ids.append(sid)
            self.virtual_size = Size(self.virtual_size.width, len(self.ids) + 1)
            self.refresh()
        top = int(self.scroll_offset.y)
        if any(top <= self.rows[sid] < top + self.size.height for sid in ids):
            self.refresh()

    # -- the cursor ---------------------------------------------------------------------------
    @property
    def selected(self) -> str | None:
        return self.ids[self.cursor] if self.ids else None

    def select(self, session: str) -> None:
        self.cursor = self.rows[session]

    def validate_cursor(self, cursor: int) -> int:
        return max(0, min(cursor, len(self.ids) - 1))

    def watch_cursor(self, cursor: int) -> None:
        top, visible = int(self.scroll_offset.y), max(self.size.height - 1, 1)
        if cursor < top:
            self.scroll_to(y=cursor, animate=False)
        elif cursor >= top + visible:
            self.scroll_to(y=cursor - visible + 1, animate=False)
        self.refresh()
        if self.ids:
            self.post_message(self.Highlighted(self.ids[cursor]))

    def action_move(self, delta: int) -> None:
        self.cursor += delta

    def action_page(self, direction: int) -> None:
        self.cursor += direction * max(self.size.height - 1, 1)

    def action_jump(self, row: int) -> None:
        self.cursor = row if row >= 0 else len(self.ids) - 1

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and offset.y >= 1:  # below the header
            self.cursor = int(self.scroll_offset.y) + offset.y - 1

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
