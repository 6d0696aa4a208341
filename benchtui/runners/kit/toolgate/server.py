"""The session's tool gate: a unix socket the shims ask before a counted tool runs (issues 14, 20, 22).

Each request takes one unit of every tool counter its command line matches (`pred` and `pred
solve` for `pred solve x.json`) through the meter, durably, before the tool runs; then the gate
runs the tool itself (`Launch`: in a one-shot sandbox of its own), with the shim's stdin, stdout
and stderr (passed over the socket) as its own, and answers the exit status. The agent never
holds the tool: no descriptor of it, no process of it in its sandbox (so no `/proc/<pid>/exe`),
nothing it could run again without asking. Refused, the shim prints the gate's message, which
names the spent counter. Calls named free (`pred --help`) take no unit; their answers are
cached for the session. `submit FILE` goes to the session's `Submissions`.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import trio

from benchtui.core.contract import TOOLS, LogicalLimits, Meter
from benchtui.core.text import inert

MAX_REQUEST = 2 << 20  # a submitted certificate (1 MB at most) plus its argv, JSON-escaped
CLIENT_TIMEOUT_S = 10.0
MAX_FREE_OUTPUT = 1 << 20  # a cached free answer, per stream
MAX_FREE_CALLS = 32
"""Distinct free calls a session may make (`pred list --rules`, `pred list --json`, …); past
them a call is counted as any other, so varying options cannot run a tool without limit."""
SUBMIT = "submit"
STDIO = 3

Launch = Callable[[str, str, list[str], str], tuple[list[str], str | None]]
"""(tool name, real executable, arguments, the agent's working directory) -> (the argv that runs
the tool once, the directory to start it in)."""


def run_here(name: str, real: str, args: list[str], cwd: str) -> tuple[list[str], str | None]:
    """Unsandboxed sessions: the tool runs as the agent asked, where it stands."""
    return [real, *args], cwd if os.path.isdir(cwd) else None


Record = Callable[..., None]
"""The evidence ledger's `record(kind, **fields)`."""


def refusal(limits: LogicalLimits, counter: str) -> str:
    prefix = counter.removeprefix(TOOLS)
    return (
        f"benchtui: `{prefix}` refused: this session's budget of {limits.limit(counter)} `{prefix}` "
        f"calls is spent (counter {counter}); the command was not run"
    )


def is_free(argv: list[str], free: tuple[str, ...]) -> bool:
    """A call named free: its words start the command line and only options follow them
    (`pred list --rules` is `pred list`; `pred list x.json` or `pred --help solve` are not)."""
    for entry in free:
        words = entry.split()
        if argv[: len(words)] == words and all(a.startswith("-") for a in argv[len(words) :]):
            return True
    return False


@dataclass
class Answer:
    """What the shim does: print `stdout` and `stderr` (texts of the gate), exit `exit`. The
    gate's texts quote what agents wrote (a certificate's fields in a verdict's reason, pred's
    messages about it): they go out inert (`core.text.inert`). A free call's cached bytes are the
    tool's own, replayed as a counted call's output reaches the agent: untouched."""

    exit: int
    stdout: str = ""
    stderr: str = ""
    raw_out: bytes = b""
    raw_err: bytes = b""

    def fields(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "exit": self.exit,
            "stdout": inert(self.stdout),
            "stderr": inert(self.stderr),
        }
        if self.raw_out or self.raw_err:  # a cached answer: the tool's bytes, as they were
            answer |= {"out": self.raw_out.decode("latin-1"), "err": self.raw_err.decode("latin-1")}
        return answer

    def wire(self) -> bytes:
        return json.dumps(self.fields()).encode() + b"\n"


@dataclass
class Call:
    """One request of a shim: its command line, where it stands, its stdio, a submitted file."""

    argv: list[str]
    cwd: str
    fds: list[int]
    file: str | None = None
    file_error: str | None = None
    request_id: str = ""
    ref: int = 0
    """The node's number for the call (a gate on a Ray node, see `remote`)."""


@dataclass
class Cached:
    out: bytes
    err: bytes
    exit: int


