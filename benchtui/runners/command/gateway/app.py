"""The gateway's ASGI application: token -> session, then one metered call per request."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from benchtui.runners.command.gateway.dialects import ROUTES, ChatCompletions, Dialect, Messages
from benchtui.runners.command.gateway.relay import metered_call, respond, upstream_headers
from benchtui.runners.command.gateway.session import Binding

MAX_BODY = 64 * 1024 * 1024
COUNT_TOKENS = "/v1/messages/count_tokens"  # free at the provider: forwarded, not metered


class GatewayApp:
    def __init__(self, client: httpx.AsyncClient, bindings: dict[str, Binding]) -> None:
        self.client = client
        self.bindings = bindings

    async def __call__(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict]],
        send: Callable[[dict], Awaitable[None]],
    ) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        path = scope["path"]
        dialect: Dialect = (
            Messages() if path.startswith("/v1/messages") else ROUTES.get(path, ChatCompletions)()
        )
        headers = dict(scope["headers"])
        binding = self.bindings.get(_token(headers))
        if binding is None or not binding.open:
            body = dialect.error(401, "gateway: unknown or expired session token", "authentication_error")
            await respond(send, 401, body)
            return
        if scope["method"] != "POST" or (path not in ROUTES and path != COUNT_TOKENS):
            await respond(send, 404, dialect.error(404, f"gateway: no route {path}", "not_found_error"))
            return
        raw = await _body(receive)
        try:
            request = json.loads(raw) if raw is not None else None
        except ValueError:
            request = None
        if not isinstance(request, dict):
            await respond(
                send,
                400,
                dialect.error(400, "gateway: the body is not a JSON object", "invalid_request_error"),
            )
            return
        if path == COUNT_TOKENS:
            await self._count_tokens(binding, dialect, request, headers, send)
        elif request.get("previous_response_id") or request.get("conversation"):
            # The prompt would be stored upstream, out of sight: its worst case could not be bounded.
            message = "gateway: send the whole conversation with each call (store = false)"
            await respond(send, 400, dialect.error(400, message, "invalid_request_error"))
        else:
            await metered_call(self.client, binding, dialect, request, headers, send)

    async def _count_tokens(
        self, binding: Binding, dialect: Dialect, request: dict[str, Any], headers: dict, send: Callable
    ) -> None:
        request["model"] = binding.upstream_model
        try:
            r = await self.client.post(
                f"{binding.base_url(dialect)}/messages/count_tokens",
                content=json.dumps(request).encode(),
                headers=upstream_headers(dialect, binding, headers),
            )
        except httpx.HTTPError as exc:
            await respond(send, 502, dialect.error(502, f"gateway: provider unreachable: {exc}", "api_error"))
            return
        await respond(send, r.status_code, r.content)


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
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)
