"""What a call may cost: one policy, as pure functions of the request and of the answer.

`plan_call` turns an agent's request body into the body forwarded upstream and the worst case
to hold, or a `Refusal` in the API's terms. Every bound a client may send is clamped to the
model's `max_output_tokens` (all output-bound fields present, not only the one the API
documents: a provider may honour another), choices multiply the output held, thinking budgets
are clamped, and what the price table cannot bound (hosted tools, audio, stored prompts, ...,
see `core.billable`) is refused. `StreamSettlement` and `answer_usage` read the usage to charge:
once, from the final usage of a stream, never from its first usage chunk.

Independent of the HTTP server (no trio, no httpx): a relay process may call it as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from benchtui.core.billable import unbounded_option
from benchtui.core.usage import Usage, read_usage

Api = Literal["chat", "responses", "messages"]
OUTPUT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "max_new_tokens")
DEFAULT_OUTPUT_FIELD: dict[str, str] = {
    "chat": "max_tokens",
    "responses": "max_output_tokens",
    "messages": "max_tokens",
}
MAX_CHOICES = 16
CLIENT_TOOLS: dict[str, tuple[str, ...]] = {
    # Tools the client runs itself: billed as tokens only. Anything else runs at the provider.
    "chat": ("function", "custom"),
    "responses": ("function", "custom", "local_shell", "shell", "apply_patch"),
    "messages": ("custom", "bash_", "text_editor_", "computer_", "memory_"),
}
ANTHROPIC_TOOL_ALLOWANCE = 1024
"""Prompt tokens Anthropic adds for each tool it defines (bash 245, text editor 700, computer
735 + a system prompt of ~500, by its docs); on top of the request's bytes."""


@dataclass(frozen=True)
class Refusal:
    """A request the gateway will not forward: a 400 in the API's error shape, never billed."""

    message: str
    status: int = 400
    kind: str = "invalid_request_error"


@dataclass(frozen=True)
class Plan:
    """The body to forward (as bytes: the prompt bound counts exactly these) and its worst case."""

    data: bytes
    prompt_tokens: int
    output_tokens: int
    stream: bool
    client_wants_usage: bool = True
    """Chat streams: the client asked for the usage chunk (the gateway always asks for it)."""


def _positive_int(value: Any) -> bool:
    return type(value) is int and value > 0


def plan_call(
    api: Api, body: dict[str, Any], upstream_model: str, max_output: int, prompt_overhead: int
) -> Plan | Refusal:
    """Clamp `body` (a copy is forwarded) to what the campaign can pay for, or refuse it."""
    body = dict(body)
    body["model"] = upstream_model
    stream = body.get("stream", False)
    if stream is not None and type(stream) is not bool:
        return Refusal("'stream' must be true or false")
    stream = bool(stream)
    problem = unbounded_option(body)
    if problem:
        return Refusal(f"gateway: {problem}")
    # Output bound: the smallest asked, at most the model's; written into every field present.
    asked = []
    for name in OUTPUT_FIELDS:
        value = body.get(name)
        if value is None:
            continue
        if not _positive_int(value):
            return Refusal(f"'{name}' must be a positive integer")
        asked.append(value)
    bound = min([max_output, *asked])
    present = [name for name in OUTPUT_FIELDS if body.get(name) is not None]
    for name in present or [DEFAULT_OUTPUT_FIELD[api]]:
        body[name] = bound
    choices = 1
    for name in ("n", "best_of"):
        value = body.get(name)
        if value is None:
            continue
        if not _positive_int(value) or value > MAX_CHOICES:
            return Refusal(f"'{name}' must be an integer from 1 to {MAX_CHOICES}")
        choices = max(choices, value)
    for name in ("logprobs", "top_logprobs"):
        value = body.get(name)
        if value is not None and type(value) not in (bool, int):
            return Refusal(f"'{name}' must be a boolean or an integer")
    extra_prompt = 0
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            return Refusal("'tools' must be a list of objects")
        for tool in _flatten(tools):
            kind = tool.get("type", "custom") if isinstance(tool, dict) else None
            if not isinstance(kind, str) or not _client_tool(api, kind):
                return Refusal(
                    f"gateway: the tool type {kind!r} runs at the provider and is billed per use,"
                    " which the campaign's prices cannot bound; use function tools"
                    ' (codex: -c web_search="disabled")'
                )
            if api == "messages" and kind != "custom":
                extra_prompt += ANTHROPIC_TOOL_ALLOWANCE
    thinking = _clamp_thinking(api, body, bound)
    if isinstance(thinking, Refusal):
        return thinking
    client_wants_usage = True
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        return Refusal("'stream_options' must be an object")
    if stream and api == "chat":  # without it a stream has no usage: ask, and hide it if not asked
        client_wants_usage = options.get("include_usage") is True
        body["stream_options"] = {**options, "include_usage": True}
    try:
        data = orjson.dumps(body)  # the body came through a strict JSON parser: nothing to lose
    except (orjson.JSONEncodeError, RecursionError):
        return Refusal("the body holds numbers or nesting JSON cannot carry")
    return Plan(
        data,
        prompt_tokens=len(data) + prompt_overhead + extra_prompt,
        output_tokens=bound * choices + thinking,
        stream=stream,
        client_wants_usage=client_wants_usage,
    )


