"""The session journal's record: one typed, frozen line of `sessions.jsonl` (a state change).

Every module that reads or writes the journal (the scheduler, the checkpoint, results, the UI
model, `ctl status`, the report) goes through `JournalRecord`, so a field has one name and one
type. What the shortlist protocol and the provider's backoff add to a line is typed too
(`phase`: engine/phases.py; `throttling`), each read by one decoder. Keys this version does not
know are kept in `extra` and written back unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal, get_args

from benchtui.core import bounds
from benchtui.core.endings import SessionEnding, recorded_or_derived
from benchtui.core.money import ZERO, to_float, usd
from benchtui.engine.phases import KEYS as PHASE_KEYS
from benchtui.engine.phases import Phase, phase_of

SessionState = Literal["pending", "running", "done", "skipped_budget", "error", "killed"]
STATES: frozenset[str] = frozenset(get_args(SessionState))
ENDED: frozenset[str] = frozenset({"done", "skipped_budget", "error", "killed"})
RAN: frozenset[str] = frozenset({"done", "error", "killed"})
"""States of sessions that ran (they have a results row); skips never ran."""

RunState = Literal["running", "paused", "stopping"]


def run_state(*, paused: bool, stopping: bool) -> RunState:
    """The one place that says what a campaign is doing, for every front end."""
    return "stopping" if stopping else "paused" if paused else "running"


MAX_WAIT_S = 10**9
"""Seconds a line may say its sessions waited for their provider (more is an edited journal)."""


@dataclass(frozen=True, slots=True)
class Throttling:
    """What its provider's 429s cost an attempt (on its end line; written by the engine's meter)."""

    answers: int
    """429 answers its own calls got (`throttled`)."""
    wait_s: float
    """Seconds it waited for the provider's backoff, its own or another session's (`throttle_wait_s`)."""

    def to_json(self) -> dict[str, Any]:
        return {"throttled": self.answers, "throttle_wait_s": self.wait_s}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Throttling | None:
        """None when the line says nothing of it; ValueError for anything but a count and a finite
        number of seconds."""
        if "throttled" not in data and "throttle_wait_s" not in data:
            return None
        answers, waited = data.get("throttled", 0), data.get("throttle_wait_s", 0.0)
        if not isinstance(answers, int) or isinstance(answers, bool) or answers < 0:
            raise ValueError(f"throttled: not a count: {str(answers)[:40]!r}")
        if not isinstance(waited, int | float) or isinstance(waited, bool) or not 0 <= waited < MAX_WAIT_S:
            raise ValueError(f"throttle_wait_s: not a number of seconds: {str(waited)[:40]!r}")
        return cls(answers, float(waited))  # NaN and inf fail the comparison above


@dataclass(frozen=True, slots=True)
class ProviderCost:
    """The calls of an attempt whose provider said what they cost (OpenRouter's `usage.cost`,
    litellm's response cost): the provider's sum beside ours for the same calls (on its end line;
    report/audit.py compares them). Never what is charged (docs/design/invariants.md#f6)."""

    usd: Decimal = ZERO
    ours_usd: Decimal = ZERO
    calls: int = 0

    def plus(self, theirs: Decimal, ours: Decimal, calls: int = 1) -> ProviderCost:
        return ProviderCost(self.usd + theirs, self.ours_usd + ours, self.calls + calls)

    @property
    def gap(self) -> Decimal | None:
        """(theirs − ours) / ours; None when ours is 0 (then any cost of theirs is a gap: inf)."""
        return (self.usd - self.ours_usd) / self.ours_usd if self.ours_usd else None

    def to_json(self) -> dict[str, Any]:
        return {"provider_cost": {"usd": str(self.usd), "ours_usd": str(self.ours_usd), "calls": self.calls}}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ProviderCost | None:
        found = data.get("provider_cost")
        if found is None:
            return None
        if not isinstance(found, dict):
            raise ValueError(f"provider_cost: not an object: {str(found)[:40]!r}")
        try:
            usd_, ours = Decimal(str(found["usd"])), Decimal(str(found["ours_usd"]))
        except (KeyError, ArithmeticError):
            raise ValueError(f"provider_cost: not two amounts: {str(found)[:80]!r}") from None
        if not (bounds.sane_amount(usd_) and bounds.sane_amount(ours)):
            raise ValueError(f"provider_cost: not sane amounts: {str(found)[:80]!r}")
        return cls(usd_, ours, _count(found.get("calls")))


def usage_of(data: Mapping[str, object]) -> dict[str, int] | None:
    """An end line's tokens by bucket (core/usage.py BUCKETS); None on lines before them."""
    found = data.get("usage")
    if found is None:
        return None
    if not isinstance(found, dict):
        raise ValueError(f"usage: not an object: {str(found)[:40]!r}")
    return {_text(k): _count(v) for k, v in found.items()}


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One line of `sessions.jsonl`; the last line of a session id is its current state."""

    session: str
    model: str
    index: int
    task: str | None
    state: SessionState
    attempt: int
    runner: str
    cost_usd: Decimal = ZERO
    t: float = 0.0
    # On `running` lines:
    reserved_usd: Decimal | None = None
    environment: str | None = None
    # On end lines:
    result: str | None = None
    reason: str = ""
    retryable: bool = False
    steps: int = 0
    calls: int = 0
    tokens: int = 0
    usage: dict[str, int] | None = None
    """Tokens by bucket (`input`, `cache_read`, `cache_write`, `output`, `reasoning`: core/usage.py)."""
    provider_cost: ProviderCost | None = None
    """What the provider said its calls cost, beside ours (where it said)."""
    certificate: bool = False
    counters: dict[str, Any] | None = None
    """Logical budget used by the attempt (campaigns with `[budget.per_session]`):
    {"model_calls": n, "shell_actions": n, "submits": n, "tools": {"pred": n, …}}."""
    exhausted: tuple[str, ...] = ()
    """Counters whose limit refused something in the attempt (`model_calls`, `tools.pred solve`)."""
    phase: Phase | None = None
    """A shortlist campaign's triage (end lines) or episode (`pending` lines): engine/phases.py."""
    throttling: Throttling | None = None
    """On end lines of attempts whose provider answered 429 or made them wait."""
    ending: SessionEnding | None = None
    """Why the attempt ended (core/endings.py), on end lines of sessions that ran; a line an older
    release wrote gets the ending its state and reason say."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys written by other versions or runners: kept, and written back as they were."""

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def is_final(self) -> bool:
        """Final states are never re-run; infrastructure errors (retryable) are, on resume."""
        return self.state in ENDED and not (self.state == "error" and self.retryable)

    def but(self, **changes: Any) -> JournalRecord:
        """A copy with some fields changed (records are immutable)."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session": self.session,
            "model": self.model,
            "index": self.index,
            "task": self.task,
            "state": self.state,
            "attempt": self.attempt,
            "runner": self.runner,
            "cost_usd": to_float(self.cost_usd),
            "t": self.t,
        }
        if self.reserved_usd is not None:
            out["reserved_usd"] = to_float(self.reserved_usd)
        if self.environment is not None:
            out["environment"] = self.environment
        if self.state != "running":
            out.update(
                result=self.result,
                reason=self.reason,
                retryable=self.retryable,
                steps=self.steps,
                calls=self.calls,
                tokens=self.tokens,
                certificate=self.certificate,
            )
            if self.usage is not None:
                out["usage"] = dict(self.usage)
            if self.provider_cost is not None:
                out.update(self.provider_cost.to_json())
            if self.counters is not None:
                out["counters"] = self.counters
            if self.exhausted:
                out["exhausted"] = list(self.exhausted)
            if self.ending is not None and not self.ending.derived:  # an older line stays as it was
                out["ending"] = self.ending.to_json()
        if self.phase is not None:
            out.update(self.phase.to_json())
        if self.throttling is not None:
            out.update(self.throttling.to_json())
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Any) -> JournalRecord:
        """Parse one journal line's object; raises ValueError naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("a journal line is not a JSON object")
        try:
            state, cost = data["state"], data["cost_usd"]
            if state not in STATES:
                raise ValueError(f"unknown state {state!r}")
            if not _number(cost) or cost < 0:
                raise ValueError(f"bad cost_usd {cost!r}")
            record = cls(
                session=_text(data["session"]),
                model=_text(data["model"]),
                index=_int(data["index"]),
                task=data.get("task") if isinstance(data.get("task"), str) else None,
                state=state,
                attempt=_int(data["attempt"]),
                runner=str(data.get("runner") or ""),
                cost_usd=_amount(cost),
                t=float(data.get("t") or 0.0),
                reserved_usd=_amount(data["reserved_usd"]) if _number(data.get("reserved_usd")) else None,
                environment=data.get("environment") if isinstance(data.get("environment"), str) else None,
                result=data.get("result") if isinstance(data.get("result"), str) else None,
                reason=str(data.get("reason") or ""),
                retryable=data.get("retryable") is True,
                steps=_count(data.get("steps")),
                calls=_count(data.get("calls")),
                tokens=_count(data.get("tokens")),
                usage=usage_of(data),
                provider_cost=ProviderCost.from_json(data),
                certificate=bool(data.get("certificate")),
                counters=_counters(data["counters"]) if data.get("counters") is not None else None,
                exhausted=tuple(map(_text, data.get("exhausted") or ())),
                phase=phase_of(data),
                throttling=Throttling.from_json(data),
                ending=recorded_or_derived(
                    SessionEnding.from_json(data.get("ending")),
                    state=state,
                    result=data.get("result") if isinstance(data.get("result"), str) else None,
                    reason=str(data.get("reason") or ""),
                ),
                extra={k: data[k] for k in unknown} if (unknown := data.keys() - _KNOWN) else {},
            )
        except KeyError as exc:
            raise ValueError(f"missing {exc.args[0]!r}") from None
        except (TypeError, ArithmeticError) as exc:
            raise ValueError(str(exc)) from None
        return record


def now() -> float:
    return round(time.time(), 3)


_KNOWN = (
    frozenset(f.name for f in fields(JournalRecord)) - {"extra", "phase", "throttling"}
    | PHASE_KEYS
    | {"throttled", "throttle_wait_s"}
)
"""The keys a line's typed fields are read from; every other key is kept in `extra`."""


@lru_cache(maxsize=4096)
def _amount(x: float) -> Decimal:
    """`usd(x)`, cached: a journal repeats a few amounts (a reservation, a fake session's cost)
    thousands of times, and resuming 100,000 sessions parses each line's amounts."""
    return usd(x)


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and x == x  # not NaN


def _int(x: Any) -> int:
    if not isinstance(x, int) or isinstance(x, bool):
        raise TypeError(f"not an integer: {x!r}")
    return x


def _count(x: Any) -> int:
    """A count that may be absent (older lines, running lines), never anything but a count."""
    if x is None:
        return 0
    if not isinstance(x, int) or isinstance(x, bool) or x < 0:
        raise TypeError(f"not a count: {x!r}")
    return x


def _counters(x: Any) -> dict[str, Any]:
    """Counts by counter name, tool counts nested under "tools"."""
    if not isinstance(x, dict):
        raise TypeError(f"not counters: {x!r:.80}")
    return {_text(k): _counters(v) if k == "tools" else _count(v) for k, v in x.items()}


def _text(x: Any) -> str:
    if not isinstance(x, str):
        raise TypeError(f"not a string: {x!r}")
    return x
