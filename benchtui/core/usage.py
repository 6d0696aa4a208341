"""A model call's token usage in four priced buckets, read from whatever shape its provider reports.

The buckets: `input` (prompt tokens read fresh), `cache_read` (prompt tokens served from the
provider's cache), `cache_write` (prompt tokens written to it), `output` (reasoning included;
`reasoning` says how much of it, where the provider does). Each has its price in the campaign
(docs/guide/budgets.md). Shapes, one reader for the mini runner (litellm's normalised `usage`)
and the gateway (the provider's own JSON):

- OpenAI chat and compatible servers (vLLM, llama.cpp, OpenRouter, litellm's normalised usage):
  `prompt_tokens` (cached and written included), `prompt_tokens_details.cached_tokens`
  (or `cache_read_input_tokens`, DeepSeek's `prompt_cache_hit_tokens`),
  `prompt_tokens_details.cache_write_tokens | cache_creation_tokens` (or
  `cache_creation_input_tokens`), `completion_tokens` (reasoning included),
  `completion_tokens_details.reasoning_tokens`; llama.cpp's answer-level `timings.cache_n` when
  the usage has no details.
- OpenAI responses: `input_tokens` (cached included), `input_tokens_details.cached_tokens`,
  `output_tokens`, `output_tokens_details.reasoning_tokens`.
- Anthropic messages: `input_tokens` *excludes* `cache_read_input_tokens` and
  `cache_creation_input_tokens`; `output_tokens`.
- Gemini: `promptTokenCount` (cached included), `cachedContentTokenCount`, `candidatesTokenCount`
  plus `thoughtsTokenCount` (thoughts are billed as output), camelCase or snake_case.

A usage that contradicts itself (more cached than prompt tokens, more reasoning than output),
carries a negative, fractional, boolean, textual or absurd count, is no usage: the reader says
why, and the caller charges the worst case it authorised (docs/design/invariants.md#f6: never
under). The provider's own cost (`usage.cost`: OpenRouter, a LiteLLM proxy) is read apart: it is
recorded beside ours for the audit, never charged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from benchtui.core import bounds

Shape = Literal["chat", "responses", "messages", "gemini"]
MAX_CALL_TOKENS = 1_000_000_000
"""More tokens than any context window holds in one call (the largest are a few million): a
count above it is nonsense, not usage."""
BUCKETS = ("input", "cache_read", "cache_write", "output", "reasoning")
"""The keys of a usage in records (`reasoning` is part of `output`, never priced apart)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call, by bucket; `flat_usd` prices simulated calls (the FakeRunner).

    `input_tokens` are the prompt tokens read fresh (cache reads and writes are their own buckets);
    `output_tokens` include `reasoning_tokens`. `worst_case`: this is the hold of a call whose real
    usage is unknown, so its prompt is priced at the dearest prompt price. `provider_cost_usd`:
    what the provider said the call cost (None: it said nothing), for the audit only."""

    input_tokens: int = 0
    output_tokens: int = 0
    flat_usd: Decimal = Decimal(0)
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    worst_case: bool = False
    provider_cost_usd: Decimal | None = None

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def tokens(self) -> int:
        """Every token billed (prompt and output)."""
        return self.prompt_tokens + self.output_tokens

    def buckets(self) -> dict[str, int]:
        return {
            "input": self.input_tokens,
            "cache_read": self.cache_read_tokens,
            "cache_write": self.cache_write_tokens,
            "output": self.output_tokens,
            "reasoning": self.reasoning_tokens,
        }

    @classmethod
    def from_buckets(cls, data: Any) -> Usage | str:
        """The usage `buckets()` wrote (a missing bucket is 0), or why it is not one."""
        if not isinstance(data, Mapping):
            return "the usage is not an object"
        counts: dict[str, int] = {}
        for key in BUCKETS:
            value = _count(data.get(key, 0))
            if isinstance(value, str):
                return f"{key}: {value}"
            counts[key] = value
        return cls(
            counts["input"],
            counts["output"],
            cache_read_tokens=counts["cache_read"],
            cache_write_tokens=counts["cache_write"],
            reasoning_tokens=counts["reasoning"],
        )


def add_buckets(total: dict[str, int], usage: Usage) -> None:
    """Add a call's buckets into a running total (an attempt's, a model's)."""
    for key, value in usage.buckets().items():
        total[key] = total.get(key, 0) + value


def _count(value: Any) -> int | str:
    """A token count, or why it is none."""
    if type(value) is not int:
        return f"{value!r:.40} is not a whole number of tokens"
    if value < 0:
        return f"{value} is negative"
    if value > MAX_CALL_TOKENS:
        return f"{value} is past any context window"
    return value


def _get(data: Mapping[str, Any], *path: str) -> Any:
    value: Any = data
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _first(data: Mapping[str, Any], *paths: tuple[str, ...]) -> int | str:
    """The first of `paths` present (not None) as a count; 0 when none is."""
    for path in paths:
        value = _get(data, *path)
        if value is not None:
            found = _count(value)
            return f"{'.'.join(path)}: {found}" if isinstance(found, str) else found
    return 0


def _required(data: Mapping[str, Any], key: str) -> int | str:
    if data.get(key) is None:
        return f"{key}: missing"
    found = _count(data[key])
    return f"{key}: {found}" if isinstance(found, str) else found


