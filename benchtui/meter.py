"""The per-session meter handed to a runner: authorise before each call, charge after it."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from benchtui import events as ev
from benchtui.accounts import Accounts
from benchtui.ledger import InFlight
from benchtui.money import token_cost, usd
from runners.base import ModelSpec, Usage


class SessionMeter:
    """Implements `runners.base.Meter` against the accounts; costs use the campaign's prices (F6).

    `on_overspent` is called when charges pass the session's reservation (a provider ignoring
    `max_tokens`): the attempt that owns this meter then stops its session.
    """

    def __init__(
        self,
        accounts: Accounts,
        flight: InFlight,
        model: ModelSpec,
        budget: Decimal,
        *,
        on_overspent: Callable[[], None] = lambda: None,
    ) -> None:
        self._accounts = accounts
        self._flight = flight
        self._model = model
        self._budget = budget
        self._on_overspent = on_overspent
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
        if not self._accounts.authorise(self._flight, usd(worst_case_usd)):
            return False
        self.calls += 1
        await self._accounts.commit()
        self._progress("")
        return True

    def charge(self, usage: Usage, *, settles: Decimal | None = None) -> Decimal:
        """Charge `usage`, settling the hold of `settles` (None: every open hold of the session)."""
        cost = self.price(usage)
        self._accounts.charge(self._flight, cost, settles=None if settles is None else usd(settles))
        self.tokens += usage.input_tokens + usage.output_tokens
        self._progress("")
        if self._accounts.enforce and self._flight.spent > self._flight.reservation:
            self._on_overspent()
        return cost

    def progress(self, note: str) -> None:
        self._progress(note)

    def _progress(self, note: str) -> None:
        self._accounts.emit(
            ev.SessionProgress(
                session=self._flight.session, note=note, calls=self.calls, cost_usd=self._flight.spent
            )
        )
