"""A trajectory's messages a page at a time: `attempt-N.traj.json` read in byte windows.

mini-swe-agent writes its trajectory as one JSON document (`{"info": …, "messages": [...]}`,
rewritten after every step). Loading it whole would make a 1 GiB trajectory take tens of seconds
and gigabytes; so the messages are decoded one by one from a window of the file, starting at a
byte offset (`Cursor`), until the page's byte budget is used: a page costs its own size, whatever
the file's. The next page starts where this one stopped; its cursor also carries the counts of
model calls and actions before it, so each message still meets its evidence record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchtui.story import files

PAGE_BYTES = 1 << 20
"""A page's share of the file (a real session's page: tens of messages)."""
PAGE_MESSAGES = 100
MAX_MESSAGE_BYTES = 64 << 20
"""One message decoded whole at most (the runner bounds a trajectory's outputs to 32 MiB)."""
RAW_HEAD = 64 << 10
"""Of a message too large to decode: its first bytes, shown as they are in the file."""
MARGIN = 64 << 10
"""Read a new window when fewer bytes than this are left in the current one."""
HEAD_BYTES = 4 << 20
"""Where the messages list must start (after `info`: a few KB)."""
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r,]*")
_MESSAGES_KEY = re.compile(r'(?<!\\)"messages"\s*:\s*\[')


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page starts: a byte offset in the file (0: its beginning) and the counts before."""

    offset: int = 0
    index: int = 0
    """The number of messages before it."""
    calls: int = 0
    """Model answers before it (assistant messages, and answers a format error sent back)."""
    actions: int = 0
    """Command outputs (messages with `raw_output`) before it."""


START = Cursor()
"""The first page."""


@dataclass(frozen=True, slots=True)
class Entry:
    offset: int
    index: int
    message: dict[str, Any] | None
    """None: too large to decode (`raw` holds its first bytes)."""
    raw: str = ""
    size: int = 0


@dataclass
class Page:
    cursor: Cursor
    entries: list[Entry] = field(default_factory=list)
    next: Cursor | None = None
    size: int = 0
    """The file's size when read."""
    info: dict[str, Any] | None = None
    """The trajectory's `info` (on the first page)."""
    problem: str = ""


def is_action(message: dict[str, Any]) -> bool:
    """A command's output as the model saw it (the runner keeps the whole in `raw_output`)."""
    extra = message.get("extra")
    return isinstance(extra, dict) and "raw_output" in extra


def rejected_answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The model's answer a format error sent back (mini-swe-agent keeps the provider's whole
    response in the feedback message's `extra.response`): the answer's message, or None."""
    if message.get("role") == "assistant":
        return None
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    choices = response.get("choices") if isinstance(response, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    answer = first.get("message") if first else None
    return answer if isinstance(answer, dict) else None


def is_answer(message: dict[str, Any]) -> bool:
    """A model's answer: an assistant message, or one a format error sent back."""
    return message.get("role") == "assistant" or rejected_answer(message) is not None


def read_page(root: Path, relative: str, cursor: Cursor = START) -> Page:
    """The messages from `cursor` on, within PAGE_BYTES (FileNotFoundError: no trajectory)."""
    page = Page(cursor)
    start = cursor.offset
    if start == 0:
        head = files.read_range(root, relative, 0, HEAD_BYTES)
        page.size = head.size
        found = _messages_start(_text(head.data), page)
        if found is None:
            page.problem = (
                page.problem or "no messages list in its first 4 MiB: not a mini-swe-agent trajectory"
            )
            return page
        start = found
    here = replace(cursor, offset=start)
    text, base, at_end = "", here.offset, False
    while len(page.entries) < PAGE_MESSAGES and here.offset - cursor.offset < PAGE_BYTES:
        pos = here.offset - base
        if pos + MARGIN > len(text) and not at_end:  # read on: one window serves many messages
            window = files.read_range(root, relative, here.offset, PAGE_BYTES * 2)
            page.size, text, base, pos = window.size, _text(window.data), here.offset, 0
            at_end = window.end >= window.size
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # matches the empty string
        if pos >= len(text):
            if at_end:
                page.problem = "the trajectory ends before its messages list does (being written, or cut)"
                return page
            here = replace(here, offset=base + pos)
            continue
        if text[pos] == "]":
            return page  # its last message
        offset = base + pos
        try:
            value, end = _DECODER.raw_decode(text, pos)
            end -= pos
        except ValueError:
            if at_end:  # its last bytes: a message cut short
                why = "ends in the middle of a message (being written, or cut)"
                return _stop(page, here, offset, text[pos:], why)
            if pos > 0:
                here = replace(here, offset=offset)
                text = ""  # read again from this message
                continue
            if page.entries:
                break  # a message larger than a window starts the next page
            value, end = _whole(root, relative, offset)
        except RecursionError:
            value, end = None, 0
        if not isinstance(value, dict) or not end:
            if not end:
                return _stop(page, here, offset, text[pos:], "holds a message it cannot decode")
            page.entries.append(Entry(offset, here.index, None, text[pos : pos + min(end, RAW_HEAD)], end))
        else:
            page.entries.append(Entry(offset, here.index, _fixed(value), size=end))
        here = _after(here, page.entries[-1], offset + end)
    page.next = here
    return page