def shape_of(usage: Mapping[str, Any]) -> Shape:
    """The shape a usage object is in, by its keys."""
    if "prompt_tokens" in usage:
        return "chat"
    if any(k in usage for k in ("promptTokenCount", "prompt_token_count", "candidatesTokenCount")):
        return "gemini"
    if "input_tokens_details" in usage or "output_tokens_details" in usage:
        return "responses"
    return "messages"


def read_usage(usage: Any, shape: Shape | None = None, *, timings: Any = None) -> Usage | str:
    """The buckets of one call's usage in `shape` (None: told by its keys), or why they cannot be
    trusted. `timings`: llama.cpp's answer-level timings (its `cache_n` when the usage has no
    cached count). A count the shape requires must be there; the others default to 0."""
    if not isinstance(usage, Mapping):
        return "the provider reported no usage"
    shape = shape or shape_of(usage)
    found = _READERS[shape](usage, timings)
    if isinstance(found, str):
        return found
    prompt, cached, written, output, reasoning, fresh = found
    if fresh is None:  # the prompt count includes its cached and written parts
        if cached + written > prompt:
            return f"the usage says {cached + written} of {prompt} prompt tokens were cached or written"
        fresh = prompt - cached - written
    if reasoning > output:
        return f"the usage says {reasoning} of {output} output tokens were reasoning"
    return Usage(
        fresh,
        output,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
        provider_cost_usd=provider_cost(usage),
    )


Counts = tuple[int, int, int, int, int, int | None] | str
"""(prompt, cached, written, output, reasoning, fresh input or None when prompt includes the rest)."""


def _counts(*values: int | str) -> list[int] | str:
    problems = [v for v in values if isinstance(v, str)]
    return problems[0] if problems else [v for v in values if isinstance(v, int)]


def _chat(u: Mapping[str, Any], timings: Any) -> Counts:
    cached = _first(
        u,
        ("prompt_tokens_details", "cached_tokens"),
        ("cache_read_input_tokens",),
        ("prompt_cache_hit_tokens",),
    )
    if (
        cached == 0
        and _get(u, "prompt_tokens_details", "cached_tokens") is None
        and isinstance(timings, Mapping)
    ):
        cached = _first(timings, ("cache_n",))  # llama.cpp without the details: its timings say
    found = _counts(
        _required(u, "prompt_tokens"),
        cached,
        _first(
            u,
            ("prompt_tokens_details", "cache_write_tokens"),
            ("prompt_tokens_details", "cache_creation_tokens"),
            ("cache_creation_input_tokens",),
        ),
        _required(u, "completion_tokens"),
        _first(u, ("completion_tokens_details", "reasoning_tokens")),
    )
    return found if isinstance(found, str) else (*found, None)  # type: ignore[return-value]


def _responses(u: Mapping[str, Any], timings: Any) -> Counts:
    found = _counts(
        _required(u, "input_tokens"),
        _first(u, ("input_tokens_details", "cached_tokens")),
        0,
        _required(u, "output_tokens"),
        _first(u, ("output_tokens_details", "reasoning_tokens")),
    )
    return found if isinstance(found, str) else (*found, None)  # type: ignore[return-value]


def _messages(u: Mapping[str, Any], timings: Any) -> Counts:
    # input_tokens excludes the cache buckets; a stream's message_delta may carry output alone.
    found = _counts(
        _first(u, ("input_tokens",)),
        _first(u, ("cache_read_input_tokens",)),
        _first(u, ("cache_creation_input_tokens",)),
        _required(u, "output_tokens"),
        0,
    )
    if isinstance(found, str):
        return found
    fresh, cached, written, output, reasoning = found
    return fresh + cached + written, cached, written, output, reasoning, fresh


def _gemini(u: Mapping[str, Any], timings: Any) -> Counts:
    if u.get("promptTokenCount") is None and u.get("prompt_token_count") is None:
        return "promptTokenCount: missing"
    found = _counts(
        _first(u, ("promptTokenCount",), ("prompt_token_count",)),
        _first(u, ("cachedContentTokenCount",), ("cached_content_token_count",)),
        0,
        _first(u, ("candidatesTokenCount",), ("candidates_token_count",)),
        _first(u, ("thoughtsTokenCount",), ("thoughts_token_count",)),
    )
    if isinstance(found, str):
        return found
    prompt, cached, written, candidates, thoughts = found
    return prompt, cached, written, candidates + thoughts, thoughts, None  # thoughts are output


_READERS = {"chat": _chat, "responses": _responses, "messages": _messages, "gemini": _gemini}


def provider_cost(usage: Any) -> Decimal | None:
    """What the provider says the call cost in USD (`usage.cost`, a number or a decimal string),
    or None: absent, or not a sane amount. Recorded for the audit, never charged."""
    if not isinstance(usage, Mapping):
        return None
    return cost_amount(usage.get("cost"))


def cost_amount(value: Any) -> Decimal | None:
    """A provider-reported amount as exact dollars, or None when it is none (NaN, negative, absurd)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        amount = Decimal(repr(value) if isinstance(value, float) else str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return amount if bounds.sane_amount(amount) else None
