"""Agent text shown as what it holds: control and bidi characters made visible, long text cut.

An agent's output may carry ANSI escapes (colours, cursor moves, terminal titles), a carriage
return that hides what came before it, or bidi overrides that make a line read other than it is
(`rm -rf /` shown as something harmless). The viewer and the TUI show every such character as a
visible mark (`␛`, `⟨U+202E⟩`), never act on it; newlines and tabs stay.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchtui.core.text import BIDI_CONTROLS

_PICTURES = {**{c: chr(0x2400 + c) for c in range(0x20)}, 0x7F: "\u2421"}
_MARKS = str.maketrans(
    {
        **{c: _PICTURES[c] for c in range(0x20) if chr(c) not in "\n\t"},
        0x7F: _PICTURES[0x7F],
        **{c: f"⟨U+{c:04X}⟩" for c in (*range(0x80, 0xA0), *BIDI_CONTROLS, 0x2028, 0x2029, 0xFEFF)},
    }
)


def visible(text: str) -> str:
    """`text` with every control and bidi character as a visible mark (newline and tab kept)."""
    return text.translate(_MARKS)


@dataclass(frozen=True, slots=True)
class Shown:
    """At most `limit` characters of a text, and how much was left out."""

    text: str
    cut: int
    """Characters of the original left out (0: it is whole)."""


def head(text: str, limit: int) -> Shown:
    """The first `limit` characters of `text`, made visible."""
    return Shown(visible(text[:limit]), max(0, len(text) - limit))
