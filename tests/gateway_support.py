"""The engine's real SessionMeter on a real Ledger, without a campaign around it, for gateway tests."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

from benchtui.ledger import Ledger
from benchtui.meter import SessionMeter
from benchtui.money import token_cost
from runners.base import ModelSpec

IN, OUT = Decimal("3"), Decimal("15")  # $ per million tokens
MODEL = ModelSpec("anthropic/claude-test", IN, OUT, 1000)


class Durable:
    def __init__(self) -> None:
        self.commits = 0

    async def commit(self) -> None:
        self.commits += 1

    def mark_dirty(self) -> None:
        pass


def open_meter(
    reservation: Decimal, model: ModelSpec = MODEL, session: str = "m-0"
) -> tuple[SessionMeter, Ledger, list[str]]:
    """A meter for one session holding `reservation`; the list collects overspent sessions."""
    ledger = Ledger(Decimal(100), {model.name: Decimal(100)})
    flight = ledger.open(session, model.name, 0, 1, "command", reservation)
    overspent: list[str] = []
    scheduler = SimpleNamespace(
        ledger=ledger, store=Durable(), bus=SimpleNamespace(emit=lambda e: None), overspent=overspent.append
    )
    return SessionMeter(scheduler, flight, model, reservation), ledger, overspent  # type: ignore[arg-type]


def cost(input_tokens: int, output_tokens: int, model: ModelSpec = MODEL) -> Decimal:
    return token_cost(input_tokens, model.input_usd_per_mtok) + token_cost(
        output_tokens, model.output_usd_per_mtok
    )
