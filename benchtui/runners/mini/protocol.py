"""The channel between a session worker and the engine: JSON lines on a private socketpair.

Not stdout (litellm prints there). The worker speaks first and the engine only ever answers:

    worker -> engine                                   engine -> worker
    {"t": "hello", "pid": 123}
    {"t": "copy", "fingerprint": "git:…"}              (the fresh session copy, docs/design/invariants.md#f1)
    {"t": "prompt", "sha256": "…"}                     (the rendered prompt, docs/design/invariants.md#f2)
    {"t": "authorise", "prompt_tokens": 812}     ->    {"t": "authorised", "ok": true, "ended": ""}
                                                       (docs/design/invariants.md#f5; ended: "accepted")
    {"t": "usage", "input_tokens": 800, "output_tokens": 90, "outcome": "action"}        (docs/design/invariants.md#f6)
      (+ "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "provider_cost_usd": "0.01")
    {"t": "usage", "input_tokens": 0, …, "throttled": true, "retry_after_s": 2}          (a 429)
    {"t": "use", "counters": ["shell_actions"]}  ->    {"t": "used", "ok": true, "message": ""}
    {"t": "budget"}                              ->    {"t": "budget", "line": "[budget] calls 1/10 …"}
    {"t": "action", "command": "…", "exit": 0, …}                                (evidence)
    {"t": "step", "note": "call 3: pred solve …"}
    {"t": "cgroup", "path": "/sys/fs/cgroup/…"}
    {"t": "done", "exit_status": "Submitted", "steps": 7, "blocks": […], "error": null, "infra_error": false}

Each line is a typed record (`decode` turns a line into one of the dataclasses below, or None for
anything else); the engine dispatches on the record's type, never on strings.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import trio

from benchtui.core.usage import cost_amount

MAX_LINE = 32 * 1024 * 1024
"""The largest message either end sends or accepts. The worker keeps what the model printed
(certificate blocks) within MAX_BLOCKS_BYTES, well under it, so that a model's output can never
make its report undeliverable (which would end the session as a retryable infrastructure error,
re-run and re-paid on every --resume)."""
MAX_BLOCKS_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Hello:
    pid: int


@dataclass(frozen=True, slots=True)
class Copy:
    fingerprint: str


@dataclass(frozen=True, slots=True)
class Prompt:
    sha256: str


@dataclass(frozen=True, slots=True)
class Authorise:
    prompt_tokens: int | None
    """None: the worker sent no usable count (never authorised)."""


@dataclass(frozen=True, slots=True)
class UsageReport:
    input_tokens: int | None
    output_tokens: int | None
    worst_case: str | None = None
    """Why the attempt is charged its worst case (set by the worker), if it is."""
    failed: bool = False
    raw: str = ""
    """The line as it came (for the reason of a worst-case charge when it is unreadable)."""
    throttled: bool = False
    """The provider answered 429 (too many requests)."""
    retry_after_s: float | None = None
    """The wait its Retry-After asked for (None: it named none)."""
    outcome: str = ""
    """What the answer held: `action`, or `format_error` (no usable action; `format_error` says
    which kind); empty for an attempt that got no answer."""
    format_error: str = ""
    cache_read_tokens: int | None = 0
    cache_write_tokens: int | None = 0
    reasoning_tokens: int | None = 0
    """The other buckets (core/usage.py; None: unreadable, so the report is)."""
    provider_cost_usd: Decimal | None = None
    """What the provider said the call cost (for the audit, never charged)."""


@dataclass(frozen=True, slots=True)
class Use:
    """A shell action's unit (the only one a worker asks for itself)."""


@dataclass(frozen=True, slots=True)
class BudgetAsk:
    """The budget line, for the observation the model sees next."""


@dataclass(frozen=True, slots=True)
class Action:
    """A shell action the agent ran, for the evidence ledger."""

    command: str
    exit: int | None
    duration_s: float
    raw_bytes: int
    shown_chars: int
    cut: bool
    saved: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    note: str


@dataclass(frozen=True, slots=True)
class Cgroup:
    path: str | None


@dataclass(frozen=True, slots=True)
class Done:
    report: dict[str, Any] = field(default_factory=dict)
    """exit_status, steps, blocks, limits, error, infra_error, meter_rtt_ms (see worker)."""


WorkerMessage = (
    Hello | Copy | Prompt | Authorise | UsageReport | Use | BudgetAsk | Action | Step | Cgroup | Done
)


def count(value: Any) -> int | None:
    """A count as the worker must send it: a non-negative int (never clamped)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _seconds(value: Any) -> float | None:
    """A wait as the worker must send it: a finite number ≥ 0 (else None)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf"):
        return float(value)
    return None


def _text(value: Any, limit: int = 2000) -> str:
    return str(value if value is not None else "")[:limit]


