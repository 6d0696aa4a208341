"""The control endpoint: `<run dir>/control.sock`, so `benchtui ctl` can steer a running campaign.

Protocol: JSON lines. Each request is one object, e.g. `{"cmd": "hello"}`, `{"cmd": "pause"}`, `{"cmd": "kill",
"session": "m-0001"}`, `{"cmd": "runner", "profile": "mini"}`, `{"cmd": "parallelism", "n": 8}`,
`{"cmd": "stop", "now": false}`, `{"cmd": "status"}`; each reply is one object with `"ok": true`
(plus `message`, or the status fields) or `"ok": false, "error": "..."`. Commands are the
scheduler's own control calls, run in the engine's Trio thread like the UI's keys.

`hello` is the handshake: the socket says which run it serves (the run dir's path, device and
inode, a digest of its identity.json) and which process serves it. `benchtui ctl` asks it before
any command and refuses a socket that answers for another run (a link, or a hard link, to another
campaign's socket), checking the pid against the kernel's (SO_PEERCRED) and the run dir's lock.

Anyone who can reach the socket is a client, so the campaign must never notice a bad one: a
line is at most MAX_LINE bytes and its JSON is parsed safely (deep nesting is an error reply);
at most MAX_CLIENTS connections are served at once (the others wait in the kernel's backlog, so
file descriptors stay bounded); a client that sends nothing, or does not read its replies, for
IDLE_S is dropped. The socket is 0600 in a 0700 run dir.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import socket
from collections import Counter
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import trio

from benchtui.core import inputs
from benchtui.core.bounds import MAX_PARALLELISM
from benchtui.core.errors import BadInput
from benchtui.core.inputs import loads_json
from benchtui.engine import events as ev
from benchtui.engine.account import ModelAccount
from benchtui.engine.records import JournalRecord
from benchtui.engine.rundir import CONTROL_SOCKET, IDENTITY
from benchtui.engine.scheduler import Scheduler

MAX_LINE = 64 * 1024
MAX_CLIENTS = 32
IDLE_S = 10.0
UNIX_PATH_MAX = 100  # sun_path is 108 bytes on Linux; leave room for the terminator


@contextlib.contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An address for `path` that fits sun_path: long paths go through /proc/self/fd (Linux)."""
    if len(os.fsencode(path)) < UNIX_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def identity_digest(run_dir: Path) -> str:
    """A digest of the run's identity.json ("" when it cannot be read)."""
    try:
        data = inputs.read_bytes(run_dir / IDENTITY, inputs.SMALL_MAX_BYTES, "the identity")
    except (OSError, BadInput):
        return ""
    return hashlib.sha256(data).hexdigest()[:16]


def whoami(run_dir: Path, campaign: str) -> dict[str, Any]:
    """The handshake's answer: which run this socket serves, and from which process."""
    info = os.stat(run_dir)
    return {
        "benchtui": "control",
        "campaign": campaign,
        "run_dir": str(run_dir.absolute()),
        "device": info.st_dev,
        "inode": info.st_ino,
        "identity": identity_digest(run_dir),
        "pid": os.getpid(),
    }


def endings_by_model(records: Iterable[JournalRecord]) -> dict[str, dict[str, int]]:
    """Per model, how many of its sessions ended each way (their current end lines): `ctl status`
    of a running campaign (from the engine's journal) and of a stopped one (from the run dir)."""
    found: dict[str, Counter[str]] = {}
    for rec in records:
        if rec.ended and rec.ending is not None:
            found.setdefault(rec.model, Counter())[rec.ending.name] += 1
    return {model: dict(counts.most_common()) for model, counts in found.items()}


TOTALS = ("budget_usd", "spent_usd", "reserved_usd", "wasted_usd")


def accounts_to_json(acc: ev.AccountsCommitted) -> dict[str, Any]:
    """Amounts as exact strings; each model's account as `ModelAccount.to_json` writes it."""
    return {
        **{key: str(getattr(acc, key)) for key in TOTALS},
        "models": [m.to_json() for m in acc.models],
    }


