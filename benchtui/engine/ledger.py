"""The budget ledger: accounts for the total and each model, and the sessions in flight.

Amounts per model: `spent` (every settled charge, in-flight sessions included), `reserved` (the
unspent part of in-flight reservations, holds included) and `wasted` (spend of attempts that did
not end `done`: errors, kills, interruptions). A session runs only on a reservation of its full
per-session budget (docs/design/invariants.md#f3); each call is authorised against that reservation first (docs/design/invariants.md#f5). The
ledger holds accounts, not history, so rewriting it after every commit stays cheap.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchtui.core import bounds, inputs, tomlout
from benchtui.core.errors import BadInput
from benchtui.core.money import ZERO, to_float, usd
from benchtui.engine.account import ModelAccount

LEDGER_FORMAT = 1
"""The `format` key of ledger.toml. A ledger without it was written before formats had numbers
(by 0a81a35 and earlier): the same layout as format 1. A newer one is refused, in one line.
(`journal_bytes`, added later, is a key older readers ignore: still format 1.)"""


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
        self.models = {name: ModelAccount(name, cap) for name, cap in caps.items()}
        self.running: dict[str, InFlight] = {}
        self.control = ControlState()

    # -- totals ---------------------------------------------------------------------------
    @property
    def spent(self) -> Decimal:
        return sum((m.spent_usd for m in self.models.values()), ZERO)

    @property
    def reserved(self) -> Decimal:
        return sum((m.reserved_usd for m in self.models.values()), ZERO)

    @property
    def wasted(self) -> Decimal:
        return sum((m.wasted_usd for m in self.models.values()), ZERO)

    # -- docs/design/invariants.md#f3: reserve or wait or skip ----------------------------------------------------------
    def fits_now(self, model: str, amount: Decimal) -> bool:
        if not self.enforce:
            return True
        m = self.models[model]
        return (
            m.spent_usd + m.reserved_usd + amount <= m.cap_usd
            and self.spent + self.reserved + amount <= self.budget
        )

    def may_fit_later(self, model: str, amount: Decimal) -> bool:
        """True if running sessions handing back unused reservation could make room."""
        m = self.models[model]
        model_later = m.spent_usd + amount <= m.cap_usd and (
            m.spent_usd + m.reserved_usd + amount <= m.cap_usd or m.running > 0
        )
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
        account.reserved_usd += flight.unspent
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
        account.spent_usd += cost
        account.reserved_usd += flight.unspent - before
        return flight

    def restore(self, session: str, spent: Decimal, held: Decimal, counters: dict[str, int]) -> None:
        """Set an attempt in flight to the state the journal last recorded for it (rebuilding the
        ledger from the journal: docs/design/invariants.md#f7)."""
        flight = self.running[session]
        account = self.models[flight.model]
        before = flight.unspent
        account.spent_usd += spent - flight.spent
        flight.spent, flight.held, flight.counters = spent, held, dict(counters)
        account.reserved_usd += flight.unspent - before

    def close(
        self,
        session: str,
        state: str,
        *,
        certificates: int = 0,
        tokens: int = 0,
        usage: dict[str, int] | None = None,
    ) -> Decimal:
        """End an attempt: unsettled holds are charged at their worst case; returns its cost."""
        flight = self.running[session]
        if flight.held:
            self.charge(session, flight.held)
        del self.running[session]
        account = self.models[flight.model]
        account.reserved_usd -= flight.unspent
        account.running -= 1
        self.record_end(
            flight.model,
            state,
            flight.spent,
            already_spent=True,
            certificates=certificates,
            tokens=tokens,
            usage=usage,
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
        usage: dict[str, int] | None = None,
    ) -> None:
        """Count an ended attempt (also used to rebuild the accounts from the journal)."""
        account = self.models[model]
        if not already_spent:
            account.spent_usd += cost
        if state != "done":
            account.wasted_usd += cost
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
        for bucket, count in (usage or {}).items():
            account.usage[bucket] = account.usage.get(bucket, 0) + count

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
    def saved(self, journal_bytes: int | None = None) -> SavedLedger:
        """The ledger as ledger.toml keeps it (a copy), reflecting the journal's first
        `journal_bytes` bytes."""
        return SavedLedger(
            replace(self.control),
            self.enforce,
            self.budget,
            {name: m.copy() for name, m in self.models.items()},
            {session: replace(f, counters=dict(f.counters)) for session, f in self.running.items()},
            journal_bytes=journal_bytes,
        )

    def to_toml(self, journal_bytes: int | None = None) -> bytes:
        return SavedLedger(
            self.control, self.enforce, self.budget, self.models, self.running, journal_bytes=journal_bytes
        ).to_toml()


_RUNNING_TEXT: dict[tuple[Any, ...], str] = {}
"""An attempt's `[running.<id>]` text by its state: a commit re-renders only the attempts that
changed since the last (at 64 sessions, the whole ledger took 1.1 ms a commit, most of it these)."""


def _running_text(session: str, flight: InFlight) -> str:
    key = (session, flight.model, flight.index, flight.attempt, flight.runner, flight.reservation,
           flight.spent, flight.held, *flight.counters.items())  # fmt: skip
    text = _RUNNING_TEXT.get(key)
    if text is None:
        if len(_RUNNING_TEXT) >= 16_384:
            _RUNNING_TEXT.clear()
        text = _RUNNING_TEXT[key] = tomlout.subtable("running.", session, flight.to_toml())
    return text


@dataclass(frozen=True, slots=True)
class SavedLedger:
    """ledger.toml, typed: the controls, each model's account, the attempts in flight. Its one
    writer is `to_toml` (the store, after every commit), its one reader `read` (resume, report,
    `ctl status`, the closing lines): every read bounded, checked, and its format known."""

    control: ControlState
    enforce: bool
    budget_usd: Decimal
    models: dict[str, ModelAccount]
    running: dict[str, InFlight]
    format: int = LEDGER_FORMAT
    journal_bytes: int | None = None
    """How much of the journal this ledger reflects (its first N bytes): the ledger is derived from
    the journal, which is written (and fsynced) first, so a ledger past the journal's end means
    the journal was cut or replaced. None: written before ledgers said it."""

    @property
    def spent_usd(self) -> Decimal:
        return sum((m.spent_usd for m in self.models.values()), ZERO)

    def to_toml(self) -> bytes:
        doc = {
            "format": self.format,
            **({"journal_bytes": self.journal_bytes} if self.journal_bytes is not None else {}),
            **asdict(self.control),
            "enforce": self.enforce,
            "totals": {
                "budget_usd": to_float(self.budget_usd),
                "spent_usd": to_float(self.spent_usd),
                "reserved_usd": to_float(sum((m.reserved_usd for m in self.models.values()), ZERO)),
                "wasted_usd": to_float(sum((m.wasted_usd for m in self.models.values()), ZERO)),
                "held_usd": to_float(sum((f.held for f in self.running.values()), ZERO)),
                "sessions_running": len(self.running),
            },
            "models": {name: m.to_toml() for name, m in self.models.items()},
            "running": {},  # last: its entries follow, each made once per state (_running_text)
        }
        text = tomlout.dumps(doc) + "".join(_running_text(s, f) for s, f in self.running.items())
        return text.encode()

    @classmethod
    def from_toml(cls, text: str) -> SavedLedger:
        """Parse and check a saved ledger; ValueError (or NewerFormat) saying what is wrong."""
        try:
            doc = tomllib.loads(text)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        version = doc.get("format", 0)  # 0: written before formats had numbers
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError(f"format {version!r:.20} is not a format number")
        if version > LEDGER_FORMAT:
            raise NewerFormat(f"format {version}, newer than this benchtui reads ({LEDGER_FORMAT})")
        try:
            control = ControlState(doc["campaign"], doc["runner"], doc["paused"], doc["parallelism"])
            if not (
                all(isinstance(v, str) for v in (control.campaign, control.runner))
                and isinstance(control.paused, bool)
                and isinstance(control.parallelism, int)
                and isinstance(doc["enforce"], bool)
            ):
                raise ValueError("a control of the wrong type")
            budget = doc["totals"]["budget_usd"]
            if not bounds.sane_amount(budget):
                raise ValueError(f"budget_usd {budget!r:.40} is not a sane amount")
            models = doc["models"]
            if not isinstance(models, dict):
                raise ValueError("no [models]")
            running = {
                f.session: f for f in (InFlight.from_toml(s, d) for s, d in doc.get("running", {}).items())
            }
            amounts = [x for f in running.values() for x in (f.reservation, f.spent, f.held)]
            if not all(bounds.sane_amount(x) and x >= 0 for x in amounts):
                raise ValueError("an in-flight amount out of range")
            position = doc.get("journal_bytes")
            if position is not None and (
                not isinstance(position, int) or isinstance(position, bool) or position < 0
            ):
                raise ValueError(f"journal_bytes {position!r:.20} is not a size")
            return cls(
                control,
                doc["enforce"],
                usd(budget),
                {str(name): ModelAccount.from_toml(str(name), m) for name, m in models.items()},
                running,
                version or LEDGER_FORMAT,
                position,
            )
        except KeyError as exc:
            raise ValueError(f"no {exc}") from None
        except (TypeError, ArithmeticError, AttributeError) as exc:
            raise ValueError(str(exc) or type(exc).__name__) from None

    @classmethod
    def read(cls, path: Path, hint: str = "") -> SavedLedger:
        """The saved ledger at `path` (bounded read); BadInput in one line, `hint` appended (e.g.
        "; use --fresh"); FileNotFoundError when there is none."""
        return cls.parse(path, inputs.read_bytes(path, inputs.LEDGER_MAX_BYTES, "the ledger"), hint)

    @classmethod
    def parse(cls, path: Path, data: bytes, hint: str = "") -> SavedLedger:
        """The ledger `data` read from `path`, checked; BadInput in one line."""
        try:
            return cls.from_toml(data.decode())  # not UTF-8: a ValueError, so corrupted
        except NewerFormat as exc:
            raise BadInput(f"{path}: ledger of {exc}: upgrade benchtui to read it") from None
        except (tomllib.TOMLDecodeError, ValueError) as exc:
            raise BadInput(f"{path}: corrupted ledger ({exc}){hint}") from None


def power_cut(data: bytes) -> bool:
    """What a power cut leaves of a file that was replaced (temp file + rename) but never
    fsynced, when it is neither the old nor the new one: nothing, or zeros from where its
    blocks were not written to its end. An edit or a bit flip does not look like that."""
    cut = data.find(b"\0")
    return not data or (cut >= 0 and not data[cut:].strip(b"\0"))


class NewerFormat(ValueError):
    """A file of a format newer than this code knows."""
