"""The tool gate's node end (see `remote.py`): on a Ray node, beside the agent, in a thread of the
session's task.

`NodeGate.open()` connects to the engine (the session's one-time token as its first line),
installs the shims and serves their socket. Each shim's request goes to the engine as it came;
the node runs a tool only when the engine answers "run" or "capture" for that very call, in a
one-shot sandbox beside the agent's files (or, unsandboxed, where the agent stands), with the
shim's stdio; then it passes the engine's answer on. Without the engine (the connection lost)
every call is refused, never run. `{"end": true}` calls `on_end` (the task stops its agent).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from benchtui.core.target import Toolbox
from benchtui.runners.kit import bubblewrap
from benchtui.runners.kit import toolgate as gate
from benchtui.runners.kit.toolgate.remote import Channel
from benchtui.runners.kit.toolgate.server import (
    SUBMIT,
    Answer,
    Call,
    Launch,
    answer_shim,
    capture_tool,
    run_here,
    run_tool,
)

CONNECT_S = 10.0
GONE = "benchtui: {tool}: the engine's tool gate is out of reach; not run"


@dataclass(frozen=True)
class NodeGateSpec:
    """What a node needs to serve a session's gate (built on the engine's side; picklable)."""

    address: tuple[str, int]
    """Where the engine's gate listens (the nodes' side of the engine's machine)."""
    token: str
    """One-time: the engine expects one connection with it."""
    tools: tuple[str, ...]
    """The shimmed names (the counted tools' first words, and `submit`)."""
    sandboxed: bool
    toolbox: Toolbox | None
    """The target's programs as found on the node (a gated one runs from there)."""
    tmp_bytes: int | None = None


class NodeGate:
    """A session's gate on its node: `open()` before the agent starts, `close()` after."""

    def __init__(self, spec: NodeGateSpec, folder: Path, workdir: Path) -> None:
        self.spec = spec
        self.folder = folder
        self.workdir = workdir
        self.on_end: Callable[[], None] = lambda: None
        self.ended = False
        """The engine said an accepted submit ended the session."""
        self.gone = False
        """The connection to the engine ended: every call is refused."""
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._started = threading.Event()

    def open(self) -> dict[str, Any]:
        """Connect, install the shims, start serving; what the agent's sandbox binds (OSError:
        the engine is out of reach)."""
        spec = self.spec
        engine = socket.create_connection(spec.address, timeout=CONNECT_S)
        try:
            engine.sendall(spec.token.encode() + b"\n")
            engine.settimeout(None)
            path = self.folder / "gate"  # short: a unix socket path is <108 bytes
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            path.chmod(0o600)
            listener.listen(64)
        except OSError:
            engine.close()
            raise
        names = [n for n in spec.tools if n != SUBMIT]
        real = gate.real_tools(names, spec.toolbox)
        launch: Launch = bubblewrap.tool_launch(self.workdir, spec.tmp_bytes) if spec.sandboxed else run_here
        interpreter, prefix = gate.python()
        shims = gate.install(
            self.folder / "shims",
            list(spec.tools),
            interpreter=interpreter,
            shim=gate.SANDBOX_SHIM if spec.sandboxed else str(gate.SHIM),
            gate=gate.SANDBOX_GATE if spec.sandboxed else str(path),
        )
        self._thread = threading.Thread(
            target=trio.run, args=(self._serve, engine, listener, real, launch), daemon=True
        )
        self._thread.start()
        self._started.wait(CONNECT_S)
        return {
            "tools": list(spec.tools),
            "shims": str(shims),
            "shim": str(gate.SHIM),
            "socket": str(path),
            "prefix": prefix,
        }

    def close(self) -> None:
        if self._thread is None:
            return
        if self._token is not None and self._scope is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
        self._thread.join(CONNECT_S)
        self._thread = None

    async def _serve(
        self, engine: socket.socket, listener: socket.socket, real: dict[str, str], launch: Launch
    ) -> None:
        self._token = trio.lowlevel.current_trio_token()
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(engine))
        channel = Channel(stream)
        waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        with trio.socket.from_stdlib_socket(listener) as shims, trio.CancelScope() as self._scope:
            self._started.set()
            async with stream, trio.open_nursery() as nursery:
                nursery.start_soon(self._listen, channel, waiting)
                calls = 0
                while True:
                    client, _ = await shims.accept()
                    calls += 1
                    nursery.start_soon(self._call, client, calls, channel, waiting, real, launch)

    async def _listen(
        self, channel: Channel, waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]]
    ) -> None:
        """The engine's messages, to the calls awaiting them; at its end, every call is refused."""
        with contextlib.suppress(ValueError, trio.BrokenResourceError, trio.ClosedResourceError):
            async for message in channel.messages():
                if message.get("end") is True:
                    self.ended = True
                    self.on_end()
                    continue
                found = waiting.get(message.get("id"))  # type: ignore[arg-type]
                if found is not None:
                    with contextlib.suppress(trio.WouldBlock):
                        found.send_nowait(message)
        self.gone = True
        for found in waiting.values():
            found.close()
        waiting.clear()

    async def _call(
        self,
        client: trio.socket.SocketType,
        ref: int,
        channel: Channel,
        waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]],
        real: dict[str, str],
        launch: Launch,
    ) -> None:
        await answer_shim(client, lambda call: self._ask(client, ref, call, channel, waiting, real, launch))

    async def _ask(
        self,
        client: trio.socket.SocketType,
        ref: int,
        call: Call,
        channel: Channel,
        waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]],
        real: dict[str, str],
        launch: Launch,
    ) -> Answer | None:
        """The engine's answer to `call`, running what it grants on the way."""
        refused = Answer(126, stderr=GONE.format(tool=call.argv[0]))
        if self.gone:
            return refused
        send_to, replies = trio.open_memory_channel[dict[str, Any]](4)
        waiting[ref] = send_to
        try:
            message = {"call": ref, "argv": call.argv, "cwd": call.cwd}
            message |= {"file": call.file, "file_error": call.file_error}
            await channel.send(message)
            ran = False
            async for reply in replies:
                if "answer" in reply:
                    found = reply["answer"]
                    return _answer(found) if found is not None else None
                executable = real.get(call.argv[0])
                do = reply.get("do")
                if do not in ("run", "capture") or ran:
                    continue  # a grant runs its call once
                ran = True
                if executable is None:
                    result: dict[str, Any] = (
                        {"exit": 127} if do == "run" else {"captured": ["", "not on this node\n", 127]}
                    )
                else:
                    argv, cwd = launch(call.argv[0], executable, call.argv[1:], call.cwd)
                    if do == "run":
                        result = {"exit": await run_tool(argv, cwd, call.fds, client)}
                    else:
                        done = await capture_tool(argv, cwd)
                        result = {
                            "captured": [done.out.decode("latin-1"), done.err.decode("latin-1"), done.exit]
                        }
                await channel.send({"id": ref, **result})
            return refused
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return refused
        finally:
            waiting.pop(ref, None)


def _answer(found: Any) -> Answer:
    """The engine's answer as the shim wants it (anything else: refused)."""
    if not isinstance(found, dict) or type(found.get("exit")) is not int:
        return Answer(126, stderr="benchtui: a malformed answer of the engine's tool gate")
    texts = [found.get(k, "") for k in ("stdout", "stderr", "out", "err")]
    if not all(isinstance(t, str) for t in texts):
        return Answer(126, stderr="benchtui: a malformed answer of the engine's tool gate")
    stdout, stderr, out, err = texts
    return Answer(
        found["exit"], stdout, stderr, out.encode("latin-1", "replace"), err.encode("latin-1", "replace")
    )