def accounts_from_json(data: Any) -> ev.AccountsCommitted:
    """What `accounts_to_json` sent; ValueError for anything else (a reply is read from a socket)."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ValueError("accounts are not an object with models")
    try:
        money = {key: Decimal(data[key]) for key in TOTALS if isinstance(data[key], str)}
    except (KeyError, InvalidOperation):
        raise ValueError("accounts without their totals") from None
    if len(money) != len(TOTALS):
        raise ValueError("accounts whose totals are not amounts")
    return ev.AccountsCommitted(models=tuple(map(ModelAccount.from_json, data["models"])), **money)


class Controller:
    """Answers requests with the scheduler's control calls; remembers the last committed accounts."""

    def __init__(self, scheduler: Scheduler, hello: dict[str, Any] | None = None) -> None:
        self.scheduler = scheduler
        self.accounts: ev.AccountsCommitted | None = None
        self.hello = hello or {}
        """The handshake's answer (`whoami`)."""
        self.milestones: dict[str, str] = {}
        """Each running session's last milestone note (`Meter.progress(..., milestone=True)`)."""

    def listen(self, event: ev.Event) -> None:
        if isinstance(event, ev.AccountsCommitted):
            self.accounts = event
        elif isinstance(event, ev.SessionProgress) and event.milestone and event.note:
            self.milestones[event.session] = event.note
        elif isinstance(event, ev.SessionEnded):
            self.milestones.pop(event.session, None)

    def answer(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
            return {"ok": False, "error": 'a request is a JSON object with a "cmd"'}
        s, cmd = self.scheduler, request["cmd"]
        if cmd == "hello":
            return {"ok": True, **self.hello}
        try:
            if cmd == "status":
                return {
                    "ok": True,
                    "campaign": s.campaign.name,
                    "state": s.state,
                    "runner": s.runner,
                    "parallelism": s.parallelism,
                    "running": sorted(s.running_sessions()),
                    "progress": {
                        sid: self.milestones[sid]
                        for sid in sorted(s.running_sessions())
                        if sid in self.milestones
                    },
                    "accounts": accounts_to_json(self.accounts) if self.accounts else None,
                    "endings": endings_by_model(s.accounts.journal.values()),
                }
            if cmd == "pause":
                s.pause()
                return {"ok": True, "message": "paused: no new session starts; running ones go on"}
            if cmd == "resume":
                if s.stopping:
                    return {"ok": False, "error": "the campaign is stopping; resume it with --resume"}
                s.resume()
                return {"ok": True, "message": "resumed: sessions launch again"}
            if cmd == "stop":
                now = bool(request.get("now"))
                s.stop(now=now)
                return {
                    "ok": True,
                    "message": "stopping: "
                    + ("running sessions interrupted" if now else "running sessions finish first"),
                }
            if cmd == "kill":
                session = request.get("session")
                if not isinstance(session, str):
                    return {"ok": False, "error": 'kill needs a "session" string'}
                if not s.kill(session):
                    return {"ok": False, "error": f"no running session {session!r}"}
                return {"ok": True, "message": f"killed {session}"}
            if cmd == "runner":
                if not isinstance(request.get("profile"), str):
                    return {"ok": False, "error": 'runner needs a "profile" string'}
                s.set_runner(request["profile"])
                return {"ok": True, "message": f"runner {s.runner} for sessions not yet started"}
            if cmd == "parallelism":
                n = request.get("n")
                if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_PARALLELISM:
                    return {
                        "ok": False,
                        "error": f"parallelism needs an integer n from 1 to {MAX_PARALLELISM}",
                    }
                s.set_parallelism(n)
                return {"ok": True, "message": f"parallelism {n}"}
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": False, "error": f"unknown command {cmd[:100]!r}"}

    async def handle(self, stream: trio.SocketStream) -> None:
        """One client connection; a client that goes away or misbehaves never disturbs the campaign."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            async with stream:
                await self._converse(stream)

    async def _converse(self, stream: trio.SocketStream) -> None:
        buffer = b""
        while True:
            with trio.move_on_after(IDLE_S) as idle:  # a request must arrive whole in time
                while b"\n" not in buffer and len(buffer) <= MAX_LINE:
                    chunk = await stream.receive_some(MAX_LINE)
                    if not chunk:
                        return
                    buffer += chunk
            if idle.cancelled_caught:
                return
            if b"\n" not in buffer:
                await self._send(
                    stream, {"ok": False, "error": f"a request line is at most {MAX_LINE} bytes"}
                )
                return
            line, buffer = buffer.split(b"\n", 1)
            try:
                reply = self.answer(loads_json(line))
            except ValueError:
                reply = {"ok": False, "error": "not a JSON line"}
            if not await self._send(stream, reply):
                return

    @staticmethod
    async def _send(stream: trio.SocketStream, reply: dict[str, Any]) -> bool:
        with trio.move_on_after(IDLE_S):  # a client that does not read its replies is dropped
            await stream.send_all(json.dumps(reply).encode() + b"\n")
            return True
        return False

    async def serve_clients(self, listener: trio.SocketListener) -> None:
        """Accept a client only when one of MAX_CLIENTS slots is free."""
        slots = trio.Semaphore(MAX_CLIENTS)

        async def one(stream: trio.SocketStream) -> None:
            try:
                await self.handle(stream)
            finally:
                slots.release()

        async with trio.open_nursery() as nursery:
            while True:
                await slots.acquire()
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    slots.release()
                    if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                        raise
                    await trio.sleep(0.1)  # out of descriptors: the campaign's own files come first
                    continue
                nursery.start_soon(one, stream)


async def serve(
    run_dir: Path,
    scheduler: Scheduler,
    bus: ev.EventBus,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `<run dir>/control.sock` until cancelled, then remove it.

    The run dir lock is ours, so a socket file left by a crashed run is stale: replace it. If the
    socket cannot be created or breaks, say so and go on: the campaign must not depend on remote
    control.
    """
    path = run_dir / CONTROL_SOCKET
    controller = Controller(scheduler)
    unsubscribe = bus.subscribe(controller.listen)
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound: int | None = None
    try:
        try:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            with socket_address(path) as address:
                await sock.bind(address)
            os.chmod(path, 0o600)  # the run dir is 0700 already; the socket too, whatever the umask
            bound = path.stat().st_ino
            controller.hello = whoami(run_dir, scheduler.campaign.name)
            sock.listen()
        except OSError as exc:
            bus.emit(
                ev.Notice(
                    level="warning",
                    message=f"no control socket ({exc}): `benchtui ctl` cannot reach this run",
                )
            )
            task_status.started()
            return
        task_status.started()
        try:
            await controller.serve_clients(trio.SocketListener(sock))
        except OSError as exc:
            bus.emit(
                ev.Notice(
                    level="warning",
                    message=f"control socket failed ({exc}): `benchtui ctl` cannot reach this run",
                )
            )
    finally:
        sock.close()
        unsubscribe()
        with contextlib.suppress(OSError):  # only our own socket: never a file someone put there
            if bound is not None and path.lstat().st_ino == bound:
                path.unlink()