def decode(message: dict[str, Any]) -> WorkerMessage | None:
    """The record a worker's line stands for; None for an unknown or unusable one."""
    kind = message.get("t")
    if kind == "hello":
        pid = count(message.get("pid"))
        return Hello(pid) if pid else None
    if kind == "copy":
        return Copy(_text(message.get("fingerprint")))
    if kind == "prompt":
        return Prompt(_text(message.get("sha256")))
    if kind == "authorise":
        return Authorise(count(message.get("prompt_tokens")))
    if kind == "usage":
        why = message.get("worst_case")
        return UsageReport(
            count(message.get("input_tokens")),
            count(message.get("output_tokens")),
            _text(why, 300) if why else None,
            message.get("failed") is True,
            json.dumps(message, default=str)[:120],
            message.get("throttled") is True,
            _seconds(message.get("retry_after_s")),
            _text(message.get("outcome"), 40),
            _text(message.get("format_error"), 40),
            count(message.get("cache_read_tokens", 0)),
            count(message.get("cache_write_tokens", 0)),
            count(message.get("reasoning_tokens", 0)),
            cost_amount(message.get("provider_cost_usd")),
        )
    if kind == "use":
        return Use()
    if kind == "budget":
        return BudgetAsk()
    if kind == "action":
        duration = message.get("duration_s")
        return Action(
            _text(message.get("command")),
            message.get("exit") if isinstance(message.get("exit"), int) else None,
            float(duration) if isinstance(duration, int | float) and duration >= 0 else 0.0,
            count(message.get("raw_bytes")) or 0,
            count(message.get("shown_chars")) or 0,
            message.get("cut") is True,
            _text(message.get("saved"), 500),
        )
    if kind == "step":
        return Step(_text(message.get("note"), 200))
    if kind == "cgroup":
        return Cgroup(_text(message.get("path"), 500) or None)
    if kind == "done":
        return Done({k: v for k, v in message.items() if k != "t"})
    return None


class MessageTooLarge(ValueError):
    """A message over MAX_LINE: never sent (the receiver would have to drop it)."""


class ParentGone(Exception):
    """The engine closed the channel: the worker must stop (it may not spend any more)."""


class WorkerChannel:
    """The worker's end: blocking, one request at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reader = sock.makefile("rb")
        self.authorisations = 0
        self.ended = ""
        """Why the engine refused the latest authorisation because the session ended ("" if not)."""
        self.authorise_s = 0.0
        """Round trips of authorisation requests: what the meter costs a model call."""

    def send(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"t": kind, **fields}, default=str).encode() + b"\n"
        if len(line) > MAX_LINE:
            raise MessageTooLarge(f"a {kind!r} message of {len(line):,} bytes (at most {MAX_LINE:,})")
        try:
            self._sock.sendall(line)
        except OSError as exc:
            raise ParentGone(str(exc)) from None

    def ask(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.send(kind, **fields)
        line = self._reader.readline(MAX_LINE)
        if not line.endswith(b"\n"):
            raise ParentGone("the engine closed the channel")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def authorise(self, prompt_tokens: int) -> bool:
        started = time.perf_counter()
        answer = self.ask("authorise", prompt_tokens=prompt_tokens)
        self.authorisations += 1
        self.authorise_s += time.perf_counter() - started
        self.ended = str(answer.get("ended") or "")
        return bool(answer.get("ok"))

    def budget(self) -> str:
        """The budget line the engine has now ("" without a logical budget)."""
        return str(self.ask("budget").get("line") or "")


class EngineChannel:
    """The engine's end, under Trio."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self._skipping = False  # inside a line over MAX_LINE: dropped up to its newline
        self._scanned = 0  # no newline before this offset of the buffer (no rescans: linear)
        self.closed = False
        self.dropped = 0
        """Lines dropped: over MAX_LINE, not JSON, or not an object."""

    async def receive_record(self) -> WorkerMessage | None:
        """The next record (lines that are no record are dropped), or None at end of stream."""
        while (message := await self.receive()) is not None:
            record = decode(message)
            if record is not None:
                return record
            self.dropped += 1
        return None

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None at end of stream (torn or undecodable lines are dropped)."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            self._scanned = len(self._buffer) if end < 0 else 0
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                if self._skipping:
                    self._skipping = False
                    continue
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError):
                    message = None
                if isinstance(message, dict):
                    return message
                self.dropped += 1
                continue
            if self.closed:
                return None
            if len(self._buffer) > MAX_LINE:
                self._buffer.clear()
                self._scanned = 0
                if not self._skipping:
                    self._skipping = True
                    self.dropped += 1
            try:
                chunk = await self._stream.receive_some(1 << 16)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            self._buffer += chunk

    async def send(self, kind: str, **fields: Any) -> None:
        await self._stream.send_all(json.dumps({"t": kind, **fields}).encode() + b"\n")

    async def aclose(self) -> None:
        await self._stream.aclose()
