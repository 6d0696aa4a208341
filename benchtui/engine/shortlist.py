"""The shortlist protocol (`[protocol] kind = "shortlist"`): triage, then one episode per rule.

Per model the plan starts with one triage session. When it ends, the engine validates what it
committed against the target's rule inventory (frozen at the start: `inventory.json`, its hash
part of the identity): unknown or repeated rules are refused with the reason, the first
`shortlist_size` valid ones are kept in the model's order, fewer is the model's outcome. The
triage's end line carries the shortlist, and in the same commit a `pending` line per episode is
written, so the plan grows durably: `--resume` rebuilds it from the triage end lines (`grow`),
whatever instant a crash hit.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchtui.core import bounds
from benchtui.core.errors import BadInput
from benchtui.core.target import TargetKind
from benchtui.core.text import BIDI_CONTROLS
from benchtui.engine.campaign import ResolvedProfile, slug
from benchtui.engine.phases import Entry, Episode, Refusal, Triage
from benchtui.engine.plan import PlannedSession
from benchtui.engine.records import JournalRecord

INVENTORY = "inventory.json"
HYPOTHESIS_MAX_CHARS = 300
"""A hypothesis is one line; longer ones are cut (the benchmark caps them too)."""
MAX_INVENTORY = 100_000


@dataclass(frozen=True, slots=True)
class JudgedShortlist:
    """A triage's commit, judged: the shortlist kept, and every entry refused with its reason."""

    shortlist: tuple[Entry, ...]
    refused: tuple[Refusal, ...]
    size: int

    @property
    def reason(self) -> str:
        n, refused = len(self.shortlist), len(self.refused)
        said = (
            f"shortlist: {n} of {self.size} rules committed (too few)"
            if n < self.size
            else (f"shortlist: {n} rules committed")
        )
        return said + (f"; {refused} entr{'y' if refused == 1 else 'ies'} refused" if refused else "")

    def of(self, given: Triage) -> Triage:
        """The triage's end line's protocol part: what it was given, and this judgement."""
        return replace(given, shortlist=self.shortlist, refused=self.refused)


def judge(committed: Any, inventory: Iterable[str], size: int) -> JudgedShortlist:
    """Validate a triage's commit: each entry a known rule, each rule once; the first `size`
    valid entries kept in order. Never raises: garbage is refused entry by entry."""
    known = frozenset(inventory)
    kept: list[Entry] = []
    refused: list[Refusal] = []
    seen: set[str] = set()
    entries = committed if isinstance(committed, list) else []
    if committed is not None and not isinstance(committed, list):
        refused.append(Refusal(None, f"not a list of entries: {str(committed)[:80]!r}"))
    for position, entry in enumerate(entries[: 4 * size + 64], 1):  # bounded work on a flood
        rule = entry.get("rule") if isinstance(entry, dict) else None
        hypothesis = entry.get("hypothesis", "") if isinstance(entry, dict) else ""
        if not isinstance(rule, str):
            refused.append(Refusal(None, "no rule named", position))
            continue
        rule = " ".join(rule.split())
        shown = rule[:200]
        if rule not in known:
            refused.append(Refusal(shown, "not a rule of the inventory", position))
        elif rule in seen:
            refused.append(Refusal(shown, "a duplicate of an earlier entry", position))
        elif len(kept) >= size:
            refused.append(Refusal(shown, f"beyond the {size} asked for", position))
        else:
            seen.add(rule)
            line = _one_line(str(hypothesis)) if hypothesis else ""
            kept.append(Entry(rule, line))
    if len(entries) > 4 * size + 64:
        refused.append(Refusal(None, f"{len(entries) - 4 * size - 64} more entries not read"))
    return JudgedShortlist(tuple(kept), tuple(refused), size)


BIDI = frozenset(BIDI_CONTROLS)


def _one_line(text: str) -> str:
    """A hypothesis as one printable line (no escape codes for a terminal, nothing that reorders
    it on screen), bounded."""
    shown = "".join(" " if unicodedata.category(c) in ("Cc", "Cs") or ord(c) in BIDI else c for c in text)
    return " ".join(shown.split())[:HYPOTHESIS_MAX_CHARS]


