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
from hypercorn.trio import serve

from benchtui.core.contract import Meter, ModelSpec
from benchtui.runners.command.gateway.app import GatewayApp
from benchtui.runners.command.gateway.session import PROMPT_OVERHEAD_TOKENS, Binding


class Gateway:
    def __init__(self, url: str, socket_path: Path, bindings: dict[str, Binding]) -> None:
        self.url = url
        """http://<host>:<port> (OpenAI clients add /v1, Anthropic ones add /v1/messages)."""
        self.socket_path = socket_path
        self._bindings = bindings

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
    *, request_timeout_s: float = 600.0, host: str = "127.0.0.1"
) -> AsyncIterator[Gateway]:
    """`host`: the address the TCP listener binds (another machine's agents need a reachable one)."""
    folder = Path(tempfile.mkdtemp(prefix="benchtui-gw-"))  # short: a socket path has 107 bytes
    socket_path = folder / "gateway.sock"
    config = Config()
    config.bind = [f"{host}:0", f"unix:{socket_path}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = 600.0
    bindings: dict[str, Binding] = {}
    timeout = httpx.Timeout(request_timeout_s, connect=30.0)
    # Idle connections are dropped well before a provider's own keep-alive timeout (often 5 s), so
    # a call never goes out on a connection the provider is closing (a 502 for no reason).
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256, keepalive_expiry=2.0)
    try:
        async with (
            httpx.AsyncClient(timeout=timeout, limits=limits) as client,
            trio.open_nursery() as nursery,
        ):
            shutdown = trio.Event()
            urls = await nursery.start(
                partial(serve, GatewayApp(client, bindings), config, shutdown_trigger=shutdown.wait)
            )
            url = next(u for u in urls if u.startswith(f"http://{host}:"))
            try:
                yield Gateway(url, socket_path, bindings)
            finally:
                for binding in list(bindings.values()):
                    binding.close()
                shutdown.set()
                nursery.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
    finally:
        shutil.rmtree(folder, ignore_errors=True)
