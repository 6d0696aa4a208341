"""A session's grant on the gateway: its token, and where its calls go.

The engine keeps the `Binding` (token -> the session's meter); each relay keeps a `Grant` (token
-> what forwarding a call needs, and the calls in flight, to cut them when the session ends).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any

from benchtui.core.contract import Meter, ModelSpec
from benchtui.runners.kit.gateway.dialects import Dialect

PROMPT_OVERHEAD_TOKENS = 2048


def upstream_model(name: str) -> str:
    """The provider's own name for a litellm model id: `anthropic/claude-x` -> `claude-x`."""
    return name.split("/", 1)[1] if "/" in name else name


@dataclass(eq=False)
class Binding:
    """token -> session, on the engine's side. `open` turns False when the session ends: its token
    is dead from then on (no hold is granted), its relays cut its calls in flight, and their holds
    are left to the ledger (worst case, docs/design/invariants.md#f6)."""

    meter: Meter
    model: ModelSpec
    api_key: str | None
    prompt_overhead_tokens: int = PROMPT_OVERHEAD_TOKENS
    refusal_status: int = 429
    """The HTTP status a refused call answers (`dialects.REFUSAL_STATUS` unless the session's
    client retries it: LiteLLM retries a 429 for minutes and stops at once on a 401)."""
    token: str = field(default_factory=lambda: "benchtui-" + secrets.token_urlsafe(24))
    open: bool = True
    settling: bool = True
    """Charges still count (until every relay has cut the session's calls)."""
    authorised: int = 0
    """Calls let through (each held, then charged)."""
    refused: int = 0
    """Calls the session's budget refused (answered `refusal_status`, never forwarded)."""

    def grant(self) -> dict[str, Any]:
        """What a relay needs to forward this session's calls."""
        return {
            "model": upstream_model(self.model.name),
            "api_base": self.model.api_base,
            "api_key": self.api_key,
            "max_output": self.model.max_output_tokens,
            "overhead": self.prompt_overhead_tokens,
            "refusal_status": self.refusal_status,
        }


@dataclass(eq=False)
class Grant:
    """token -> forwarding, on a relay's side."""

    token: str
    model: str
    api_base: str | None
    api_key: str | None
    max_output: int
    overhead: int
    refusal_status: int = 429
    open: bool = True
    calls: set[asyncio.Timeout] = field(default_factory=set)
    """Each call in flight, by its deadline (cutting a call is moving its deadline to now)."""

    def base_url(self, dialect: Dialect) -> str:
        return (self.api_base or dialect.default_base).rstrip("/")

    def close(self) -> None:
        self.open = False
        now = asyncio.get_running_loop().time()
        for deadline in self.calls:
            deadline.reschedule(now)
