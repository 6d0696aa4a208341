"""The node's side of a remote attempt: runs inside a Ray task (a worker process on some node).

It makes the session's copy of the target in a private folder of the node, checks its
fingerprint before anything starts (docs/design/invariants.md#f1), starts the agent in its own process group (with a
relay from the sandbox to the engine's gateway), waits for it, and hands back its log and
certificate lines by value, so nothing needs a filesystem shared with the engine.

Whatever ends the task, the agent dies with it: the task's worker holds the only write end of
a lifeline pipe. A janitor process (its own process group) and the sandbox's own watcher read
it; when the worker exits in any way (a force-cancel kills it, its node's raylet dies, the
engine dies and Ray reaps the job's workers), they see the end of the pipe, kill the agent's
group, and remove the folder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from benchtui.core import tempdirs, volume, workspace
from benchtui.runners.kit import collect
from benchtui.runners.kit.agentlog import MAX_LOG_BYTES, CappedLog, pump
from benchtui.runners.kit.collect import MAX_FILE_BYTES
from benchtui.runners.kit.toolgate.node import NodeGate, NodeGateSpec

DRAIN_S = 5.0
"""How long the output of an ended agent is still read once its group is killed."""
JANITOR = (
    'cat <&{fd} >/dev/null; kill -KILL -- "-$1" 2>/dev/null; umount -l -- "$2/workdir" 2>/dev/null;'
    ' rm -rf -- "$2"'
)
# The relay: the sandbox's unix socket -> the gateway's relay on this node (or its TCP listener on
# the engine's machine).
RELAY = (
    'socat UNIX-LISTEN:"$1",fork TCP:"$2" & for i in $(seq 500); do [ -S "$1" ] && break; sleep 0.01; done;'
    ' shift 2; exec "$@"'
)


class NodeGateway(Protocol):
    """A relay of the gateway on this node (the command runner's `gateway.nodes.NodeGateway`)."""

    def start(self) -> str:
        """`127.0.0.1:port` of the node's relay, started if none is running (OSError: could not)."""
        ...


@dataclass(frozen=True)
class Launch:
    """What the agent runs, as a function of where the node put things (built on the engine's side)."""

    build: Callable[..., tuple[list[str], dict[str, str] | None]]
    """(workdir, prompt_file, gateway socket, lifeline fd, [gateway=URL]) -> (argv, env)."""
    prompt: str
    relay_to: str | None
    """`host:port` of the gateway when the agent runs in a sandbox (its only way out), else None."""
    needs: tuple[str, ...] = ()
    """Executables the agent needs on the node (absolute paths), checked before the copy."""
    gateway: NodeGateway | None = None
    """The gateway's relay on the node, which the agent calls instead of the engine's machine."""
    gate: NodeGateSpec | None = None
    """The session's tool gate (counted tools, `submit`): served on the node, decided by the engine."""
    disk: int | None = None
    """The copy on a filesystem of its own with this many bytes free (`core.volume`), or None."""


@dataclass
class NodeResult:
    node: dict[str, str]
    fingerprint: str = ""
    status: str = ""
    code: int | None = None
    error: str = ""
    """Set when the node could not start the agent (a missing tool, a copy that is not the target)."""
    log: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)
    """Top-level files the agent left beside its workdir (e.g. a trajectory), by name."""
    certificate_lines: list[str] = field(default_factory=list)
    collect_problem: str = ""
    """What was wrong with certificates.jsonl (a link, a FIFO, too large…): the model's outcome."""
    agent_started: float = 0.0
    """time.time() on the node when the agent's process started."""


def run_agent(launch: Launch, target: str, expected: str) -> NodeResult:
    here = where()
    missing = [path for path in launch.needs if not os.access(path, os.X_OK)]
    if missing:
        return NodeResult(here, error=f"not on node {here['host']}: {', '.join(missing)}")
    folder = tempdirs.make("node")  # short: it holds a unix socket
    reader, writer = os.pipe()
    try:
        with contextlib.ExitStack() as stack:  # the tool gate's end, once the agent ended
            return _run(launch, Path(target), expected, folder, reader, here, stack)
    finally:
        os.close(writer)  # the janitor and the sandbox's watcher see the end: all of it dies
        with contextlib.suppress(OSError):
            os.close(reader)


