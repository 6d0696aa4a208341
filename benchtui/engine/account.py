"""A model's account: the one type the ledger keeps, `ledger.toml` saves, the events carry and
`benchtui ctl status` sends.

The ledger changes its accounts in place; each commit hands the front ends a copy
(`AccountsCommitted`), and `ctl` sends one as JSON (`to_json` / `from_json`). In ledger.toml an
account keeps the keys every release wrote (`sessions_done`, …: `TOML_KEYS`); `tokens` and
`planned` are not saved there (the journal's end lines and the plan say them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from benchtui.core import bounds
from benchtui.core.money import ZERO, to_float, usd

TOML_KEYS: dict[str, str] = {
    "cap_usd": "cap_usd",
    "spent_usd": "spent_usd",
    "reserved_usd": "reserved_usd",
    "wasted_usd": "wasted_usd",
    "done": "sessions_done",
    "skipped": "sessions_skipped",
    "errors": "sessions_error",
    "killed": "sessions_killed",
    "running": "sessions_running",
    "certificates": "certificates",
}
"""A field → its key in ledger.toml (kept as every release wrote it)."""
AMOUNTS = frozenset(("cap_usd", "spent_usd", "reserved_usd", "wasted_usd"))


@dataclass(slots=True)
class ModelAccount:
    """Money in USD: `spent` (every settled charge, in-flight attempts included), `reserved` (the
    unspent part of in-flight reservations, holds included), `wasted` (spend of attempts that did
    not end `done`); then sessions counted by their current state."""

    name: str
    cap_usd: Decimal
    spent_usd: Decimal = ZERO
    reserved_usd: Decimal = ZERO
    wasted_usd: Decimal = ZERO
    done: int = 0
    skipped: int = 0
    errors: int = 0
    killed: int = 0
    running: int = 0
    certificates: int = 0
    tokens: int = 0
    """Tokens of ended attempts (not in ledger.toml: rebuilt from the journal's end lines)."""
    planned: int = 0
    """Sessions the plan has for the model (not in ledger.toml: the plan says it)."""
    usage: dict[str, int] = field(default_factory=dict)
    """`tokens` by bucket (input, cache_read, cache_write, output, reasoning: core/usage.py);
    rebuilt from the journal's end lines like `tokens`, written to ledger.toml for its readers."""

    def copy(self) -> ModelAccount:
        return replace(self, usage=dict(self.usage))

    def to_toml(self) -> dict[str, Any]:
        data = {
            key: to_float(getattr(self, name)) if name in AMOUNTS else getattr(self, name)
            for name, key in TOML_KEYS.items()
        }
        if self.usage:  # read by people and other tools; a reader rebuilds it from the journal
            data["tokens"] = dict(self.usage)
        return data

    @classmethod
    def from_toml(cls, name: str, data: Any) -> ModelAccount:
        """ValueError saying what is wrong (a missing key: KeyError)."""
        if not isinstance(data, dict):
            raise ValueError("an account is not a table")
        account = cls(name, **{field: _checked(field, data[key], key) for field, key in TOML_KEYS.items()})
        tokens = data.get("tokens")  # by bucket, for readers (the journal rebuilds it on resume)
        if isinstance(tokens, dict) and all(type(v) is int and v >= 0 for v in tokens.values()):
            account.usage = {str(k): v for k, v in tokens.items()}
        return account

    def to_json(self) -> dict[str, Any]:
        """Amounts as exact strings (JSON numbers would go through floats)."""
        return {
            f.name: str(v) if f.name in AMOUNTS else dict(v) if isinstance(v, dict) else v
            for f in fields(self)
            for v in [getattr(self, f.name)]
        }

    @classmethod
    def from_json(cls, data: Any) -> ModelAccount:
        """The account `to_json` wrote (absent counts are 0); ValueError for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ValueError("an account is not an object with a name")
        known = {f.name for f in fields(cls)} - {"name"}
        if data.keys() - known - {"name"}:
            raise ValueError(f"unknown account keys {sorted(data.keys() - known - {'name'})}")
        values: dict[str, Any] = {}
        for key_ in known:
            if key_ == "usage" and key_ in data:
                found = data[key_]
                if not isinstance(found, dict) or not all(
                    type(v) is int and v >= 0 and isinstance(k, str) for k, v in found.items()
                ):
                    raise ValueError(f"usage {found!r:.60} is not counts by bucket")
                values[key_] = dict(found)
            elif key_ in data:
                value = data[key_]
                if key_ in AMOUNTS:
                    try:
                        value = Decimal(value) if isinstance(value, str) else value
                    except InvalidOperation:
                        raise ValueError(f"{key_} {value!r:.40} is not an amount") from None
                values[key_] = _checked(key_, value, key_)
        if "cap_usd" not in values:
            raise ValueError("an account without cap_usd")
        return cls(data["name"], **values)


def _checked(field: str, value: Any, key: str) -> Any:
    if field in AMOUNTS:
        if not bounds.sane_amount(value) or value < 0:
            raise ValueError(f"{key} {value!r:.40} is not a sane amount")
        return usd(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key} {value!r:.40} is not a count")
    return value
