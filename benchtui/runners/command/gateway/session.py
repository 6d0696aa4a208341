"""A session's grant on the gateway: its token, its meter, and where its calls go."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import trio

from benchtui.core.contract import Meter, ModelSpec
from benchtui.runners.command.gateway.dialects import Dialect

PROMPT_OVERHEAD_TOKENS = 2048


def upstream_model(name: str) -> str:
    """The provider's own name for a litellm model id: `anthropic/claude-x` -> `claude-x`."""
    return name.split("/", 1)[1] if "/" in name else name


@dataclass(eq=False)
class Binding:
    """token -> session. `open` turns False when the session ends: its token is dead from then on,
    its calls in flight are cancelled, and their holds are left to the ledger (worst case, docs/design/invariants.md#f6)."""

    meter: Meter
    model: ModelSpec
    api_key: str | None
    prompt_overhead_tokens: int = PROMPT_OVERHEAD_TOKENS
    token: str = field(default_factory=lambda: "benchtui-" + secrets.token_urlsafe(24))
    open: bool = True
    authorised: int = 0
    """Calls let through (each held, then charged)."""
    calls: set[trio.CancelScope] = field(default_factory=set)

    @property
    def upstream_model(self) -> str:
        return upstream_model(self.model.name)

    def base_url(self, dialect: Dialect) -> str:
        return (self.model.api_base or dialect.default_base).rstrip("/")

    def close(self) -> None:
        self.open = False
        for scope in self.calls:
            scope.cancel()
