"""One metered call: plan it (policy), hold its worst case, forward, charge the final usage.

The worst case counts one prompt token per byte of the forwarded request (every tokenizer the
providers use spends at least a byte per token, and JSON only adds bytes) plus a fixed allowance
for what the provider adds around it (tool-use preambles, chat templates); the output side is the
bound the policy enforced on the request, times its choices. Whatever goes wrong after the hold
(no usage, a broken or endless stream, an answer over MAX_ANSWER_BYTES, the call's total
deadline, a client that went away) is charged that worst case: the provider may have billed it.
An error answer from the provider, or no connection to it, is charged nothing. Everything the
provider sends back is scrubbed of every key the gateway holds before the agent sees it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp
import orjson

from benchtui.core.usage import Usage
from benchtui.runners.command.gateway import policy
from benchtui.runners.command.gateway.dialects import NO_RETRY, REFUSAL_STATUS, Dialect
from benchtui.runners.command.gateway.grant import Grant
from benchtui.runners.command.gateway.sse import EventSplitter, EventTooLarge
from benchtui.runners.kit import throttle

Send = Callable[[dict[str, Any]], Awaitable[None]]
JSON = [(b"content-type", b"application/json")]
FORWARDED = ("content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta")
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""A provider's answer, whole or streamed; past it the call is cut and charged its hold."""
REDACTED = b"[redacted by benchtui]"
Used = Usage | None
"""The usage to charge (core/usage.py, by bucket); None: the call's worst case (the hold)."""
NOTHING = Usage()
"""What an error answer, or a call that never reached the provider, costs."""


class Meter(Protocol):
    """The engine's meter, as a relay reaches it (`relay.EngineLink`)."""

    async def hold(self, token: str, prompt_tokens: int, output_tokens: int) -> tuple[int, str | None]:
        """(call id, None) once the worst case is held durably; (_, why) when it is refused."""
        ...

    def charge(self, call: int, used: Used, served: bool = True) -> None: ...

    def throttled(self, call: int, retry_after_s: float | None) -> None:
        """The provider answered call `call` with 429 (sent before its charge)."""
        ...


class Scrubber:
    """Every form a key may take in a provider's echo (as is, JSON-escaped, URL-encoded)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = set()
        for secret in secrets:
            if len(secret) >= 8:  # shorter strings would redact ordinary words, not keys
                forms |= {secret, json.dumps(secret)[1:-1], quote(secret, safe="")}
        self._forms = sorted((f.encode() for f in forms), key=len, reverse=True)
        # A few forms: `in` (C memchr speed, 0.3 ms a MiB); many: one regex pass (6 us an event
        # for 64 keys, where 192 `in` tests take 130 us).
        many = len(self._forms) > 9
        self._pattern = re.compile(b"|".join(map(re.escape, self._forms))) if many else None

    def __call__(self, data: bytes) -> bytes:
        if self._pattern is not None:
            return self._pattern.sub(REDACTED, data)
        for form in self._forms:
            if form in data:
                data = data.replace(form, REDACTED)
        return data


@dataclass
class Reply:
    """The agent's side of the call: what has been sent, so a cut call ends cleanly."""

    send: Send
    dialect: Dialect
    scrub: Scrubber
    started: bool = False
    finished: bool = False

    async def whole(self, status: int, body: bytes, headers: list[tuple[bytes, bytes]] = JSON) -> None:
        await self.start(status, headers)
        await self.body(body, more=False)

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.started = True
        headers = [(k, self.scrub(v)) for k, v in headers]
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, data: bytes, more: bool = True) -> None:
        self.finished = not more
        await self.send({"type": "http.response.body", "body": self.scrub(data), "more_body": more})

    async def fail(self, status: int, message: str, kind: str = "api_error") -> None:
        """An error the agent's SDK understands, however far the answer had got."""
        if not self.started:
            await self.whole(status, self.dialect.error(status, message, kind))
        elif not self.finished:
            await self.body(self.dialect.stream_error(message), more=False)


def upstream_headers(dialect: Dialect, grant: Grant, headers: dict[bytes, bytes]) -> dict[str, str]:
    out = {k: headers[k.encode()].decode("latin-1") for k in FORWARDED if k.encode() in headers}
    out["accept-encoding"] = "identity"  # the size cap counts the bytes as they will be held
    if grant.api_key:
        if dialect.auth_header == "authorization":
            out["authorization"] = f"Bearer {grant.api_key}"
        else:
            out["x-api-key"] = grant.api_key
    return out


