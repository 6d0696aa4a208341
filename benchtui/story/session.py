"""One session's story: its attempts, files, certificates and verdicts, and its timeline — the
trajectory's messages (what the model saw and answered) a page at a time, each model answer with
its call's tokens and charge, each command output with its action's record and the gated calls
and submits made while it ran (`evidence.jsonl`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchtui.core.money import fmt
from benchtui.story import evidence, files, trajectory
from benchtui.story.outcome import ShownVerdict, certificates
from benchtui.story.run import Attempt, RunStory, SessionRow

CERTIFICATES_MAX_BYTES = 16 << 20
FILE_NAME = re.compile(
    r"attempt-(\d{1,6})\.(traj\.json|worker\.log|agent\.log|certificates\.json)|evidence\.jsonl"
)
SAVED_OUTPUTS = "workdir/.benchtui-outputs"
"""Where the observation policy saved whole outputs (kept only with `keep_workdir = true`)."""

StepKind = Literal["prompt", "answer", "output", "note", "exit", "unreadable"]


@dataclass
class Step:
    """One message of the trajectory with what the evidence says about it."""

    kind: StepKind
    entry: trajectory.Entry
    role: str
    text: str
    """The message's text as the model saw it (or wrote it)."""
    commands: list[str] = field(default_factory=list)
    """An answer's commands."""
    call: evidence.Generation | None = None
    retries: list[evidence.Generation] = field(default_factory=list)
    """Attempts of the same call that failed before it (each charged as the ledger says)."""
    action: evidence.Action | None = None
    saved: str = ""
    """An output's whole text saved by the observation policy, relative to the session dir."""
    feedback: str = ""
    """An answer that failed the format check: what the agent sent back instead of running it
    (the answer is what the model said, from the feedback message's `extra.response`)."""


@dataclass
class Timeline:
    page: trajectory.Page
    steps: list[Step]
    unanswered: list[evidence.Generation] = field(default_factory=list)
    """Calls after the last answer (the session ended on an error, or was cut mid-call)."""
    loose: list[evidence.Tool | evidence.Submit] = field(default_factory=list)
    ledger: evidence.Ledger | None = None


@dataclass
class SessionFile:
    name: str
    size: int


@dataclass
class Judged:
    """One certificate of an attempt, as `attempt-N.certificates.json` keeps it."""

    certificate: Any
    verdict: ShownVerdict | None
    refused: str


class SessionStory:
    def __init__(self, run: RunStory, row: SessionRow) -> None:
        self.run, self.row = run, row
        self.dir = f"sessions/{row.id}"

    @property
    def root(self) -> Path:
        return self.run.path

    def attempts(self) -> list[Attempt]:
        return self.run.attempts(self.row.id)

    def files(self) -> list[SessionFile]:
        """The session's own files (a link or anything but a regular file is left out)."""
        try:
            fd = os.open(self.root / self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return []
        try:
            names = sorted(e.name for e in os.scandir(fd) if FILE_NAME.fullmatch(e.name))
        finally:
            os.close(fd)
        found = [(name, files.size_of(self.root, f"{self.dir}/{name}")) for name in names]
        return [SessionFile(name, info[0]) for name, info in found if info is not None]

    def without_trajectory(self) -> str:
        """What to say in place of the steps when the session recorded none: while it waits or
        runs, that they will come; once it ended, what it has (its outcome, its calls, its
        certificate) and why there are no steps (its runner recorded none: fake and demo script
        their sessions)."""
        row = self.row
        if row.state in ("pending", "running"):
            return "No trajectory yet: the steps appear here as the session takes them."
        try:
            campaign = self.run.saved.campaign
            profile = campaign.profiles[row.runner]
            kind, verified = (
                profile.profile.kind,
                profile.kind.uses_target and campaign.make_target().verifies,
            )
        except Exception:  # a campaign that cannot be read here, an unknown profile: say less
            kind, verified = "", False
        named = row.runner or "?"
        runner = f"its runner ({named}, kind {kind})" if kind and kind != named else f"its runner ({named})"
        if row.state == "skipped_budget":
            return f"No trajectory: the session never started ({row.why})."
        calls = f"{row.calls} model call{'s' if row.calls != 1 else ''}, {fmt(row.cost_usd)}"
        parts = [f"It ended {row.state}" + (f", {row.result}" if row.result else ""), calls]
        if row.certificate:
            parts.append("a certificate" + ("" if verified else " (claimed by the runner, never verified)"))
        why = f"; why: {row.reason}" if row.reason else ""
        return f"No trajectory: {runner} recorded no steps for this session. {', '.join(parts)}{why}."

    def judged(self, attempt: int) -> tuple[list[Judged], str]:
        """The certificates an attempt's verifier judged, and a problem reading them ("" if none)."""
        try:
            data = files.read_whole(
                self.root, f"{self.dir}/attempt-{attempt}.certificates.json", CERTIFICATES_MAX_BYTES
            )
        except files.Unreadable as exc:
            return [], str(exc)
        if data is None:
            return [], ""
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError):
            return [], f"attempt-{attempt}.certificates.json is not JSON"
        return [Judged(*item) for item in certificates(raw)], ""

    def trajectory_file(self, attempt: int) -> str:
        return f"{self.dir}/attempt-{attempt}.traj.json"

    def timeline(self, attempt: int, cursor: trajectory.Cursor = trajectory.START) -> Timeline | None:
        """A page of the attempt's trajectory with its evidence (None: no trajectory)."""
        try:
            page = trajectory.read_page(self.root, self.trajectory_file(attempt), cursor)
        except FileNotFoundError:
            return None
        except files.Unreadable as exc:
            page = trajectory.Page(cursor, problem=str(exc))
        ledger = evidence.read(self.root, self.row.id, attempt)
        return _assemble(page, ledger, self._saved)

    def ledger(self, attempt: int) -> evidence.Ledger | None:
        return evidence.read(self.root, self.row.id, attempt)

    def _saved(self, action: evidence.Action) -> str:
        """The saved whole output of an action, if the session's copy was kept."""
        name = Path(action.saved).name if action.saved else ""
        relative = f"{self.dir}/{SAVED_OUTPUTS}/{name}"
        return relative if name and files.size_of(self.root, relative) is not None else ""


