"""Text from agents and files, made safe for a terminal line, a table cell, or a model's eyes."""

from __future__ import annotations

import re

_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
"""C0, DEL and C1 (U+0080–U+009F: 8-bit CSI, OSC, DCS… which some terminals obey as escapes)."""
BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""Marks, embeddings, overrides and isolates: they reorder what follows them on screen (in a
terminal that implements bidi, in a browser always), so a line could show other than it holds."""
_PRINTABLE = str.maketrans({c: " " if chr(c) in "\t\n\r" else "\ufffd" for c in (*_CONTROLS, *BIDI_CONTROLS)})
_INERT = re.compile(
    "[" + "".join(re.escape(chr(c)) for c in (*_CONTROLS, *BIDI_CONTROLS) if chr(c) not in "\t\n") + "]"
)
# A regex, not str.translate: translate takes ~750 ms a MB of non-ASCII text (~10 ms of ASCII),
# the regex ~25-30 ms a MB of either, and an observation can be a command's whole output.


def printable(text: str) -> str:
    """Control characters (an escape sequence in an agent's note, a newline in a reason) and
    bidi controls shown as a space or �: what reaches the screen is only text, one line."""
    return text.translate(_PRINTABLE)


def inert(text: str) -> str:
    """Text for a model: every control character but newline and tab (C0, DEL, C1) and every bidi
    control taken out; the lines and their indentation stay, as the command printed them."""
    return _INERT.sub("", text)
