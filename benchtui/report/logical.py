"""Logical budgets in the report: per model, the limits its sessions ran under (from each run's
frozen campaign), the units they used, which counters stopped them, and how they ended.

A session "ended by a counter" when a limit refused it a unit in its last attempt (the journal's
`exhausted`), "ended by submitting" when that attempt ended with a certificate and no limit
refused anything. Counts are over the sessions that ran, each by its last attempt: the one its
result comes from (an interrupted attempt's units were not a budget the session could use).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from benchtui.core.contract import LogicalLimits
from benchtui.core.counters import label, ordered
from benchtui.report.runs import RecordedRun, SessionHistory

OBSERVATION = "observation_chars"


def limits_of(limits: LogicalLimits) -> dict[str, int]:
    """Every limit a campaign sets, counters by their flat names, plus `observation_chars`."""
    out = {c: limits.limit(c) or 0 for c in ordered(limits.counters)}
    if limits.observation_chars is not None:
        out[OBSERVATION] = limits.observation_chars
    return out


def has_logical(runs: list[RecordedRun]) -> bool:
    return any(run.campaign.logical_limits for run in runs)


@dataclass(frozen=True, slots=True)
class LogicalStats:
    limits: dict[str, tuple[int | None, ...]]
    """Each limit's distinct values over the runs the model's sessions come from (None: unset);
    one value unless runs were pooled whose campaigns differ (a fairness finding)."""
    used: dict[str, list[int]]
    """Units used of each counter, one entry per session that ran."""
    hit: Counter[str]
    """Sessions whose last attempt was refused a unit of the counter."""
    ran: int
    ended_by_counter: int
    ended_by_submit: int

    def to_json(self) -> dict[str, Any]:
        return {
            "limits": {c: v[0] if len(v) == 1 else list(v) for c, v in self.limits.items()},
            "used": {
                c: {"mean": round(fmean(n), 3) if n else None, "max": max(n, default=None)}
                for c, n in self.used.items()
            },
            "hit": {c: self.hit[c] for c in self.used},
            "sessions": self.ran,
            "ended_by_counter": self.ended_by_counter,
            "ended_by_submit": self.ended_by_submit,
        }

    def endings(self) -> str:
        return f"ended by a counter {self.ended_by_counter}/{self.ran}, by submitting {self.ended_by_submit}/{self.ran}"

    def cell(self, counter: str) -> str:
        """`3.5, max 10, 2 hit`: mean and max units used, and how many sessions the limit stopped."""
        n = self.used.get(counter, [])
        if not n:
            return "-"
        return f"{fmean(n):.2g}, max {max(n)}, {self.hit[counter]} hit"


def ended_by_counter(view: SessionHistory) -> bool:
    return view.ran and bool(view.exhausted)


def ended_by_submit(view: SessionHistory) -> bool:
    return view.ran and view.submitted and not view.exhausted


def logical_stats(views: list[SessionHistory], runs: list[RecordedRun]) -> LogicalStats:
    by_run = {str(run.path): limits_of(run.campaign.logical_limits) for run in runs}
    names = ordered({c for limits in by_run.values() for c in limits if c != OBSERVATION})
    started = [v for v in views if v.ran or v.state == "running"]
    seen = [by_run[v.run] for v in started] or list(by_run.values())
    every = [*names, OBSERVATION] if any(OBSERVATION in s for s in by_run.values()) else names
    limits = {c: tuple(sorted({s.get(c) for s in seen}, key=lambda v: (v is None, v or 0))) for c in every}
    ran = [v for v in views if v.ran and v.counters is not None]
    hit: Counter[str] = Counter()
    for view in ran:
        hit.update(set(view.exhausted))
    return LogicalStats(
        limits=limits,
        used={c: [(v.counters or {}).get(c, 0) for v in ran] for c in names},
        hit=hit,
        ran=len(ran),
        ended_by_counter=sum(ended_by_counter(v) for v in ran),
        ended_by_submit=sum(ended_by_submit(v) for v in ran),
    )


@dataclass(frozen=True, slots=True)
class LogicalAudit:
    """What the fairness audit checks of one model's logical budgets."""

    limits: dict[str, Counter[str]]
    """Per limit, how many of the model's started sessions ran under each value ("none": unset)."""
    ran: int
    ended_by_counter: int
    ended_by_submit: int

    def to_json(self) -> dict[str, Any]:
        def share(n: int) -> dict[str, Any]:
            return {"sessions": n, "share": n / self.ran if self.ran else 0.0}

        return {
            "limits": {c: dict(values) for c, values in self.limits.items()},
            "ran": self.ran,
            "ended_by_counter": share(self.ended_by_counter),
            "ended_by_submit": share(self.ended_by_submit),
        }


def logical_audit(started: list[SessionHistory], runs: list[RecordedRun]) -> LogicalAudit:
    """`started`: the model's sessions that ran or are running, each under its own run's limits."""
    by_run = {str(run.path): limits_of(run.campaign.logical_limits) for run in runs}
    names = list(dict.fromkeys(c for limits in by_run.values() for c in limits))
    limits = {c: Counter(str(by_run[v.run].get(c, "none")) for v in started) for c in names}
    ran = [v for v in started if v.ran]
    return LogicalAudit(
        limits=limits,
        ran=len(ran),
        ended_by_counter=sum(map(ended_by_counter, ran)),
        ended_by_submit=sum(map(ended_by_submit, ran)),
    )


def limits_line(stats: list[LogicalStats]) -> str:
    """`calls 10, actions 12, pred 24, …`; a limit the runs disagree on shows each value (`5|10`)."""
    names = list(dict.fromkeys(c for s in stats for c in s.limits))
    values = {c: tuple(dict.fromkeys(v for s in stats for v in s.limits.get(c, ()))) for c in names}
    return ", ".join(
        f"{label(c)} " + "|".join("-" if v is None else f"{v:,}" for v in vs) for c, vs in values.items()
    )


def table_rows(models: list[tuple[str, LogicalStats]]) -> list[tuple[str, ...]]:
    """The logical-budget table, header first: per model, how its sessions ended and, per
    counter, the mean and max units used and how many sessions its limit stopped."""
    names = list(dict.fromkeys(c for _, s in models for c in s.used))
    head = ("model", "ran", "ended by counter", "ended by submit", *(label(c) for c in names))
    rows = [
        (model, str(s.ran), str(s.ended_by_counter), str(s.ended_by_submit), *(s.cell(c) for c in names))
        for model, s in models
    ]
    return [head, *rows]