def _assemble(page: trajectory.Page, ledger: evidence.Ledger | None, saved: Any) -> Timeline:
    answered: list[tuple[evidence.Generation, list[evidence.Generation]]] = []
    failed: list[evidence.Generation] = []
    for call in ledger.generations if ledger else []:
        if call.failed:
            failed.append(call)
        else:
            answered.append((call, failed))
            failed = []
    actions = ledger.actions if ledger else []
    calls, outputs = page.cursor.calls, page.cursor.actions
    steps: list[Step] = []
    for entry in page.entries:
        message = entry.message
        if message is None:
            steps.append(Step("unreadable", entry, "", entry.raw))
            continue
        role = str(message.get("role", ""))
        step = Step(_kind(entry, message, role), entry, role, content(message))
        rejected = trajectory.rejected_answer(message)
        if rejected is not None:  # the model did answer: shown as its answer, with the feedback
            step = Step("answer", entry, "assistant", content(rejected), feedback=step.text)
            step.commands = commands(rejected)
        if step.kind == "answer":
            step.commands = step.commands or commands(message)
            if calls < len(answered):
                step.call, step.retries = answered[calls]
            calls += 1
        elif step.kind == "output":
            if outputs < len(actions):
                step.action = actions[outputs]
                step.saved = saved(step.action)
            outputs += 1
        steps.append(step)
    timeline = Timeline(page, steps, ledger=ledger)
    if page.next is None and ledger is not None:  # the last page: what the trajectory does not show
        timeline.unanswered = [c for c, _ in answered[calls:]] + failed
        timeline.loose = list(ledger.loose)
    return timeline


def _kind(entry: trajectory.Entry, message: dict[str, Any], role: str) -> StepKind:
    if role == "assistant":
        return "answer"
    if trajectory.is_action(message):
        return "output"
    if role == "exit":
        return "exit"
    return "prompt" if entry.index < 2 and role in ("system", "user") else "note"


def content(message: dict[str, Any]) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    value = message.get("content")
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return "" if value is None else json.dumps(value)


def commands(message: dict[str, Any]) -> list[str]:
    """The commands an answer asked for: mini-swe-agent's parsed actions, else its tool calls."""
    extra = message.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if isinstance(actions, list):
        return [str(a.get("command", "")) for a in actions if isinstance(a, dict)]
    found = []
    for call in message.get("tool_calls") or []:
        try:
            found.append(str(json.loads(call["function"]["arguments"])["command"]))
        except (KeyError, TypeError, ValueError, RecursionError):
            continue
    return found


def full_output(message: dict[str, Any] | None) -> str | None:
    """The whole output of a command as the runner kept it (`raw_output`), or None."""
    extra = message.get("extra") if message else None
    raw = extra.get("raw_output") if isinstance(extra, dict) else None
    return raw if isinstance(raw, str) else None


def stamp(root: Path, session: str) -> list[tuple[str, int, int]]:
    """The session's files, their sizes and times: what its pages show changes with them."""
    try:
        fd = os.open(root / "sessions" / session, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        found = sorted((e.name, *_info(e)) for e in os.scandir(fd))
    finally:
        os.close(fd)
    return found


def _info(entry: os.DirEntry[str]) -> tuple[int, int]:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return 0, 0
    return info.st_size, info.st_mtime_ns