def episode_id(model: str, position: int) -> str:
    return f"{slug(model)}-{position:04d}"


def episodes(model: str, shortlist: Sequence[Entry]) -> list[PlannedSession]:
    """The episodes a triage's (validated, recorded) shortlist plans, in shortlist order."""
    return [
        PlannedSession(episode_id(model, position), model, position, entry.rule, entry.hypothesis)
        for position, entry in enumerate(shortlist)
    ]


def grown_by(record: JournalRecord, planned: PlannedSession | None) -> list[PlannedSession]:
    """The episodes a journal line adds to the plan: only a planned triage's final end line."""
    if planned is None or not planned.triage or not record.is_final:
        return []
    triage = record.phase
    return episodes(record.model, triage.shortlist or ()) if isinstance(triage, Triage) else []


def ordered(plan: Iterable[PlannedSession], models: list[str]) -> list[PlannedSession]:
    """Round-robin by index (docs/design/invariants.md#f4): every triage first, then m1#0, m2#0, m1#1, …"""
    position = {m: i for i, m in enumerate(models)}
    return sorted(plan, key=lambda s: (s.index, position.get(s.model, len(position))))


def pending_line(session: PlannedSession, runner: str, t: float) -> JournalRecord:
    return JournalRecord(
        session=session.id,
        model=session.model,
        index=session.index,
        task=session.task,
        state="pending",
        attempt=0,
        runner=runner,
        t=t,
        phase=Episode(session.hypothesis),
    )


# -- the rule inventory -------------------------------------------------------------------------
def can_triage(runner: ResolvedProfile) -> bool:
    """Whether the profile's runner kind can run a triage session (the inventory is the target's)."""
    return runner.kind.runs_triage


def inventory_of(
    profiles: Mapping[str, ResolvedProfile], active: str, target: TargetKind, environment: Path, size: int
) -> list[str]:
    """The rule inventory a triage chooses from, checked (rule names that are one bounded line,
    each once, at least `size`): the one a profile scripts (the fake runner's `rules`; the active
    profile first), else the target's (`rule_inventory`, with the tools the active profile gives
    it); one clear BadInput line when there is none."""
    able = [profiles[active], *profiles.values()]
    scripted = next(
        (rules for p in able if (rules := p.kind.scripted_inventory(p.profile)) is not None), None
    )
    if scripted is None and not target.has_inventory:
        raise BadInput(
            f"[target] kind = {target.profile.kind!r} has no rule inventory: a shortlist campaign needs one"
        )
    runner = profiles[active]
    try:
        rules = (
            scripted
            if scripted is not None
            else target.rule_inventory(environment, runner.kind.target_tools(runner.profile, type(target)))
        )
    except ValueError as exc:
        raise BadInput(f"the rule inventory: {exc}") from None
    if not isinstance(rules, list) or not all(isinstance(r, str) and r for r in rules):
        raise BadInput("the rule inventory is not a list of rule names")
    for rule in rules:
        try:
            bounds.check_text(rule, "a rule name")
        except ValueError as exc:
            raise BadInput(f"the rule inventory: {exc}") from None
    unique = list(dict.fromkeys(rules))
    if len(unique) > MAX_INVENTORY:
        raise BadInput(f"the rule inventory has {len(unique):,} rules (at most {MAX_INVENTORY:,})")
    if len(unique) < size:
        raise BadInput(f"the rule inventory has {len(unique)} rules: fewer than shortlist_size = {size}")
    return unique


def inventory_digest(rules: list[str]) -> str:
    return hashlib.sha256(json.dumps(rules).encode()).hexdigest()[:16]


def inventory_bytes(rules: list[str]) -> bytes:
    return json.dumps({"rules": rules}, indent=0).encode()


def untriaged(plan: Iterable[PlannedSession], journal: Mapping[str, JournalRecord]) -> list[str]:
    """Models whose triage is still to run (not final)."""
    return [s.model for s in plan if s.triage and not ((r := journal.get(s.id)) and r.is_final)]
