"""The per-session meter handed to a runner: authorise before each call, charge after it."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from benchtui.core.contract import MODEL_CALLS, LogicalLimits, ModelSpec, Usage
from benchtui.core.money import token_cost, usd
from benchtui.core.usage import add_buckets
from benchtui.engine import events as ev
from benchtui.engine.accounts import Accounts
from benchtui.engine.ledger import InFlight
from benchtui.engine.providers import Backoff
from benchtui.engine.records import ProviderCost, Throttling

UNLIMITED = LogicalLimits()
MAX_QUIET_WAIT_S = 10.0
"""A provider's first 429 is a notice on screen; later ones only when they impose this long a wait."""


class SessionMeter:
    """Implements `benchtui.core.contract.Meter` against the accounts; costs use the campaign's prices (docs/design/invariants.md#f6).

    `on_overspent` is called, with what the meter saw, when charges pass the session's reservation
    (a provider ignoring `max_tokens`): the attempt that owns this meter then stops its session. Logical budget units
    (`limits`) live in the in-flight account too, so the commit that makes a call's hold durable
    makes its `model_calls` unit durable as well.
    """

    def __init__(
        self,
        accounts: Accounts,
        flight: InFlight,
        model: ModelSpec,
        budget: Decimal,
        *,
        limits: LogicalLimits = UNLIMITED,
        on_overspent: Callable[[str], None] = lambda detail: None,
        backoff: Backoff | None = None,
    ) -> None:
        self._accounts = accounts
        self._flight = flight
        self._model = model
        self._budget = budget
        self._on_overspent = on_overspent
        self.limits = limits
        self._exhausted: list[str] = []
        self.calls = 0
        self.tokens = 0
        self.usage: dict[str, int] = {}
        """Tokens by bucket (core/usage.py), over every charge of the attempt."""
        self.reconciled = ProviderCost()
        """The calls whose provider said what they cost: its sum and ours."""
        self._backoff = backoff or Backoff(model.name)
        """Its provider's, shared by every session of that provider (engine/providers.py)."""
        self.throttled_answers = 0
        self.throttle_wait_s = 0.0

    @property
    def budget_usd(self) -> Decimal:
        return self._budget

    @property
    def remaining_usd(self) -> Decimal:
        return self._budget - self._flight.spent - self._flight.held

    def worst_case_usd(self, prompt_tokens: int, output_tokens: int | None = None) -> Decimal:
        out = self._model.max_output_tokens if output_tokens is None else output_tokens
        return self.price(Usage(prompt_tokens, out, worst_case=True))

    def price(self, usage: Usage) -> Decimal:
        """Each bucket at its price; a worst case's prompt at the dearest prompt price (docs/design/invariants.md#f5)."""
        m = self._model
        if usage.worst_case:
            prompt = token_cost(usage.prompt_tokens, m.dearest_prompt_price)
        else:
            prompt = (
                token_cost(usage.input_tokens, m.input_usd_per_mtok)
                + token_cost(usage.cache_read_tokens, m.cache_read_price)
                + token_cost(usage.cache_write_tokens, m.cache_write_price)
            )
        return prompt + token_cost(usage.output_tokens, m.output_usd_per_mtok) + usd(usage.flat_usd)

    async def authorise(self, worst_case_usd: Decimal) -> bool:
        """Hold the worst case and take a `model_calls` unit; returns once both are on disk, or
        False if either does not fit."""
        if self._spent(MODEL_CALLS):
            return False
        if self._backoff.remaining():  # the provider asked for a pause (429): every session waits
            self._progress(
                f"waiting {self._backoff.remaining():.1f} s: {self._backoff.provider} answered 429"
            )
            self.throttle_wait_s += await self._backoff.wait()
        if not self._accounts.authorise(self._flight, usd(worst_case_usd)):
            return False
        self.calls += 1
        if self.limits:  # campaigns without logical budgets keep no counters (their ledger is as it was)
            self._take(MODEL_CALLS)
        await self._accounts.commit()
        self._progress("")
        return True

    async def use(self, *counters: str) -> str | None:
        """Take a unit of each counter, all or none; None once they are on disk, else the
        counter whose limit is spent."""
        spent = next((c for c in counters if self._spent(c)), None)
        if spent is not None:
            return spent
        for counter in counters:
            self._take(counter)
        if any(self.limits.limit(c) is not None for c in counters):
            await self._accounts.commit()  # durable before the action it allows
        else:
            self._accounts.mark_dirty()  # counted only: nothing was granted against a limit
        self._progress("")
        return None

    def used(self, counter: str) -> int:
        return self._flight.counters.get(counter, 0)

    @property
    def exhausted(self) -> list[str]:
        return self._exhausted

    def _spent(self, counter: str) -> bool:
        limit = self.limits.limit(counter)
        if limit is None or self.used(counter) < limit:
            return False
        if counter not in self._exhausted:
            self._exhausted.append(counter)
        return True

    def _take(self, counter: str) -> None:
        self._flight.counters[counter] = self.used(counter) + 1

    def charge(self, usage: Usage, *, settles: Decimal | None = None, served: bool = True) -> Decimal:
        """Charge `usage`, settling the hold of `settles` (None: every open hold of the session);
        a call that surely was not served gives its `model_calls` unit back."""
        if not served and self.used(MODEL_CALLS):
            self._flight.counters[MODEL_CALLS] -= 1
        cost = self.price(usage)
        if served and usage.tokens:
            self._backoff.served()
        self._accounts.charge(self._flight, cost, settles=None if settles is None else usd(settles))
        self.tokens += usage.tokens
        add_buckets(self.usage, usage)
        if usage.provider_cost_usd is not None:  # docs/guide/budgets.md: reconciled in the audit
            self.reconciled = self.reconciled.plus(usage.provider_cost_usd, cost)
        self._progress("")
        if self._accounts.enforce and self._flight.spent > self._flight.reservation:
            self._on_overspent(overspend_detail(usage, self._model.max_output_tokens))
        return cost

    def throttled(self, retry_after_s: float | None = None) -> None:
        """The provider answered 429: its next call, and every other session's of the same
        provider, waits until its backoff has passed (Retry-After, else an exponential wait)."""
        wait, started = self._backoff.throttled(retry_after_s)
        self.throttled_answers += 1
        asked = f"Retry-After {retry_after_s:g} s" if retry_after_s is not None else "no Retry-After"
        if started and (self._backoff.answers == 1 or wait >= MAX_QUIET_WAIT_S):
            self._accounts.emit(
                ev.Notice(
                    level="warning",
                    message=f"{self._backoff.provider} answered 429 (too many requests, {asked}): "
                    f"its sessions wait {wait:g} s before calling it again",
                )
            )
        self._progress(f"429 from {self._backoff.provider} ({asked}): waiting {wait:g} s")

    def throttling(self) -> Throttling | None:
        """What its provider's 429s cost this attempt (for its end line; None when nothing)."""
        if not (self.throttled_answers or self.throttle_wait_s):
            return None
        return Throttling(self.throttled_answers, round(self.throttle_wait_s, 3))

    def progress(self, note: str) -> None:
        self._progress(note)

    def _progress(self, note: str) -> None:
        self._accounts.emit(
            ev.SessionProgress(
                session=self._flight.session,
                note=note,
                calls=self.calls,
                cost_usd=self._flight.spent,
                counters=tuple((c, self.used(c), self.limits.limit(c) or 0) for c in self.limits.counters),
            )
        )


def overspend_detail(usage: Usage, max_output_tokens: int) -> str:
    """Why a charge passed the reservation, in words a user can act on (empty: nothing to add)."""
    if usage.output_tokens > max_output_tokens:
        return (
            f"a call returned {usage.output_tokens} output tokens for max_tokens {max_output_tokens}: "
            "the server ignores max_tokens; cap its output length at the server"
        )
    return ""
