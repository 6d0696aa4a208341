"""The budget ledger: accounts for the total and each model, and the sessions in flight.

Amounts per model: `spent` (every settled charge, in-flight sessions included), `reserved` (the
unspent part of in-flight reservations, holds included) and `wasted` (spend of attempts that did
not end `done`: errors, kills, interruptions). A session runs only on a reservation of its full
per-session budget (docs/design/invariants.md#f3); each call is authorised against that reservation first (docs/design/invariants.md#f5). The
ledger holds accounts, not history, so rewriting it after every commit stays cheap.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

import tomli_w

from benchtui.core.money import ZERO, to_float, usd


@dataclass(slots=True)
class InFlight:
    """One running attempt: its reservation, what it spent, and the hold of its current call."""

    session: str
    model: str
    index: int
    attempt: int
    runner: str
    reservation: Decimal
    spent: Decimal = ZERO
    held: Decimal = ZERO
    counters: dict[str, int] = field(default_factory=dict)
    """Logical budget units taken so far (`model_calls`, `tools.pred`, …): each is saved
    before the action it allows, so a crash never forgets one."""

    @property
    def unspent(self) -> Decimal:
        return max(self.reservation - self.spent, ZERO)

    def to_toml(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "index": self.index,
            "attempt": self.attempt,
            "runner": self.runner,
            "reservation_usd": to_float(self.reservation),
            "spent_usd": to_float(self.spent),
            "held_usd": to_float(self.held),
            **({"counters": dict(self.counters)} if self.counters else {}),
        }

    @classmethod
    def from_toml(cls, session: str, data: dict[str, Any]) -> InFlight:
        return cls(
            session,
            data["model"],
            int(data["index"]),
            int(data["attempt"]),
            data["runner"],
            usd(data["reservation_usd"]),
            usd(data["spent_usd"]),
            usd(data["held_usd"]),
            _counts(data.get("counters", {})),
        )


def _counts(data: Any) -> dict[str, int]:
    if not isinstance(data, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in data.values()
    ):
        raise ValueError(f"counters are not counts: {data!r:.80}")
    return {str(k): v for k, v in data.items()}


@dataclass(slots=True)
class ModelAccount:
    cap: Decimal
    spent: Decimal = ZERO
    reserved: Decimal = ZERO
    wasted: Decimal = ZERO
    done: int = 0
    skipped: int = 0
    errors: int = 0
    killed: int = 0
    running: int = 0
    certificates: int = 0
    tokens: int = 0

    def to_toml(self) -> dict[str, Any]:
        return {
            "cap_usd": to_float(self.cap),
            "spent_usd": to_float(self.spent),
            "reserved_usd": to_float(self.reserved),
            "wasted_usd": to_float(self.wasted),
            "sessions_done": self.done,
            "sessions_skipped": self.skipped,
            "sessions_error": self.errors,
            "sessions_killed": self.killed,
            "sessions_running": self.running,
            "certificates": self.certificates,
        }


@dataclass(slots=True)
class ControlState:
    """What the controls were last set to; saved with the accounts, so a resume can restore it."""

    campaign: str = ""
    runner: str = ""
    paused: bool = False
    parallelism: int = 1


class Ledger:
    """In-memory accounts; the Store persists `to_toml()` atomically after each commit."""

    def __init__(self, budget: Decimal, caps: dict[str, Decimal], *, enforce: bool = True) -> None:
        self.budget = budget
        self.enforce = enforce
        self.models = {name: ModelAccount(cap) for name, cap in caps.items()}
        self.running: dict[str, InFlight] = {}
        self.control = ControlState()

    # -- totals ---------------------------------------------------------------------------
    @property
    def spent(self) -> Decimal:
        return sum((m.spent for m in self.models.values()), ZERO)

    @property
    def reserved(self) -> Decimal:
        return sum((m.reserved for m in self.models.values()), ZERO)

    @property
    def wasted(self) -> Decimal:
        return sum((m.wasted for m in self.models.values()), ZERO)

    # -- docs/design/invariants.md#f3: reserve or wait or skip ----------------------------------------------------------
    def fits_now(self, model: str, amount: Decimal) -> bool:
        if not self.enforce:
            return True
        m = self.models[model]
        return m.spent + m.reserved + amount <= m.cap and self.spent + self.reserved + amount <= self.budget

    def may_fit_later(self, model: str, amount: Decimal) -> bool:
        """True if running sessions handing back unused reservation could make room."""
        m = self.models[model]
        model_later = m.spent + amount <= m.cap and (m.spent + m.reserved + amount <= m.cap or m.running > 0)
        total_later = self.spent + amount <= self.budget and (
            self.spent + self.reserved + amount <= self.budget or bool(self.running)
        )
        return model_later and total_later

    def open(
        self, session: str, model: str, index: int, attempt: int, runner: str, reservation: Decimal
    ) -> InFlight:
        flight = InFlight(session, model, index, attempt, runner, reservation if self.enforce else ZERO)
        self.running[session] = flight
        account = self.models[model]
        account.reserved += flight.unspent
        account.running += 1
        return flight

    # -- docs/design/invariants.md#f5, #f6: per-call holds and charges ---------------------------------------------------
    def authorise(self, session: str, worst_case: Decimal) -> bool:
        """Hold `worst_case` for a call if it fits the session's reservation (always, unenforced)."""
        flight = self.running[session]
        if self.enforce and flight.spent + flight.held + worst_case > flight.reservation:
            return False
        flight.held += worst_case
        return True

    def charge(self, session: str, cost: Decimal, *, settles: Decimal | None = None) -> InFlight:
        """Settle a hold with the real cost (never clamped): the hold of `settles`, or, with None,
        every hold of the session (calls within a session may overlap: an agent CLI's are)."""
        flight = self.running[session]
        account = self.models[flight.model]
        before = flight.unspent
        flight.spent += cost
        flight.held = ZERO if settles is None else max(flight.held - settles, ZERO)
        account.spent += cost
        account.reserved += flight.unspent - before
        return flight

    def close(self, session: str, state: str, *, certificates: int = 0, tokens: int = 0) -> Decimal:
        """End an attempt: unsettled holds are charged at their worst case; returns its cost."""
        flight = self.running[session]
        if flight.held:
            self.charge(session, flight.held)
        del self.running[session]
        account = self.models[flight.model]
        account.reserved -= flight.unspent
        account.running -= 1
        self.record_end(
            flight.model, state, flight.spent, already_spent=True, certificates=certificates, tokens=tokens
        )
        return flight.spent

    def record_end(
        self,
        model: str,
        state: str,
        cost: Decimal,
        *,
        already_spent: bool = False,
        certificates: int = 0,
        tokens: int = 0,
    ) -> None:
        """Count an ended attempt (also used to rebuild the accounts from the journal)."""
        account = self.models[model]
        if not already_spent:
            account.spent += cost
        if state != "done":
            account.wasted += cost
        if state == "done":
            account.done += 1
        elif state == "skipped_budget":
            account.skipped += 1
        elif state == "killed":
            account.killed += 1
        elif state == "error":
            account.errors += 1
        account.certificates += certificates
        account.tokens += tokens

    def supersede(self, model: str, state: str) -> None:
        """A session that ended in `state` runs again (a retried error): count it once, by its
        current state (its money stays counted: spend of every attempt is real)."""
        account = self.models[model]
        if state == "error":
            account.errors -= 1
        elif state == "killed":
            account.killed -= 1
        elif state == "done":
            account.done -= 1
        elif state == "skipped_budget":
            account.skipped -= 1

    # -- persistence --------------------------------------------------------------------------
    def to_toml(self) -> bytes:
        doc = {
            **asdict(self.control),
            "enforce": self.enforce,
            "totals": {
                "budget_usd": to_float(self.budget),
                "spent_usd": to_float(self.spent),
                "reserved_usd": to_float(self.reserved),
                "wasted_usd": to_float(self.wasted),
                "held_usd": to_float(sum((f.held for f in self.running.values()), ZERO)),
                "sessions_running": len(self.running),
            },
            "models": {name: m.to_toml() for name, m in self.models.items()},
            "running": {s: f.to_toml() for s, f in self.running.items()},
        }
        return tomli_w.dumps(doc).encode()

    @staticmethod
    def running_from_toml(doc: dict[str, Any]) -> list[InFlight]:
        """The in-flight attempts a saved ledger records (for reconciling on resume)."""
        return [InFlight.from_toml(s, d) for s, d in doc.get("running", {}).items()]
