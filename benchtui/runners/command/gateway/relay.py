"""A relay process: `python -m benchtui.runners.command.gateway.relay CHANNEL_FD SETTINGS_JSON LISTENER_FD...`
(beside the engine), or `... relay node SETTINGS_JSON` (on a Ray node, see `nodes.py`).

It serves the gateway's listeners (inherited from the engine, shared by every relay; a node's
relay opens its own on the node's loopback) with uvicorn on uvloop and httptools, carries calls
to the provider with aiohttp (connections reused), and asks the engine's meter, over its channel
(`link`: a socket pair, or a node's TCP connection to the engine), for each call's hold and then
its charge. It never runs on the engine's loop or the TUI's: HTTP parsing costs them nothing.
When the channel closes (the engine is gone, even by SIGKILL) the relay exits at once, and the
folder it was started for goes with it (`_leave`): the engine's, if the engine died without
removing it; a node's, unless another relay has taken it over.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvicorn

from benchtui.runners.command.gateway.app import GatewayApp
from benchtui.runners.command.gateway.call import Used
from benchtui.runners.command.gateway.connections import Guard
from benchtui.runners.command.gateway.grant import Grant
from benchtui.runners.command.gateway.link import Lines, encode

ORPHAN_WAIT_S = 2.0
"""How long a relay whose channel closed waits to see its engine gone before it leaves the
engine's folder alone."""


class EngineLink:
    """The relay's end of its channel: holds awaited, charges sent in order, writes batched (one
    send per turn of the loop however many messages it queued)."""

    def __init__(self, sock: socket.socket, app: GatewayApp | None = None) -> None:
        self._sock = sock
        self.app: GatewayApp | None = app
        self.guard: Guard | None = None
        self.serve = asyncio.Event()
        self._next = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._unknown: dict[str, float] = {}
        self._out: list[bytes] = []
        self._loop = asyncio.get_running_loop()
        self._writer: asyncio.StreamWriter | None = None
        self.on_end: Callable[[], None] = lambda: None
        """Run as the channel closes, just before the process exits."""

    async def open(self) -> asyncio.StreamReader:
        if self._sock.family == socket.AF_UNIX:
            reader, self._writer = await asyncio.open_unix_connection(sock=self._sock)
        else:  # a node's relay: TCP to the engine's machine
            reader, self._writer = await asyncio.open_connection(sock=self._sock)
        return reader

    def _send(self, message: bytes) -> None:
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(message)

    def _flush(self) -> None:
        assert self._writer is not None
        self._writer.write(b"".join(self._out))
        self._out.clear()

    async def hold(self, token: str, prompt_tokens: int, output_tokens: int) -> tuple[int, str | None]:
        self._next += 1
        call = self._next
        waiting = self._waiting[call] = self._loop.create_future()
        self._send(encode("h", call, token, prompt_tokens, output_tokens))
        try:
            return call, await waiting
        finally:
            self._waiting.pop(call, None)

    async def lookup(self, token: str) -> Grant | None:
        """A token this relay has not been given: the engine's answer (a refusal is remembered
        for a second, so a stream of bad tokens costs the engine little)."""
        if self._loop.time() < self._unknown.get(token, 0.0):
            return None
        self._next += 1
        ask = self._next
        waiting = self._waiting[ask] = self._loop.create_future()
        self._send(encode("w", ask, token))
        try:
            found = await waiting
        finally:
            self._waiting.pop(ask, None)
        assert self.app is not None
        if found is None:
            if len(self._unknown) > 10_000:
                self._unknown.clear()
            self._unknown[token] = self._loop.time() + 1.0
            return None
        grant = self.app.grants.setdefault(token, Grant(token, **found))
        self.app.grants_changed()
        return grant

    def throttled(self, call: int, retry_after_s: float | None) -> None:
        self._send(encode("t", call, retry_after_s))

    def charge(self, call: int, used: Used, served: bool = True) -> None:
        if used is None:
            self._send(encode("c", call, None, served))
        else:
            cost = used.provider_cost_usd
            self._send(encode("c", call, used.buckets(), served, None if cost is None else str(cost)))

    async def read(self, reader: asyncio.StreamReader) -> None:
        """Until the engine closes the channel; then this process ends."""
        lines = Lines()
        try:
            while data := await reader.read(1 << 16):
                for message in lines.feed(data):
                    self._handle(message)
        finally:  # the engine is gone (or speaks nonsense): no hold can be granted, nothing to finish
            try:
                self.on_end()
            finally:
                os._exit(0)

    def _handle(self, message: list[Any]) -> None:
        kind = message[0]
        if kind in ("h", "w"):
            waiting = self._waiting.get(message[1])
            if waiting is not None and not waiting.done():
                waiting.set_result(message[2])
            return
        assert self.app is not None
        if kind == "b":
            self.app.grants[message[2]] = Grant(message[2], **message[3])
            self.app.grants_changed()
            self._send(encode("a", message[1], None))
        elif kind == "u":
            grant = self.app.grants.pop(message[2], None)
            if grant is not None:
                grant.close()
                self.app.grants_changed()
            self._send(encode("a", message[1], None))
        elif kind == "q":
            figures = self.guard.figures() if self.guard else {}
            self._send(encode("a", message[1], figures))
        elif kind == "g":
            self.serve.set()


