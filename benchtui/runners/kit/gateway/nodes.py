"""The gateway on Ray nodes: one relay per node and campaign run, asking the engine only for holds
and charges.

A node's agents call a relay on their own node (their sandbox's socat relays its socket to the
node's loopback), so the calls of a hundred machines never cross the engine's machine; the
relay keeps one TCP connection to the engine (`link`'s messages, after a first line that proves
it knows the run's secret) and asks it for each session's grant the first time that session
calls: only the keys of the sessions running on a node ever reach it. The first session on a
node starts the relay (detached from Ray's worker, so it outlives the task); later ones find it
by its folder (named by the run's secret), or start another if it died. It ends when its
connection to the engine does (the engine gone, even by SIGKILL; TCP keep-alive notices a lost
machine within a minute).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchtui.runners.kit import reaper
from benchtui.runners.kit.gateway.link import encode, relay_environment

START_S = 20.0
"""A node's relay is listening within this, or the session fails (an infrastructure error)."""


@dataclass(frozen=True)
class NodeGateway:
    """Where a node's relay finds the engine (picklable: it travels in each session's Ray task)."""

    host: str
    port: int
    secret: str
    settings: dict[str, Any]

    @property
    def folder(self) -> Path:
        key = hashlib.sha256(self.secret.encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"benchtui-relay-{key}"

    def start(self) -> str:
        """On the node: the address (`127.0.0.1:port`) of its relay, started if none is running."""
        folder = self.folder
        with _locked(folder):  # one starter per node; the others wait, then find it
            found = _running(folder)
            if found:
                return found
            (folder / "port").unlink(missing_ok=True)
            settings = {
                **self.settings,
                "node": True,
                "connect": [self.host, self.port],
                "folder": str(folder),
            }
            secrets_file = folder / "settings.json"  # never in a command line: read once, removed
            fd = os.open(secrets_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({**settings, "secret": self.secret}, f)
            relay = f'"{sys.executable}" -m benchtui.runners.kit.gateway.relay node "$1" </dev/null >/dev/null 2>>"$2" &'
            # Through a shell that exits at once: the relay is no child of Ray's worker (which
            # kills its children when it ends), and outlives this session for the next ones.
            subprocess.run(
                ["/bin/sh", "-c", relay, "relay", str(secrets_file), str(folder / "relay.log")],
                check=True,
                start_new_session=True,
                env=relay_environment(),
            )
            deadline = time.monotonic() + START_S
            while time.monotonic() < deadline:
                found = _running(folder)
                if found:
                    return found
                time.sleep(0.02)
            tail = (folder / "relay.log").read_text(errors="replace").strip().splitlines()[-1:]
            raise OSError(f"the gateway's relay on this node did not start: {' '.join(tail) or 'no output'}")


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold the lock of `folder` (made if missing) while it is still the folder's: a relay that
    ends removes the folder under this lock (`leave`), so a starter that waited for it tries again."""
    while True:
        folder.mkdir(mode=0o700, exist_ok=True)
        try:
            lock = (folder / "lock").open("a")
        except FileNotFoundError:  # removed since the mkdir
            continue
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                current = os.stat(folder / "lock").st_ino == os.fstat(lock.fileno()).st_ino
            except FileNotFoundError:
                current = False
            if current:
                yield
                return


def leave(folder: Path) -> None:
    """In a node's relay whose connection to the engine closed: the node's folder for this run
    goes, unless another relay has taken it over (its pid in `port`)."""
    deadline = time.monotonic() + START_S + 5  # a starter holds the lock at most START_S
    with contextlib.suppress(OSError), (folder / "lock").open("a") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
        try:
            owner, _ = _port_file(folder)
        except (OSError, ValueError):
            owner = os.getpid()  # not listening yet, or its file gone: no one else's
        if owner == os.getpid():
            shutil.rmtree(folder, ignore_errors=True)


def _running(folder: Path) -> str:
    """The address of the folder's relay if it is alive and listening, else ""."""
    try:
        pid, port = _port_file(folder)
        if not reaper.is_alive(pid):  # gone, or killed and not yet reaped
            return ""
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    except (OSError, ValueError):
        return ""
    return f"127.0.0.1:{port}"


def _port_file(folder: Path) -> tuple[int, int]:
    """The pid and port of the relay listening for `folder` (its `port` file, written by `connect`)."""
    pid, port = (folder / "port").read_text().split()
    return int(pid), int(port)


def read_settings(path: str) -> dict[str, Any]:
    """In a node's relay process: its settings (with the run's secret), read once and removed."""
    settings_file = Path(path)
    try:
        return dict(json.loads(settings_file.read_text()))
    finally:
        with contextlib.suppress(OSError):
            settings_file.unlink()


def connect(settings: dict[str, Any]) -> tuple[socket.socket, socket.socket]:
    """In a node's relay process: its channel to the engine (authenticated) and its listener."""
    secret = settings.pop("secret")
    host, port = settings["connect"]
    channel = socket.create_connection((host, port), timeout=START_S)
    channel.settimeout(None)
    channel.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 15), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 6)):
        if hasattr(socket, option):
            channel.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
    channel.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    channel.sendall(encode("auth", secret))
    listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
    listener.setblocking(False)
    folder = Path(settings["folder"])
    (folder / ".port").write_text(f"{os.getpid()} {listener.getsockname()[1]}\n")
    os.replace(folder / ".port", folder / "port")
    return channel, listener