async def metered_call(
    client: aiohttp.ClientSession,
    meter: Meter,
    grant: Grant,
    dialect: Dialect,
    request: dict[str, Any],
    headers: dict[bytes, bytes],
    reply: Reply,
    timeout_s: float,
) -> None:
    plan = policy.plan_call(dialect.name, request, grant.model, grant.max_output, grant.overhead)
    if isinstance(plan, policy.Refusal):
        await reply.whole(plan.status, dialect.error(plan.status, plan.message, plan.kind))
        return
    call, refused = await meter.hold(grant.token, plan.prompt_tokens, plan.output_tokens)
    if refused is not None or not grant.open:
        message = refused or "gateway: unknown or expired session token"
        await reply.whole(REFUSAL_STATUS, dialect.error(429, message, "insufficient_quota"), JSON + NO_RETRY)
        return
    settled = False

    def settle(used: Used, served: bool = True) -> None:
        """Charge once, before the client sees the end of the answer (so a session that ends
        right after its last answer has every charge in)."""
        nonlocal settled
        if not settled:
            meter.charge(call, used, served)
        settled = True

    url = f"{grant.base_url(dialect)}/{dialect.path}"
    deadline = asyncio.timeout(timeout_s)  # total, streams included; the session's end cuts it too
    grant.calls.add(deadline)
    try:
        async with deadline:
            await _forward(
                client,
                url,
                plan,
                upstream_headers(dialect, grant, headers),
                dialect,
                reply,
                settle,
                lambda wait: meter.throttled(call, wait),
            )
    except TimeoutError:
        if not deadline.expired():
            raise
        settle(None)
        if grant.open:
            async with asyncio.timeout(1):
                await reply.fail(
                    504, f"gateway: the call passed its {timeout_s:g} s deadline", "timeout_error"
                )
    finally:
        grant.calls.discard(deadline)
        settle(None)  # cancelled or failed after the hold: the worst case (docs/design/invariants.md#f6)


async def _forward(
    client: aiohttp.ClientSession,
    url: str,
    plan: policy.Plan,
    headers: dict[str, str],
    dialect: Dialect,
    reply: Reply,
    settle: Callable[..., None],
    throttled: Callable[[float | None], None],
) -> None:
    """Relay the answer, settling its usage (zero for an error answer, None if it has none); a
    429 is told to the engine first, whose backoff for the provider then delays the next hold of
    every session calling it."""
    try:
        response = await client.post(url, data=plan.data, headers=headers)
    except aiohttp.ClientError as exc:
        # Not connected: the provider never saw the call. Anything later: it may have billed it.
        unseen = isinstance(exc, aiohttp.ClientConnectorError)
        settle(NOTHING if unseen else None, served=not unseen)  # unseen: its model_calls unit returns
        await reply.fail(502, f"gateway: provider unreachable: {type(exc).__name__}: {exc}")
        return
    try:
        status = response.status
        content_type = response.headers.get("content-type", "application/json").encode("latin-1")
        if status == 200 and content_type.startswith(b"text/event-stream"):
            await _relay_stream(response, dialect, plan, reply, settle)
            return
        try:
            data = await read_bounded(response)
        except aiohttp.ClientError:
            settle(None if status == 200 else NOTHING, served=status == 200)
            await reply.fail(502, "gateway: the provider's answer broke off")
            return
        if data is None:
            settle(None)  # it may have been billed: the hold
            await reply.fail(502, f"gateway: the provider's answer passed {MAX_ANSWER_BYTES} bytes")
            return
        if status == throttle.TOO_MANY_REQUESTS:
            throttled(throttle.retry_after_s(response.headers))
        if status != 200:
            settle(NOTHING, served=False)  # an error answer is no generation: not a model call
        else:
            try:
                found = policy.answer_usage(dialect.name, orjson.loads(data))
            except orjson.JSONDecodeError:
                found = None
            settle(found)
        retry = response.headers.get("retry-after")
        extra = [(b"retry-after", retry.encode("latin-1"))] if retry else []
        await reply.whole(status, data, [(b"content-type", content_type), *extra])
    finally:
        response.release()


async def read_bounded(response: aiohttp.ClientResponse) -> bytes | None:
    """The whole answer, or None past MAX_ANSWER_BYTES."""
    chunks, size = [], 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _relay_stream(
    response: aiohttp.ClientResponse,
    dialect: Dialect,
    plan: policy.Plan,
    reply: Reply,
    settle: Callable[[Used], None],
) -> None:
    await reply.start(200, [(b"content-type", b"text/event-stream")])
    seen = policy.StreamSettlement(dialect.name, plan.client_wants_usage)
    events, size = EventSplitter(), 0
    try:
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise EventTooLarge(f"the stream passed {MAX_ANSWER_BYTES} bytes")
            kept = []  # the events this chunk made whole, relayed together (one write, not one each)
            for event in events.feed(chunk):
                if seen.observe(event.data, event.done):
                    kept.append(event.raw)
                if seen.complete:
                    settle(seen.final_usage)
            if kept:
                await reply.body(b"".join(kept))
    except aiohttp.ClientError:
        pass  # a broken stream: unless its final usage came, the worst case is charged
    except EventTooLarge as exc:
        settle(None)
        await reply.fail(502, f"gateway: {exc}")
        return
    settle(None)
    await reply.body(events.rest, more=False)
