"""A session's story in the TUI (Enter on a session row): what the model was told and answered,
every command with its output as the model saw it, gated calls, submits and the verifier's
verdicts; scrollable, Escape goes back. A running session is followed: a second after its files
change, the new steps are added at the end (the view stays where it is unless it was at the end).

The story is read by `benchtui.story` (as `benchtui view` reads it) in a worker thread; agent text
reaches the screen as Rich `Text` (never markup) with control and bidi characters made visible.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, RichLog, Static

from benchtui.core.errors import BenchtuiError
from benchtui.core.money import fmt
from benchtui.story import evidence
from benchtui.story.run import Attempt, RunStory
from benchtui.story.session import SessionStory, Step, Timeline, stamp
from benchtui.story.text import head, visible
from benchtui.story.trajectory import Cursor
from benchtui.ui.sessions import STATE_STYLES

FOLLOW_S = 1.0
"""How often an open session's files are looked at (a stat of its folder and of the journal)."""
SHOWN = 4000
"""Characters of one message on screen (`benchtui view` pages the rest)."""
SHOWN_PROMPT = 1200
"""Of a prompt (the same for every session of a task: `benchtui view` shows it whole)."""
VERDICT_STYLES = {"accepted": "bold green", "rejected": "bold red", "off_task": "bold red"}


@dataclass
class Read:
    """What a worker read: the session's header text and a page of its timeline."""

    head: Text
    timeline: Timeline | None
    attempt: int


class SessionScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="session_back"),
        Binding(
            "n",
            "next_page",
            "Next page",
            tooltip="The next page of a long trajectory",
            id="session_next_page",
        ),
        Binding("f", "first_page", "First page", id="session_first_page"),
    ]

    def __init__(self, run_dir: Path, session: str) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.session = session
        self.cursor = Cursor()
        self._written: list[Any] = []
        """The steps on screen (their trajectory offsets and whether their evidence was there)."""
        self._stamp: Any = None

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{self.session}: reading…"), id="session-head")
        yield RichLog(id="session-story", wrap=True, markup=False, highlight=False, auto_scroll=False)
        yield Footer()

    def on_mount(self) -> None:
        self.story_log = self.query_one(RichLog)
        self.head = self.query_one("#session-head", Static)
        self.story_log.border_title = "timeline"
        self.story_log.focus()
        self.load()
        self.set_interval(FOLLOW_S, self.follow)

    def action_next_page(self) -> None:
        if self._next is not None:
            self.cursor = self._next
            self._written = []
            self.load()

    def action_first_page(self) -> None:
        self.cursor = Cursor()
        self._written = []
        self.load()

    _next: Cursor | None = None

    def follow(self) -> None:
        self.load(only_if_changed=True)

    @work(exclusive=True, group="session-story")
    async def load(self, only_if_changed: bool = False) -> None:
        current = await asyncio.to_thread(self._files_stamp)
        if only_if_changed and current == self._stamp:
            return
        try:
            read = await asyncio.to_thread(self._read)
        except BenchtuiError as exc:
            self.head.update(Text(f"{self.session}: cannot read its story: {exc}", style="red"))
            return
        self._stamp = current
        self.show(read)

    def _files_stamp(self) -> Any:
        journal = self.run_dir / "sessions.jsonl"
        try:
            info = journal.stat()
            moved = (info.st_size, info.st_mtime_ns)
        except OSError:
            moved = None
        return moved, stamp(self.run_dir, self.session), self.cursor

    def _read(self) -> Read:
        run = RunStory(self.run_dir)
        row = run.session(self.session)
        if row is None:
            return Read(Text(f"{self.session}: not a session of this run"), None, 0)
        story = SessionStory(run, row)
        attempts = story.attempts()
        number = attempts[-1].number if attempts else 0
        timeline = story.timeline(number, self.cursor) if attempts else None
        return Read(header(story, attempts), timeline, number)

    def show(self, read: Read) -> None:
        self.head.update(read.head)
        timeline = read.timeline
        self._next = timeline.page.next if timeline else None
        log = self.story_log
        if timeline is None:
            if not self._written:
                log.write(
                    Text("No trajectory (yet): the steps appear here as the session takes them.", style="dim")
                )
                self._written = ["none"]
            return
        keys = [(s.entry.offset, s.call is not None or s.action is not None) for s in timeline.steps]
        if keys[: len(self._written)] != self._written or self._written == ["none"]:
            log.clear()  # what was shown changed (a new attempt, a new page): write it again
            self._written = []
        at_end = log.scroll_offset.y >= log.max_scroll_y - 1
        width = log.scrollable_content_region.width or None
        for step in timeline.steps[len(self._written) :]:
            log.write(render_step(step), width=width)
        if timeline.page.next is not None:
            log.write(
                Text(
                    f"… more in the next page (n), from message {timeline.page.next.index + 1}", style="bold"
                )
            )
        elif timeline.page.problem:
            log.write(Text(visible(timeline.page.problem), style="red"))
        self._written = keys
        if at_end and self._written:
            log.scroll_end(animate=False)


