"""The call policy as pure functions (issue 20): every bound a client may send is clamped so the
hold is a true upper bound, what the price table cannot bound is refused, and a stream is
settled once, from its final usage."""

from __future__ import annotations

import json

import pytest

from benchtui.core.usage import Usage
from benchtui.runners.command.gateway.policy import (
    MAX_CHOICES,
    Plan,
    Refusal,
    StreamSettlement,
    plan_call,
)

MAX_OUT, OVERHEAD = 1000, 2048


def plan(api: str, **body) -> Plan | Refusal:
    return plan_call(api, {"messages": [], **body}, "up-model", MAX_OUT, OVERHEAD)  # type: ignore[arg-type]


def sent(p: Plan | Refusal) -> dict:
    assert isinstance(p, Plan), p
    return json.loads(p.data)


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_every_output_bound_a_client_sends_is_clamped_not_only_the_documented_one(api):
    # A provider may honour any of them: each one present goes up as the bound that is held.
    p = plan(api, max_completion_tokens=1, max_tokens=100_000, max_output_tokens=50_000)
    body = sent(p)
    assert body["max_tokens"] == body["max_completion_tokens"] == body["max_output_tokens"] == 1
    assert p.output_tokens == 1
    big = plan(api, max_tokens=100_000, max_output_tokens=100_000)
    assert sent(big)["max_tokens"] == sent(big)["max_output_tokens"] == MAX_OUT == big.output_tokens


@pytest.mark.parametrize(
    ("api", "field"), [("chat", "max_tokens"), ("responses", "max_output_tokens"), ("messages", "max_tokens")]
)
def test_a_call_without_a_bound_gets_the_models(api, field):
    p = plan(api)
    assert sent(p)[field] == MAX_OUT == p.output_tokens
    assert sent(p)["model"] == "up-model"
    assert p.prompt_tokens == len(p.data) + OVERHEAD  # the forwarded bytes, exactly


def test_choices_multiply_the_output_held():
    assert plan("chat", n=16, max_tokens=100).output_tokens == 1600
    assert plan("chat", n=2, best_of=5, max_tokens=100).output_tokens == 500
    for bad in (MAX_CHOICES + 1, 0, -1, True, "16", 2.0):
        refused = plan("chat", n=bad)
        assert isinstance(refused, Refusal) and "'n'" in refused.message, bad


@pytest.mark.parametrize(
    "body",
    [
        {"max_tokens": True},  # a bool is an int to Python, not to a provider
        {"max_tokens": "100000"},
        {"max_tokens": 0},
        {"max_tokens": 1.5},
        {"max_completion_tokens": -5},
        {"stream": "yes"},
        {"stream": True, "stream_options": 5},
        {"tools": "web_search"},
        {"tools": [5]},
        {"thinking": 5},
        {"thinking": {"type": "enabled", "budget_tokens": "lots"}},
        {"top_logprobs": "all"},
    ],
    ids=repr,
)
def test_a_field_of_the_wrong_type_is_a_400_not_a_guess(body):
    refused = plan("chat", **body)
    assert isinstance(refused, Refusal) and refused.status == 400


def test_thinking_budgets_are_clamped_and_held():
    # Anthropic counts thinking inside max_tokens, whose budget must stay below it.
    p = plan("messages", max_tokens=100_000, thinking={"type": "enabled", "budget_tokens": 64_000})
    assert sent(p)["thinking"]["budget_tokens"] == MAX_OUT - 1 and p.output_tokens == MAX_OUT
    # Elsewhere a reasoning budget may be billed beside the output bound: held on top of it.
    q = plan("chat", max_tokens=500, reasoning={"effort": "high", "max_tokens": 90_000})
    assert sent(q)["reasoning"]["max_tokens"] == 500 and q.output_tokens == 1000
    r = plan("chat", thinking_budget=10**9)
    assert sent(r)["thinking_budget"] == MAX_OUT and r.output_tokens == 2 * MAX_OUT


