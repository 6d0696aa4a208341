"""A relay's connections, bounded before any token is checked.

Anyone who can reach the gateway's sockets can open connections, token or not; each costs the
relay a file descriptor, and a relay out of descriptors serves no session at all. So: at most
`limit` connections at once (derived from RLIMIT_NOFILE). A connection is *waiting* from the
moment it opens, or answers, until the head of its next request is whole; only then is it busy
(a call in flight). When a new one comes at the limit, the connection that has waited longest is
closed for it, oldest first (as the engine's cluster ports do with `kit/handshakes`): one that
sends nothing and one that drips its head are alike, and the newcomer, the youngest, is the last
to go; a busy one never is (if all are busy, the newcomer is closed: its client retries). A
request's head must be whole within `header_s` of its first byte; a connection idle for `idle_s`
is closed.

Before, a connection that had sent part of its head counted as busy: 1,100 connections that each
sent a request line and no headers held every slot for the 10 s head deadline, and every
newcomer, a live session's call among them (and its SDK's two retries), was closed at once.

uvicorn's httptools protocol serves each connection; `Guard.protocol()` is that class, telling
the guard when a connection opens, starts a request, has its head, answers, and closes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class Guarded(HttpToolsProtocol):
    guard: Guard
    idle_since: float | None
    """When it last opened or answered; None while a request is in flight (busy)."""
    head_started: float | None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.idle_since, self.head_started = self.loop.time(), None
        super().connection_made(transport)
        self.guard.opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.guard.closed(self)

    def data_received(self, data: bytes) -> None:
        if self.idle_since is not None and self.head_started is None:  # a request's head begins
            self.head_started = self.loop.time()
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self.idle_since = self.head_started = None
        self.guard.busy(self)
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # the next request's head is whole: it runs now
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self.idle_since = self.loop.time()
            self.guard.waiting(self)

    def close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()


class Guard:
    def __init__(self, limit: int, header_s: float, idle_s: float) -> None:
        self.limit = limit
        self.header_s = header_s
        self.idle_s = idle_s
        self.connections: set[Guarded] = set()
        self._waiting: dict[Guarded, None] = {}
        """Connections with no request in flight, the one waiting longest first."""
        self.evicted = 0

    def protocol(self) -> type[Guarded]:
        return type("GuardedHttp", (Guarded,), {"guard": self})

    def opened(self, connection: Guarded) -> None:
        self.connections.add(connection)
        self._waiting[connection] = None
        if len(self.connections) > self.limit:
            self._close(next(iter(self._waiting)))  # the newcomer itself when all others are busy
            self.evicted += 1

    def waiting(self, connection: Guarded) -> None:
        """It answered: it waits again, the youngest (a dict keeps the order of insertion)."""
        self._waiting.pop(connection, None)
        self._waiting[connection] = None

    def busy(self, connection: Guarded) -> None:
        self._waiting.pop(connection, None)

    def closed(self, connection: Guarded) -> None:
        self.connections.discard(connection)
        self._waiting.pop(connection, None)

    def _close(self, connection: Guarded) -> None:
        self.closed(connection)
        connection.close()

    async def watch(self) -> None:
        """Close connections whose request head is too slow, or idle too long."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(self.header_s, self.idle_s) / 4)
            now = loop.time()
            for c in list(self._waiting):
                if (c.head_started is not None and now - c.head_started > self.header_s) or (
                    c.head_started is None and c.idle_since is not None and now - c.idle_since > self.idle_s
                ):
                    self._close(c)

    def figures(self) -> dict[str, Any]:
        return {"limit": self.limit, "open": len(self.connections), "evicted": self.evicted}
