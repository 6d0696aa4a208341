"""What the shortlist protocol (engine/shortlist.py) says on its journal lines, typed.

A triage's end line carries a `Triage` (the shortlist size and triage budget it was given; once
judged, the shortlist kept and every entry refused), an episode's `pending` line an `Episode` (its
hypothesis). On the line their keys stay flat (`phase`, `shortlist`, `refused`, `shortlist_size`,
`triage_limits`, `hypothesis`), as every journal since the protocol has them, so old journals read
unchanged. `phase_of` is their one decoder: a value of the wrong type is a ValueError naming the
key, which the journal's reader makes one line (`corrupted journal at line N (...)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEYS = frozenset({"phase", "shortlist", "refused", "shortlist_size", "triage_limits", "hypothesis"})
MAX_ENTRIES = 100_000
"""More entries than a line can honestly hold: a shortlist is at most 10,000 rules, and a
triage's refusals are bounded by its judge (4 × size + 65)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """A shortlisted rule and the model's one-line hypothesis about it."""

    rule: str
    hypothesis: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "hypothesis": self.hypothesis}


@dataclass(frozen=True, slots=True)
class Refusal:
    """An entry of a triage's commit the engine refused, and why (`rule` None: none named)."""

    rule: str | None
    reason: str
    position: int | None = None
    """Its 1-based place in the commit (None: the refusal is of the whole commit)."""

    def to_json(self) -> dict[str, Any]:
        place = {} if self.position is None else {"position": self.position}
        return {"rule": self.rule, **place, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Triage:
    """On a triage's end lines: what it was given, and (judged) what it committed."""

    size: int | None
    """`shortlist_size` as the triage was given it (None: not recorded)."""
    limits: Mapping[str, int] | None
    """Its logical budget (`[protocol.triage]`) as it was given it (None: not recorded)."""
    shortlist: tuple[Entry, ...] | None = None
    """The rules kept, in the model's order; None when no shortlist was judged (an attempt retried
    on resume, or killed)."""
    refused: tuple[Refusal, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": "triage"}
        if self.size is not None:
            out["shortlist_size"] = self.size
        if self.limits is not None:
            out["triage_limits"] = dict(self.limits)
        if self.shortlist is not None:
            out["shortlist"] = [e.to_json() for e in self.shortlist]
            out["refused"] = [r.to_json() for r in self.refused]
        return out


@dataclass(frozen=True, slots=True)
class Episode:
    """On an episode's `pending` line: the hypothesis its triage gave its rule."""

    hypothesis: str

    def to_json(self) -> dict[str, Any]:
        return {"phase": "episode", "hypothesis": self.hypothesis}


Phase = Triage | Episode


def phase_of(data: Mapping[str, object]) -> Phase | None:
    """The protocol's part of a journal line (None: the line has none); ValueError naming the key
    whose value is not what the protocol writes."""
    if KEYS.isdisjoint(data):  # most lines: no set built for them
        return None
    phase = data.get("phase")
    if phase == "episode":
        return Episode(_text(data.get("hypothesis", ""), "hypothesis"))
    if phase != "triage":
        raise ValueError(f"phase {str(phase)[:40]!r} is neither triage nor episode")
    size, limits = data.get("shortlist_size"), data.get("triage_limits")
    shortlist = data.get("shortlist")
    return Triage(
        size=None if size is None else _count(size, "shortlist_size"),
        limits=None if limits is None else _limits(limits),
        shortlist=None if shortlist is None else tuple(map(_entry, _list(shortlist, "shortlist"))),
        refused=tuple(map(_refusal, _list(data.get("refused") or [], "refused"))),
    )


def _entry(value: object) -> Entry:
    if not isinstance(value, dict) or not isinstance(value.get("rule"), str):
        raise ValueError(f"shortlist: an entry is not a rule: {str(value)[:80]!r}")
    return Entry(value["rule"], _text(value.get("hypothesis", ""), "a shortlist entry's hypothesis"))


def _refusal(value: object) -> Refusal:
    if not isinstance(value, dict):
        raise ValueError(f"refused: not an entry: {str(value)[:80]!r}")
    rule, position = value.get("rule"), value.get("position")
    return Refusal(
        rule=None if rule is None else _text(rule, "a refused entry's rule"),
        reason=_text(value.get("reason", ""), "a refused entry's reason"),
        position=None if position is None else _count(position, "a refused entry's position"),
    )


def _limits(value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        raise ValueError(f"triage_limits: not a table of counts: {str(value)[:80]!r}")
    return {_text(k, "triage_limits"): _count(v, f"triage_limits.{k}") for k, v in value.items()}


def _list(value: object, key: str) -> list[object]:
    if not isinstance(value, list):
        raise ValueError(f"{key}: not a list: {str(value)[:80]!r}")
    if len(value) > MAX_ENTRIES:
        raise ValueError(f"{key}: {len(value):,} entries (at most {MAX_ENTRIES:,})")
    return value


def _count(value: object, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key}: not a count: {str(value)[:40]!r}")
    return value


def _text(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key}: not a string: {str(value)[:40]!r}")
    return value
