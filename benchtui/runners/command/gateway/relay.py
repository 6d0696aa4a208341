"""One metered call: authorise the worst case, forward, charge the usage in the answer.

The worst case counts one prompt token per byte of the forwarded request (every tokenizer the
providers use spends at least a byte per token, and JSON only adds bytes) plus a fixed allowance
for what the provider adds around it (tool-use preambles, chat templates); the output side is the
bound the dialect enforced on the request. Whatever goes wrong after the hold (no usage, a
broken stream, a timeout, a client that went away) is charged that worst case: the provider may
have billed it. An error answer from the provider, or no connection to it, is charged nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import trio

from benchtui.core.contract import Usage
from benchtui.runners.command.gateway.dialects import NO_RETRY, REFUSAL_STATUS, Dialect, StreamUsage
from benchtui.runners.command.gateway.session import Binding
from benchtui.runners.command.gateway.sse import EventSplitter

Send = Callable[[dict[str, Any]], Awaitable[None]]
JSON = [(b"content-type", b"application/json")]
FORWARDED = ("content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta")


async def respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] = JSON) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def upstream_headers(dialect: Dialect, binding: Binding, headers: dict[bytes, bytes]) -> dict[str, str]:
    out = {k: headers[k.encode()].decode("latin-1") for k in FORWARDED if k.encode() in headers}
    if binding.api_key:
        if dialect.auth_header == "authorization":
            out["authorization"] = f"Bearer {binding.api_key}"
        else:
            out["x-api-key"] = binding.api_key
    return out


async def metered_call(
    client: httpx.AsyncClient,
    binding: Binding,
    dialect: Dialect,
    request: dict[str, Any],
    headers: dict[bytes, bytes],
    send: Send,
) -> None:
    bound = dialect.prepare(request, binding.upstream_model, binding.model.max_output_tokens)
    body = json.dumps(request).encode()
    worst = Usage(len(body) + binding.prompt_overhead_tokens, bound)
    hold = binding.meter.price(worst)
    if not binding.open or not await binding.meter.authorise(hold):
        limit = binding.meter.limits.model_calls
        message = (
            f"the session's {limit} model calls are spent (counter model_calls)"
            if limit is not None and binding.meter.used("model_calls") >= limit
            else "the session budget is spent: this call does not fit in what is left of its reservation"
        )
        await respond(
            send, REFUSAL_STATUS, dialect.error(429, message, "insufficient_quota"), JSON + NO_RETRY
        )
        return
    binding.authorised += 1
    url = f"{binding.base_url(dialect)}/{dialect.path}"
    settled = False

    def settle(used: Usage | None, served: bool = True) -> None:
        """Charge once, before the client sees the end of the answer (so a session that ends
        right after its last answer has every charge in)."""
        nonlocal settled
        if not settled and binding.open:
            binding.meter.charge(used or worst, settles=hold, served=served)
        settled = True

    scope = trio.CancelScope()
    binding.calls.add(scope)
    try:
        with scope:
            await _forward(
                client, url, body, upstream_headers(dialect, binding, headers), dialect, send, settle
            )
    finally:
        binding.calls.discard(scope)
        settle(None)  # cancelled or failed after the hold: the worst case (docs/design/invariants.md#f6)


async def _forward(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    dialect: Dialect,
    send: Send,
    settle: Callable[..., None],
) -> None:
    """Relay the answer, settling its usage (zero for an error answer, None if it has none)."""
    request = client.build_request("POST", url, content=body, headers=headers)
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        # Not connected: the provider never saw the call. Anything later: it may have billed it.
        unseen = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        settle(Usage() if unseen else None, served=not unseen)  # unseen: its model_calls unit returns
        await respond(send, 502, dialect.error(502, f"gateway: provider unreachable: {exc}", "api_error"))
        return
    try:
        content_type = response.headers.get("content-type", "application/json").encode()
        if response.status_code == 200 and content_type.startswith(b"text/event-stream"):
            await _relay_stream(response, dialect, send, settle)
            return
        data = await response.aread()
        if response.status_code != 200:
            settle(Usage(), served=False)  # an error answer is no generation: not a model call
        else:
            try:
                found = dialect.usage(json.loads(data))
            except ValueError:
                found = None
            settle(Usage(*found) if found else None)
        retry = response.headers.get("retry-after")
        extra = [(b"retry-after", retry.encode())] if retry else []
        await respond(send, response.status_code, data, [(b"content-type", content_type), *extra])
    finally:
        await response.aclose()


async def _relay_stream(
    response: httpx.Response, dialect: Dialect, send: Send, settle: Callable[[Usage | None], None]
) -> None:
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    )
    seen, events = StreamUsage(), EventSplitter()
    try:
        async for chunk in response.aiter_raw():
            for raw, event in events.feed(chunk):
                keep = event is None or dialect.observe(event, seen)
                if seen.complete:
                    settle(Usage(seen.input_tokens, seen.output_tokens))
                if keep:
                    await send({"type": "http.response.body", "body": raw, "more_body": True})
    except httpx.HTTPError:
        pass  # a broken stream: unless its final usage came, the worst case is charged
    settle(None)
    await send({"type": "http.response.body", "body": events.rest})