class Tools(Protocol):
    """Where a granted call runs when not here: a gate on a Ray node (`remote.NodeTools`)."""

    async def run(self, call: Call) -> int | None: ...

    async def capture(self, call: Call) -> Cached: ...


@dataclass
class ToolGate:
    """Serves one session; `tools` maps a shimmed command name to the real executable's path.
    With `remote`, the calls come from a gate on a Ray node and run there (`remote.py`): the
    decisions — units, the free cache, submits, the evidence — stay here, with the meter."""

    meter: Meter
    limits: LogicalLimits
    tools: dict[str, str]
    launch: Launch = run_here
    free: tuple[str, ...] = ()
    submit: Callable[[Call], Awaitable[Answer]] | None = None
    budget_line: Callable[[], str] = field(default=lambda: "")
    record: Record = field(default=lambda kind, **fields: None)
    remote: Tools | None = None
    granted: int = 0
    refused: int = 0
    ran: int = 0
    _cache: dict[tuple[str, ...], Cached] = field(default_factory=dict)
    _locks: dict[tuple[str, ...], trio.Lock] = field(default_factory=dict)
    _calls: int = 0

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
        await answer_shim(client, lambda call: self.dispatch(call, client))

    async def dispatch(self, call: Call, client: trio.socket.SocketType | None) -> Answer | None:
        """The answer to one call (None: its shim is gone, nothing to tell)."""
        self._calls += 1
        call.request_id = f"g{self._calls}"
        if call.argv[0] == SUBMIT and self.submit is not None:
            return await self.submit(call)
        executable = self.tools.get(call.argv[0])
        if executable is None:
            return Answer(126, stderr=f"benchtui: {call.argv[0]}: not a gated tool")
        if is_free(call.argv, self.free) and (
            tuple(call.argv) in self._cache or len(self._locks) < MAX_FREE_CALLS
        ):
            return await self._free(call, executable)
        counters = self.limits.tool_counters(call.argv)
        spent = await self.meter.use(*counters)
        if spent is not None:
            self.refused += 1
            self.record(
                "tool",
                argv=call.argv,
                request=call.request_id,
                free=False,
                granted=False,
                counters=counters,
                refused_by=spent,
            )
            return Answer(126, stderr=refusal(self.limits, spent) + self._line())
        self.granted += 1
        started = time.monotonic()
        exit_code = await self._run(executable, call, client)
        self.record(
            "tool",
            argv=call.argv,
            request=call.request_id,
            free=False,
            granted=True,
            counters=counters,
            exit=exit_code,
            duration_s=round(time.monotonic() - started, 3),
        )
        if exit_code is None:  # the shim is gone (killed with its command): nothing to tell
            return None
        return Answer(exit_code, stderr=self._line().lstrip("\n"))

    async def _free(self, call: Call, executable: str) -> Answer:
        """A free call: no unit; run once per session, its answer replayed after."""
        key = tuple(call.argv)
        lock = self._locks.setdefault(key, trio.Lock())
        async with lock:
            cached = self._cache.get(key)
            hit = cached is not None
            if cached is None:
                cached = await self._capture(executable, call)
                self._cache[key] = cached
        self.record(
            "tool",
            argv=call.argv,
            request=call.request_id,
            free=True,
            granted=True,
            counters=[],
            exit=cached.exit,
            cached=hit,
        )
        return Answer(cached.exit, raw_out=cached.out, raw_err=cached.err, stderr=self._line().lstrip("\n"))

    def _line(self) -> str:
        line = self.budget_line()
        return f"\n{line}" if line else ""

    async def _run(self, executable: str, call: Call, client: trio.socket.SocketType | None) -> int | None:
        self.ran += 1
        if self.remote is not None:
            return await self.remote.run(call)
        assert client is not None
        argv, cwd = self.launch(call.argv[0], executable, call.argv[1:], call.cwd)
        return await run_tool(argv, cwd, call.fds, client)

    async def _capture(self, executable: str, call: Call) -> Cached:
        self.ran += 1
        if self.remote is not None:
            return await self.remote.capture(call)
        argv, cwd = self.launch(call.argv[0], executable, call.argv[1:], call.cwd)
        return await capture_tool(argv, cwd)


