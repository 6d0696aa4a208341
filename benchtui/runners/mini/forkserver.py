"""The engine's side of the zygote: one per runner, asked for a worker per session.

The zygote runs in a task of the nursery it is given (the runner's, which lives in the
campaign's service nursery), so it is killed when the campaign ends, whatever way it ends.
It is started by the first session that needs it; one that died is restarted by the next
session. It holds no per-session state: each request carries the worker's environment and
settings.
"""

from __future__ import annotations

import array
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

import benchtui
from benchtui.core import tempdirs
from benchtui.runners.mini.zygote import MAX_REQUEST

#: Set before the zygote imports litellm and mini-swe-agent (they act on import otherwise).
SETTINGS = {
    "MSWEA_SILENT_STARTUP": "1",  # no banner
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no price-map download
    "MSWEA_COST_TRACKING": "ignore_errors",  # prices are the campaign's, never litellm's (docs/design/invariants.md#f6)
}
PROJECT_ROOT = str(Path(benchtui.__file__).resolve().parent.parent)


class WorkerStartFailed(Exception):
    """No worker process could be started (an infrastructure error)."""


class _Zygote:
    def __init__(self) -> None:
        self.ready = trio.Event()
        self.lock = trio.Lock()
        self.control: trio.socket.SocketType | None = None
        self.error = ""
        self.dead = False
        self.max_request = MAX_REQUEST


class Forkserver:
    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._zygote: _Zygote | None = None

    async def spawn(
        self, request: dict[str, Any], *, env: dict[str, str], startup_timeout: float
    ) -> trio.SocketStream:
        """A new worker for `request`; returns the engine's end of its private channel.

        `env` is the zygote's environment if one must be started (never secrets).
        """
        zygote = await self._ready(env, startup_timeout)
        assert zygote.control is not None
        data = json.dumps(request).encode()
        if len(data) > zygote.max_request:  # it would not fit one message: say so, not EMSGSIZE
            raise WorkerStartFailed(
                f"the session request is {len(data):,} bytes (at most {zygote.max_request:,}): "
                "is benchtui's environment that large?"
            )
        ours, theirs = socket.socketpair()
        try:
            async with zygote.lock:
                await zygote.control.sendmsg(
                    [data],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]))],
                )
        except OSError as exc:
            ours.close()
            raise WorkerStartFailed(f"the worker zygote is gone: {exc}") from None
        finally:
            theirs.close()
        return trio.SocketStream(trio.socket.from_stdlib_socket(ours))

    async def _ready(self, env: dict[str, str], startup_timeout: float) -> _Zygote:
        zygote = self._zygote
        if zygote is None or zygote.dead:
            zygote = self._zygote = _Zygote()
            self._nursery.start_soon(_serve, zygote, env, startup_timeout, name="mini-swe-agent zygote")
        await zygote.ready.wait()
        if zygote.control is None or zygote.dead:
            raise WorkerStartFailed(f"the worker zygote failed: {zygote.error}")
        return zygote


async def _serve(zygote: _Zygote, env: dict[str, str], startup_timeout: float) -> None:
    """Run the zygote until it exits or its nursery is cancelled (never raises: a failed zygote
    fails the sessions that wait for it, not the campaign)."""
    config_dir = tempdirs.make("mswea")  # mini-swe-agent's, at import
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # A SEQPACKET message must fit the sender's buffer (212,992 bytes by default): a request that
    # carries a large environment failed with EMSGSIZE, for every session.
    for option in (getattr(socket, "SO_SNDBUFFORCE", 32), socket.SO_SNDBUF):  # FORCE: root only
        try:
            ours.setsockopt(socket.SOL_SOCKET, option, MAX_REQUEST + 65536)
            break
        except OSError:
            continue
    # The kernel doubles what it is given, and takes 32 bytes of it for itself.
    zygote.max_request = min(MAX_REQUEST, ours.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) - 32)
    control = trio.socket.from_stdlib_socket(ours)
    process = None
    env = {
        **env,
        **SETTINGS,
        "MSWEA_GLOBAL_CONFIG_DIR": str(config_dir),
        "PYTHONPATH": os.pathsep.join(filter(None, [PROJECT_ROOT, env.get("PYTHONPATH")])),
    }
    try:
        process = _start(config_dir, theirs, env)
        theirs.close()
        hello = b""
        with trio.move_on_after(startup_timeout):
            hello = await control.recv(64)
        if hello != b"ready":
            zygote.error = (
                "no answer in time" if process.poll() is None else f"exit code {process.returncode}"
            )
            zygote.error += f": {_tail(config_dir / 'zygote.log')}"
            return
        zygote.control = control
        zygote.ready.set()
        await _wait(process)
        zygote.error = f"it exited with code {process.returncode}: {_tail(config_dir / 'zygote.log')}"
    except Exception as exc:  # it must not take the campaign's nursery down
        zygote.error = f"{type(exc).__name__}: {exc}"
    finally:
        zygote.dead = True
        zygote.ready.set()
        theirs.close()
        control.close()
        if process is not None:
            process.kill()
            with trio.CancelScope(shield=True):
                await _wait(process)
        shutil.rmtree(config_dir, ignore_errors=True)


def _start(config_dir: Path, theirs: socket.socket, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the zygote from the Trio thread itself, not through trio.lowlevel.open_process: that
    forks in a worker thread, and the zygote's PR_SET_PDEATHSIG fires when its parent *thread*
    exits, i.e. when Trio retires that idle thread 10 s later. The zygote then died under a
    running campaign, and the sessions whose requests it had queued ended "without a report"."""
    with open(config_dir / "zygote.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "benchtui.runners.mini.zygote", str(theirs.fileno()), str(os.getpid())],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )


async def _wait(process: subprocess.Popen[bytes]) -> None:
    """Wait for the process to exit without blocking the event loop: its pidfd becomes readable."""
    if process.poll() is None:
        pidfd = os.pidfd_open(process.pid)
        try:
            await trio.lowlevel.wait_readable(pidfd)
        finally:
            trio.lowlevel.notify_closing(pidfd)
            os.close(pidfd)
    process.wait()


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else "(no output)"
