"""The channel between a session worker and the engine: JSON lines on a private socketpair.

Not stdout (litellm prints there). The worker speaks first and the engine only ever answers:

    worker -> engine                                   engine -> worker
    {"t": "hello", "pid": 123}
    {"t": "copy", "fingerprint": "git:…"}              (the fresh session copy, F1)
    {"t": "prompt", "sha256": "…"}                     (the rendered prompt, F2)
    {"t": "authorise", "prompt_tokens": 812}     ->    {"t": "authorised", "ok": true}   (F5)
    {"t": "usage", "input_tokens": 800, "output_tokens": 90}                             (F6)
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
        try:
            self._sock.sendall(json.dumps({"t": kind, **fields}, default=str).encode() + b"\n")
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
        self.closed = False

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None at end of stream (torn or undecodable lines are dropped)."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    return message
                continue
            if self.closed or len(self._buffer) > MAX_LINE:
                return None
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
