"""The command palette's entries: every action of the main screen, named with the key that does it
(the campaign's `[ui.keys]` remaps included)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from textual.app import SystemCommand

from benchtui.ui.screens.main import MainScreen

# (binding id, title, help)
ENTRIES = (
    ("quit", "Quit", "Stop the campaign (now, or once running sessions finish) and leave; resumable"),
    ("pause", "Pause launching", "No new session starts; running ones go on"),
    ("resume", "Resume launching", "Start sessions again"),
    ("kill", "Kill selected session", "It ends `killed`; its spend is kept (the key asks first)"),
    ("change_runner", "Change runner", "Runner profile for sessions not yet started"),
    ("parallelism_up", "More parallelism", "One more session at once"),
    ("parallelism_down", "Less parallelism", "One session fewer at once"),
    ("summary", "Summary", "Per-model results and money"),
    ("help", "Keys", "Every key, and what the panes' columns mean"),
)


def key_for(binding_id: str, keys: Mapping[str, str]) -> str:
    """The first key of a binding, as the footer shows it."""
    if binding_id in keys:
        return keys[binding_id].split(",")[0]
    binding = next(b for b in MainScreen.BINDINGS if b.id == binding_id)  # type: ignore[union-attr]
    return binding.key_display or binding.key.split(",")[0]  # type: ignore[union-attr]


def palette_commands(
    actions: Mapping[str, Callable[[], Any]], keys: Mapping[str, str]
) -> Iterator[SystemCommand]:
    for binding_id, title, help_text in ENTRIES:
        yield SystemCommand(title, f"{help_text} ({key_for(binding_id, keys)})", actions[binding_id])