def header(story: SessionStory, attempts: list[Attempt]) -> Text:
    row = story.row
    text = Text.assemble(
        (row.id, "bold"),
        f"   {row.model}   #{row.index}",
        f"   task {row.task}" if row.task else "",
        "   ",
        (row.state, STATE_STYLES.get(row.state, "")),
        f"   cost {fmt(row.cost_usd)} over {len(attempts)} attempt{'s' if len(attempts) != 1 else ''}\n",
    )
    if row.why:
        text.append(f"why it ended: {visible(row.why)}\n")
    for a in attempts:
        end = a.end
        line = f"attempt {a.number}: " + (
            f"{end.state} {end.result or ''} {fmt(end.cost_usd)}" if end else "running"
        )
        text.append(
            line + (" (retried)" if a.retried else "") + (f"   {a.budget}" if a.budget else "") + "\n"
        )
    judged, problem = story.judged(attempts[-1].number) if attempts else ([], "")
    for j in judged:
        if j.refused:
            text.append("NOT VERIFIED ", style="bold yellow")
            text.append(visible(j.refused) + "\n")
        elif j.verdict is not None:
            status = j.verdict.status
            text.append(
                "ACCEPTED " if status == "accepted" else f"{status.upper()} ",
                style=VERDICT_STYLES.get(status, "bold yellow"),
            )
            found_by = j.verdict.found_by
            text.append(
                visible(j.verdict.reason) + (f" (verifier: found by {found_by})" if found_by else "") + "\n"
            )
    if problem:
        text.append(visible(problem) + "\n", style="red")
    return text


def render_step(step: Step) -> Text:
    text = Text()
    if step.kind == "answer":
        call = step.call
        text.append(
            "▶ model call"
            + (
                f" {call.n} · {call.input_tokens} in, {call.output_tokens} out{call.cache_note} · {fmt_usd(call.cost_usd)}"
                if call
                else ""
            ),
            style="bold blue",
        )
        text.append("\n")
        if step.text:
            text.append(_shown(step.text) + "\n")
        for command in step.commands:
            text.append(f"$ {_shown(command)}\n", style="bold")
    elif step.kind == "output":
        action = step.action
        text.append(
            "◀ output"
            + (
                f" of action {action.n} · exit {action.exit} · {action.duration_s:.2f} s · {action.raw_bytes:,} bytes"
                + (" · cut" if action.cut else "")
                if action
                else ""
            ),
            style="bold green",
        )
        text.append("\n")
        for line in _gated(action):
            text.append_text(line)
        text.append(_shown(step.text) + "\n")
    elif step.kind == "exit":
        text.append(f"■ the agent stopped: {visible(step.text)}\n", style="bold")
    elif step.kind == "unreadable":
        text.append(f"? message {step.entry.index + 1} cannot be read\n", style="red")
    else:
        text.append(f"{step.role} {'prompt' if step.kind == 'prompt' else 'message'}\n", style="bold magenta")
        limit = SHOWN_PROMPT if step.kind == "prompt" else SHOWN
        text.append(_shown(step.text, limit) + "\n", style="dim" if step.kind == "prompt" else "")
    return text


def _gated(action: evidence.Action | None) -> list[Text]:
    lines = []
    for tool in action.tools if action else []:
        how = "free" + (", cached" if tool.cached else "") if tool.free else ", ".join(tool.counters)
        if not tool.granted:
            how = f"refused ({tool.refused_by})"
        lines.append(Text(f"  gated {visible(' '.join(tool.argv))[:200]} · {how}\n", style="dim"))
    for submit in action.submits if action else []:
        line = Text(f"  submit {visible(submit.file)} ")
        line.append(submit.verdict.upper(), style=VERDICT_STYLES.get(submit.verdict, "bold yellow"))
        line.append(f" {visible(submit.reason)}\n")
        lines.append(line)
    return lines


def _shown(value: str, limit: int = SHOWN) -> str:
    shown = head(value, limit)
    return shown.text + (f"\n… {shown.cut:,} more characters (benchtui view shows them)" if shown.cut else "")


def fmt_usd(value: str) -> str:
    try:
        from decimal import Decimal

        return fmt(Decimal(value))
    except ArithmeticError:
        return value
