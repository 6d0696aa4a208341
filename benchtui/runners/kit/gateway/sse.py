"""Server-sent events, split incrementally so each event is relayed the moment it is whole."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""One event, whole (a Responses stream's last event carries the whole answer)."""


class EventTooLarge(Exception):
    """The provider sent more than MAX_EVENT_BYTES without ending an event."""


@dataclass(frozen=True, slots=True)
class Event:
    raw: bytes
    data: dict[str, Any] | None
    """Its `data:` JSON object, or None."""
    done: bool
    """The `data: [DONE]` line that ends an OpenAI Chat stream."""


class EventSplitter:
    """Feed raw bytes; get back each whole event (raw bytes and its parsed data)."""

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buffer = bytearray()  # amortised appends: a big event in small chunks stays linear
        self._cr = b""  # a chunk's last \r, held back: it may start a \r\n
        self._scanned = 0
        self._max = max_event_bytes

    def feed(self, chunk: bytes) -> Iterator[Event]:
        chunk, self._cr = self._cr + chunk, b""
        if chunk.endswith(b"\r"):
            chunk, self._cr = chunk[:-1], b"\r"
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while (end := self._buffer.find(b"\n\n", self._scanned)) >= 0:
            raw = bytes(self._buffer[: end + 2])
            del self._buffer[: end + 2]
            self._scanned = 0
            yield _event(raw)
        self._scanned = max(len(self._buffer) - 1, 0)  # never rescan what had no event end
        if len(self._buffer) > self._max:
            raise EventTooLarge(f"a stream event over {self._max} bytes")

    @property
    def rest(self) -> bytes:
        """An unterminated last event (a broken stream), passed on as it is."""
        return bytes(self._buffer) + self._cr


def _event(raw: bytes) -> Event:
    lines = [line[5:].removeprefix(b" ") for line in raw.split(b"\n") if line.startswith(b"data:")]
    if not lines:
        return Event(raw, None, False)
    payload = b"\n".join(lines)
    if payload.strip() == b"[DONE]":
        return Event(raw, None, True)
    try:
        data = orjson.loads(payload)
    except (ValueError, RecursionError):  # anything that is not JSON
        return Event(raw, None, False)
    return Event(raw, data if isinstance(data, dict) else None, False)
