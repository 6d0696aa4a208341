"""`benchtui ctl [RUN_DIR] COMMAND`: steer a running campaign (TUI or headless) from another terminal.

A blocking client of the run's control socket (see `benchtui.engine.control`): one request, one reply.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

from benchtui.cli.args import OneLineParser, add_state_dir
from benchtui.core.bounds import MAX_PARALLELISM
from benchtui.core.errors import BadInput
from benchtui.engine import rundir

COMMANDS = {"pause": 0, "resume": 0, "stop": 0, "status": 0, "kill": 1, "runner": 1, "parallelism": 1}
TIMEOUT_S = 10.0
MAX_REPLY = 16 * 1024 * 1024
"""A status reply of a campaign with many models is a few KB; anything past this is not benchtui."""


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="benchtui ctl",
        usage="benchtui ctl [--state-dir DIR] [RUN_DIR] COMMAND [ARG] [--now]",
        description="Act on a running campaign through its control socket.",
        epilog="Commands: pause | resume | stop [--now] | status | kill SESSION_ID | "
        "runner PROFILE | parallelism N. RUN_DIR defaults to the latest run.",
    )
    p.add_argument("words", nargs="+", metavar="[RUN_DIR] COMMAND [ARG]", help=argparse.SUPPRESS)
    p.add_argument("--now", action="store_true", help="with stop: interrupt running sessions too")
    add_state_dir(p)
    return p


def request_for(command: str, args: list[str], now: bool) -> dict[str, Any]:
    if len(args) != COMMANDS[command]:
        raise BadInput(f"ctl {command} takes {COMMANDS[command] or 'no'} argument(s)")
    if command == "kill":
        return {"cmd": "kill", "session": args[0]}
    if command == "runner":
        return {"cmd": "runner", "profile": args[0]}
    if command == "parallelism":
        if not args[0].isdigit() or not 1 <= int(args[0]) <= MAX_PARALLELISM:
            raise BadInput(f"ctl parallelism takes a whole number from 1 to {MAX_PARALLELISM}")
        return {"cmd": "parallelism", "n": int(args[0])}
    return {"cmd": command, "now": now} if command == "stop" else {"cmd": command}


def find_run_dir(given: str | None, state_dir: Path | None) -> Path:
    if given is not None:
        return rundir.require(Path(given))
    state_dir = rundir.state_dir(state_dir)
    live = rundir.running(state_dir)
    if len(live) > 1:
        names = ", ".join(d.name for d in live)
        raise BadInput(
            f"{len(live)} campaigns are running in {state_dir} ({names}): say which, "
            f"e.g. `benchtui ctl {live[0]} status`"
        )
    if live:
        return live[0]
    try:
        return rundir.latest(state_dir)
    except BadInput:
        raise BadInput(f"no run under {state_dir} (give RUN_DIR or --state-dir)") from None


class NotRunning(BadInput):
    """Nothing answers on the run's control socket."""


def ask(run_dir: Path, request: dict[str, Any]) -> dict[str, Any]:
    """Send one request to the run's control socket, once it has proved it serves this run
    (`handshake`); BadInput when nothing answers, or something else does."""
    from benchtui.engine.control import socket_address

    path = run_dir / rundir.CONTROL_SOCKET
    refuse_link(run_dir, path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT_S)
        try:
            with socket_address(path) as address:
                sock.connect(address)
        except TimeoutError:  # its backlog is full: many clients at once
            raise BadInput(f"the campaign in {run_dir} is busy: no answer in {TIMEOUT_S:g} s") from None
        except OSError:  # no socket, or a stale one left by a killed process
            raise NotRunning(f"the campaign in {run_dir} is not running") from None
        replies = Replies(sock, run_dir, path)
        handshake(run_dir, path, replies.ask({"cmd": "hello"}), peer_pid(sock))
        return replies.ask(request)


def refuse_link(run_dir: Path, path: Path) -> None:
    """A run's control socket is its own: a link there (to another run's socket, say) is refused
    before anything connects through it, naming both ends."""
    try:
        if path.is_symlink():
            raise BadInput(
                f"{path} is a link to {os.readlink(path)}, not {run_dir}'s own control socket: refused"
            )
    except OSError:
        pass  # gone, or unreadable: connect says so


def peer_pid(sock: socket.socket) -> int:
    """The pid of the process serving the socket, as the kernel saw it listen (SO_PEERCRED)."""
    pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return int(pid)


