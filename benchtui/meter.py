"""The per-session meter handed to a runner: authorise before each call, charge after it."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from benchtui import events as ev
from benchtui.ledger import InFlight
from benchtui.money import token_cost, usd
from runners.base import ModelSpec, Usage

if TYPE_CHECKING:
    from benchtui.scheduler import Scheduler


class SessionMeter:
    """Implements `runners.base.Meter` against the ledger; costs use the campaign's prices (F6)."""

    def __init__(self, scheduler: Scheduler, flight: InFlight, model: ModelSpec, budget: Decimal):
        self._scheduler = scheduler
        self._flight = flight
        self._model = model
        self._budget = budget
        self.calls = 0
        self.tokens = 0

    @property
    def budget_usd(self) -> Decimal:
        return self._budget

    @property
    def remaining_usd(self) -> Decimal:
        return self._budget - self._flight.spent - self._flight.held

    def worst_case_usd(self, prompt_tokens: int) -> Decimal:
        return token_cost(prompt_tokens, self._model.input_usd_per_mtok) + token_cost(
            self._model.max_output_tokens, self._model.output_usd_per_mtok
        )

    def price(self, usage: Usage) -> Decimal:
        return (
            token_cost(usage.input_tokens, self._model.input_usd_per_mtok)
            + token_cost(usage.output_tokens, self._model.output_usd_per_mtok)
            + usd(usage.flat_usd)
        )

    async def authorise(self, worst_case_usd: Decimal) -> bool:
        """Hold the worst case; returns once the hold is on disk, or False if it does not fit."""
        scheduler = self._scheduler
        if not scheduler.ledger.authorise(self._flight.session, usd(worst_case_usd)):
            return False
        self.calls += 1
        await scheduler.store.commit()
        scheduler.bus.emit(ev.SessionProgress(self._flight.session, "", self.calls, self._flight.spent))
        return True

    def charge(self, usage: Usage, settles: Decimal | None = None) -> Decimal:
        scheduler = self._scheduler
        cost = self.price(usage)
        flight = scheduler.ledger.charge(
            self._flight.session, cost, None if settles is None else usd(settles)
        )
        self.tokens += usage.input_tokens + usage.output_tokens
        scheduler.store.mark_dirty()
        scheduler.bus.emit(ev.SessionProgress(flight.session, "", self.calls, flight.spent))
        if scheduler.ledger.enforce and flight.spent > flight.reservation:
            scheduler.overspent(flight.session)
        return cost

    def progress(self, note: str) -> None:
        self._scheduler.bus.emit(
            ev.SessionProgress(self._flight.session, note, self.calls, self._flight.spent)
        )
