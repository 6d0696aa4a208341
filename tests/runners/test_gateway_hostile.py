"""The gateway against a hostile agent and a hostile provider (issue 20), through real HTTP: the
official SDKs and raw httpx as agents, a scripted provider on 127.0.0.1 that honours whatever
bound it likes, echoes keys, never stops streaming or answers 200 MiB. Each attack fails without
the guard it names."""

from __future__ import annotations

import json
from decimal import Decimal
from functools import partial

import httpx
import pytest
import trio
from support.gateway import REAL_KEY, cost, model_at, open_meter
from support.scripted_upstream import Answer, Call, ScriptedUpstream

from benchtui.runners.kit.gateway import open_gateway

MAX_ANSWER_BYTES = 64 * 1024 * 1024  # relay.MAX_ANSWER_BYTES, spelled out: the test holds it to it
PROMPT = [{"role": "user", "content": "Say something."}]
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def honours_the_largest_bound(c: Call) -> Answer:
    """A provider that generates up to the largest bound it finds, for every choice asked."""
    bounds = [c.body.get(k) for k in ("max_tokens", "max_completion_tokens", "max_output_tokens")]
    choices = max(c.body.get("n") or 1, c.body.get("best_of") or 1)
    return Answer(input_tokens=1000, output_tokens=max(b for b in bounds if isinstance(b, int)) * choices)


def body_for(api: str, **extra) -> dict:
    if api == "responses":
        return {"model": "x", "input": "Say something.", **extra}
    return {"model": "x", "messages": PROMPT, **({"max_tokens": 100} if api == "messages" else {}), **extra}


def auth(api: str, token: str) -> dict[str, str]:
    return {"x-api-key": token} if api == "messages" else {"authorization": f"Bearer {token}"}


async def post(
    gateway_url: str, api: str, token: str, body: dict | bytes, timeout: float = 30
) -> httpx.Response:
    async with httpx.AsyncClient(timeout=timeout) as client:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await client.post(f"{gateway_url}{PATHS[api]}", content=content, headers=auth(api, token))


def error_message(api: str, response: httpx.Response) -> str:
    data = response.json()  # always JSON in the API's shape, never an empty body
    if api == "messages":
        assert data["type"] == "error"
    return data["error"]["message"]


@pytest.mark.trio
async def test_two_output_bounds_are_both_clamped_so_the_provider_cannot_spend_past_the_hold():
    # Before: held at max_completion_tokens = 1 and forwarded with max_tokens = 100000 beside it.
    import openai

    with ScriptedUpstream(honours_the_largest_bound) as up:
        meter, ledger, overspent = open_meter(Decimal("0.05"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=grant.token, max_retries=0)
            create = partial(
                client.chat.completions.create,
                model="m",
                messages=PROMPT,
                max_completion_tokens=1,
                max_tokens=100_000,
            )
            await trio.to_thread.run_sync(create)
    (seen,) = up.calls
    assert seen.body["max_tokens"] == seen.body["max_completion_tokens"] == 1
    flight = ledger.running["m-0"]
    assert flight.spent == cost(1000, 1) and flight.spent <= Decimal("0.05") and not overspent


@pytest.mark.trio
async def test_choices_are_held_in_full_so_n_16_does_not_fit_a_one_choice_budget():
    # Before: `n: 16` forwarded while the hold covered one choice ($0.24 of a $0.20 campaign).
    import openai

    with ScriptedUpstream(honours_the_largest_bound) as up:
        meter, ledger, overspent = open_meter(Decimal("0.05"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=grant.token, max_retries=0)
            with pytest.raises(openai.RateLimitError, match="budget is spent"):
                await trio.to_thread.run_sync(
                    partial(client.chat.completions.create, model="m", messages=PROMPT, n=16)
                )
            # Two choices fit: held and charged as two.
            await trio.to_thread.run_sync(
                partial(client.chat.completions.create, model="m", messages=PROMPT, n=2, max_tokens=500)
            )
            with pytest.raises(openai.BadRequestError, match="'n' must be"):
                await trio.to_thread.run_sync(
                    partial(client.chat.completions.create, model="m", messages=PROMPT, n=1000)
                )
    assert [c.body["n"] for c in up.calls] == [2]
    flight = ledger.running["m-0"]
    assert flight.spent == cost(1000, 1000) and flight.held == 0 and not overspent


@pytest.mark.trio
async def test_continuous_usage_stats_are_settled_on_the_final_usage_not_the_first_chunk():
    # Before: the first usage chunk (10% of the output) settled the call; the rest was free.
    import openai

    with ScriptedUpstream(
        lambda c: Answer(text="0123456789", input_tokens=700, output_tokens=900, chunks=10)
    ) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=grant.token, max_retries=0)

            def stream() -> str:
                chunks = client.chat.completions.create(
                    model="m",
                    messages=PROMPT,
                    stream=True,
                    stream_options={"include_usage": True, "continuous_usage_stats": True},  # type: ignore[typeddict-unknown-key]
                )
                return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)

            assert sorted(await trio.to_thread.run_sync(stream)) == sorted("0123456789")
    assert ledger.running["m-0"].spent == cost(700, 900)


