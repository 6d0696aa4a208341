"""The engine's real SessionMeter and Accounts on a real Ledger (a store that is durable at once),
without a campaign around it, for gateway tests."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from benchtui.core.contract import LogicalLimits, ModelSpec
from benchtui.core.money import token_cost
from benchtui.engine import events as ev
from benchtui.engine.accounts import Accounts
from benchtui.engine.ledger import Ledger
from benchtui.engine.meter import UNLIMITED, SessionMeter
from benchtui.engine.providers import Backoff

IN, OUT = Decimal("3"), Decimal("15")  # $ per million tokens
MODEL = ModelSpec("anthropic/claude-test", IN, OUT, 1000)


class Durable:
    def __init__(self) -> None:
        self.commits = 0

    async def commit(self) -> None:
        self.commits += 1

    def mark_dirty(self) -> None:
        pass

    def mark_dirty_soon(self) -> None:
        pass

    def append(self, record: dict[str, Any]) -> None:
        pass

    def append_row(self, file: str, record: dict[str, Any]) -> None:
        pass


def open_meter(
    reservation: Decimal,
    model: ModelSpec = MODEL,
    session: str = "m-0",
    limits: LogicalLimits = UNLIMITED,
    backoff: Backoff | None = None,
) -> tuple[SessionMeter, Ledger, list[str]]:
    """A meter for one session holding `reservation`; the list collects overspent sessions.
    `backoff`: its provider's, shared with other sessions' meters (else its own)."""
    ledger = Ledger(Decimal(100), {model.name: Decimal(100)})
    flight = ledger.open(session, model.name, 0, 1, "command", reservation)
    overspent: list[str] = []
    accounts = Accounts(ledger, Durable(), ev.EventBus(), {})  # type: ignore[arg-type]
    meter = SessionMeter(
        accounts,
        flight,
        model,
        reservation,
        limits=limits,
        on_overspent=lambda detail: overspent.append(session),
        backoff=backoff,
    )
    return meter, ledger, overspent


def cost(input_tokens: int, output_tokens: int, model: ModelSpec = MODEL) -> Decimal:
    return token_cost(input_tokens, model.input_usd_per_mtok) + token_cost(
        output_tokens, model.output_usd_per_mtok
    )


REAL_KEY = "sk-real-provider-key-0123456789/+="
"""A provider key the hostile tests look for in everything an agent gets back."""


def model_at(upstream: Any, max_output: int = 1000) -> ModelSpec:
    """MODEL served by a scripted upstream (support.scripted_upstream.ScriptedUpstream)."""
    return ModelSpec(
        MODEL.name, MODEL.input_usd_per_mtok, MODEL.output_usd_per_mtok, max_output, upstream.url
    )


async def kill_mid_call(url: str, token: str, upstream: Any, pid: int, body: dict[str, Any]) -> object:
    """Make one call through `url`, SIGKILL process `pid` once the provider has it (so it may
    have billed it), and return what the agent got: a status code or the client's error name."""
    import os
    import signal

    import httpx
    import trio

    got: list[object] = []
    async with httpx.AsyncClient(timeout=30) as client, trio.open_nursery() as nursery:

        async def one() -> None:
            try:
                r = await client.post(
                    f"{url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {token}"}
                )
                got.append(r.status_code)
            except httpx.HTTPError as exc:
                got.append(type(exc).__name__)

        nursery.start_soon(one)
        with trio.fail_after(10):
            while not upstream.calls:
                await trio.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
    return got[0]