def handshake(run_dir: Path, path: Path, hello: dict[str, Any], peer: int) -> None:
    """The socket serves this run: the same run dir (device and inode), the same identity, from
    the process that holds the run dir's lock, which is the process the kernel says answers."""
    from benchtui.engine.control import identity_digest

    if not hello.get("ok"):
        raise BadInput(f"{path} refused the handshake: {hello.get('error', 'no reason')}")
    if hello.get("benchtui") != "control":
        raise BadInput(f"{path} answered something that is not a benchtui control socket")
    try:
        here = os.stat(run_dir)
    except OSError as exc:
        raise BadInput(f"{run_dir}: {exc.strerror}") from None
    owner = rundir.owner(run_dir)
    same = (
        hello.get("device") == here.st_dev
        and hello.get("inode") == here.st_ino
        and hello.get("identity") == identity_digest(run_dir)
        and hello.get("pid") == peer == owner
    )
    if not same:
        theirs = f"{hello.get('run_dir', 'an unknown run')} (pid {peer})"
        raise BadInput(
            f"{path} answers for the campaign in {theirs}, not for {run_dir} "
            f"(pid {owner or 'unknown'}): refused, nothing sent to it"
        )


class Replies:
    """One JSON request, one JSON line back, on a connected control socket."""

    def __init__(self, sock: socket.socket, run_dir: Path, path: Path) -> None:
        self.sock, self.run_dir, self.path = sock, run_dir, path
        self.rest = b""

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        from benchtui.core.inputs import loads_json

        try:
            self.sock.sendall(json.dumps(request).encode() + b"\n")
            while b"\n" not in self.rest:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise BadInput(f"the campaign in {self.run_dir} stopped before answering")
                self.rest += chunk
                if len(self.rest) > MAX_REPLY:
                    raise BadInput(
                        f"{self.path} answered more than {MAX_REPLY} bytes: not a benchtui campaign"
                    )
        except OSError as exc:
            raise BadInput(f"the campaign in {self.run_dir} did not answer: {exc}") from None
        line, self.rest = self.rest.split(b"\n", 1)
        try:
            answer = loads_json(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise BadInput(f"{self.path} answered something that is not a benchtui reply")
        return answer


def running_counters(run_dir: Path, running: list[str]) -> list[str]:
    """The logical budget each running session has taken (campaigns with `[budget.per_session]`),
    from the saved ledger's in-flight tables: the units that are durable, as a crash would keep them."""
    from benchtui.core.counters import line, usage
    from benchtui.engine.reader import RunDir

    saved = RunDir(run_dir)
    limits = saved.campaign.logical_limits
    if not limits or not running:
        return []
    flights = saved.ledger.running
    width = max(map(len, running))
    return ["logical budget used:"] + [
        f"  {sid:<{width}}  {line(usage(f.counters if (f := flights.get(sid)) else {}, limits))}"
        for sid in running
    ]


def show_status(reply: dict[str, Any], run_dir: Path | None = None) -> str:
    from benchtui.cli.closing import endings_text
    from benchtui.cli.headless import summary_table
    from benchtui.engine.control import accounts_from_json

    running = reply.get("running") or []
    lines = [
        f"campaign {reply['campaign']}: {reply['state']}, runner {reply['runner']}, "
        f"parallelism {reply['parallelism']}, {len(running)} running"
        + (f" ({', '.join(running)})" if running else "")
    ]
    progress = reply.get("progress")
    if isinstance(progress, dict) and progress:
        width = max(map(len, map(str, progress)))
        lines += ["progress:"] + [
            f"  {str(sid):<{width}}  {str(note)[:200]}" for sid, note in progress.items()
        ]
    if run_dir is not None:
        lines += running_counters(run_dir, [str(sid) for sid in running])
    lines += endings_text(reply.get("endings"))
    if reply.get("accounts"):
        lines.append(summary_table(accounts_from_json(reply["accounts"])))
    lines.append(
        "sessions: `benchtui view" + (f" {run_dir}" if run_dir is not None else "") + "` shows each one, live"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    words = list(args.words)
    given = words.pop(0) if words[0] not in COMMANDS else None
    if not words or words[0] not in COMMANDS:
        raise BadInput(f"ctl: expected a command ({' | '.join(COMMANDS)})")
    command = words.pop(0)
    request = request_for(command, words, args.now)
    run_dir = find_run_dir(given, args.state_dir)
    try:
        reply = ask(run_dir, request)
    except NotRunning:
        if command != "status":
            raise
        from benchtui.cli.closing import run_dir_status

        print(run_dir_status(run_dir))
        return 0
    if not reply.get("ok"):
        raise BadInput(str(reply.get("error") or "the campaign refused"))
    try:
        print(
            show_status(reply, run_dir)
            if command == "status"
            else f"campaign {run_dir.name}: {reply.get('message', 'ok')}"  # which one, in a shared state dir
        )
    except (KeyError, TypeError, ValueError, ArithmeticError):
        raise BadInput(f"{run_dir / rundir.CONTROL_SOCKET} answered a malformed {command} reply") from None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
