"""Server-sent events, split incrementally so each event is relayed the moment it is whole."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


class EventSplitter:
    """Feed raw bytes; get back (the event's raw bytes, its `data:` JSON or None) per whole event."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> Iterator[tuple[bytes, dict[str, Any] | None]]:
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while (end := self._buffer.find(b"\n\n")) >= 0:
            raw, self._buffer = self._buffer[: end + 2], self._buffer[end + 2 :]
            yield raw, _data(raw)

    @property
    def rest(self) -> bytes:
        """An unterminated last event (a broken stream), passed on as it is."""
        return self._buffer


def _data(raw: bytes) -> dict[str, Any] | None:
    lines = [line[5:].removeprefix(b" ") for line in raw.split(b"\n") if line.startswith(b"data:")]
    if not lines:
        return None
    try:
        data = json.loads(b"\n".join(lines))
    except ValueError:  # `[DONE]` and anything else that is not JSON
        return None
    return data if isinstance(data, dict) else None
