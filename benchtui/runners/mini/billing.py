"""What one HTTP attempt to a model may have cost: the usage to charge, and a total deadline.

Rule (docs/design/invariants.md#f6): whenever the provider may have served, and billed, a call whose usage is missing,
partial, negative or unreadable, charge the worst case that was authorised for it, and say why.
A provider may have served a call once it answered 200 (whatever its body), or when we gave up
waiting (a timeout), or when the connection broke after the request went out. It has not when
it refused the connection or answered with an error status (4xx/5xx: not billed).

litellm hides most of this: it fills a missing `usage` with zeros, passes negative counts on,
and turns a 200 whose body is not JSON into an InternalServerError with status 500, the same as
a real 500. So the worker watches the HTTP status itself, at httpx's transport (every sync
request litellm makes, through the OpenAI SDK or its own handler, passes there). Imported only
in worker processes.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import openai

from benchtui.core.usage import Usage, cost_amount, read_usage


@dataclass
class Observed:
    """The HTTP status of the latest response whose headers arrived (None: none yet), and
    whether a request reached the transport at all (an SDK may refuse before it sends: no key)."""

    status: int | None = None
    sent: bool = False


OBSERVED = Observed()
_original_handle_request = httpx.HTTPTransport.handle_request


def _observing_handle_request(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
    OBSERVED.sent = True
    response = _original_handle_request(self, request)
    OBSERVED.status = response.status_code
    return response


def observe_http() -> None:
    """Record every response status in OBSERVED (idempotent; done once in the zygote)."""
    httpx.HTTPTransport.handle_request = _observing_handle_request  # type: ignore[method-assign]


class CallDeadline(Exception):
    """One HTTP attempt ran past its total deadline (e.g. an answer dripping a byte at a time)."""


@contextlib.contextmanager
def total_deadline(seconds: float) -> Iterator[list[bool]]:
    """Interrupt the block after `seconds` in all (httpx's timeouts are per read, so a slow drip
    never trips them). SIGALRM, so the main thread only; yields [hit?]. litellm wraps what it
    catches, so the caller checks `hit`; the alarm repeats each second until the block is left,
    in case some layer swallows the exception."""
    hit = [False]
    if threading.current_thread() is not threading.main_thread():
        yield hit
        return

    def on_alarm(signum: int, frame: Any) -> None:
        hit[0] = True
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        raise CallDeadline(f"no complete answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield hit
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def failed_attempt_cost(
    exc: BaseException, status: int | None, deadline_hit: bool, sent: bool = True
) -> str | None:
    """Why a failed attempt must be charged its worst case, or None if it cannot have been billed
    (`sent` False: no request reached the HTTP transport)."""
    if deadline_hit or any(isinstance(e, CallDeadline) for e in _chain(exc)):
        return "the call ran past its total deadline (request_timeout_s)"
    if not sent and any(_refused_by_the_sdk(e) for e in _chain(exc)):
        return None  # e.g. "Missing credentials": the SDK would not build the request
    if status is not None and 200 <= status < 300:
        return f"the provider answered {status} but the answer was unusable ({type(exc).__name__})"
    if status is not None:
        return None  # an error status: the provider refused the call
    if any(isinstance(e, openai.APITimeoutError | httpx.TimeoutException) for e in _chain(exc)):
        if any(isinstance(e, httpx.ConnectTimeout | httpx.PoolTimeout) for e in _chain(exc)):
            return None  # never connected
        return "the call timed out (the provider may have served it)"
    if any(isinstance(e, httpx.ConnectError) for e in _chain(exc)):
        return None  # never connected: nothing sent
    return f"the call failed after it was sent ({type(exc).__name__}): the provider may have served it"


def client_refusal(exc: BaseException, sent: bool) -> str | None:
    """What the client said when it refused to send a call (no request reached the transport:
    missing credentials, a model name no provider routes), or None. Such a failure is the
    client's, not the server's (litellm words it InternalServerError or BadRequestError): never
    retried, never charged. A call's deadline is never a refusal (it may have been sent)."""
    if sent or any(isinstance(e, CallDeadline) for e in _chain(exc)):
        return None
    said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    for prefix in ("litellm.InternalServerError: ", "litellm.BadRequestError: ", "InternalServerError: "):
        said = said.removeprefix(prefix)
    return said[:300]


def _refused_by_the_sdk(exc: BaseException) -> bool:
    """The OpenAI SDK's own refusal before any request (its base error, not an API error)."""
    return type(exc) is openai.OpenAIError


def billable_usage(response: Any) -> Usage | str:
    """The usage of a served answer by bucket (core/usage.py reads litellm's normalised shape:
    prompt tokens with their cached and cache-written parts, output with its reasoning), with the
    provider's own cost where it said one; or why the usage cannot be trusted.

    A served call has a prompt and an answer, so zero counts mean "missing" (litellm's fill-in)."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return "the provider reported no usage"
    data = usage.model_dump() if hasattr(usage, "model_dump") else usage
    if not isinstance(data, dict):
        return f"the usage is not an object ({type(usage).__name__})"
    found = read_usage(data, "chat", timings=_extra(response, "timings"))
    if isinstance(found, str):
        return found
    if found.prompt_tokens <= 0:
        return f"unusable prompt_tokens in the usage ({data.get('prompt_tokens')!r:.40})"
    if found.output_tokens <= 0:
        return f"unusable completion_tokens in the usage ({data.get('completion_tokens')!r:.40})"
    if found.provider_cost_usd is None:  # litellm's own cost from its price map, where it knows one
        hidden = getattr(response, "_hidden_params", None)
        litellm_cost = cost_amount(hidden.get("response_cost")) if isinstance(hidden, dict) else None
        if litellm_cost:  # 0 or None: litellm does not know the model's price
            found = replace(found, provider_cost_usd=litellm_cost)
    return found


def _extra(response: Any, key: str) -> Any:
    """A top-level field of the provider's answer that litellm kept (llama.cpp's `timings`)."""
    try:
        return response.get(key) if hasattr(response, "get") else getattr(response, key, None)
    except Exception:
        return None
