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

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import trio

from benchtui.core.contract import Usage
from benchtui.runners.command.gateway import policy
from benchtui.runners.command.gateway.dialects import NO_RETRY, REFUSAL_STATUS, Dialect
from benchtui.runners.command.gateway.session import Binding
from benchtui.runners.command.gateway.sse import EventSplitter, EventTooLarge

Send = Callable[[dict[str, Any]], Awaitable[None]]
JSON = [(b"content-type", b"application/json")]
FORWARDED = ("content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta")
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""A provider's answer, whole or streamed; past it the call is cut and charged its hold."""
REDACTED = b"[redacted by benchtui]"


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


async def respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] = JSON) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def upstream_headers(dialect: Dialect, binding: Binding, headers: dict[bytes, bytes]) -> dict[str, str]:
    out = {k: headers[k.encode()].decode("latin-1") for k in FORWARDED if k.encode() in headers}
    out["accept-encoding"] = "identity"  # the size cap counts the bytes as they will be held
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
    reply: Reply,
    timeout_s: float,
) -> None:
    plan = policy.plan_call(
        dialect.name,
        request,
        binding.upstream_model,
        binding.model.max_output_tokens,
        binding.prompt_overhead_tokens,
    )
    if isinstance(plan, policy.Refusal):
        await reply.whole(plan.status, dialect.error(plan.status, plan.message, plan.kind))
        return
    worst = Usage(plan.prompt_tokens, plan.output_tokens)
    hold = binding.meter.price(worst)
    if not binding.open or not await binding.meter.authorise(hold):
        limit = binding.meter.limits.model_calls
        message = (
            f"the session's {limit} model calls are spent (counter model_calls)"
            if limit is not None and binding.meter.used("model_calls") >= limit
            else "the session budget is spent: this call does not fit in what is left of its reservation"
        )
        await reply.whole(REFUSAL_STATUS, dialect.error(429, message, "insufficient_quota"), JSON + NO_RETRY)
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

    scope = trio.CancelScope(deadline=trio.current_time() + timeout_s)  # total, streams included
    binding.calls.add(scope)
    try:
        with scope:
            await _forward(
                client, url, plan, upstream_headers(dialect, binding, headers), dialect, reply, settle
            )
        if scope.cancelled_caught and binding.open:
            settle(None)
            with trio.move_on_after(1):
                await reply.fail(
                    504, f"gateway: the call passed its {timeout_s:g} s deadline", "timeout_error"
                )
    finally:
        binding.calls.discard(scope)
        settle(None)  # cancelled or failed after the hold: the worst case (docs/design/invariants.md#f6)


async def _forward(
    client: httpx.AsyncClient,
    url: str,
    plan: policy.Plan,
    headers: dict[str, str],
    dialect: Dialect,
    reply: Reply,
    settle: Callable[..., None],
) -> None:
    """Relay the answer, settling its usage (zero for an error answer, None if it has none)."""
    request = client.build_request("POST", url, content=plan.data, headers=headers)
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        # Not connected: the provider never saw the call. Anything later: it may have billed it.
        unseen = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        settle(Usage() if unseen else None, served=not unseen)  # unseen: its model_calls unit returns
        await reply.fail(502, f"gateway: provider unreachable: {type(exc).__name__}: {exc}")
        return
    try:
        content_type = response.headers.get("content-type", "application/json").encode()
        if response.status_code == 200 and content_type.startswith(b"text/event-stream"):
            await _relay_stream(response, dialect, plan, reply, settle)
            return
        try:
            data = await _read_bounded(response)
        except httpx.HTTPError:
            settle(None if response.status_code == 200 else Usage(), served=response.status_code == 200)
            await reply.fail(502, "gateway: the provider's answer broke off")
            return
        if data is None:
            settle(None)  # it may have been billed: the hold
            await reply.fail(502, f"gateway: the provider's answer passed {MAX_ANSWER_BYTES} bytes")
            return
        if response.status_code != 200:
            settle(Usage(), served=False)  # an error answer is no generation: not a model call
        else:
            try:
                found = policy.answer_usage(dialect.name, json.loads(data))
            except (ValueError, RecursionError):
                found = None
            settle(Usage(*found) if found else None)
        retry = response.headers.get("retry-after")
        extra = [(b"retry-after", retry.encode("latin-1"))] if retry else []
        await reply.whole(response.status_code, data, [(b"content-type", content_type), *extra])
    finally:
        await response.aclose()


async def _read_bounded(response: httpx.Response) -> bytes | None:
    chunks, size = [], 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _relay_stream(
    response: httpx.Response,
    dialect: Dialect,
    plan: policy.Plan,
    reply: Reply,
    settle: Callable[[Usage | None], None],
) -> None:
    await reply.start(200, [(b"content-type", b"text/event-stream")])
    seen = policy.StreamSettlement(dialect.name, plan.client_wants_usage)
    events, size = EventSplitter(), 0
    try:
        async for chunk in response.aiter_raw():
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise EventTooLarge(f"the stream passed {MAX_ANSWER_BYTES} bytes")
            for event in events.feed(chunk):
                keep = seen.observe(event.data, event.done)
                if seen.complete:
                    settle(Usage(*seen.usage))
                if keep:
                    await reply.body(event.raw)
    except httpx.HTTPError:
        pass  # a broken stream: unless its final usage came, the worst case is charged
    except EventTooLarge as exc:
        settle(None)
        await reply.fail(502, f"gateway: {exc}")
        return
    settle(None)
    await reply.body(events.rest, more=False)