def _whole(root: Path, relative: str, offset: int) -> tuple[Any, int]:
    """A message larger than a window, decoded whole if it ends within MAX_MESSAGE_BYTES."""
    text = _text(files.read_range(root, relative, offset, MAX_MESSAGE_BYTES).data)
    try:
        return _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return None, 0


def _stop(page: Page, here: Cursor, offset: int, text: str, why: str) -> Page:
    """A message that cannot be read: its first bytes as they are; no page after it."""
    page.problem = (
        f"message {here.index + 1} {why}: its first {RAW_HEAD >> 10} KiB are shown as they are "
        "in the file (the whole file is under files)"
    )
    raw = text[:RAW_HEAD].encode("latin-1").decode("utf-8", "replace")
    page.entries.append(Entry(offset, here.index, None, raw, len(text)))
    return page


def message_at(root: Path, relative: str, offset: int) -> dict[str, Any] | None:
    """The message that starts at `offset` (a page's entry), or None when none starts there."""
    chunk = files.read_range(root, relative, offset, MAX_MESSAGE_BYTES)
    text = _text(chunk.data)
    try:
        value, _ = _DECODER.raw_decode(text, _SPACE.match(text).end())  # type: ignore[union-attr]
    except (ValueError, RecursionError):
        return None
    return _fixed(value) if isinstance(value, dict) and isinstance(value.get("role"), str) else None


def _text(data: bytes) -> str:
    """Bytes as characters one for one, so that string positions are byte offsets (JSON that
    mini-swe-agent writes is ASCII; other bytes are put right in `_fixed`)."""
    return data.decode("latin-1")


def _fixed(value: Any) -> Any:
    """Strings decoded as latin-1 back to what their UTF-8 bytes say."""
    if isinstance(value, str):
        if value.isascii():
            return value
        return value.encode("latin-1", "replace").decode("utf-8", "replace")
    if isinstance(value, list):
        return [_fixed(v) for v in value]
    if isinstance(value, dict):
        return {_fixed(k): _fixed(v) for k, v in value.items()}
    return value


def _messages_start(text: str, page: Page) -> int | None:
    """The offset just after `"messages": [` at the top level, decoding the keys before it (and
    keeping `info`); a key it cannot decode in the head falls back on a search."""
    pos = _SPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", pos):
        page.problem = "not a JSON object: not a mini-swe-agent trajectory"
        return None
    pos += 1
    try:
        while True:
            pos = re.compile(r"\s*").match(text, pos).end()  # type: ignore[union-attr]
            key, pos = _DECODER.raw_decode(text, pos)
            colon = re.compile(r"\s*:\s*").match(text, pos)
            if colon is None or not isinstance(key, str):
                return None
            pos = colon.end()
            if key == "messages":
                return pos + 1 if text.startswith("[", pos) else None
            value, pos = _DECODER.raw_decode(text, pos)
            if key == "info" and isinstance(value, dict):
                page.info = _fixed(value)
            comma = re.compile(r"\s*,").match(text, pos)
            if comma is None:
                return None
            pos = comma.end()
    except (ValueError, RecursionError):
        found = _MESSAGES_KEY.search(text)
        return found.end() if found else None


def _after(here: Cursor, entry: Entry, offset: int) -> Cursor:
    message = entry.message or {}
    return Cursor(
        offset,
        here.index + 1,
        here.calls + is_answer(message),
        here.actions + is_action(message),
    )
