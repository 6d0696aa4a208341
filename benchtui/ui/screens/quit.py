"""Quitting while sessions run: interrupt them now, or let them finish first."""

from __future__ import annotations

from typing import Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

QuitChoice = Literal["now", "finish"] | None


class QuitScreen(ModalScreen[QuitChoice]):
    AUTO_FOCUS = "#finish"
    BINDINGS = [
        Binding("n", "dismiss('now')", "Stop now", id="quit_now"),
        Binding("f", "dismiss('finish')", "Let them finish", id="quit_finish"),
        Binding("escape", "dismiss(None)", "Cancel", id="quit_cancel"),
    ]

    def __init__(self, running: int, campaign: str = "") -> None:
        super().__init__()
        self.running = running
        self.campaign = campaign

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Quit benchtui", id="title")
            yield Static(
                f"No new session will start. {self.running} session(s) running. "
                "Stopping now interrupts them (their spend stays counted; --resume retries "
                "them). Either way the state is saved: "
                f"`benchtui --resume{' ' + self.campaign if self.campaign else ''}` continues.",
                id="hint",
            )
            with Horizontal(id="buttons"):
                yield Button("Stop now (n)", id="now", variant="error")
                yield Button("Let them finish (f)", id="finish", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        choice = event.button.id
        if choice == "now":
            self.dismiss("now")
        elif choice == "finish":
            self.dismiss("finish")
        else:
            self.dismiss(None)
