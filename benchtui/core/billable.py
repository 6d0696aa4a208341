"""What a model call may carry: the options a campaign's price table cannot bound.

The money cap holds a call at prompt tokens x input price + output bound x output price. Some
request options make the provider bill more than that: several choices (`n`, `best_of`), hosted
tools billed per use (web search, code interpreter, image generation), audio, predicted outputs,
background or stored prompts, a dearer service tier. One list, read by the campaign loader (a
model's own `litellm` kwargs: refused at load, exit 2) and by the gateway's policy (an agent's
request: refused with a 400 in the API's shape).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

UNBOUNDED_OPTIONS: dict[str, str] = {
    "web_search_options": "web search is billed per search",
    "audio": "audio output is priced apart from text tokens",
    "prediction": "rejected predicted tokens are billed on top of the output bound",
    "background": "a background response runs on after the call and is billed out of sight",
    "prompt": "a stored prompt's tokens are not in the request",
    "mcp_servers": "remote MCP servers add tokens that are not in the request",
    "container": "code execution containers are billed per hour",
    "use_beam_search": "beam search bills every beam",
}
"""Top-level options refused wherever they carry a value (None and False are no value)."""

CHOICE_OPTIONS = ("n", "best_of")
"""Options that multiply the output billed; a campaign's model kwargs may only set them to 1."""

DEAR_TIERS = frozenset({"priority", "scale"})
"""Service tiers billed above the standard price the campaign declares."""


def unbounded_option(options: Mapping[str, Any]) -> str | None:
    """Why a request (or a model's kwargs) cannot be bounded by the price table, or None."""
    for key, why in UNBOUNDED_OPTIONS.items():
        value = options.get(key)
        if value is not None and value is not False:
            return f"{key!r} is refused: {why}"
    modalities = options.get("modalities")
    if isinstance(modalities, list) and "audio" in modalities:
        return "'modalities' with audio is refused: audio output is priced apart from text tokens"
    tier = options.get("service_tier")
    if isinstance(tier, str) and tier in DEAR_TIERS:
        return f"'service_tier' {tier!r} is refused: it is billed above the campaign's prices"
    return None


def model_kwargs_problem(kwargs: Mapping[str, Any]) -> str | None:
    """A campaign's `litellm = {...}` for a model: what makes its calls unboundable, or None.

    litellm merges `extra_body` into the request, so it is checked the same way."""
    for where, options in (("litellm", kwargs), ("litellm.extra_body", kwargs.get("extra_body"))):
        if not isinstance(options, Mapping):
            continue
        for key in CHOICE_OPTIONS:
            value = options.get(key)
            if value is not None and (type(value) is not int or value != 1):
                return (
                    f"{where}.{key} = {value!r}: more than one choice per call would be billed, one is held"
                )
        if options.get("tools") or options.get("functions"):
            return f"{where}.tools: the runner gives the model its tools; hosted tools cannot be priced"
        problem = unbounded_option(options)
        if problem:
            return f"{where}: {problem}"
    return None
