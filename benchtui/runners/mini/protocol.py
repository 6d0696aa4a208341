"""The channel between a session worker and the engine: JSON lines on a private socketpair.

Not stdout (litellm prints there). The worker speaks first and the engine only ever answers:

    worker -> engine                                   engine -> worker
    {"t": "hello", "pid": 123}
    {"t": "copy", "fingerprint": "git:…"}              (the fresh session copy, docs/design/invariants.md#f1)
    {"t": "prompt", "sha256": "…"}                     (the rendered prompt, docs/design/invariants.md#f2)
    {"t": "authorise", "prompt_tokens": 812}     ->    {"t": "authorised", "ok": true}   (docs/design/invariants.md#f5)
    {"t": "usage", "input_tokens": 800, "output_tokens": 90}                             (docs/design/invariants.md#f6)
    {"t": "step", "note": "call 3: pred solve …"}
    {"t": "done", "exit_status": "Submitted", "steps": 7, "blocks": […], "error": null, "infra_error": false}
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import trio

MAX_LINE = 32 * 1024 * 1024
"""The largest message either end sends or accepts. The worker keeps what the model printed
(certificate blocks) within MAX_BLOCKS_BYTES, well under it, so that a model's output can never
make its report undeliverable (which would end the session as a retryable infrastructure error,
re-run and re-paid on every --resume)."""
MAX_BLOCKS_BYTES = 8 * 1024 * 1024


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
        return json.loads(line)

    def authorise(self, prompt_tokens: int) -> bool:
        started = time.perf_counter()
        ok = bool(self.ask("authorise", prompt_tokens=prompt_tokens).get("ok"))
        self.authorisations += 1
        self.authorise_s += time.perf_counter() - started
        return ok


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
