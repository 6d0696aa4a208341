"""The mini runner on a remote executor (`[executor] kind = "ray"`): the engine's side.

The worker runs on a node (`mini/node.py`) and calls back: each session expects
one connection on the runner's channel listener, carrying its one-time token; the engine answers
with the session's request and then serves the usual protocol on that connection, with the same
handler as a local worker, so every model call is authorised by this engine's meter first.
The worker's pid is the node's: nothing here signals it; closing the channel stops it (it
watches the connection), and a cancelled attempt force-cancels its Ray task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from benchtui.core.outcome import SessionFacts
from benchtui.runners.mini.protocol import EngineChannel

if TYPE_CHECKING:
    from benchtui.runners.kit.ray.callback import CallbackListener
    from benchtui.runners.kit.ray.cluster import RayExecutor
    from benchtui.runners.mini.serving import WorkerSession


class RemoteWorker:
    """Stands for the worker in the runner's handler: its pid lives on another machine."""

    pid: int | None = None

    def adopt(self, pid: int) -> None:
        self.pid = pid


async def run_remote_worker(
    executor: RayExecutor,
    listener: CallbackListener,
    request: dict[str, Any],
    served: WorkerSession,
    *,
    startup_timeout_s: float,
) -> None:
    """Run the session's worker on a node, serving its channel here, until both have ended."""
    from benchtui.runners.kit.ray.cluster import RemoteFailed
    from benchtui.runners.mini import node as mini_node

    report = served.report
    token, arrivals = listener.expect()
    ended: dict[str, Any] = {}

    async def on_node(cancel_scope: trio.CancelScope) -> None:
        try:
            ended["task"] = await executor.call(mini_node.run_worker, listener.address, token)
        except RemoteFailed as exc:
            ended["failed"] = str(exc)
            cancel_scope.cancel()  # the node is gone: stop serving its channel

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(on_node, nursery.cancel_scope)
            arrival = None
            with trio.move_on_after(startup_timeout_s):
                arrival = await arrivals.receive()
            if arrival is not None:
                try:
                    await _serve(arrival.stream, request, served)
                finally:
                    arrival.finished.set()
            elif "failed" not in ended:
                report.start_error = "the worker did not call back from its node in time"
                nursery.cancel_scope.cancel()
    finally:
        listener.forget(token)
    task = ended.get("task") or {}
    if "failed" in ended and report.done is None:  # after its report, the session's outcome stands
        report.start_error = report.start_error or ended["failed"]
    node = task.get("node")
    report.facts = SessionFacts(executor="ray", node=node if isinstance(node, dict | str) else None)
    paths = request["paths"]
    for name, key in (("traj.json", "trajectory"), ("worker.log", "log")):
        data = (task.get("files") or {}).get(name)
        if data is not None:
            await trio.to_thread.run_sync(Path(paths[key]).write_bytes, data)


async def _serve(stream: trio.SocketStream, request: dict[str, Any], served: WorkerSession) -> None:
    channel = EngineChannel(stream)
    try:
        await stream.send_all(json.dumps(request).encode() + b"\n")
        while served.report.done is None and (message := await channel.receive_record()) is not None:
            await served.handle(message, channel)  # its cgroup is the node's: not ours (served.remote)
    finally:
        with trio.CancelScope(shield=True):
            await channel.aclose()  # the worker sees it and stops (if it has not already)
