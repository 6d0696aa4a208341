"""The gateway's lifetime: `async with open_gateway() as gateway`, one per campaign run.

hypercorn serves the ASGI app in a task of the caller's nursery (on Trio, in the engine's own
thread, so a call's hold goes through the session's meter directly); httpx carries calls to the
provider. It listens on 127.0.0.1 (an ephemeral port) and, for sandboxes without a network, on
a unix socket in a private temporary folder.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path

import httpx
import trio
from hypercorn.config import Config

from benchtui.core.contract import Meter, ModelSpec
from benchtui.runners.command.gateway.app import GatewayApp
from benchtui.runners.command.gateway.connections import Guard, default_limit, serve_guarded
from benchtui.runners.command.gateway.session import PROMPT_OVERHEAD_TOKENS, Binding

HEADER_TIMEOUT_S = 10.0
"""A request's headers are whole within this of their first byte (a slow sender is closed)."""
IDLE_TIMEOUT_S = 120.0
"""An idle connection is closed after this: longer than the clients' own pool expiry (reqwest 90 s,
httpx 5 s, undici 4 s), so a client never sends on a connection the gateway is closing."""


class Gateway:
    def __init__(self, url: str, socket_path: Path, bindings: dict[str, Binding], guard: Guard) -> None:
        self.url = url
        """http://<host>:<port> (OpenAI clients add /v1, Anthropic ones add /v1/messages)."""
        self.socket_path = socket_path
        self._bindings = bindings
        self.connections = guard
        """The connection bounds, and what they did (`evicted`)."""

    @contextlib.contextmanager
    def session(
        self,
        meter: Meter,
        model: ModelSpec,
        api_key: str | None,
        *,
        prompt_overhead_tokens: int = PROMPT_OVERHEAD_TOKENS,
    ) -> Iterator[Binding]:
        """A token for one session, valid until the block ends (then its calls in flight are cut)."""
        binding = Binding(meter, model, api_key, prompt_overhead_tokens)
        self._bindings[binding.token] = binding
        try:
            yield binding
        finally:
            del self._bindings[binding.token]
            binding.close()


@contextlib.asynccontextmanager
async def open_gateway(
    *,
    request_timeout_s: float = 600.0,
    host: str = "127.0.0.1",
    max_connections: int | None = None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
) -> AsyncIterator[Gateway]:
    """`host`: the address the TCP listener binds (another machine's agents need a reachable one).
    `request_timeout_s`: the total deadline of one call, streams included. The connection bounds
    (see `connections`) hold before any token is checked; `max_connections` defaults to a
    quarter of the process's descriptor limit."""
    folder = Path(tempfile.mkdtemp(prefix="benchtui-gw-"))  # short: a socket path has 107 bytes
    socket_path = folder / "gateway.sock"
    config = Config()
    config.bind = [f"{host}:0", f"unix:{socket_path}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = idle_timeout_s
    config.backlog = 1024
    guard = Guard(max_connections or default_limit(), header_timeout_s, idle_timeout_s)
    bindings: dict[str, Binding] = {}
    timeout = httpx.Timeout(request_timeout_s, connect=min(30.0, request_timeout_s))
    # Idle connections are dropped well before a provider's own keep-alive timeout (often 5 s), so
    # a call never goes out on a connection the provider is closing (a 502 for no reason).
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256, keepalive_expiry=2.0)
    try:
        async with (
            httpx.AsyncClient(timeout=timeout, limits=limits) as client,
            trio.open_nursery() as nursery,
        ):
            app = GatewayApp(client, bindings, request_timeout_s)
            urls = await nursery.start(partial(serve_guarded, app, config, guard))
            url = next(u for u in urls if u.startswith(f"http://{host}:"))
            try:
                yield Gateway(url, socket_path, bindings, guard)
            finally:
                for binding in list(bindings.values()):
                    binding.close()
                nursery.cancel_scope.cancel()  # the calls in flight were cut with their sessions
    finally:
        shutil.rmtree(folder, ignore_errors=True)