async def answer_shim(
    client: trio.socket.SocketType, decide: Callable[[Call], Awaitable[Answer | None]]
) -> None:
    """One shim's connection: its request (with its stdio), `decide`'s answer (None: the shim
    is gone, nothing to tell), the descriptors it passed closed whatever happens."""
    fds: list[int] = []
    with client:
        try:
            with trio.move_on_after(CLIENT_TIMEOUT_S) as waited:
                data, fds = await receive(client)
            if waited.cancelled_caught or data is None:
                return
            call = parse(data, fds)
            if isinstance(call, str):
                return await send(client, Answer(126, stderr=call))
            answer = await decide(call)
            if answer is not None:
                await send(client, answer)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


async def run_tool(
    argv: list[str], cwd: str | None, fds: list[int], client: trio.socket.SocketType
) -> int | None:
    """Run a tool with the shim's stdio (`fds`); stop it if the shim goes away first (None)."""
    stdin, stdout, stderr = fds
    process = await trio.lowlevel.open_process(
        argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, start_new_session=True, env=_tool_env()
    )
    gone = False
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            nonlocal gone
            with contextlib.suppress(OSError):
                await client.recv(1)  # the shim never sends more: EOF means it is gone
            gone = True
            _kill(process)

        nursery.start_soon(watch)
        try:
            await process.wait()
        finally:
            _kill(process)
            nursery.cancel_scope.cancel()
    return None if gone or process.returncode is None else _status(process.returncode)


async def capture_tool(argv: list[str], cwd: str | None) -> Cached:
    """Run a free call once, its output captured (bounded) to be replayed."""
    done = await trio.run_process(
        argv,
        cwd=cwd,
        stdin=b"",
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        start_new_session=True,
        env=_tool_env(),
        deliver_cancel=_deliver_cancel,
    )
    return Cached(done.stdout[:MAX_FREE_OUTPUT], done.stderr[:MAX_FREE_OUTPUT], _status(done.returncode))


def _tool_env() -> dict[str, str]:
    """A tool runs with nothing of the engine's environment (which holds the API keys)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": "/tmp"}


def _status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _kill(process: trio.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)


async def _deliver_cancel(process: trio.Process) -> None:
    _kill(process)


async def receive(client: trio.socket.SocketType) -> tuple[bytes | None, list[int]]:
    """The request line and the descriptors that came with it (the shim's stdin, stdout, stderr)."""
    data, fds = b"", list[int]()
    while not data.endswith(b"\n") and len(data) < MAX_REQUEST:
        chunk, ancillary, _flags, _addr = await client.recvmsg(1 << 16, socket.CMSG_SPACE(STDIO * 4))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
                fds.extend(got)
        if not chunk:
            return None, fds
        data += chunk
    return data, fds


def parse(data: bytes, fds: list[int], *, stdio: bool = True) -> Call | str:
    """A shim's request (`stdio`: it must pass its stdin, stdout and stderr), or why it is refused."""
    try:
        request: Any = json.loads(data)
        argv = request["argv"]
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise ValueError
        cwd = request.get("cwd", "")
        file, file_error = request.get("file"), request.get("file_error")
        if (
            not isinstance(cwd, str)
            or not isinstance(file, str | None)
            or not isinstance(file_error, str | None)
        ):
            raise ValueError
    except (ValueError, KeyError, TypeError, RecursionError):
        return "benchtui: a malformed tool request"
    if stdio and argv[0] != SUBMIT and (len(fds) != STDIO or not all(_usable(fd) for fd in fds)):
        return "benchtui: a tool request must pass its stdin, stdout and stderr"
    return Call(argv, cwd, fds[:STDIO], file, file_error)


def _usable(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


async def send(client: trio.socket.SocketType, answer: Answer) -> None:
    with contextlib.suppress(OSError):  # the shim is gone (killed with its command): nothing to tell
        data = memoryview(answer.wire())
        while data:
            data = data[await client.send(data) :]
