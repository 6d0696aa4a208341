"""The status line and the money panel (cost bars and per-model counts).

Both render from the view model; the screen calls `refresh()` on them only when what they
show changed, so they cost nothing between events.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, Self

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Log

from benchtui.core.money import ZERO, fmt
from benchtui.engine import events as ev
from benchtui.ui.model import ViewModel

STATE_STYLES = {
    "running": "bold green",
    "paused": "bold yellow",
    "stopping": "bold magenta",
    "finished": "bold cyan",
    "stopped": "bold red",
}
SPENT, RESERVED, FREE, OVER = "█", "▒", "░", "bold red"
COUNTS = (
    ("done", "done"),
    ("run", "running"),
    ("skip", "skipped"),
    ("err", "errors"),
    ("kill", "killed"),
    ("certs", "certificates"),
)


MONEY_FORMS: tuple[tuple[str, Callable[[Decimal, Decimal, Decimal], str]], ...] = (
    ("spent + reserved / cap", lambda spent, reserved, cap: f"{fmt(spent)} + {fmt(reserved)} / {fmt(cap)}"),
    ("spent / cap", lambda spent, reserved, cap: f"{fmt(spent)} / {fmt(cap)}"),
)
"""The money column, widest first: a narrow panel takes the first that leaves the bar MIN_BAR."""
BAR_LEGENDS = ("spent █ reserved ▒ free ░", "█ spent ▒ reserved", "█ spent")
"""The bar column's heading, widest first: the first that fits (`?` shows the whole legend)."""
MIN_BAR = 8
STATUS_DROPPED_FIRST = (0, 6, 4)
"""Parts of the status line left out, in this order, when it is wider than the terminal: the
program's name, the elapsed time, the parallelism (the footer's +/- still change it)."""


def clock_text(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def bar_cells(spent: Decimal, reserved: Decimal, cap: Decimal, width: int) -> tuple[int, int]:
    """How many cells show spent money and how many the reservation (never hidden when > 0)."""
    if cap <= ZERO or width <= 0:
        return 0, 0
    used = min(int(width * spent / cap + Decimal("0.5")), width)
    held = min(int(width * (spent + reserved) / cap + Decimal("0.5")), width) - used
    if reserved > ZERO and held == 0 and used < width:
        held = 1
    return used, held


def cost_bar(spent: Decimal, reserved: Decimal, cap: Decimal, width: int) -> Text:
    used, held = bar_cells(spent, reserved, cap, width)
    if spent > cap:  # only possible with enforce = false: say so loudly
        return Text(SPENT * width, style=OVER)
    text = Text(SPENT * used, style="green")
    text.append(RESERVED * held, style="yellow")
    text.append(FREE * (width - used - held), style="grey35")
    return text


class StatusLine(Widget):
    """campaign · runner · state · parallelism · progress · elapsed."""

    def __init__(self, view: ViewModel, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view = view
        self._shown: tuple[Any, ...] = ()

    def says(self) -> tuple[Any, ...]:
        view = self.view
        ended = len(view.sessions) - view.states["pending"] - view.states["running"]
        return (
            view.campaign,
            view.runner,
            view.state,
            view.parallelism,
            ended,
            len(view.sessions),
            int(view.elapsed),
        )

    def sync(self) -> None:
        """Repaint if what the line says changed (its clock ticks once a second)."""
        if self.says() != self._shown:
            self.refresh()

    def render(self) -> Text:
        self._shown = campaign, runner, state, parallelism, ended, planned, elapsed = self.says()
        # Visible separators, and one style per part: text read out of a screenshot (an SVG draws
        # each styled run on its own, spaces at its edges dropped) keeps its words apart.
        parts = [
            Text(" benchtui ", "bold reverse"),
            Text(campaign, "bold"),
            Text(f"runner {runner}", "bold"),
            Text(f"● {state}", STATE_STYLES[state]),
            Text(f"parallelism {parallelism}"),
            Text(f"sessions {ended}/{planned} ended"),
            Text(f"elapsed {clock_text(elapsed)}"),
        ]
        # A narrow terminal: parts leave, least needed first, rather than the line being cut.
        for drop in STATUS_DROPPED_FIRST:
            if Text(" · ").join(parts).cell_len <= self.size.width:
                break
            parts[drop] = Text("")
        return Text(" · ", style="dim").join(p for p in parts if p.plain)


class ModelPanel(Widget):
    """One line per model: cost bar (spent █, reserved ▒, free ░ of its cap), money, counts."""

    def __init__(self, view: ViewModel, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.shown: ev.AccountsCommitted | None = None
        """The ledger commit on screen (tests compare it with ledger.toml)."""

    def render(self) -> Text:
        acc = self.shown = self.view.accounts
        if acc is None:
            return Text(" waiting for the ledger…", style="dim")
        rows = [(m.name, m.spent_usd, m.reserved_usd, m.cap_usd) for m in acc.models]
        rows.append(("total", acc.spent_usd, acc.reserved_usd, acc.budget_usd))
        name_w = min(max(len(name) for name, *_ in rows), 32)
        counts_w = sum(len(label) + 1 for label, _ in COUNTS)
        # Narrow: the money as spent / cap (the bar still shows what is reserved), never a cut word.
        for heading, form in MONEY_FORMS:
            money = [form(spent, reserved, cap) for _, spent, reserved, cap in rows]
            money_w = max(len(heading), *map(len, money))
            bar_w = max(self.size.width - name_w - money_w - counts_w - 5, MIN_BAR)
            if name_w + bar_w + money_w + counts_w + 5 <= self.size.width:
                break
        legend = next((b for b in BAR_LEGENDS if len(b) <= bar_w), "")
        lines = [
            Text(
                f" {'model':<{name_w}} {legend:<{bar_w}} {heading:<{money_w}} "
                + "".join(f"{label:>{len(label) + 1}}" for label, _ in COUNTS),
                style="bold",
            )
        ]
        for (name, spent, reserved, cap), text in zip(rows, money, strict=True):
            line = Text(f" {name[:name_w]:<{name_w}} ", style="bold" if name == "total" else "")
            line.append_text(cost_bar(spent, reserved, cap, bar_w))
            line.append(f" {text:<{money_w}} ")
            lines.append(line)
        for line, m in zip(lines[1:], acc.models, strict=False):
            line.append("".join(f"{getattr(m, attr):>{len(label) + 1}}" for label, attr in COUNTS))
        lines[-1].append(f" wasted {fmt(acc.wasted_usd)}", style="dim")
        return Text("\n").join(lines)


class EventsLog(Log):
    """The events pane: it follows its newest line unless the user scrolled up, a resize included
    (Textual's log follows only while it is scrolled to its end, and a pane that gets shorter is
    no longer there: it stayed on old lines for good)."""

    following = True
    """Scrolled to the newest line when last scrolled (a resize moves the end, not the intent)."""

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.following = new_value >= self.max_scroll_y

    def on_resize(self) -> None:
        if self.following:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True, x_axis=False)

    def write_lines(self, lines: Any, scroll_end: bool | None = None) -> Self:
        follow = self.following if scroll_end is None else scroll_end
        super().write_lines(lines, scroll_end=follow)
        if follow and not self.is_vertical_scroll_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        return self
