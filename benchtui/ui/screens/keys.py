"""`?`: every key of the main screen and what the panes' columns mean, over the screen.

A modal screen (the panes keep their size beneath it), built from the bindings themselves, so a
key remapped in the campaign's `[ui.keys]` is shown as remapped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.keys import format_key
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from benchtui.core.endings import by_group

LEGENDS = (
    ("money bar", "█ spent  ▒ reserved (held for running sessions)  ░ free, of the model's cap"),
    ("money", "spent + reserved / cap (narrow: spent / cap)"),
    (
        "counts",
        "done · run: running · skip: skipped for budget · err: errors · kill: killed · certs: certificates",
    ),
    ("sessions", "state: pending, running, done, skipped (the budget no longer fits), error, killed"),
    (
        "outcome",
        "✓ cert: a certificate its verifier confirmed · ◇ cert: its runner's claim (fake, demo), never verified",
    ),
    ("ending", f"why it ended: {by_group()}"),
    (
        "narrow",
        "under 100 columns the session pane is hidden and the sessions table drops model, calls, cost, "
        "ending (the outcome then names an ending that did not hunt)",
    ),
    ("stop", "Ctrl-C (or SIGINT, SIGTERM, SIGHUP): stop launching; a second one interrupts running sessions"),
)
"""What the panes show, for the overlay (the leaderboard's columns have their legend on the summary)."""


def keys_of(binding: Binding, keymap: Mapping[str, str]) -> str:
    """The keys a binding answers to, spelt as the footer spells them (`?`, `esc`, `^k`); a
    `[ui.keys]` remap wins over the default."""
    remapped = binding.id is not None and binding.id in keymap
    keys = keymap[binding.id] if remapped and binding.id else binding.key
    if binding.key_display and not remapped:
        return binding.key_display
    return ", ".join(_display(k.strip()) for k in keys.split(",") if k.strip())


def _display(key: str) -> str:
    *modifiers, name = key.split("+")
    shown = format_key(name)
    return "^" + shown if modifiers == ["ctrl"] else "+".join([*modifiers, shown])


def bindings(found: Iterable[BindingType]) -> list[Binding]:
    return [b for b in found if isinstance(b, Binding)]


class KeysScreen(ModalScreen[None]):
    """The keys of the main screen and of the sessions table, then the legends."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", id="help_close")]

    def __init__(self, groups: dict[str, list[Binding]], keymap: Mapping[str, str]) -> None:
        super().__init__()
        self.groups = groups
        self.keymap = keymap

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="keys"):
            yield Label("Keys", id="title")
            yield Static(self._keys(), id="keys-table")
            yield Static(self._legends(), id="legends")
            close = keys_of(bindings(self.BINDINGS)[0], self.keymap)
            yield Static(f"{close}: close. Ctrl-P: every action by name.", id="hint")

    def _keys(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for title, group in self.groups.items():
            table.add_row(Text(title, style="bold italic"), "")
            for binding in group:
                table.add_row(keys_of(binding, self.keymap), binding.tooltip or binding.description)
        return table

    @staticmethod
    def _legends() -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for name, text in LEGENDS:
            table.add_row(name, text)
        return table
