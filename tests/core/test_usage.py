"""One reader of every provider's usage shape: the buckets each one means, and never a usage that
would charge less than the provider may have billed (a contradiction is no usage at all)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from benchtui.core.usage import Usage, cost_amount, provider_cost, read_usage


def buckets(u: Usage | str) -> tuple[int, int, int, int, int]:
    assert isinstance(u, Usage), u
    return u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens, u.reasoning_tokens


@pytest.mark.parametrize(
    ("usage", "shape", "expected"),
    [
        pytest.param({"prompt_tokens": 100, "completion_tokens": 20}, None, (100, 0, 0, 20, 0), id="openai-plain"),
        pytest.param(
            {"prompt_tokens": 2000, "completion_tokens": 300,
             "prompt_tokens_details": {"cached_tokens": 1536}, "completion_tokens_details": {"reasoning_tokens": 200}},
            None, (464, 1536, 0, 300, 200), id="openai-cached-reasoning",
        ),
        pytest.param(  # litellm's normalised Anthropic usage: prompt_tokens includes both cache buckets
            {"prompt_tokens": 5000, "completion_tokens": 100, "cache_read_input_tokens": 3000,
             "cache_creation_input_tokens": 1500,
             "prompt_tokens_details": {"cached_tokens": 3000, "cache_creation_tokens": 1500}},
            None, (500, 3000, 1500, 100, 0), id="litellm-anthropic",
        ),
        pytest.param(
            {"prompt_tokens": 1000, "completion_tokens": 10, "prompt_cache_hit_tokens": 700}, None,
            (300, 700, 0, 10, 0), id="deepseek",
        ),
        pytest.param(
            {"input_tokens": 12, "cache_read_input_tokens": 2500, "cache_creation_input_tokens": 600,
             "output_tokens": 80}, None, (12, 2500, 600, 80, 0), id="anthropic-raw",
        ),
        pytest.param(
            {"input_tokens": 3000, "output_tokens": 80, "input_tokens_details": {"cached_tokens": 2048},
             "output_tokens_details": {"reasoning_tokens": 30}}, None, (952, 2048, 0, 80, 30), id="responses",
        ),
        pytest.param(  # Gemini: thoughts are billed as output, beside the candidates
            {"promptTokenCount": 4000, "cachedContentTokenCount": 3000, "candidatesTokenCount": 50,
             "thoughtsTokenCount": 150}, None, (1000, 3000, 0, 200, 150), id="gemini",
        ),
        pytest.param(
            {"prompt_token_count": 40, "candidates_token_count": 5}, None, (40, 0, 0, 5, 0), id="gemini-snake",
        ),
        pytest.param({"output_tokens": 700}, "messages", (0, 0, 0, 700, 0), id="anthropic-message-delta"),
    ],
)  # fmt: skip
def test_each_shape_means_its_buckets(usage, shape, expected):
    assert buckets(read_usage(usage, shape)) == expected


def test_llama_cpp_timings_say_the_cached_part_when_the_usage_does_not():
    usage = {"prompt_tokens": 900, "completion_tokens": 40}
    assert buckets(read_usage(usage, "chat", timings={"cache_n": 850, "prompt_n": 50})) == (50, 850, 0, 40, 0)
    details = {**usage, "prompt_tokens_details": {"cached_tokens": 800}}  # the details win
    assert buckets(read_usage(details, "chat", timings={"cache_n": 850})) == (100, 800, 0, 40, 0)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 101}},
        {"prompt_tokens": 100, "completion_tokens": 20, "cache_read_input_tokens": 60, "cache_creation_input_tokens": 60},
        {"prompt_tokens": 100, "completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 21}},
        {"prompt_tokens": -1, "completion_tokens": 20},
        {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": -5}},
        {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": "90"}},
        {"prompt_tokens": 100.0, "completion_tokens": 20},
        {"prompt_tokens": True, "completion_tokens": 20},
        {"prompt_tokens": 10**12, "completion_tokens": 20},
        {"prompt_tokens": 100},
        {"completion_tokens": 20, "prompt_tokens": None},
        {"input_tokens": 5, "cache_read_input_tokens": -3, "output_tokens": 1},
        {"cachedContentTokenCount": 5, "candidatesTokenCount": 1},
    ],
)  # fmt: skip
def test_a_usage_that_cannot_be_believed_is_no_usage(usage):
    assert isinstance(read_usage(usage), str)


def test_no_usage_object_is_no_usage():
    assert isinstance(read_usage(None), str) and isinstance(read_usage([1, 2]), str)


@pytest.mark.parametrize(
    ("cost", "expected"),
    [(0.0123, Decimal("0.0123")), ("0.5", Decimal("0.5")), (0, Decimal(0)), ("free", None), (-1, None),
     (float("nan"), None), (float("inf"), None), ("NaN", None), ("1e99", None), (True, None), ([1], None)],
)  # fmt: skip
def test_the_providers_cost_is_a_sane_amount_or_nothing(cost, expected):
    assert cost_amount(cost) == expected
    found = read_usage({"prompt_tokens": 1, "completion_tokens": 1, "cost": cost})
    assert (
        isinstance(found, Usage) and found.provider_cost_usd == expected
    )  # never a reason to refuse a usage
    assert provider_cost({"cost": cost}) == expected
