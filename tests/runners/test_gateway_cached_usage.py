"""The gateway charges each bucket at its price, read from the provider's own usage shape.

A scripted provider reports cached prompt tokens as OpenAI chat (and llama.cpp, vLLM), OpenAI
responses and Anthropic do, whole and streamed; the charge is Σ bucket tokens × bucket price,
exactly. A usage that contradicts itself is charged the call's worst case (its hold), never less.
"""

from __future__ import annotations

from decimal import Decimal
from functools import partial

import pytest
import trio
from support.gateway import IN, MODEL, OUT, open_meter
from support.gateway_clients import call
from support.scripted_upstream import Answer, ScriptedUpstream

from benchtui.core.contract import ModelSpec
from benchtui.runners.command.gateway import open_gateway

REAL_KEY = "sk-real-provider-key-0123456789"
READ, WRITE = Decimal("0.3"), Decimal("3.75")
# client -> (the usage as its API reports it, the buckets: input, cache read, cache write, output)
SHAPES = {
    "openai-chat": (
        {"prompt_tokens": 3000, "completion_tokens": 80, "total_tokens": 3080,
         "prompt_tokens_details": {"cached_tokens": 2048}, "completion_tokens_details": {"reasoning_tokens": 30}},
        (952, 2048, 0, 80),
    ),
    "openai-responses": (
        {"input_tokens": 3000, "output_tokens": 80, "total_tokens": 3080,
         "input_tokens_details": {"cached_tokens": 2048}, "output_tokens_details": {"reasoning_tokens": 30}},
        (952, 2048, 0, 80),
    ),
    "anthropic": (  # input_tokens excludes both cache buckets
        {"input_tokens": 12, "cache_read_input_tokens": 2500, "cache_creation_input_tokens": 600, "output_tokens": 80},
        (12, 2500, 600, 80),
    ),
}  # fmt: skip


def priced(model_at: str) -> ModelSpec:
    return ModelSpec(
        MODEL.name, IN, OUT, 1000, model_at, cache_read_usd_per_mtok=READ, cache_write_usd_per_mtok=WRITE
    )


def bucket_cost(fresh: int, read: int, written: int, output: int) -> Decimal:
    return (fresh * IN + read * READ + written * WRITE + output * OUT) / 1_000_000


@pytest.mark.trio
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client", list(SHAPES))
async def test_each_bucket_is_charged_at_its_price_exactly(client, stream):
    usage, buckets = SHAPES[client]
    with ScriptedUpstream(lambda c: Answer(text="Hello there", usage_block=usage)) as up:
        meter, ledger, _ = open_meter(Decimal("1"), priced(up.url))
        with trio.fail_after(60):
            async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
                for _ in range(2):
                    text = await trio.to_thread.run_sync(
                        partial(call, client, gateway.url, grant.token, stream=stream)
                    )
                    assert text == "Hello there"
    flight = ledger.running["m-0"]
    assert flight.spent == 2 * bucket_cost(*buckets)
    assert flight.held == 0
    fresh, read, written, output = buckets
    assert meter.usage["input"] == 2 * fresh and meter.usage["cache_read"] == 2 * read
    assert meter.usage["cache_write"] == 2 * written and meter.usage["output"] == 2 * output
    if client != "anthropic":
        assert meter.usage["reasoning"] == 2 * 30


HOSTILE = {
    "more cached than prompt": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 900}},
    "cached as text": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": "90"}},
    "negative cache read": {"prompt_tokens": 100, "completion_tokens": 20, "cache_read_input_tokens": -50},
    "absurd": {"prompt_tokens": 10**14, "completion_tokens": 20},
    "reasoning past output": {"prompt_tokens": 100, "completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 21}},
}  # fmt: skip


@pytest.mark.trio
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("trouble", list(HOSTILE))
async def test_a_usage_that_contradicts_itself_is_charged_the_hold(trouble, stream):
    with ScriptedUpstream(lambda c: Answer(usage_block=HOSTILE[trouble])) as up:
        meter, ledger, _ = open_meter(Decimal("1"), priced(up.url))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            await trio.to_thread.run_sync(
                partial(call, "openai-chat", gateway.url, grant.token, stream=stream)
            )
    flight = ledger.running["m-0"]
    # The hold: every prompt token (one a byte, plus the allowance) at the dearest prompt price.
    prompt = next(iter(up.calls)).text.encode()
    assert flight.spent > (len(prompt) * WRITE + 500 * OUT) / 1_000_000
    assert flight.held == 0


@pytest.mark.trio
async def test_the_providers_cost_is_recorded_never_charged():
    usage = {**SHAPES["openai-chat"][0], "cost": 0.5}  # OpenRouter's usage.cost, far from ours
    with ScriptedUpstream(lambda c: Answer(usage_block=usage)) as up:
        meter, ledger, _ = open_meter(Decimal("1"), priced(up.url))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            await trio.to_thread.run_sync(
                partial(call, "openai-chat", gateway.url, grant.token, stream=False)
            )
    assert ledger.running["m-0"].spent == bucket_cost(*SHAPES["openai-chat"][1])
    assert meter.reconciled.usd == Decimal("0.5") and meter.reconciled.calls == 1
    assert meter.reconciled.ours_usd == bucket_cost(*SHAPES["openai-chat"][1])
