"""The engine's side of `[executor] kind = "ray"`: one connection per campaign, a task per attempt.

Ray's driver API blocks, so every call into it runs in a worker thread (`trio.to_thread`), and a
running task is awaited without a thread at all: its ObjectRef's future wakes the Trio task.
A cancelled attempt (kill, wall time, stop-now) force-cancels its task: Ray kills the task's
worker process, and with it the agent (see `node`: the lifeline). Tasks are never retried by
Ray (`max_retries=0`): a lost node is the attempt's infrastructure error, retried by `--resume`
like any other, with what it spent kept in the ledger.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import ray
import trio
from ray import exceptions as rx

from benchtui.core.executor import ExecutorConfig
from benchtui.runners.kit.ray import node as node_side

CANCEL_WAIT_S = 2.0
PROBE_TIMEOUT_S = 5.0
_lock = threading.Lock()
_users = 0
_remote: dict[Callable[..., Any], Any] = {}  # functions made Ray remote functions, once each


class ExecutorUnavailable(RuntimeError):
    """The cluster cannot run these attempts (unreachable, or it lacks the resources asked for)."""


class RemoteFailed(RuntimeError):
    """An attempt's task ended without a result: the node, its worker or the task was lost."""


class RayExecutor:
    def __init__(self, config: ExecutorConfig, gateway_host: str) -> None:
        self.config = config
        self.gateway_host = gateway_host
        self._options: dict[str, Any] = {
            "num_cpus": config.num_cpus,
            "resources": dict(config.resources),
            "max_retries": 0,
            "scheduling_strategy": "SPREAD" if config.spread else "DEFAULT",
        }

    async def run_agent(self, launch: node_side.Launch, target: str, expected: str) -> node_side.NodeResult:
        """Run `launch` on a node until it ends; raises RemoteFailed if the task was lost."""
        result: node_side.NodeResult = await self.call(node_side.run_agent, launch, target, expected)
        return result

    async def call(self, function: Callable[..., Any], *args: Any) -> Any:
        """`function(*args)` as a task on a node (once: never retried), until it returns."""
        remote = _remote.get(function)
        if remote is None:
            remote = _remote[function] = ray.remote(function)
        task = remote.options(**self._options)
        ref = await trio.to_thread.run_sync(lambda: task.remote(*args))
        return await _result(ref)


async def _result(ref: Any) -> Any:
    done = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def wake(_: object) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)

    future = ref.future()
    future.add_done_callback(wake)
    try:
        await done.wait()
    except BaseException:  # cancelled: kill the task's worker (and so its agent), wait for the end
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(lambda: ray.cancel(ref, force=True))
            with trio.move_on_after(CANCEL_WAIT_S):
                await done.wait()
        raise
    try:
        return future.result()
    except rx.RayTaskError as exc:  # the node's code raised: a bug or a broken node, not the model
        raise RemoteFailed(f"on the node: {type(exc.cause).__name__}: {exc.cause}") from None
    except rx.RayError as exc:  # node died, worker crashed, object lost, cancelled from elsewhere
        raise RemoteFailed(f"ray: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}") from None


def _reachable(address: str) -> None:
    """A quick TCP connect first: `ray.init` on an address nobody serves retries for minutes."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return  # "auto", "ray://…": left to Ray
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise ExecutorUnavailable(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}"
        ) from None


def _connect(config: ExecutorConfig) -> str:
    global _users
    _reachable(str(config.address))
    with _lock:
        if not ray.is_initialized():
            ray.init(
                address=config.address, log_to_driver=False, logging_level=logging.ERROR
            )  # not on the TUI
        _users += 1
    try:
        _check_resources(config, ray.cluster_resources())  # type: ignore[no-untyped-call]
    except BaseException:
        _disconnect()
        raise
    return config.gateway_host or str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]


def _disconnect() -> None:
    global _users
    with _lock:
        _users -= 1
        if _users == 0:
            ray.shutdown()


def _check_resources(config: ExecutorConfig, cluster: dict[str, float]) -> None:
    """A task asking for more than the cluster has would wait forever: refuse it up front."""
    wanted = {**config.resources, "CPU": config.num_cpus}
    short = [
        f"{k}={v:g} (cluster: {cluster.get(k, 0):g})" for k, v in wanted.items() if cluster.get(k, 0) < v
    ]
    if short:
        raise ExecutorUnavailable(f"the Ray cluster at {config.address} lacks {', '.join(short)}")


@contextlib.asynccontextmanager
async def open_ray(config: ExecutorConfig) -> AsyncIterator[RayExecutor]:
    """Connect this process to the cluster (once, shared by the campaign's runners) for the block."""
    connect: Callable[[], str] = lambda: _connect(config)  # noqa: E731
    try:
        host = await trio.to_thread.run_sync(connect)
    except ExecutorUnavailable:
        raise
    except Exception as exc:
        raise ExecutorUnavailable(f"cannot reach the Ray cluster at {config.address}: {exc}") from None
    try:
        yield RayExecutor(config, host)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(_disconnect)
