"""What a model's server says of its chat template: llama.cpp's GET /props -> chat_template_caps.

Asked only after a model could not act (its answers carried no action: the ping, a session ending
`no_action`), to tell a template without tool calling from a model that did not use it
(core/endings.py `cause_of`). A forced `tool_choice` is no probe: llama.cpp then answers with
plain text too. One short GET on the model's own `api_base` (its `/v1` left off); a server that
is not llama.cpp, or says nothing, is None: not known.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import trio

from benchtui.core.endings import Cause, Ending, cause_of

PROBE_TIMEOUT_S = 5.0
MAX_BYTES = 1 << 20
"""/props carries the chat template's source: a few KB, never more than this is read."""


def props_url(api_base: str) -> str:
    root = api_base.rstrip("/")
    root = root.removesuffix("/v1")
    return f"{root}/props"


def template_caps(api_base: str | None, timeout: float = PROBE_TIMEOUT_S) -> dict[str, bool] | None:
    """The server's `chat_template_caps` (e.g. {"supports_tool_calls": False, ...}), or None."""
    if not api_base or not api_base.startswith(("http://", "https://")):
        return None
    try:
        with urllib.request.urlopen(props_url(api_base), timeout=timeout) as answer:  # noqa: S310 (http only)
            data: Any = json.loads(answer.read(MAX_BYTES))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    caps = data.get("chat_template_caps") if isinstance(data, dict) else None
    if not isinstance(caps, dict):
        return None
    return {str(k): v for k, v in caps.items() if isinstance(v, bool)}


async def obstacle(ending: Ending | None, action_format: str | None, api_base: str | None) -> Cause | None:
    """What stood in the way of a model whose answers carried no action (`cause_of`), asking its
    server only where that tells (`tool_call`: the template's caps; the text format needs none)."""
    if ending != "no_action":
        return None
    caps = None
    if action_format != "text":
        caps = await trio.to_thread.run_sync(template_caps, api_base)
    return cause_of(ending, action_format, caps)