def _run(
    launch: Launch,
    target: Path,
    expected: str,
    folder: Path,
    lifeline: int,
    here: dict[str, str],
    stack: contextlib.ExitStack,
) -> NodeResult:
    workdir, prompt_file, socket_dir = folder / "workdir", folder / "prompt.md", folder / "gw"
    try:
        workspace.make_session_copy(target, workdir, launch.disk)
    except volume.VolumeError as exc:
        return NodeResult(here, error=f"the session's copy could not be made on node {here['host']}: {exc}")
    stack.callback(volume.remove, workdir)  # before the folder goes (`run_agent`'s finally)
    found = workspace.fingerprint(workdir)
    if found.split()[0] != expected.split()[0].removesuffix("+dirty"):
        return NodeResult(here, found, error=f"the node's copy ({found}) is not the target ({expected})")
    prompt_file.write_text(launch.prompt)
    socket_dir.mkdir()
    relay_to, extra = launch.relay_to, {}
    if launch.gateway is not None:
        try:
            address = launch.gateway.start()
        except OSError as exc:
            return NodeResult(here, found, error=str(exc))
        relay_to = address if relay_to else None
        extra = {"gateway": f"http://{address}"}
        here["gateway"] = address  # the node's relay served this session's calls
    gate, sandbox = None, None
    if launch.gate is not None:
        gate = NodeGate(launch.gate, folder, workdir)
        try:
            sandbox = gate.open()
        except OSError as exc:
            return NodeResult(
                here, found, error=f"the engine's tool gate is out of reach from {here['host']}: {exc}"
            )
        stack.callback(gate.close)
    argv, env = launch.build(
        workdir, prompt_file, socket_dir / "gateway.sock", lifeline, gate=sandbox, **extra
    )
    if relay_to:
        argv = ["/bin/bash", "-c", RELAY, "relay", str(socket_dir / "gateway.sock"), relay_to, *argv]
    log = folder / "agent.log"
    started = time.time()
    agent = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
        cwd=workdir, start_new_session=True, pass_fds=(lifeline,),
    )  # fmt: skip
    start_janitor(lifeline, agent.pid, folder)
    if gate is not None:
        gate.on_end = lambda: _kill_group(agent.pid)  # an accepted submit: the session ends there
        if gate.ended:
            gate.on_end()
    assert agent.stdout is not None
    with CappedLog(log) as out, agent.stdout:  # bounded on the node's disk and in its memory
        # In a thread: the relay (and what the agent left behind) hold the pipe open until killed.
        reader = threading.Thread(target=pump, args=(agent.stdout.fileno(), out), daemon=True)
        reader.start()
        code: int | None = agent.wait()
        _kill_group(agent.pid)  # the relay, and what the agent left in its group
        reader.join(DRAIN_S)
    accepted = gate is not None and gate.ended
    certificates = collect.certificate_lines(workdir)
    return NodeResult(
        here,
        found,
        status="Accepted" if accepted else f"exit {code}",  # stopped at an accepted submit
        code=None if accepted else code,
        log=_read(log, MAX_LOG_BYTES),
        files=collect.top_files(folder, MAX_FILE_BYTES, skip=(log.name,)),
        certificate_lines=certificates.lines,
        collect_problem=certificates.problem,
        agent_started=started,
    )


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def start_janitor(lifeline: int, group: int, folder: Path) -> None:
    """A process that, once the lifeline's write end closes, kills `group` and removes `folder`.

    Started through a shell that exits at once, so the janitor is not a child of this worker:
    Ray kills a dying worker's children, which would take the janitor along before it cleans up.
    bash, not sh: the lifeline's descriptor may be above 9."""
    janitor = JANITOR.format(fd=lifeline)
    launcher = subprocess.Popen(
        ["/bin/bash", "-c", f"/bin/bash -c '{janitor}' janitor \"$1\" \"$2\" &", "launch", str(group), str(folder)],
        pass_fds=(lifeline,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    launcher.wait()


def _read(path: Path, limit: int) -> bytes:
    with path.open("rb") as f:
        data = f.read(limit + 1)
    return data if len(data) <= limit else data[:limit] + b"\n[benchtui: cut at %d bytes]\n" % limit


def where() -> dict[str, str]:
    """This node: host name, address and Ray node id (recorded in the session's details)."""
    found = {"host": socket.gethostname(), "ip": "", "node_id": ""}
    try:
        import ray  # present: this runs in a Ray worker

        found["ip"] = str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]
        found["node_id"] = str(ray.get_runtime_context().get_node_id())
    except Exception:  # run outside Ray
        pass
    return found
