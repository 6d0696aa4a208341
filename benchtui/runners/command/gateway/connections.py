"""The gateway's listeners, with its connections bounded before any token is checked.

Anyone who can reach the socket can open connections, token or not; each costs the engine a
file descriptor, and an engine out of descriptors cannot write its ledger or start a sandbox.
So: at most `limit` connections at once (derived from RLIMIT_NOFILE); when a new one comes at the
limit, the connection idle the longest is closed for it (one with a request in flight never is;
if all are busy, accepting waits, and the kernel's backlog holds the rest, costing us nothing);
a request's headers must be whole within `header_s` of their first byte; a connection idle for
`idle_s` is closed (hypercorn's keep-alive timeout). An accept that fails for lack of
descriptors waits and tries again, never ends the serving.

hypercorn serves each connection (its TCPServer, told apart only by the idle/busy events it
already sends); this module only replaces its accept loop.
"""

from __future__ import annotations

import errno
import resource
from collections.abc import Callable
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.events import Updated
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import wrap_app

MakeServer = Callable[["_Connection", trio.abc.Stream], TCPServer]
CAPACITY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def default_limit() -> int:
    """A quarter of the descriptors this process may open (the rest stay the engine's), 16..1024."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, min(1024, soft // 4))


class _Connection:
    def __init__(self, guard: Guard) -> None:
        self.scope = trio.CancelScope()
        self.idle_since: float | None = trio.current_time()
        self.head_started: float | None = None
        self._guard = guard

    def received(self) -> None:
        if self.idle_since is not None and self.head_started is None:
            self.head_started = trio.current_time()  # a request's head is coming

    def updated(self, idle: bool) -> None:
        self.idle_since = trio.current_time() if idle else None
        self.head_started = None


class _Watched(trio.abc.HalfCloseableStream):
    """The accepted stream, telling its connection when bytes arrive."""

    def __init__(self, stream: trio.SocketStream, connection: _Connection) -> None:
        self._stream = stream
        self._connection = connection
        self.socket = stream.socket

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = await self._stream.receive_some(max_bytes)
        self._connection.received()
        return bytes(data)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Server(TCPServer):
    """hypercorn's connection server, reporting idle/busy to its connection record."""

    def __init__(self, connection: _Connection, *args: Any) -> None:
        super().__init__(*args)
        self._connection = connection

    async def protocol_send(self, event: Any) -> None:
        if isinstance(event, Updated):
            self._connection.updated(event.idle)
        await super().protocol_send(event)


class Guard:
    def __init__(self, limit: int, header_s: float, idle_s: float) -> None:
        self.limit = limit
        self.header_s = header_s
        self.idle_s = idle_s
        self.connections: set[_Connection] = set()
        self.evicted = 0
        self._room = trio.Event()

    async def make_room(self) -> None:
        while len(self.connections) >= self.limit:
            idle = [c for c in self.connections if c.idle_since is not None]
            if idle:
                oldest = min(idle, key=lambda c: c.idle_since or 0.0)
                self._drop(oldest)
                self.evicted += 1
                return
            self._room = trio.Event()
            await self._room.wait()

    def _drop(self, connection: _Connection) -> None:
        connection.scope.cancel()
        self.connections.discard(connection)
        self._room.set()

    async def watch(self) -> None:
        """Close connections whose request head is too slow, or idle too long."""
        while True:
            await trio.sleep(min(self.header_s, self.idle_s) / 4)
            now = trio.current_time()
            for c in list(self.connections):
                if (c.head_started is not None and now - c.head_started > self.header_s) or (
                    c.idle_since is not None and now - c.idle_since > self.idle_s
                ):
                    self._drop(c)

    async def serve_one(self, make_server: MakeServer, stream: trio.SocketStream) -> None:
        connection = _Connection(self)
        self.connections.add(connection)
        try:
            with connection.scope:
                await make_server(connection, _Watched(stream, connection))
        finally:
            self.connections.discard(connection)
            self._room.set()
            with trio.CancelScope(shield=True):
                await stream.aclose()


async def serve_guarded(
    app: Any,
    config: Config,
    guard: Guard,
    *,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `app` on `config.bind` until cancelled; `task_status` gets the bound URLs."""
    sockets = config.create_sockets()
    listeners, urls = [], []
    for sock in sockets.insecure_sockets:
        sock.listen(config.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))
        name = sock.getsockname()
        urls.append(f"http://{name[0]}:{name[1]}" if isinstance(name, tuple) else f"unix:{name}")
    context = WorkerContext(None)
    wrapped = wrap_app(app, config.wsgi_max_body_size, None)

    def make_server(connection: _Connection, stream: trio.abc.Stream) -> TCPServer:
        return _Server(connection, wrapped, config, context, ConnectionState({}), stream)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(guard.watch)
            for listener in listeners:
                nursery.start_soon(_accept, listener, guard, make_server, nursery)
            task_status.started(urls)
    finally:
        await context.terminated.set()
        for listener in listeners:
            with trio.CancelScope(shield=True):
                await listener.aclose()


async def _accept(
    listener: trio.SocketListener, guard: Guard, make_server: MakeServer, nursery: trio.Nursery
) -> None:
    while True:
        await guard.make_room()
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in CAPACITY_ERRNOS:
                raise
            await trio.sleep(0.1)  # out of descriptors: the engine's need passes first
            continue
        nursery.start_soon(guard.serve_one, make_server, stream)
