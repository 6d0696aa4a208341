"""The session's tool gate: a unix socket the shims ask before a counted tool runs (issue 14).

Each request takes one unit of every tool counter its command line matches (`pred` and `pred
solve` for `pred solve x.json`) through the meter, durably, before the tool may run; granted, the
gate hands the shim an open file descriptor of the real executable, so in bubblewrap the tool is
reachable only through the gate. Refused, the shim prints the gate's message, which names the
spent counter, and the agent sees it as the command's output.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import socket
from pathlib import Path

import trio

from benchtui.core.contract import TOOLS, LogicalLimits, Meter

MAX_REQUEST = 1 << 20  # an argv of a megabyte is already absurd
CLIENT_TIMEOUT_S = 10.0


def refusal(limits: LogicalLimits, counter: str) -> str:
    prefix = counter.removeprefix(TOOLS)
    return (
        f"benchtui: `{prefix}` refused: this session's budget of {limits.limit(counter)} `{prefix}` "
        f"calls is spent (counter {counter}); the command was not run"
    )


class ToolGate:
    """Serves one session; `tools` maps a shimmed command name to the real executable's path."""

    def __init__(self, meter: Meter, limits: LogicalLimits, tools: dict[str, str]) -> None:
        self.meter = meter
        self.limits = limits
        self.tools = tools
        self.granted = 0
        self.refused = 0

    async def serve(
        self, path: Path, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listener = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with listener:
            await listener.bind(str(path))
            os.chmod(path, 0o600)
            listener.listen(64)
            task_status.started()
            async with trio.open_nursery() as nursery:
                while True:
                    client, _ = await listener.accept()
                    nursery.start_soon(self._answer, client)

    async def _answer(self, client: trio.socket.SocketType) -> None:
        with client, trio.move_on_after(CLIENT_TIMEOUT_S):
            data = b""
            while not data.endswith(b"\n") and len(data) < MAX_REQUEST:
                chunk = await client.recv(1 << 16)
                if not chunk:
                    return
                data += chunk
            try:
                argv = json.loads(data)["argv"]
                if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
                    raise ValueError
            except (ValueError, KeyError, TypeError):
                return await _send(client, {"ok": False, "message": "benchtui: a malformed tool request"})
            executable = self.tools.get(argv[0])
            if executable is None:
                return await _send(client, {"ok": False, "message": f"benchtui: {argv[0]}: not a gated tool"})
            spent = await self.meter.use(*self.limits.tool_counters(argv))
            if spent is not None:
                self.refused += 1
                return await _send(client, {"ok": False, "message": refusal(self.limits, spent)})
            self.granted += 1
            fd = os.open(executable, os.O_RDONLY | os.O_CLOEXEC)
            try:
                await _send(client, {"ok": True}, fd)
            finally:
                os.close(fd)


async def _send(client: trio.socket.SocketType, answer: dict[str, object], fd: int | None = None) -> None:
    data = [json.dumps(answer).encode() + b"\n"]
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))] if fd is not None else []
    with contextlib.suppress(OSError):  # the shim is gone (killed with its command): nothing to tell
        await client.sendmsg(data, rights)
