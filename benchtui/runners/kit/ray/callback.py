"""A TCP listener on the address the Ray nodes reach the engine's machine at, for a session's one
connection from its node: the mini runner's worker calling back, a node's tool gate.

`expect()` makes a one-time token and the channel its connection arrives on; the node sends the
token as its first line. A stranger, or a token already used, is closed unanswered; at most
`handshakes.MAX_PENDING` connections wait to show their token at once (`Handshakes`).
"""

from __future__ import annotations

import secrets as tokens
from dataclasses import dataclass, field

import trio

from benchtui.runners.kit.handshakes import Handshakes

HANDSHAKE_TIMEOUT_S = 10.0


@dataclass
class Arrival:
    """A worker's connection, kept open by the listener's handler until the session is finished."""

    stream: trio.SocketStream
    finished: trio.Event = field(default_factory=trio.Event)


class CallbackListener:
    """A TCP listener (on the address the nodes reach this machine at) for workers calling back."""

    def __init__(self) -> None:
        self._waiting: dict[str, trio.MemorySendChannel[Arrival]] = {}
        self.address: tuple[str, int] = ("", 0)
        self.handshakes = Handshakes()

    async def serve(
        self, host: str, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(0, host=host)
        self.address = (host, listeners[0].socket.getsockname()[1])
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._arrived, listeners)
            task_status.started()

    def expect(self) -> tuple[str, trio.MemoryReceiveChannel[Arrival]]:
        token = tokens.token_urlsafe(24)
        send, receive = trio.open_memory_channel[Arrival](1)
        self._waiting[token] = send
        return token, receive

    def forget(self, token: str) -> None:
        self._waiting.pop(token, None)

    async def _arrived(self, stream: trio.SocketStream) -> None:
        line = b""
        with self.handshakes.pending(HANDSHAKE_TIMEOUT_S):
            while not line.endswith(b"\n") and len(line) < 100:
                chunk = await stream.receive_some(100 - len(line))
                if not chunk:
                    break
                line += chunk
        waiting = self._waiting.pop(line.strip().decode(errors="replace"), None)
        if waiting is None:  # a stranger, or a token already used: nothing to talk about
            await stream.aclose()
            return
        arrival = Arrival(stream)
        try:
            waiting.send_nowait(arrival)
        except (trio.WouldBlock, trio.BrokenResourceError):
            await stream.aclose()
            return
        await arrival.finished.wait()  # trio closes the stream when this handler returns
