"""Growing a campaign on `--resume`: what may change between the run's frozen campaign and the
campaign file, and what that adds.

Models may be added after the others (never removed, re-priced or reordered) and sessions per
model raised (more repeats of the same tasks, or more whole-library sessions), so the earlier
sessions keep their ids, tasks and results. Everything a session is given stays what it was:
the environment, the runner profiles, the protocol, the logical budgets, each session's money.
Money is explicit: the earlier models' caps never change when models join (a derived cap that
would is refused, saying what to write), a cap rises only with the sessions it pays for, and
`total_usd` must rise by at least what the added caps can spend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from benchtui.core.errors import BadInput
from benchtui.core.money import fmt_exact
from benchtui.engine.campaign.schema import Campaign
from benchtui.engine.campaign.tables import SCHEDULING

GROWABLE = frozenset({"models", "sessions", "budget"})
"""Identity parts a growth may change; a change of any other part is refused as before."""


@dataclass(frozen=True, slots=True)
class Growth:
    """What an extension adds to a run."""

    models: tuple[str, ...] = ()
    """Models added, in order (after the earlier ones)."""
    sessions: tuple[int, int] | None = None
    """Sessions per model before and after, when sessions were added."""
    budget: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)
    """Amounts that changed, before and after (`total_usd`, `per_model_usd`)."""

    def describe(self) -> str:
        """`models added: c, d; sessions per model 10 -> 20; total_usd $0.20 -> $0.30`."""
        parts = [f"models added: {', '.join(self.models)}"] if self.models else []
        if self.sessions:
            parts.append(f"sessions per model {self.sessions[0]} -> {self.sessions[1]}")
        parts += [f"{key} {fmt_exact(a)} -> {fmt_exact(b)}" for key, (a, b) in self.budget.items()]
        return "; ".join(parts)

    def entry(self) -> dict[str, Any]:
        """Its part of the identity's history entry."""
        return {
            "models": list(self.models),
            "sessions_per_model": list(self.sessions or ()),
            "budget": {key: [_plain(a), _plain(b)] for key, (a, b) in self.budget.items()},
        }


def growth(old: Campaign, new: Campaign, changed: list[str], where: str) -> Growth:
    """What `new` adds to the run of `old` whose identity parts `changed`; BadInput in one line
    naming what may not change, or what to write for the money."""
    fixed = [part for part in changed if part not in GROWABLE]
    if fixed:
        raise BadInput(
            f"cannot resume {where}: changed since it started: {', '.join(changed)} (a campaign grows "
            "only by models and sessions; use --fresh to start over)"
        )
    models = _added_models(old, new, where)
    sessions = _added_sessions(old, new, where)
    if not models and sessions is None:
        raise BadInput(
            f"cannot resume {where}: changed since it started: {', '.join(changed)} (the budget may change "
            "only as the campaign grows by models or sessions; use --fresh to start over)"
        )
    return Growth(models, sessions, _money(old, new, models, sessions, where))


def _added_models(old: Campaign, new: Campaign, where: str) -> tuple[str, ...]:
    before, after = [m.name for m in old.models], [m.name for m in new.models]
    removed = [name for name in before if name not in after]
    if removed:
        raise BadInput(
            f"cannot resume {where}: models removed: {', '.join(removed)} (a model's sessions stay in the "
            "run; list every earlier model, in its order, then the new ones)"
        )
    if after[: len(before)] != before:
        raise BadInput(
            f"cannot resume {where}: models reordered: list the earlier ones first, in their order "
            f"({', '.join(before)}), then the new ones"
        )
    for was, now in zip(old.models, new.models, strict=False):
        a, b = was.model_dump(exclude=SCHEDULING), now.model_dump(exclude=SCHEDULING)
        keys = [k for k in a if a[k] != b[k]]
        if keys:
            detail = ", ".join(f"{k} {_shown(a[k])} -> {_shown(b[k])}" for k in keys)
            raise BadInput(
                f"cannot resume {where}: model {was.name} changed ({detail}): an earlier model is never "
                "re-priced or changed (its sessions ran as it was)"
            )
    return tuple(after[len(before) :])


def _added_sessions(old: Campaign, new: Campaign, where: str) -> tuple[int, int] | None:
    if old.tasks != new.tasks:
        raise BadInput(
            f"cannot resume {where}: the tasks changed (a campaign grows by repeats of the same tasks, "
            "in their order; use --fresh to start over)"
        )
    before, after = old.sessions_per_model_count, new.sessions_per_model_count
    if after < before:
        what = "repeats" if old.tasks else "sessions_per_model"
        raise BadInput(
            f"cannot resume {where}: {what} lowered ({before} -> {after} sessions per model): a run never "
            "loses sessions; use --fresh to start over"
        )
    return (before, after) if after > before else None


def _money(
    old: Campaign, new: Campaign, models: tuple[str, ...], sessions: tuple[int, int] | None, where: str
) -> dict[str, tuple[Decimal, Decimal]]:
    a, b = old.budget, new.budget
    if a.enforce != b.enforce or a.per_session != b.per_session:
        raise BadInput(
            f"cannot resume {where}: [budget] enforce or [budget.per_session] changed: every session gets "
            "the budget the earlier ones got"
        )
    if new.per_session_usd != old.per_session_usd:
        raise BadInput(
            f"cannot resume {where}: each session's budget would change from {fmt_exact(old.per_session_usd)} "
            f"to {fmt_exact(new.per_session_usd)}: write per_session_usd = {_plain(old.per_session_usd)} "
            "under [budget]"
        )
    cap, cap_now = old.per_model_usd, new.per_model_usd
    if cap_now != cap and (sessions is None or cap_now < cap or b.per_model_usd is None):
        why = (
            "the earlier models' caps never change as models join"
            if sessions is None
            else "a cap rises only with its sessions, explicitly"
        )
        raise BadInput(
            f"cannot resume {where}: each model's cap would change from {fmt_exact(cap)} to "
            f"{fmt_exact(cap_now)} ({why}): write per_model_usd = "
            f"{_plain(cap if sessions is None or cap_now < cap else cap_now)} under [budget]"
        )
    needed = (cap_now - cap) * len(old.models) + cap_now * len(models)
    if b.total_usd - a.total_usd < needed:
        raise BadInput(
            f"cannot resume {where}: total_usd must rise by at least {fmt_exact(needed)} (what the added "
            f"caps can spend), from {fmt_exact(a.total_usd)}: write total_usd = {_plain(a.total_usd + needed)} "
            "under [budget]"
        )
    changed = {"total_usd": (a.total_usd, b.total_usd), "per_model_usd": (cap, cap_now)}
    return {key: pair for key, pair in changed.items() if pair[0] != pair[1]}


def _plain(value: Decimal) -> str:
    """A TOML number as a user writes it (0.1, 2.5, 3)."""
    return format(value.normalize(), "f")


def _shown(value: Any) -> str:
    return _plain(value) if isinstance(value, Decimal) else repr(value)