HOSTED = [
    ("chat", {"web_search_options": {}}, "web search"),
    ("chat", {"tools": [{"type": "web_search_preview"}]}, "web_search_preview"),
    ("chat", {"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
    ("chat", {"modalities": ["text", "audio"]}, "audio"),
    ("chat", {"prediction": {"type": "content", "content": "x" * 1000}}, "prediction"),
    ("chat", {"service_tier": "priority"}, "service_tier"),
    ("responses", {"tools": [{"type": "web_search"}]}, "web_search"),
    (
        "responses",
        {"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]},
        "code_interpreter",
    ),
    ("responses", {"tools": [{"type": "image_generation"}]}, "image_generation"),
    ("responses", {"tools": [{"type": "file_search", "vector_store_ids": ["v"]}]}, "file_search"),
    ("responses", {"tools": [{"type": "mcp", "server_url": "https://x"}]}, "mcp"),
    ("responses", {"background": True}, "background"),
    ("responses", {"prompt": {"id": "pmpt_1"}}, "stored prompt"),
    ("messages", {"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "web_search_20250305"),
    ("messages", {"tools": [{"type": "code_execution_20250522", "name": "x"}]}, "code_execution"),
    ("messages", {"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]}, "web_fetch"),
    ("messages", {"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]}, "MCP"),
    ("messages", {"container": "c_1"}, "container"),
]


@pytest.mark.parametrize(("api", "body", "phrase"), HOSTED, ids=[f"{a}-{p}" for a, _, p in HOSTED])
def test_what_the_price_table_cannot_bound_is_refused(api, body, phrase):
    refused = plan(api, **body)
    assert isinstance(refused, Refusal) and refused.status == 400
    assert phrase in refused.message


def test_client_side_tools_pass_and_anthropic_defined_ones_are_allowed_for():
    assert isinstance(plan("chat", tools=[{"type": "function", "function": {"name": "f"}}]), Plan)
    assert isinstance(plan("responses", tools=[{"type": "function", "name": "shell"}]), Plan)
    plain = plan("messages", tools=[{"name": "f", "input_schema": {}}])
    bash = plan("messages", tools=[{"type": "bash_20250124", "name": "bash"}])
    assert isinstance(plain, Plan) and isinstance(bash, Plan)
    assert bash.prompt_tokens - len(bash.data) == plain.prompt_tokens - len(plain.data) + 1024


def test_a_stream_asks_for_its_usage_and_hides_it_when_the_client_did_not():
    p = plan("chat", stream=True)
    assert sent(p)["stream_options"] == {"include_usage": True} and not p.client_wants_usage
    q = plan("chat", stream=True, stream_options={"include_usage": True, "continuous_usage_stats": True})
    assert q.client_wants_usage and sent(q)["stream_options"]["continuous_usage_stats"] is True


def test_duplicate_keys_cannot_smuggle_a_second_bound():
    # {"max_tokens": 1, "max_tokens": 100000}: Python keeps the last, some servers the first; the
    # gateway forwards what it parsed, serialised again, so both sides see one value.
    body = json.loads('{"messages": [], "max_tokens": 1, "max_tokens": 100000}')
    p = plan_call("chat", body, "m", MAX_OUT, 0)
    assert isinstance(p, Plan) and p.data.count(b"max_tokens") == 1


def chunk(done_tokens: int, choices: bool = True) -> dict:
    return {
        "choices": [{"index": 0, "delta": {"content": "x"}}] if choices else [],
        "usage": {"prompt_tokens": 100, "completion_tokens": done_tokens},
    }


def test_a_chat_stream_is_settled_on_its_final_usage_not_the_first_cumulative_chunk():
    seen = StreamSettlement("chat")
    for n in range(1, 11):  # continuous_usage_stats: cumulative usage in every chunk
        seen.observe(chunk(n * 100))
        assert not seen.complete
    seen.observe(chunk(1000, choices=False))
    assert seen.complete and seen.final_usage == Usage(100, 1000)


def test_a_chat_stream_without_a_final_usage_chunk_settles_at_done_on_the_last_usage():
    seen = StreamSettlement("chat")
    seen.observe(chunk(300))
    seen.observe(chunk(900))
    assert not seen.complete
    seen.observe(None, done=True)
    assert seen.complete and seen.final_usage == Usage(100, 900)
    nothing = StreamSettlement("chat")
    nothing.observe(None, done=True)
    assert not nothing.complete  # no usage at all: the caller charges the worst case


def test_anthropic_usage_is_cumulative_and_final_at_message_stop():
    seen = StreamSettlement("messages")
    seen.observe({"type": "message_start", "message": {"usage": {"input_tokens": 50, "output_tokens": 1}}})
    seen.observe({"type": "message_delta", "usage": {"output_tokens": 400}})
    seen.observe({"type": "message_delta", "usage": {"output_tokens": 700}})
    assert not seen.complete
    seen.observe({"type": "message_stop"})
    assert seen.complete and seen.final_usage == Usage(50, 700)


def test_responses_usage_comes_with_the_final_event_only():
    seen = StreamSettlement("responses")
    seen.observe({"type": "response.created", "response": {"usage": {"input_tokens": 1, "output_tokens": 1}}})
    assert not seen.complete
    final = {"type": "response.completed", "response": {"usage": {"input_tokens": 80, "output_tokens": 20}}}
    seen.observe(final)
    assert seen.complete and seen.final_usage == Usage(80, 20)


def test_a_tool_type_passes_by_its_exact_name_not_a_prefix():
    assert isinstance(plan("chat", tools=[{"type": "function_web_search"}]), Refusal)
    assert isinstance(plan("messages", tools=[{"type": "customer_web_search"}]), Refusal)


def test_a_namespace_of_client_tools_passes_and_one_hiding_a_hosted_tool_does_not():
    # codex groups its sub-agent tools in a Responses `namespace`.
    fn = {"type": "function", "name": "close_agent", "parameters": {}}
    assert isinstance(plan("responses", tools=[{"type": "namespace", "name": "n", "tools": [fn]}]), Plan)
    hidden = {
        "type": "namespace",
        "name": "n",
        "tools": [fn, {"type": "namespace", "tools": [{"type": "web_search"}]}],
    }
    refused = plan("responses", tools=[hidden])
    assert isinstance(refused, Refusal) and "web_search" in refused.message
    assert isinstance(plan("responses", tools=[{"type": "namespace", "tools": "x"}]), Refusal)
