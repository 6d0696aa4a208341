"""The gateway with real clients (openai and anthropic SDKs, litellm) and a scripted provider:
exact charges, refusals the SDKs raise as rate-limit errors, the hard cap under parallel calls."""

from __future__ import annotations

import contextlib
from decimal import Decimal
from functools import partial

import pytest
import trio
from support.gateway import MODEL, cost, open_meter
from support.gateway_clients import CLIENTS, call, rate_limit_errors
from support.scripted_upstream import Answer, Call, ScriptedUpstream

from benchtui.core.contract import LogicalLimits, ModelSpec
from benchtui.runners.kit.gateway import open_gateway

REAL_KEY = "sk-real-provider-key-0123456789"


def model_at(upstream: ScriptedUpstream, max_output: int = 1000) -> ModelSpec:
    return ModelSpec(
        MODEL.name, MODEL.input_usd_per_mtok, MODEL.output_usd_per_mtok, max_output, upstream.url
    )


@pytest.fixture
def upstream():
    with ScriptedUpstream(lambda c: Answer(text="Hello there", input_tokens=1234, output_tokens=56)) as up:
        yield up


@pytest.mark.trio
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("client", CLIENTS)
async def test_each_call_is_charged_its_usage_at_campaign_prices(upstream, client, stream):
    meter, ledger, _ = open_meter(Decimal("1"), model_at(upstream))
    with trio.fail_after(60):
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            for _ in range(2):
                text = await trio.to_thread.run_sync(
                    partial(call, client, gateway.url, grant.token, stream=stream)
                )
                assert text == "Hello there"
    flight = ledger.running["m-0"]
    assert flight.spent == 2 * cost(1234, 56)  # exactly usage x prices, never the provider's word
    assert flight.held == 0 and meter.calls == 2
    for seen in upstream.calls:
        assert seen.body["model"] == "claude-test"  # pinned to the campaign's model
        key = seen.headers.get("x-api-key") or seen.headers["authorization"].removeprefix("Bearer ")
        assert key == REAL_KEY  # the real key goes upstream; the client only had its token
        bound = seen.body.get("max_tokens") or seen.body.get("max_output_tokens")
        assert bound == 500


@pytest.mark.trio
@pytest.mark.parametrize("client", CLIENTS)
async def test_a_call_that_does_not_fit_is_refused_as_a_rate_limit_error(upstream, client):
    # The worst case of one call: ~2,150 prompt tokens (body bytes + allowance) x $3 + 1,000 x $15
    # per million, about $0.0215; the first costs $0.0045: a $0.025 reservation fits one, not two.
    meter, ledger, _ = open_meter(Decimal("0.025"), model_at(upstream))
    async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
        first = partial(call, client, gateway.url, grant.token, stream=False, max_tokens=None)
        assert await trio.to_thread.run_sync(first) == "Hello there"
        with pytest.raises(rate_limit_errors()) as refused:
            await trio.to_thread.run_sync(first)
    assert "session budget is spent" in str(refused.value)
    assert len(upstream.calls) == 1  # refused before the provider, and no client retried it
    assert ledger.running["m-0"].spent == cost(1234, 56)


@pytest.mark.trio
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
async def test_spend_never_passes_the_reservation_at_any_parallelism(stream):
    # Every answer is as dear as its worst case: as many prompt tokens as the body has bytes plus
    # the allowance, as many output tokens as the bound sent.
    def dearest(c: Call) -> Answer:
        bound = c.body.get("max_tokens") or c.body.get("max_output_tokens")
        return Answer(input_tokens=len(c.text.encode()) + 2048, output_tokens=bound, delay_s=0.02)

    reservation = Decimal("0.25")
    with ScriptedUpstream(dearest) as up:
        meter, ledger, overspent = open_meter(reservation, model_at(up))
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            outcomes: list[str] = []

            async def one(client: str) -> None:
                try:
                    await trio.to_thread.run_sync(
                        partial(call, client, gateway.url, grant.token, stream=stream), limiter=limiter
                    )
                    outcomes.append("ok")
                except rate_limit_errors():
                    outcomes.append("refused")

            limiter = trio.CapacityLimiter(64)
            with trio.fail_after(120):
                async with trio.open_nursery() as nursery:
                    for n in range(64):
                        nursery.start_soon(one, ["openai-chat", "anthropic", "openai-responses"][n % 3])
    flight = ledger.running["m-0"]
    assert outcomes.count("ok") == len(up.calls) >= 5 and "refused" in outcomes
    assert flight.spent == sum(cost(dearest(c).input_tokens, dearest(c).output_tokens) for c in up.calls)
    assert flight.spent <= reservation
    assert flight.held == 0 and not overspent


@pytest.mark.trio
@pytest.mark.parametrize("client", ["openai-chat", "openai-responses", "anthropic"])
@pytest.mark.parametrize("trouble", ["no usage", "broken stream"])
async def test_missing_usage_or_a_broken_stream_is_charged_the_worst_case(client, trouble):
    answer = Answer(usage=False) if trouble == "no usage" else Answer(cut_after=2)
    with ScriptedUpstream(lambda c: answer) as up:
        meter, ledger, _ = open_meter(Decimal("1"), model_at(up))
        # A cut stream may or may not raise in the client; the charge is what matters.
        async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
            with contextlib.suppress(Exception):
                await trio.to_thread.run_sync(partial(call, client, gateway.url, grant.token, stream=True))
    sent = len(up.calls[0].text.encode())
    flight = ledger.running["m-0"]
    # The worst case: the forwarded body's bytes + the allowance as prompt tokens, the cap as output.
    # Charged by the gateway, or (when the client saw the stream's end first and the session closed)
    # still held, which closing the session charges at exactly that worst case (ledger.close).
    charged = flight.spent + flight.held
    assert charged >= cost(sent + 2048 - 64, 500) and charged <= cost(sent + 2048 + 64, 500)


@pytest.mark.trio
async def test_a_token_dies_with_its_session(upstream):
    import openai

    meter, _, _ = open_meter(Decimal("1"), model_at(upstream))
    async with open_gateway() as gateway:
        async with gateway.session(meter, meter._model, REAL_KEY) as grant:
            pass
        with pytest.raises(openai.AuthenticationError):
            await trio.to_thread.run_sync(
                partial(call, "openai-chat", gateway.url, grant.token, stream=False)
            )
    assert upstream.calls == []


@pytest.mark.trio
async def test_a_provider_that_cannot_be_reached_costs_nothing():
    import openai

    with ScriptedUpstream() as up:
        closed = up.url  # the server is gone once the block ends: nothing listens there
    meter, ledger, _ = open_meter(Decimal("1"), model_at(up), limits=LogicalLimits(model_calls=10))
    assert meter._model.api_base == closed
    async with open_gateway() as gateway, gateway.session(meter, meter._model, REAL_KEY) as grant:
        with pytest.raises(openai.InternalServerError, match="unreachable"):
            await trio.to_thread.run_sync(
                partial(call, "openai-chat", gateway.url, grant.token, stream=False)
            )
    flight = ledger.running["m-0"]
    assert (flight.spent, flight.held) == (0, 0) and meter.calls == 3  # the SDK retried a 502 twice
    assert meter.used("model_calls") == 0  # never served: no call counts against a logical budget
