"""The sessions table: every planned session, drawn only where visible."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from benchtui.core.endings import NOT_HUNTING
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
COLUMNS = (
    ("session", None),
    ("model", None),
    ("state", 7),
    ("ending", 16),
    ("cost", 7),
    ("calls", 5),
    ("outcome", 14),
)
OUTCOME = len(COLUMNS) - 1
"""The last column takes the width the others leave (at least its own)."""
ENDING = 3
DROPPED_FIRST = ("model", "calls", "cost", "ending")
"""Columns left out, in this order, when the table is too narrow for all of them: the session id
names its model, the detail pane shows the calls, the cost and the ending (and then a session's
outcome cell names its ending where it is not plain hunting)."""
SEPARATOR = "│"  # visible: text read out of a screenshot keeps its columns apart
LABEL_STYLES = {LABELS.get(state, state): Style.parse(style) for state, style in STATE_STYLES.items()}
SEPARATOR_STYLE = Style.parse("grey35")
HEADER = tuple(key for key, _ in COLUMNS)
CACHED_LINES = 1024
"""Lines kept drawn (a row whose cells did not change since the last frame is not drawn again)."""

Cells = tuple[str, str, str, str, str, str, str]


def fitted(text: str, width: int) -> str:
    """`text` padded to `width` cells, or cut to it with `…` marking the cut."""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(width - 1, 0)) + "…" if width else ""


def certificate_mark(view: SessionRow) -> str:
    """` ✓ cert` only for a certificate a verifier confirmed; a runner's own claim (fake, demo),
    never verified, reads ` ◇ cert` (as short: the column cuts what follows), a verifier's
    rejection ` cert`."""
    if not view.certificate:
        return ""
    if not view.verified:
        return " ◇ cert"
    return " ✓ cert" if view.outcome == "bug_found" else " cert"


def outcome_text(view: SessionRow, ending_shown: bool = True) -> str:
    if view.state == "running":
        return view.notes[-1] if view.notes else ""
    if view.state == "done":
        cut = not ending_shown and view.ending in NOT_HUNTING  # the model could not hunt: say so
        return view.outcome + certificate_mark(view) + (f" ({view.ending})" if cut else "")
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
        Binding("enter", "open", "Open", tooltip="The selected session's story", id="sessions_open"),
    ]
    cursor: reactive[int] = reactive(0)

    @dataclass
    class Highlighted(Message):
        session: str

    @dataclass
    class Opened(Message):
        """Enter on a row: show the session's story."""

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
        self.natural = [max(width or longest[key], len(key)) for key, width in COLUMNS]
        """Each column's width when there is room for all of them."""
        self.shown = list(range(len(COLUMNS)))
        """The columns on screen (see DROPPED_FIRST), each with its width in `widths`."""
        self.widths = list(self.natural)
        self.virtual_size = Size(self._row_width(), len(self.ids) + 1)
        self._lines: dict[tuple[Any, ...], Strip] = {}
        self._frame: tuple[int, int, int, Style] = (0, 0, 0, Style.null())

    # -- drawing ------------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()  # a new theme: the kept lines have the old colours

    def on_resize(self) -> None:
        self.fit(self.size.width)

    def fit(self, width: int) -> None:
        """Columns for `width` cells, never wider (no horizontal scrolling): all of them while
        they fit, else without the ones DROPPED_FIRST names, in order; the outcome column takes
        the width the others leave, and a session id is shortened only when nothing else fits."""
        shown = list(range(len(COLUMNS)))
        for name in DROPPED_FIRST:
            if self._needed(shown) <= width:
                break
            shown.remove(next(i for i, (key, _) in enumerate(COLUMNS) if key == name))
        widths = list(self.natural)
        over = self._needed(shown) - width
        if over > 0:  # the session id gives way, down to its header's width
            widths[0] = max(len(COLUMNS[0][0]), widths[0] - over)
        widths[OUTCOME] = max(
            self.natural[OUTCOME], width - self._needed(shown, widths) + self.natural[OUTCOME]
        )
        self.shown, self.widths = shown, widths
        self.virtual_size = Size(min(self._row_width(), max(width, 1)), len(self.ids) + 1)
        self._lines.clear()

    def _needed(self, shown: list[int], widths: list[int] | None = None) -> int:
        """The cells `shown` take with the outcome column at its least."""
        widths = widths or self.natural
        return sum(widths[i] for i in shown) + 3 * len(shown) - 1  # a space each side, separators

    def _row_width(self) -> int:
        return self._needed(self.shown, self.widths)

    def render_lines(self, crop: Region) -> list[Strip]:
        # What every line of this frame shares, looked up once (each is a walk of the DOM).
        self._frame = (self.size.width, int(self.scroll_offset.x), int(self.scroll_offset.y), self.rich_style)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width, scroll_x, top, base = self._frame
        component: str | None
        if y == 0:  # the header stays put; rows scroll under it
            cells, component = HEADER, "sessions-table--header"
        else:
            row = top + y - 1
            if row >= len(self.ids):
                return Strip.blank(width, base)
            cells = self._cells(self.view.sessions[self.ids[row]], ENDING in self.shown)
            component = "sessions-table--cursor" if row == self.cursor and self.has_focus else None
        key = (cells, component, tuple(self.widths), tuple(self.shown), scroll_x, width, base)
        strip = self._lines.get(key)
        if strip is None:
            if len(self._lines) >= CACHED_LINES:
                self._lines.clear()
            overlay = self.get_component_rich_style(component) if component else None
            strip = self._lines[key] = self._line(cells, base, overlay).crop_extend(
                scroll_x, scroll_x + width, base
            )
        return strip

    def _line(self, cells: tuple[str, ...], base: Style, overlay: Style | None) -> Strip:
        """One row's segments: each cell cut or padded to its column, a space each side."""

        def styled(style: Style | None) -> Style:
            style = base + style if style is not None else base
            return style + overlay if overlay is not None else style

        plain, separator = styled(None), styled(SEPARATOR_STYLE)
        label = LABEL_STYLES.get(cells[2]) if cells is not HEADER else None
        state = styled(label) if label is not None else plain
        segments: list[Segment] = []
        for n, i in enumerate(self.shown):
            cell = fitted(cells[i], self.widths[i])
            if n:
                segments.append(Segment(SEPARATOR, separator))
            if i == 2 and state is not plain:
                segments += [Segment(" ", plain), Segment(cell, state), Segment(" ", plain)]
            else:
                segments.append(Segment(f" {cell} ", plain))
        return Strip(segments, self._row_width())

    @staticmethod
    def _cells(view: SessionRow, ending_shown: bool = True) -> Cells:
        state = LABELS.get(view.state, view.state)
        outcome = outcome_text(view, ending_shown)
        return view.id, view.model, state, view.ending, fmt(view.cost), str(view.calls), outcome

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

    def action_open(self) -> None:
        if self.ids:
            self.post_message(self.Opened(self.ids[self.cursor]))

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