async def main(channel: socket.socket, settings: dict[str, Any], listeners: list[socket.socket]) -> None:
    if "engine" in settings:
        orphaned = asyncio.create_task(_orphaned(settings))  # noqa: F841 (runs until the end)
    link = EngineLink(channel)
    link.on_end = lambda: _leave(settings)
    reader = await link.open()
    timeout = aiohttp.ClientTimeout(total=None, connect=min(30.0, settings["request_timeout_s"]))
    # Idle connections are dropped well before a provider's own keep-alive timeout (often 5 s), so
    # a call never goes out on a connection the provider is closing (a 502 for no reason).
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=2.0, enable_cleanup_closed=True)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, auto_decompress=False, skip_auto_headers=("User-Agent",)
    ) as client:
        app = GatewayApp(client, link, settings["request_timeout_s"])
        link.app = app
        if settings.get("node"):
            app.lookup = link.lookup
        link.guard = guard = Guard(
            settings["max_connections"], settings["header_timeout_s"], settings["idle_timeout_s"]
        )
        reading = asyncio.create_task(link.read(reader))
        await link.serve.wait()  # the bindings come first, so no agent of a live session is refused
        config = uvicorn.Config(
            app,
            http=guard.protocol(),
            lifespan="off",
            log_level="critical",
            access_log=False,
            server_header=False,
            date_header=False,
            timeout_keep_alive=int(max(1, settings["idle_timeout_s"])),
            backlog=1024,
        )
        server = uvicorn.Server(config)
        watching = asyncio.create_task(guard.watch())
        try:
            await server.serve(sockets=listeners)
        finally:
            watching.cancel()
            reading.cancel()


async def _orphaned(settings: dict[str, Any]) -> None:
    """Ends the relay if its engine is gone, whatever state the channel is in (prctl's
    PDEATHSIG would not do: Trio starts processes from a worker thread, whose end would fire it)."""
    while os.getppid() == settings["engine"]:
        await asyncio.sleep(1.0)
    try:
        _leave(settings)
    finally:
        os._exit(0)


def _leave(settings: dict[str, Any]) -> None:
    """The channel closed. A node's relay removes its folder (if no other relay has taken it
    over: see `nodes.leave`). Beside the engine, the engine removes the gateway's folder when it
    closes, after killing its relays; a relay that sees its channel close is one whose engine
    died (SIGKILL) and left the folder: once this process is no longer its child (the kernel
    reparents it as the engine's exit ends), the folder goes."""
    folder = settings.get("folder")
    if not folder:
        return
    if settings.get("node"):
        from benchtui.runners.command.gateway import nodes

        nodes.leave(Path(folder))
        return
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while os.getppid() == settings["engine"]:
        if time.monotonic() > deadline:  # the engine lives and closed the channel: its folder
            return
        time.sleep(0.005)
    shutil.rmtree(folder, ignore_errors=True)


def run() -> None:
    logging.disable(logging.CRITICAL)
    import uvloop

    if sys.argv[1] == "node":
        from benchtui.runners.command.gateway import nodes

        settings = nodes.read_settings(sys.argv[2])
        channel, listener = nodes.connect(settings)
        uvloop.run(main(channel, settings, [listener]))
        return
    channel_fd, settings_text, *listeners = sys.argv[1:]
    sockets = [socket.socket(fileno=int(fd)) for fd in listeners]
    uvloop.run(main(socket.socket(fileno=int(channel_fd)), orjson.loads(settings_text), sockets))


if __name__ == "__main__":
    run()
