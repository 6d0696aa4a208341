"""A session's evidence ledger (`evidence.jsonl`, runners/kit/evidence.py) as typed steps.

One record per step, in the order they happened: `generation` (a model call, charged), `tool`
(a gated call: granted, refused, free, cached), `submit` (a `submit FILE` and its verdict, or a
printed certificate admitted after the session) and `action` (a command the agent ran, with what
the model was shown of its output). Read bounded: the ledger of a long session is a few hundred
KB; a larger one is read up to MAX_BYTES, and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchtui.story import files

FILE = "evidence.jsonl"
MAX_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class Generation:
    n: int
    t: float
    input_tokens: int
    output_tokens: int
    cost_usd: str
    hold_usd: str
    """The worst case authorised before the call ("" in ledgers written before it was kept)."""
    charged: bool
    failed: bool
    worst_case: str
    """Why the call was charged its worst case, if it was."""
    cache_read_tokens: int = 0
    """Prompt tokens read from the provider's cache (part of the prompt, `input_tokens` excludes them)."""
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of `output_tokens`, where the provider says."""
    provider_cost_usd: str = ""
    """What the provider said the call cost ("" where it said nothing): never what was charged."""

    @property
    def cache_note(self) -> str:
        """` (1,536 cached, 200 written; 30 reasoning)`, or "" for a call with none of those."""
        parts = [
            f"{n:,} {what}"
            for n, what in ((self.cache_read_tokens, "cached"), (self.cache_write_tokens, "written"))
            if n
        ]
        said = ", ".join(parts) + (f"; {self.reasoning_tokens:,} reasoning" if self.reasoning_tokens else "")
        return f" ({said.lstrip('; ')})" if said else ""


@dataclass(frozen=True, slots=True)
class Tool:
    t: float
    argv: list[str]
    counters: list[str]
    granted: bool
    free: bool
    cached: bool
    exit: int | None
    refused_by: str


@dataclass(frozen=True, slots=True)
class Submit:
    t: float
    file: str
    verdict: str
    """accepted | rejected | inconclusive | refused | admitted (a printed certificate)."""
    reason: str
    sha256: str
    via: str


@dataclass(frozen=True, slots=True)
class Action:
    n: int
    t: float
    command: str
    exit: int | None
    duration_s: float
    raw_bytes: int
    shown_chars: int
    cut: bool
    saved: str
    unit: bool
    tools: list[Tool] = field(default_factory=list)
    submits: list[Submit] = field(default_factory=list)
    """The gated calls and submits made while this command ran."""


@dataclass
class Ledger:
    """One attempt's steps: model calls and actions in order, each action with its gated calls."""

    generations: list[Generation] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    loose: list[Tool | Submit] = field(default_factory=list)
    """Gated calls and submits after the last action (a printed certificate judged at the end,
    or an agent CLI's calls: its commands are not recorded one by one)."""
    problem: str = ""


def read(root: Path, session: str, attempt: int) -> Ledger | None:
    """The ledger of one attempt; None when the session has no evidence file."""
    relative = f"sessions/{session}/{FILE}"
    ledger = Ledger()
    try:
        chunk = files.read_range(root, relative, 0, MAX_BYTES)
    except FileNotFoundError:
        return None
    except files.Unreadable as exc:
        ledger.problem = str(exc)
        return ledger
    if chunk.size > MAX_BYTES:
        ledger.problem = f"{FILE} is {chunk.size:,} bytes: its first {MAX_BYTES >> 20} MiB are read"
    pending: list[Tool | Submit] = []
    for line in chunk.data.split(b"\n"):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a torn last line, or the cut at MAX_BYTES
        if not isinstance(record, dict) or record.get("attempt") != attempt:
            continue
        step = _step(record)
        if isinstance(step, Generation):
            ledger.generations.append(step)
        elif isinstance(step, Action):
            step.tools.extend(s for s in pending if isinstance(s, Tool))
            step.submits.extend(s for s in pending if isinstance(s, Submit))
            ledger.actions.append(step)
            pending = []
        elif step is not None:
            pending.append(step)
    ledger.loose = pending
    return ledger


def _step(r: dict[str, Any]) -> Generation | Action | Tool | Submit | None:
    kind, t = r.get("kind"), _number(r.get("t"))
    if kind == "generation":
        return Generation(
            _int(r.get("n")),
            t,
            _int(r.get("input_tokens")),
            _int(r.get("output_tokens")),
            str(r.get("cost_usd", "")),
            str(r.get("hold_usd", "")),
            r.get("charged") is True,
            r.get("failed") is True,
            str(r.get("worst_case") or ""),
            _int(r.get("cache_read_tokens")),
            _int(r.get("cache_write_tokens")),
            _int(r.get("reasoning_tokens")),
            str(r.get("provider_cost_usd") or "")[:40],
        )
    if kind == "action":
        return Action(
            _int(r.get("n")),
            t,
            str(r.get("command", "")),
            r.get("exit") if isinstance(r.get("exit"), int) else None,
            _number(r.get("duration_s")),
            _int(r.get("raw_bytes")),
            _int(r.get("shown_chars")),
            r.get("cut") is True,
            str(r.get("saved") or ""),
            r.get("unit") is True,
        )
    if kind == "tool":
        argv, counters = r.get("argv"), r.get("counters")
        return Tool(
            t,
            [str(a) for a in argv] if isinstance(argv, list) else [],
            [str(c) for c in counters] if isinstance(counters, list) else [],
            r.get("granted") is True,
            r.get("free") is True,
            r.get("cached") is True,
            r.get("exit") if isinstance(r.get("exit"), int) else None,
            str(r.get("refused_by") or ""),
        )
    if kind == "submit":
        return Submit(
            t,
            str(r.get("file") or ""),
            str(r.get("verdict") or ""),
            str(r.get("reason") or ""),
            str(r.get("sha256") or ""),
            str(r.get("via") or "submit"),
        )
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
