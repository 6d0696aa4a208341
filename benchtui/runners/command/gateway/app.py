"""The gateway's ASGI application: token -> session, then one metered call per request.

Every answer it makes itself is in the API's error shape: an unknown token, a body that is not
a JSON object (too large, too deep, not JSON, NaN), a field of the wrong type, an option the
price table cannot bound, and (should it ever happen) a failure of its own: never an empty 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import trio

from benchtui.runners.command.gateway.dialects import ROUTES, ChatCompletions, Dialect, Messages
from benchtui.runners.command.gateway.relay import (
    Reply,
    Scrubber,
    _read_bounded,
    metered_call,
    upstream_headers,
)
from benchtui.runners.command.gateway.session import Binding

MAX_BODY = 64 * 1024 * 1024
BODY_TIMEOUT_S = 60.0
"""A request body arrives within this, once its token is known good."""
COUNT_TOKENS = "/v1/messages/count_tokens"  # free at the provider: forwarded, not metered
log = logging.getLogger(__name__)


class BadBody(Exception):
    pass


def _no_constants(name: str) -> Any:
    raise BadBody(f"{name} is not JSON")  # Python reads NaN and Infinity; providers do not


class GatewayApp:
    def __init__(
        self, client: httpx.AsyncClient, bindings: dict[str, Binding], request_timeout_s: float = 600.0
    ) -> None:
        self.client = client
        self.bindings = bindings
        self.request_timeout_s = request_timeout_s
        self._scrub: tuple[frozenset[str], Scrubber] = (frozenset(), Scrubber(()))

    def _scrubber(self) -> Scrubber:
        """Every key the gateway holds now (any session's: one agent may see another's echoed)."""
        keys = frozenset(b.api_key for b in self.bindings.values() if b.api_key)
        if keys != self._scrub[0]:
            self._scrub = (keys, Scrubber(keys))
        return self._scrub[1]

    async def __call__(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict]],
        send: Callable[[dict], Awaitable[None]],
    ) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        path = scope["path"]
        dialect: Dialect = (
            Messages() if path.startswith("/v1/messages") else ROUTES.get(path, ChatCompletions)()
        )
        reply = Reply(send, dialect, self._scrubber())
        try:
            await self._handle(scope, receive, path, dialect, reply)
        except Exception:  # a bug of ours: the agent still gets an answer in its API's shape
            log.exception("gateway: failed on %s", path)
            await reply.fail(500, "gateway: internal error")

    async def _handle(
        self, scope: dict[str, Any], receive: Callable, path: str, dialect: Dialect, reply: Reply
    ) -> None:
        headers = dict(scope["headers"])
        binding = self.bindings.get(_token(headers))
        if binding is None or not binding.open:
            body = dialect.error(401, "gateway: unknown or expired session token", "authentication_error")
            await reply.whole(401, body)
            return
        if scope["method"] != "POST" or (path not in ROUTES and path != COUNT_TOKENS):
            await reply.whole(404, dialect.error(404, f"gateway: no route {path}", "not_found_error"))
            return
        request = await _request(receive, dialect, reply)
        if request is None:
            return
        if path == COUNT_TOKENS:
            await self._count_tokens(binding, dialect, request, headers, reply)
        elif request.get("previous_response_id") or request.get("conversation"):
            # The prompt would be stored upstream, out of sight: its worst case could not be bounded.
            message = "gateway: send the whole conversation with each call (store = false)"
            await reply.whole(400, dialect.error(400, message, "invalid_request_error"))
        else:
            await metered_call(self.client, binding, dialect, request, headers, reply, self.request_timeout_s)

    async def _count_tokens(
        self, binding: Binding, dialect: Dialect, request: dict[str, Any], headers: dict, reply: Reply
    ) -> None:
        request["model"] = binding.upstream_model
        with trio.move_on_after(self.request_timeout_s):
            try:
                async with self.client.stream(
                    "POST",
                    f"{binding.base_url(dialect)}/messages/count_tokens",
                    content=json.dumps(request).encode(),
                    headers=upstream_headers(dialect, binding, headers),
                ) as r:
                    data = await _read_bounded(r)
                    status = r.status_code
            except (httpx.HTTPError, RecursionError, ValueError) as exc:
                await reply.fail(502, f"gateway: provider unreachable: {type(exc).__name__}")
                return
            if data is None:
                await reply.fail(502, "gateway: the provider's answer is too large")
            else:
                await reply.whole(status, data)
            return
        await reply.fail(504, "gateway: the provider did not answer in time", "timeout_error")


async def _request(receive: Callable, dialect: Dialect, reply: Reply) -> dict[str, Any] | None:
    """The body as a JSON object, or None once the agent has its 4xx (or has gone)."""
    with trio.move_on_after(BODY_TIMEOUT_S) as timer:
        try:
            raw = await _body(receive)
            if raw is None:
                return None  # the client went away
            request = json.loads(raw, parse_constant=_no_constants)
            if not isinstance(request, dict):
                raise BadBody("the body is not a JSON object")
            return request
        except RecursionError:
            why = "the body nests deeper than JSON parsers allow"
        except (ValueError, BadBody) as exc:
            why = str(exc) if isinstance(exc, BadBody) else "the body is not JSON"
        status = 413 if why.startswith("the body is over") else 400
        kind = "request_too_large" if status == 413 else "invalid_request_error"
        await reply.whole(status, dialect.error(status, f"gateway: {why}", kind))
        return None
    if timer.cancelled_caught:
        await reply.whole(408, dialect.error(408, "gateway: the body came too slowly", "timeout_error"))
    return None


def _token(headers: dict[bytes, bytes]) -> str:
    auth = headers.get(b"authorization", b"").decode("latin-1")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return headers.get(b"x-api-key", b"").decode("latin-1").strip()


async def _body(receive: Callable[[], Awaitable[dict]]) -> bytes | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise BadBody(f"the body is over {MAX_BODY} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)
