"""The event stream: the only way engine state reaches the UI, the headless printer and `ctl`.

Listeners are plain callables, called synchronously in the engine's (Trio) thread; they must
return quickly (front ends coalesce and redraw on their own clock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class ModelTotals:
    """A model's account as last committed to the ledger."""

    name: str
    cap_usd: Decimal
    spent_usd: Decimal
    reserved_usd: Decimal
    wasted_usd: Decimal
    done: int
    skipped: int
    errors: int
    killed: int
    running: int
    certificates: int
    planned: int


@dataclass(frozen=True, slots=True)
class CampaignStarted:
    name: str
    run_dir: str
    runner: str
    parallelism: int
    sessions: int
    remaining: int
    resumed: bool
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionStarted:
    session: str
    model: str
    index: int
    task: str | None
    attempt: int
    runner: str


@dataclass(frozen=True, slots=True)
class SessionProgress:
    session: str
    note: str = ""
    calls: int = 0
    cost_usd: Decimal = Decimal(0)


@dataclass(frozen=True, slots=True)
class SessionEnded:
    session: str
    model: str
    index: int
    attempt: int
    state: str  # done | skipped_budget | error | killed
    result: str | None
    reason: str
    cost_usd: Decimal
    retryable: bool = False
    certificate: bool = False


@dataclass(frozen=True, slots=True)
class AccountsCommitted:
    """After each durable commit: what the ledger on disk now says."""

    budget_usd: Decimal
    spent_usd: Decimal
    reserved_usd: Decimal
    wasted_usd: Decimal
    models: tuple[ModelTotals, ...]


@dataclass(frozen=True, slots=True)
class ControlChanged:
    paused: bool
    stopping: bool
    runner: str
    parallelism: int


@dataclass(frozen=True, slots=True)
class Notice:
    level: str  # info | warning | error
    message: str


@dataclass(frozen=True, slots=True)
class CampaignEnded:
    finished: bool
    """True when every session reached a final state; False when stopped or interrupted."""
    message: str = ""


Event = (
    CampaignStarted
    | SessionStarted
    | SessionProgress
    | SessionEnded
    | AccountsCommitted
    | ControlChanged
    | Notice
    | CampaignEnded
)
Listener = Callable[[Event], None]


@dataclass
class EventBus:
    listeners: list[Listener] = field(default_factory=list)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)
