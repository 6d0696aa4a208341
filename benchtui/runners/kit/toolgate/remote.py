"""The tool gate of an agent on a Ray node: the shims ask a gate on the node (`node.NodeGate`),
which asks this engine's gate for each call over one TCP connection; the engine decides (the
units, through the session's meter, durably; the free cache; `submit` and its verdict; the
evidence) and the node runs what was granted, with the shim's stdio, beside the agent's files.

One JSON object a line, both ways:

    node -> engine  {"call": n, "argv": [...], "cwd": "...", "file": ..., "file_error": ...}
    engine -> node  {"id": n, "do": "run"}          granted: run it with the shim's stdio
                    {"id": n, "do": "capture"}      a free call not cached yet: run it, capture it
    node -> engine  {"id": n, "exit": code | null}  it ran (null: its shim went away)
                    {"id": n, "captured": [out, err, exit]}   (latin-1 texts of the bytes)
    engine -> node  {"id": n, "answer": {...} | null}   what the shim prints and exits with
                    {"end": true}                   an accepted submit ended the session

The node never runs a tool the engine did not grant: it only runs what a "do" names, for a call
it asked about. A connection that breaks or speaks nonsense ends: its calls in flight are
refused (the node) or cut (the engine).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import trio

from benchtui.runners.kit.toolgate.server import (
    MAX_FREE_OUTPUT,
    MAX_REQUEST,
    Cached,
    Call,
    ToolGate,
)

MAX_LINE = 2 * MAX_REQUEST + 4 * MAX_FREE_OUTPUT
"""A message's bound: a submitted certificate, or a captured free answer (both streams,
latin-1 JSON-escaped)."""


class Channel:
    """One JSON object a line over a stream, sends serialised."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self._lock = trio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\n"
        async with self._lock:
            await self.stream.send_all(data)

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        """Each message until the stream ends; ValueError for a line that is not one."""
        rest = b""
        while True:
            data = await self.stream.receive_some(1 << 16)
            if not data:
                return
            rest += data
            if b"\n" not in rest and len(rest) > MAX_LINE:
                raise ValueError("a message over its bound")
            *lines, rest = rest.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("a message that is not an object")
                yield message


class NodeTools:
    """The engine's end: `ToolGate(remote=NodeTools())` runs granted calls on the node."""

    def __init__(self) -> None:
        self._channel: Channel | None = None
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._open: set[int] = set()

    async def serve(self, gate: ToolGate, stream: trio.abc.Stream) -> None:
        """Answer the node's calls until its connection ends (or is cancelled)."""
        channel = self._channel = Channel(stream)
        try:
            async with trio.open_nursery() as nursery:
                with contextlib.suppress(
                    ValueError, TypeError, trio.BrokenResourceError, trio.ClosedResourceError
                ):
                    async for message in channel.messages():
                        if "call" in message:
                            call = _call(message)
                            if call is None or call.ref in self._open:
                                break  # nonsense: the node's calls end with the connection
                            self._open.add(call.ref)
                            nursery.start_soon(self._answer, gate, call)
                        else:
                            waiting = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
                            if waiting is not None:
                                waiting.send_nowait(message)
                nursery.cancel_scope.cancel()
        finally:
            self._channel = None
            for waiting in self._waiting.values():
                waiting.close()
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def end(self) -> None:
        """Tell the node the session ended (it stops the agent)."""
        if self._channel is not None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self._channel.send({"end": True})

    async def run(self, call: Call) -> int | None:
        reply = await self._ask(call, "run")
        code = reply.get("exit") if reply else None
        return code if type(code) is int else None

    async def capture(self, call: Call) -> Cached:
        reply = await self._ask(call, "capture")
        found = reply.get("captured") if reply else None
        if not (isinstance(found, list) and len(found) == 3 and type(found[2]) is int):
            return Cached(b"", b"benchtui: the node did not run the tool\n", 126)
        out, err, code = found
        if not (isinstance(out, str) and isinstance(err, str)):
            return Cached(b"", b"benchtui: the node did not run the tool\n", 126)
        bound = MAX_FREE_OUTPUT
        return Cached(
            out.encode("latin-1", "replace")[:bound], err.encode("latin-1", "replace")[:bound], code
        )

    async def _answer(self, gate: ToolGate, call: Call) -> None:
        try:
            answer = await gate.dispatch(call, None)
            if self._channel is not None:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    reply = answer.fields() if answer else None
                    await self._channel.send({"id": call.ref, "answer": reply})
        finally:
            self._open.discard(call.ref)

    async def _ask(self, call: Call, do: str) -> dict[str, Any] | None:
        """Ask the node to run `call` and await what it says (None: the node is gone)."""
        if self._channel is None:
            return None
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[call.ref] = send
        try:
            await self._channel.send({"id": call.ref, "do": do})
            with contextlib.suppress(trio.EndOfChannel):
                return await receive.receive()
            return None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return None
        finally:
            self._waiting.pop(call.ref, None)


def _call(message: dict[str, Any]) -> Call | None:
    """A node's call, checked as the gate checks a shim's request (None: not one)."""
    ref, argv, cwd = message.get("call"), message.get("argv"), message.get("cwd", "")
    file, file_error = message.get("file"), message.get("file_error")
    if not (
        type(ref) is int
        and isinstance(argv, list)
        and argv
        and all(isinstance(a, str) for a in argv)
        and isinstance(cwd, str)
        and isinstance(file, str | None)
        and isinstance(file_error, str | None)
    ):
        return None
    return Call(argv, cwd, [], file, file_error, ref=ref)