HOSTED = [
    ("chat", {"web_search_options": {"search_context_size": "low"}}),
    ("chat", {"tools": [{"type": "web_search_preview"}]}),
    ("responses", {"tools": [{"type": "web_search"}]}),
    ("responses", {"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}),
    ("responses", {"tools": [{"type": "image_generation"}]}),
    ("messages", {"tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 50}]}),
    ("messages", {"tools": [{"type": "code_execution_20250522", "name": "code_execution"}]}),
]


@pytest.mark.trio
@pytest.mark.parametrize(("api", "extra"), HOSTED, ids=[f"{a}-{json.dumps(e)[:40]}" for a, e in HOSTED])
async def test_hosted_tools_are_refused_in_the_apis_shape_and_never_reach_the_provider(api, extra):
    # Before: forwarded untouched; 50 billed searches cost $0.50 and the ledger saw $0.003.
    import anthropic
    import openai

    with ScriptedUpstream() as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            if api == "messages":
                sdk = anthropic.Anthropic(base_url=gateway.url, api_key=grant.token, max_retries=0)
                call = partial(sdk.messages.create, model="c", max_tokens=100, messages=PROMPT, **extra)
                error: type[Exception] = anthropic.BadRequestError
            elif api == "chat":
                client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=grant.token, max_retries=0)
                call = partial(client.chat.completions.create, model="m", messages=PROMPT, **extra)
                error = openai.BadRequestError
            else:
                client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=grant.token, max_retries=0)
                call = partial(client.responses.create, model="m", input="Search.", **extra)
                error = openai.BadRequestError
            with pytest.raises(error, match="gateway: "):
                await trio.to_thread.run_sync(call)
    assert up.calls == []
    flight = ledger.running["m-0"]
    assert (flight.spent, flight.held, meter.calls) == (0, 0, 0)


def echo_keys(call: Call) -> bytes:
    """A 401 that echoes what it got, in every form a key may take."""
    key = call.headers.get("x-api-key") or call.headers.get("authorization", "")
    plain = key.removeprefix("Bearer ")
    return json.dumps(
        {
            "error": {
                "message": f"Invalid header {key!r}; url-encoded {httpx.QueryParams({'k': plain})}",
                "type": "authentication_error",
                "echo": {"authorization": key, "x-api-key": plain},
            }
        }
    ).encode()


@pytest.mark.trio
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
async def test_a_provider_error_that_echoes_the_key_reaches_the_agent_scrubbed(api):
    # Before: the 401 body went to the agent verbatim, the real key in it.
    answer = Answer(status=401, error_body=echo_keys, error_headers={"retry-after": REAL_KEY})
    with ScriptedUpstream(lambda c: answer) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            r = await post(gateway.url, api, grant.token, body_for(api))
    assert len(up.calls) == 1 and r.status_code == 401
    seen = r.content + json.dumps(dict(r.headers)).encode()
    for form in (REAL_KEY, json.dumps(REAL_KEY)[1:-1], str(httpx.QueryParams({"k": REAL_KEY}))[2:]):
        assert form.encode() not in seen, form
    assert b"[redacted by benchtui]" in r.content
    assert ledger.running["m-0"].spent == 0  # an error answer is no generation


@pytest.mark.trio
async def test_a_200_mib_answer_is_cut_bounded_and_charged_its_hold():
    # Before: read whole (+640 MB in the engine) and relayed.
    with ScriptedUpstream(lambda c: Answer(pad_bytes=200 * 1024 * 1024)) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            with trio.fail_after(60):
                r = await post(gateway.url, "chat", grant.token, body_for("chat"), timeout=60)
    assert r.status_code == 502 and "passed" in error_message("chat", r)
    assert up.sent < MAX_ANSWER_BYTES + 16 * 1024 * 1024  # the gateway stopped reading at its cap
    flight = ledger.running["m-0"]
    sent = len(up.calls[0].text.encode())
    assert flight.held == 0 and flight.spent >= cost(sent + 2048 - 64, 1000)  # the worst case


@pytest.mark.trio
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
async def test_an_endless_stream_is_cut_at_the_calls_total_deadline(api):
    # Before: request_timeout_s bounded each read only; a provider that keeps sending never ended.
    with ScriptedUpstream(lambda c: Answer(endless=True)) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with (
            open_gateway(request_timeout_s=1.5) as gateway,
            gateway.session(meter, meter._model, REAL_KEY) as grant,
        ):
            started = trio.current_time()
            with trio.fail_after(20):
                r = await post(gateway.url, api, grant.token, body_for(api, stream=True))
            took = trio.current_time() - started
    assert 1.4 < took < 6, took
    assert r.status_code == 200 and b"deadline" in r.content.splitlines()[-2]  # an error event ends it
    flight = ledger.running["m-0"]
    bound, sent = (100 if api == "messages" else 1000), len(up.calls[0].text.encode())
    assert flight.held == 0 and flight.spent >= cost(sent + 2048 - 64, bound)  # its worst case
    assert up.sent > 0


MALFORMED = {
    "100k-deep JSON": b"[" * 100_000 + b"]" * 100_000,
    "deep object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "a list": b"[1, 2]",
    "a string": b'"hello"',
    "a number": b"42",
    "not JSON": b"{nope",
    "NaN": b'{"messages": [], "temperature": NaN}',
    "not UTF-8": b'{"messages": "\xff\xfe"}',
    "empty": b"",
    "a huge integer": b'{"max_tokens": 1' + b"0" * 5000 + b"}",
    "max_tokens true": b'{"messages": [], "max_tokens": true}',
    "max_tokens a string": b'{"messages": [], "max_tokens": "100000"}',
    "stream a string": b'{"messages": [], "stream": "yes"}',
    "stream_options a number": b'{"messages": [], "stream": true, "stream_options": 5}',
    "tools a string": b'{"messages": [], "tools": "web_search"}',
    "thinking a number": b'{"messages": [], "thinking": 5}',
    "n zero": b'{"messages": [], "n": 0}',
}


@pytest.mark.trio
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
async def test_every_malformed_body_is_a_4xx_in_the_apis_shape(api):
    # Before: 100k-deep JSON was a 500 with an empty body; wrong types went on to the provider.
    with ScriptedUpstream() as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            for name, raw in MALFORMED.items():
                r = await post(gateway.url, api, grant.token, raw)
                assert 400 <= r.status_code < 500, (name, r.status_code, r.content[:200])
                assert error_message(api, r).startswith(("gateway:", "'")), name
    assert up.calls == [] and ledger.running["m-0"].spent == 0
