"""Text from agents and files, made safe for a terminal line or a table cell."""

from __future__ import annotations

_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""Marks, embeddings, overrides and isolates: they reorder what follows them on screen (in a
terminal that implements bidi, in a browser always), so a line could show other than it holds."""
_PRINTABLE = str.maketrans({c: " " if chr(c) in "\t\n\r" else "\ufffd" for c in (*_CONTROLS, *BIDI_CONTROLS)})


def printable(text: str) -> str:
    """Control characters (an escape sequence in an agent's note, a newline in a reason) and
    bidi controls shown as a space or �: what reaches the screen is only text, one line."""
    return text.translate(_PRINTABLE)
