"""Pick the runner profile for sessions not yet started, among the campaign's [runners.*]."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from benchtui.core.contract import RunnerProfile

FAIRNESS = (
    "Sessions already running keep their runner; only sessions not yet started use the "
    "new one. If some sessions already ran, models end up compared across runners."
)


def describe(profile: RunnerProfile) -> str:
    """`kind, key value, …` with the settings that differ from the kind's defaults."""
    settings = profile.model_dump(exclude={"kind"}, exclude_defaults=True)
    return profile.kind.rpartition(":")[2] + "".join(f", {k} {v}" for k, v in settings.items())


class RunnerPicker(ModalScreen[str | None]):
    AUTO_FOCUS = "#profiles"
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="runner_cancel")]

    def __init__(self, profiles: Mapping[str, RunnerProfile], active: str) -> None:
        super().__init__()
        self.profiles = profiles
        self.active = active

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Change runner", id="title")
            options = [
                Option(
                    Text.assemble(
                        "● " if name == self.active else "  ", (name, "bold"), "  ", (describe(p), "dim")
                    ),
                    id=name,
                )
                for name, p in self.profiles.items()
            ]
            picker = OptionList(*options, id="profiles")
            if self.active in self.profiles:
                picker.highlighted = list(self.profiles).index(self.active)
            yield picker
            yield Static(FAIRNESS, id="hint")

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
