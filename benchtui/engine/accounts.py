"""The narrow port that attempts and meters act through: ledger + store + event bus.

An attempt or a meter never sees the scheduler. It opens its reservation, holds and charges
money, records journal lines, waits for them to be durable and announces events, all here.
Each method changes the in-memory accounts at once; `commit()` makes every change so far
durable (group commit, see store.py). Events about what was recorded go out with
`after_commit`, once it is durable, in the order they were queued.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from benchtui.engine import events as ev
from benchtui.engine.ledger import InFlight, Ledger
from benchtui.engine.plan import PlannedSession, slug
from benchtui.engine.records import JournalRecord, SessionState
from benchtui.engine.store import Store


class Accounts:
    def __init__(self, ledger: Ledger, store: Store, bus: ev.EventBus, journal: dict[str, JournalRecord]):
        self._ledger = ledger
        self._store = store
        self._bus = bus
        self.journal = journal
        """The current (last) journal record of every session that has one."""

    @property
    def enforce(self) -> bool:
        return self._ledger.enforce

    # -- money -----------------------------------------------------------------------------
    def fits_now(self, model: str, amount: Decimal) -> bool:
        return self._ledger.fits_now(model, amount)

    def may_fit_later(self, model: str, amount: Decimal) -> bool:
        return self._ledger.may_fit_later(model, amount)

    def open(self, session: PlannedSession, runner: str, reservation: Decimal) -> InFlight:
        """Reserve a session's full budget for its next attempt (docs/design/invariants.md#f3)."""
        previous = self.journal.get(session.id)
        if previous is not None and previous.ended:  # counted by its current state, not per attempt
            self._ledger.supersede(session.model, previous.state)
        attempt = previous.attempt + 1 if previous else 1
        return self._ledger.open(session.id, session.model, session.index, attempt, runner, reservation)

    def authorise(self, flight: InFlight, worst_case: Decimal) -> bool:
        """Hold `worst_case` for a call, if it fits the reservation; `commit()` makes it durable."""
        return self._ledger.authorise(flight.session, worst_case)

    def charge(self, flight: InFlight, cost: Decimal, *, settles: Decimal | None = None) -> None:
        self._ledger.charge(flight.session, cost, settles=settles)
        self._store.mark_dirty_soon()

    def close(
        self,
        flight: InFlight,
        state: SessionState,
        *,
        certificate: bool,
        tokens: int,
        usage: dict[str, int] | None = None,
    ) -> Decimal:
        """End an attempt's reservation; open holds are charged at their worst case (docs/design/invariants.md#f6)."""
        return self._ledger.close(
            flight.session, state, certificates=int(certificate), tokens=tokens, usage=usage
        )

    def skip(self, session: PlannedSession) -> None:
        previous = self.journal.get(session.id)
        if previous is not None and previous.ended:
            self._ledger.supersede(session.model, previous.state)
        self._ledger.record_end(session.model, "skipped_budget", Decimal(0))

    # -- history and durability --------------------------------------------------------------
    def record(self, record: JournalRecord) -> None:
        """Queue a journal line; it becomes the session's current record."""
        self.journal[record.session] = record
        self._store.append(record.to_json())

    def record_details(self, model: str, details: dict[str, Any]) -> None:
        """Queue an attempt's bulky details (certificates), written before its end line."""
        self._store.append_details(model, slug(model), details)

    def mark_dirty(self) -> None:
        self._store.mark_dirty()

    async def commit(self) -> None:
        await self._store.commit()

    def emit(self, event: ev.Event) -> None:
        """Announce now (progress no one needs to find on disk)."""
        self._bus.emit(event)

    def after_commit(self, event: ev.Event) -> None:
        """Announce once everything recorded so far is durable (starts, ends, plans)."""
        self._store.after_commit(event)
