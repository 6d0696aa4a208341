"""A session's pages: its story (attempts, identity, verdicts, the timeline a page at a time), a
command's whole output, and its raw files, each paged so that no page costs more than its share."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from benchtui.core import counters
from benchtui.story import files, trajectory
from benchtui.story.session import SAVED_OUTPUTS, SessionStory, full_output
from benchtui.story.text import visible
from benchtui.story.trajectory import Cursor

if TYPE_CHECKING:
    from benchtui.view.runs import Page, RunContext, RunView

    Html = Callable[..., Page]
    """Renders a template at a page's path (`Viewer._html`)."""

TEXT_PAGE = 256 << 10
"""Characters (or bytes, of a raw file) on one page of a long text."""
EXPORT_BYTES = 64 << 20
"""An export follows a trajectory's pages this far (the rest stays in the run dir)."""
EXPORT_TEXT = 8 << 20
"""An export follows a long output's or a file's pages this far."""


def page(
    html: Html, export: bool, run: RunView, context: RunContext, here: str, kind: str, parts: tuple[str, ...]
) -> Page | None:
    row = run.story.session(parts[0])
    if row is None:
        return None
    story = SessionStory(run.story, row)
    if kind in ("file", "saved"):
        name, offset = parts[1], int(parts[2] or 0)
        saved = kind == "saved"
        relative = f"{story.dir}/{SAVED_OUTPUTS}/{name}" if saved else f"{story.dir}/{name}"
        return _file(html, export, story, context, here, name, offset, relative, saved=saved)
    numbers = [int(p) for p in parts[1:] if p]
    if kind == "session":
        attempts = story.attempts()
        return _story(html, export, story, context, here, attempts[-1].number if attempts else 0, Cursor())
    if kind == "attempt":
        return _story(html, export, story, context, here, numbers[0], Cursor())
    if kind == "page":
        return _story(html, export, story, context, here, numbers[0], Cursor(*numbers[1:]))
    if kind == "output":
        return _output(
            html, export, story, context, here, numbers[0], numbers[1], numbers[2] if len(numbers) > 2 else 0
        )
    return None


def _story(
    html: Html, export: bool, story: SessionStory, context: RunContext, here: str, number: int, cursor: Cursor
) -> Page | None:
    attempts = story.attempts()
    shown = next((a for a in attempts if a.number == number), None)
    if shown is None and attempts:
        return None
    limits = story.run.campaign.logical_limits
    flight = story.run.in_flight(story.row.id)
    judged, problem = story.judged(number) if shown else ([], "")
    timeline = story.timeline(number, cursor) if shown else None
    nxt = timeline.page.next if timeline else None
    return html(
        "session.html",
        here,
        run=context,
        row=story.row,
        attempts=attempts,
        shown=shown or _Nothing(),
        flight=flight,
        flight_counters=counters.line(counters.usage(flight.counters, limits)) if flight and limits else "",
        judged=judged,
        judged_problem=problem,
        replay=f"benchtui verify {story.root / story.dir / f'attempt-{number}.certificates.json'}",
        timeline=timeline,
        ledger=(timeline.ledger if timeline else story.ledger(number)) if shown else None,
        files=story.files(),
        too_far=export and nxt is not None and nxt.offset > EXPORT_BYTES,
    )


class _Nothing:
    """A session that never started: no attempt to show."""

    number = 0
    start = None
    details = None


def _output(
    html: Html,
    export: bool,
    story: SessionStory,
    context: RunContext,
    here: str,
    number: int,
    offset: int,
    part: int,
) -> Page | None:
    try:
        message = trajectory.message_at(story.root, story.trajectory_file(number), offset)
    except (FileNotFoundError, files.Unreadable):
        return None
    whole = full_output(message)
    if whole is None:
        return None
    parts = max(1, math.ceil(len(whole) / TEXT_PAGE))
    if part >= parts:
        return None
    site = context.site
    stop = export and (part + 1) * TEXT_PAGE > EXPORT_TEXT

    def at(n: int) -> str:
        return site.output(story.row.id, number, offset, n)

    return _text_page(
        html,
        context,
        here,
        story,
        title=f"the whole output of a command (attempt {number})",
        what=f"{len(whole):,} characters as the command printed them (the model was shown its observation: "
        "the head and tail within the session's observation budget)",
        body=visible(whole[part * TEXT_PAGE : (part + 1) * TEXT_PAGE]),
        span=f"part {part + 1} of {parts}",
        first=at(0) if part > 1 else None,
        previous=at(part - 1) if part else None,
        following=at(part + 1) if part + 1 < parts and not stop else None,
        stop_note="the export stops here: the rest is in the run dir" if stop else "",
    )


def _file(
    html: Html,
    export: bool,
    story: SessionStory,
    context: RunContext,
    here: str,
    name: str,
    offset: int,
    relative: str,
    *,
    saved: bool = False,
) -> Page | None:
    try:
        chunk = files.read_range(story.root, relative, offset, TEXT_PAGE)
    except FileNotFoundError:
        return None
    except files.Unreadable as exc:
        return _text_page(html, context, here, story, title=name, what="", body="", span="", problem=str(exc))
    if offset and offset >= chunk.size:
        return None
    data = chunk.data
    if chunk.end < chunk.size:  # end on a whole character: the next page starts with the rest
        data = data[: _whole_characters(data)]
    end = chunk.offset + len(data)
    site = context.site

    def at(o: int) -> str:
        return site.saved(story.row.id, name, o) if saved else site.file(story.row.id, name, o)

    stop = export and end < chunk.size and end > EXPORT_TEXT
    return _text_page(
        html,
        context,
        here,
        story,
        title=name,
        what=f"{chunk.size:,} bytes" + (" (the whole output the observation policy saved)" if saved else ""),
        body=visible(data.decode("utf-8", "replace")),
        span=f"bytes {chunk.offset:,}–{end:,} of {chunk.size:,}",
        first=at(0) if offset > TEXT_PAGE else None,
        previous=at(max(0, offset - TEXT_PAGE)) if offset else None,
        following=at(end) if end < chunk.size and not stop else None,
        stop_note="the export stops here: the rest is in the run dir" if stop else "",
    )


def _whole_characters(data: bytes) -> int:
    """The length of `data` without a UTF-8 sequence cut at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return len(data)
        if byte >= 0xC0:  # a lead byte: is its sequence whole?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) if back >= need else len(data) - back
    return len(data)


def _text_page(html: Html, context: RunContext, here: str, story: SessionStory, **page: Any) -> Page:
    page.setdefault("problem", "")
    page.setdefault("stop_note", "")
    for key in ("first", "previous", "following"):
        page.setdefault(key, None)
    return html("text.html", here, run=context, session=story.row.id, **page)
