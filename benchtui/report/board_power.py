"""What a board can resolve, and what it would need: the pairs' power plans (report/power.py)
read as one answer.

"This board separates differences of at least X points" is the largest of its pairs' smallest
separable differences at 80% power (any two models further apart than X are told apart with 80%
probability or more); "to separate D points: N repeats per task" the largest of the pairs' needs.
The difference D is given in points of bug rate (default 10)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchtui.report.clustered import POWER
from benchtui.report.power import Plan

DIFFERENCE = 0.10
"""The difference the report asks about by default: 10 points of bug rate."""


@dataclass(frozen=True, slots=True)
class BoardPower:
    plan: Plan
    """The pair that needs the most (its plan, the board's worst case)."""
    difference: float
    detectable: float | None
    """The smallest difference every pair separates at 80% power, with the data in hand."""
    needed: int | None
    """Repeats per task (or sessions / runs per model) that separate `difference` for every
    pair; None: no number of repeats does (the tasks differ by more than repeats average away)."""

    @property
    def sessions_needed(self) -> int | None:
        return self.plan.sessions(self.needed) if self.needed is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "power": POWER,
            "difference": self.difference,
            "detectable": self.detectable,
            "needed": self.needed,
            "needed_unit": "repeats per task"
            if self.plan.grows == "repeats"
            else f"{self.plan.unit}s per model",
            "sessions_needed": self.sessions_needed,
            "sessions_now": self.plan.sessions(
                self.plan.repeats if self.plan.grows == "repeats" else self.plan.clusters
            ),
            **self.plan.to_json(),
        }

    def lines(self) -> list[str]:
        """What a reader reads: the board's resolution, what the difference asked needs, from what."""
        p, points = self.plan, round(self.difference * 100)
        shape = (
            f"clustered by task, {p.clusters} tasks × {p.repeats} sessions"
            if p.unit == "task"
            else f"{p.clusters} {p.unit}s per model, each its own cluster"
        )
        now = (
            f"this board separates differences of at least {self.detectable * 100:.0f} points"
            if self.detectable is not None
            else "this board is too small to separate even 100 points"
        )
        if self.needed is None:
            tasks = p.needed(self.difference, along="clusters")
            more = f" (about {tasks} tasks at {p.repeats} sessions each)" if tasks is not None else ""
            need = (
                f"no number of repeats separates {points} points: its tasks differ by more; add tasks{more}"
            )
        elif p.grows == "repeats":
            need = f"{self.needed} repeats per task separate {points} points ({self.sessions_needed} sessions per model)"
        else:
            need = f"{self.needed} {p.unit}s per model separate {points} points"
        return [
            f"power (80%, two-sided 95%, {shape}): {now}; {need}",
            f"  from {p.source}",
        ]


def board_power(plans: Sequence[Plan | None], difference: float = DIFFERENCE) -> BoardPower | None:
    """The board's answer over its pairs' plans (None: no pair has one)."""
    given = [p for p in plans if p is not None]
    if not given:
        return None
    return of_plans(given, difference)


def of_plans(plans: list[Plan], difference: float) -> BoardPower:
    detectable = [d for p in plans if (d := p.detectable()) is not None]
    needs = [(p.needed(difference), p) for p in plans]
    unmet = [p for n, p in needs if n is None]
    if unmet:
        worst, needed = unmet[0], None
    else:
        needed, worst = max(((n, p) for n, p in needs if n is not None), key=lambda x: x[0])
    return BoardPower(worst, difference, max(detectable) if detectable else None, needed)


def reshaped(plan: Plan, clusters: int, repeats: int) -> Plan:
    """The plan for a campaign of another shape (its tasks and repeats), the variances kept."""
    if plan.grows == "repeats":
        return dataclasses.replace(plan, clusters=clusters, repeats=repeats)
    return dataclasses.replace(plan, clusters=clusters * repeats)