def _flatten(tools: list[Any], depth: int = 0) -> list[Any]:
    """Tools, with those a Responses `namespace` groups (codex's sub-agent tools) in its place."""
    out: list[Any] = []
    for tool in tools:
        nested = tool.get("tools") if isinstance(tool, dict) and tool.get("type") == "namespace" else None
        if isinstance(nested, list) and depth < 4:
            out += _flatten(nested, depth + 1)
        elif nested is None or depth >= 4:
            out.append(tool if nested is None else {"type": "namespace too deep"})
        else:
            out.append({"type": "namespace without a list of tools"})
    return out


def _client_tool(api: Api, kind: str) -> bool:
    # "bash_" names a family of versions (bash_20250124); the others are exact names.
    return any(kind.startswith(k) if k.endswith("_") else kind == k for k in CLIENT_TOOLS[api])


def _clamp_thinking(api: Api, body: dict[str, Any], bound: int) -> int | Refusal:
    """Clamp thinking budgets; returns the output tokens they may add beyond the bound.

    Anthropic counts thinking inside `max_tokens` (its budget must stay below it); elsewhere a
    budget may be billed beside the output bound, so it is held on top of it."""
    extra = 0
    for parent, name in (
        ("thinking", "budget_tokens"),
        ("reasoning", "max_tokens"),
        (None, "thinking_budget"),
    ):
        holder = body.get(parent) if parent else body
        if holder is None:
            continue
        if not isinstance(holder, dict):
            return Refusal(f"'{parent}' must be an object")
        value = holder.get(name)
        if value is None:
            continue
        if not _positive_int(value):
            return Refusal(f"'{name}' must be a positive integer")
        if api == "messages" and parent == "thinking":
            body[parent] = {**holder, name: min(value, max(bound - 1, 1))}
        else:
            clamped = min(value, bound)
            if parent:
                body[parent] = {**holder, name: clamped}
            else:
                body[name] = clamped
            extra += clamped
    return extra


# -- settlement ---------------------------------------------------------------------------------
def answer_usage(api: Api, answer: Any) -> Usage | None:
    """The buckets of a whole answer (or of a stream event carrying `usage`), read by
    core/usage.py in the API's shape; None when it has none, or one that cannot be trusted
    (negative, contradictory, not counts): the call's worst case is charged then."""
    if not isinstance(answer, dict) or not isinstance(answer.get("usage"), dict):
        return None
    found = read_usage(answer["usage"], api, timings=answer.get("timings"))
    return None if isinstance(found, str) else found


def _most(a: Usage, b: Usage) -> Usage:
    """Bucket by bucket the larger (a stream's usage is cumulative: never less than the truth)."""
    return Usage(
        max(a.input_tokens, b.input_tokens),
        max(a.output_tokens, b.output_tokens),
        cache_read_tokens=max(a.cache_read_tokens, b.cache_read_tokens),
        cache_write_tokens=max(a.cache_write_tokens, b.cache_write_tokens),
        reasoning_tokens=max(a.reasoning_tokens, b.reasoning_tokens),
        provider_cost_usd=b.provider_cost_usd if b.provider_cost_usd is not None else a.provider_cost_usd,
    )


@dataclass
class StreamSettlement:
    """The usage of a stream, event by event, per API semantics:

    - chat: usage in a chunk is cumulative (`continuous_usage_stats` puts it in every chunk); the
      final one is the usage chunk without choices, or the last usage before `[DONE]`;
    - responses: the usage of `response.completed | incomplete | failed`;
    - messages: `message_start` then cumulative `message_delta` usage, final at `message_stop`.
    `complete` turns True once the final usage is known: settle then, before relaying that event.
    """

    api: Api
    client_wants_usage: bool = True
    usage: Usage = field(default_factory=Usage)
    complete: bool = False
    untrusted: bool = False
    """An event carried a usage that cannot be trusted: the stream is charged its worst case."""
    _seen: bool = False
    _final_delta: bool = False

    FINAL_RESPONSES = ("response.completed", "response.incomplete", "response.failed")

    @property
    def final_usage(self) -> Usage | None:
        """What to charge once `complete` (None: the worst case)."""
        return None if self.untrusted else self.usage

    def _take(self, usage: Any, shape: Api, timings: Any = None) -> bool:
        """Take an event's usage; False when it had none to take."""
        if not isinstance(usage, dict):
            return False
        found = read_usage(usage, shape, timings=timings)
        if isinstance(found, str):
            self.untrusted = True
        else:
            self.usage = _most(self.usage, found)
        self._seen = True
        return True

    def observe(self, event: dict[str, Any] | None, done: bool = False) -> bool:
        """Note what an event carries (`done`: the `[DONE]` line); False: keep it from the client."""
        if self.complete:
            return True
        if self.api == "chat":
            if done:
                self.complete = self._seen
                return True
            if not isinstance(event, dict) or not self._take(
                event.get("usage"), "chat", event.get("timings")
            ):
                return True
            choices = event.get("choices")
            if not choices:
                self.complete = True
                return self.client_wants_usage
            return True
        if event is None:
            return True
        kind = event.get("type")
        if self.api == "responses":
            if kind in self.FINAL_RESPONSES:
                response = event.get("response")
                if isinstance(response, dict) and self._take(response.get("usage"), "responses"):
                    self.complete = True
            return True
        if kind == "message_start" and isinstance(event.get("message"), dict):
            self._take(event["message"].get("usage"), "messages")
        elif kind == "message_delta" and isinstance(event.get("usage"), dict):
            u = event["usage"]
            self._take(u, "messages")
            self._final_delta = type(u.get("output_tokens")) is int
        elif kind == "message_stop":
            self.complete = self._final_delta
        return True
