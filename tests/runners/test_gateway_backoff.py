"""A provider's 429 through the metering gateway: the agent gets the 429 and its Retry-After as
the provider sent them, and the engine's backoff for that provider holds back the next call of
every session calling it (one backoff they share), in a real relay."""

from __future__ import annotations

import json
import threading
import time
from decimal import Decimal

import httpx
import pytest
import trio
from support.gateway import REAL_KEY, model_at, open_meter
from support.scripted_upstream import Answer, ScriptedUpstream

from benchtui.engine.providers import Backoff
from benchtui.runners.kit.gateway import open_gateway

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 100}


@pytest.mark.trio
@pytest.mark.parametrize("shared", [True, False])
async def test_a_429_holds_back_the_next_call_of_every_session_of_the_provider(shared):
    """The first call gets 429 `Retry-After: 2`; the other session's call, made right after it,
    reaches the provider at least 2 s later. The contrast (`shared=False`, each session its own
    backoff) shows the other session's call not held back at all."""
    lock, arrivals, refused_at = threading.Lock(), [], []

    def script(call):
        with lock:
            arrivals.append(time.monotonic())
            if not refused_at:
                refused_at.append(time.monotonic())
                return Answer(
                    status=429,
                    error_body=lambda c: json.dumps({"error": {"message": "slow down"}}).encode(),
                    error_headers={"retry-after": "2"},
                )
        return Answer(text="ok")

    with ScriptedUpstream(script) as up:
        model = model_at(up)
        backoff = Backoff(up.url)
        (first, ledger, _), (second, _, _) = (
            open_meter(Decimal("1"), model, f"s-{n}", backoff=backoff if shared else None) for n in range(2)
        )
        async with (
            open_gateway() as gateway,
            gateway.session(first, model, REAL_KEY) as one,
            gateway.session(second, model, REAL_KEY) as two,
            httpx.AsyncClient(timeout=30) as client,
        ):

            async def post(token: str) -> httpx.Response:
                return await client.post(
                    f"{gateway.url}/v1/chat/completions",
                    json=BODY,
                    headers={"authorization": f"Bearer {token}"},
                )

            with trio.fail_after(30):
                refused = await post(one.token)
                assert refused.status_code == 429 and refused.headers["retry-after"] == "2"
                answered = await post(two.token)
            assert answered.status_code == 200
    waited = arrivals[1] - refused_at[0]
    if shared:
        assert waited >= 2.0
        assert first.throttled_answers == 1 and second.throttle_wait_s > 0
    else:
        assert second.throttle_wait_s == 0  # nothing held it back
    assert ledger.running["s-0"].spent == 0  # a 429 is charged nothing


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"Retry-After": "2"}, 2.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # OpenAI's finer one first
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0),  # an HTTP date, 10 s after "now"
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_the_wait_a_429_asks_for(headers, wait):
    from email.utils import parsedate_to_datetime

    from benchtui.runners.kit.throttle import retry_after_s

    now = parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert retry_after_s(headers, now=now) == wait
