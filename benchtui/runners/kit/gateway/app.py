"""The gateway's ASGI application: token -> session, then one metered call per request.

Every answer it makes itself is in the API's error shape: an unknown token, a body that is not
a JSON object (too large, too deep, not JSON, NaN), a field of the wrong type, an option the
price table cannot bound, and (should it ever happen) a failure of its own: never an empty 500.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from benchtui.runners.kit.gateway.call import (
    Meter,
    Reply,
    Scrubber,
    metered_call,
    read_bounded,
    upstream_headers,
)
from benchtui.runners.kit.gateway.dialects import ROUTES, ChatCompletions, Dialect, Messages
from benchtui.runners.kit.gateway.grant import Grant

MAX_BODY = 64 * 1024 * 1024
BODY_TIMEOUT_S = 60.0
"""A request body arrives within this, once its token is known good."""
COUNT_TOKENS = "/v1/messages/count_tokens"  # free at the provider: forwarded, not metered
log = logging.getLogger(__name__)


class BadBody(Exception):
    pass


class GatewayApp:
    """Served by each relay process: `grants` is the relay's copy of the live tokens."""

    def __init__(self, client: aiohttp.ClientSession, meter: Meter, request_timeout_s: float = 600.0) -> None:
        self.client = client
        self.meter = meter
        self.grants: dict[str, Grant] = {}
        self.lookup: Callable[[str], Awaitable[Grant | None]] | None = None
        """A node's relay: asks the engine for a token it has not seen (only the sessions that
        run on its node come to it, so only their keys ever reach it)."""
        self.request_timeout_s = request_timeout_s
        self._scrub: Scrubber | None = None

    def grants_changed(self) -> None:
        self._scrub = None

    def _scrubber(self) -> Scrubber:
        """Every key the relay holds now (any session's: one agent may see another's echoed)."""
        if self._scrub is None:
            self._scrub = Scrubber({g.api_key for g in self.grants.values() if g.api_key})
        return self._scrub

    async def __call__(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
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
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        path: str,
        dialect: Dialect,
        reply: Reply,
    ) -> None:
        headers = dict(scope["headers"])
        token = _token(headers)
        grant = self.grants.get(token)
        if grant is None and self.lookup is not None and token:
            grant = await self.lookup(token)
        if grant is None or not grant.open:
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
            await self._count_tokens(grant, dialect, request, headers, reply)
        elif request.get("previous_response_id") or request.get("conversation"):
            # The prompt would be stored upstream, out of sight: its worst case could not be bounded.
            message = "gateway: send the whole conversation with each call (store = false)"
            await reply.whole(400, dialect.error(400, message, "invalid_request_error"))
        else:
            await metered_call(
                self.client, self.meter, grant, dialect, request, headers, reply, self.request_timeout_s
            )

    async def _count_tokens(
        self,
        grant: Grant,
        dialect: Dialect,
        request: dict[str, Any],
        headers: dict[bytes, bytes],
        reply: Reply,
    ) -> None:
        request["model"] = grant.model
        try:
            async with asyncio.timeout(self.request_timeout_s):
                try:
                    async with self.client.post(
                        f"{grant.base_url(dialect)}/messages/count_tokens",
                        data=orjson.dumps(request),
                        headers=upstream_headers(dialect, grant, headers),
                    ) as r:
                        data = await read_bounded(r)
                        status = r.status
                except aiohttp.ClientError as exc:
                    await reply.fail(502, f"gateway: provider unreachable: {type(exc).__name__}")
                    return
        except TimeoutError:
            await reply.fail(504, "gateway: the provider did not answer in time", "timeout_error")
            return
        if data is None:
            await reply.fail(502, "gateway: the provider's answer is too large")
        else:
            await reply.whole(status, data)


async def _request(
    receive: Callable[[], Awaitable[dict[str, Any]]], dialect: Dialect, reply: Reply
) -> dict[str, Any] | None:
    """The body as a JSON object, or None once the agent has its 4xx (or has gone)."""
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            raw = await _body(receive)
    except TimeoutError:
        await reply.whole(408, dialect.error(408, "gateway: the body came too slowly", "timeout_error"))
        return None
    except BadBody as exc:
        await reply.whole(413, dialect.error(413, f"gateway: {exc}", "request_too_large"))
        return None
    if raw is None:
        return None  # the client went away
    try:
        request = orjson.loads(raw)  # strict JSON: no NaN or Infinity (providers read none)
    except orjson.JSONDecodeError as exc:
        why = (
            "the body nests deeper than JSON parsers allow"
            if "recursion" in str(exc)
            else "the body is not JSON"
        )
    else:
        if isinstance(request, dict):
            return request
        why = "the body is not a JSON object"
    await reply.whole(400, dialect.error(400, f"gateway: {why}", "invalid_request_error"))
    return None


def _token(headers: dict[bytes, bytes]) -> str:
    auth = headers.get(b"authorization", b"").decode("latin-1")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return headers.get(b"x-api-key", b"").decode("latin-1").strip()


async def _body(receive: Callable[[], Awaitable[dict[str, Any]]]) -> bytes | None:
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
