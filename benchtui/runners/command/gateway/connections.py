"""A relay's connections, bounded before any token is checked.

Anyone who can reach the gateway's sockets can open connections, token or not; each costs the
relay a file descriptor, and a relay out of descriptors serves no session at all. So: at most
`limit` connections at once (derived from RLIMIT_NOFILE); when a new one comes at the limit, the
connection idle the longest is closed for it (one with a request in flight never is; if all are
busy, the newcomer is closed: its client retries); a request's headers must be whole within
`header_s` of their first byte; a connection idle for `idle_s` is closed.

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
    head_started: float | None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.idle_since, self.head_started = self.loop.time(), None
        super().connection_made(transport)
        self.guard.opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.guard.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        if self.idle_since is not None:  # a request begins
            self.idle_since, self.head_started = None, self.loop.time()
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self.head_started = None
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.idle_since = self.loop.time()

    def close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()


class Guard:
    def __init__(self, limit: int, header_s: float, idle_s: float) -> None:
        self.limit = limit
        self.header_s = header_s
        self.idle_s = idle_s
        self.connections: set[Guarded] = set()
        self.evicted = 0

    def protocol(self) -> type[Guarded]:
        return type("GuardedHttp", (Guarded,), {"guard": self})

    def opened(self, connection: Guarded) -> None:
        self.connections.add(connection)
        if len(self.connections) <= self.limit:
            return
        idle = [c for c in self.connections if c.idle_since is not None and c is not connection]
        oldest = min(idle, key=lambda c: c.idle_since or 0.0) if idle else connection
        self.connections.discard(oldest)
        oldest.close()
        self.evicted += 1

    async def watch(self) -> None:
        """Close connections whose request head is too slow, or idle too long."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(self.header_s, self.idle_s) / 4)
            now = loop.time()
            for c in list(self.connections):
                if (c.head_started is not None and now - c.head_started > self.header_s) or (
                    c.idle_since is not None and now - c.idle_since > self.idle_s
                ):
                    self.connections.discard(c)
                    c.close()

    def figures(self) -> dict[str, Any]:
        return {"limit": self.limit, "open": len(self.connections), "evicted": self.evicted}
