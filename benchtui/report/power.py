"""How many sessions (or runs) a verdict needs, and what the data in hand can resolve.

Two models are *separated* when the 95% interval of their difference (report/clustered.py)
excludes 0. With G clusters (tasks, or units of their own) and r sessions of each model per
task, the difference's standard error is

    SE(r, G) = sqrt((between + within / r) / G)

where `between` is the variance across tasks of the true per-task difference (what no number
of repeats removes) and `within` the per-session variance of both models' outcomes within a task
(p_a(1-p_a) + p_b(1-p_b), averaged over tasks). Both come from the data (a one-way split of the
per-task differences into between and within, which needs at least two sessions per task and
model), or from a stated prior. Power is that of the interval's own test: P(|T| > k * t(G-1))
with T noncentral t on G-1 degrees of freedom, noncentrality delta / SE, and k the interval's
half-width over a t interval's (k > 1: Korn-Graubard and square-and-add are wider than a t
interval, measured on the data; 1.08 by the simulation where there is none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from benchtui.report.clustered import POWER, Cluster, Unit, paired_difference, t975

Grows = Literal["repeats", "clusters"]

PRIOR_RATE = 0.3
"""The prior's bug rate per session (where there is no data): both models'."""
PRIOR_ICC = 0.3
"""The prior's share of a session's variance that its task explains."""
PRIOR_TASK_CORRELATION = 0.5
"""The prior's correlation of two models' per-task rates (a hard task is hard for both)."""
PRIOR_WIDEN = 1.08
"""Korn-Graubard + square-and-add half-width over a t interval's (median of the simulation)."""
MAX_GROWTH = 10_000


@dataclass(frozen=True, slots=True)
class Plan:
    """The variance of a paired difference per cluster, split between tasks and within them."""

    between: float
    within: float
    clusters: int
    """G: tasks both models ran (or units, for a campaign whose sessions are their own clusters)."""
    repeats: int
    """r: sessions of each model per task now (1 for units of their own)."""
    unit: Unit
    grows: Grows
    """What more sessions add: repeats of the same tasks, or clusters (sessions, runs)."""
    source: str
    """Where the figures come from: the data (how much), or the prior (stated)."""
    widen: float = PRIOR_WIDEN

    def se(self, repeats: int | None = None, clusters: int | None = None) -> float:
        r, g = repeats or self.repeats, clusters or self.clusters
        return math.sqrt((self.between + self.within / r) / g)

    def power(self, delta: float, repeats: int | None = None, clusters: int | None = None) -> float:
        """Probability of separating a true difference `delta` (rate points as a fraction)."""
        g = clusters or self.clusters
        if g < 2:
            return 0.0
        se = self.se(repeats, clusters)
        if se == 0:
            return 1.0 if delta else 0.0
        from scipy.stats import nct

        df = g - 1
        crit = self.widen * t975(df)
        lam = abs(delta) / se
        return float(nct.sf(crit, df, lam) + nct.cdf(-crit, df, lam))

    def needed(self, delta: float, power: float = POWER, along: Grows | None = None) -> int | None:
        """The smallest repeats per task (or clusters; `along` says which, default how the
        campaign grows) that separate `delta` with `power`; None when none up to MAX_GROWTH
        does (for repeats: the tasks differ among themselves by more than repeats can average
        away; more tasks are needed)."""
        along = along or self.grows

        def at(k: int) -> float:
            return self.power(delta, repeats=k) if along == "repeats" else self.power(delta, clusters=k)

        if at(MAX_GROWTH) < power:
            return None
        low, high = 1 if along == "repeats" else 2, MAX_GROWTH
        while low < high:
            mid = (low + high) // 2
            low, high = (mid + 1, high) if at(mid) < power else (low, mid)
        return low

    def sessions(self, growth: int) -> int:
        """Sessions per model at a growth of `needed`'s unit."""
        return growth * self.clusters if self.grows == "repeats" else growth

    def detectable(self, power: float = POWER) -> float | None:
        """The smallest difference the data in hand separates with `power` (None: under two
        clusters, or not even a difference of 100 points)."""
        if self.clusters < 2 or self.power(1.0) < power:
            return None
        low, high = 0.0, 1.0
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if self.power(mid) < power else (low, mid)
        return high

    def to_json(self) -> dict[str, object]:
        return {
            "between": self.between,
            "within": self.within,
            "clusters": self.clusters,
            "repeats": self.repeats,
            "unit": self.unit,
            "grows": self.grows,
            "widen": self.widen,
            "source": self.source,
        }


def prior_plan(clusters: int, repeats: int, unit: Unit) -> Plan:
    """The stated prior, where there is no data: both models at PRIOR_RATE, PRIOR_ICC of a
    session's variance between tasks, PRIOR_TASK_CORRELATION between the models' task rates."""
    var = PRIOR_RATE * (1 - PRIOR_RATE)
    source = f"prior (no data): bug rate {PRIOR_RATE:.0%} per session for both models" + (
        f", task ICC {PRIOR_ICC}, models' task correlation {PRIOR_TASK_CORRELATION}" if unit == "task" else ""
    )
    if unit == "task":
        between = 2 * var * PRIOR_ICC * (1 - PRIOR_TASK_CORRELATION)
        return Plan(between, 2 * var * (1 - PRIOR_ICC), clusters, repeats, unit, "repeats", source)
    return Plan(2 * var, 0.0, clusters, 1, unit, "clusters", source)


def paired_plan(a: Sequence[Cluster], b: Sequence[Cluster], unit: Unit = "task") -> Plan | None:
    """From two models' (hits, trials) on the same tasks: the per-task differences' variance
    split into between and within (needs two trials of each model on a task to see within; with
    one, the prior's ICC splits it). None under two tasks both ran."""
    both = [(x, y) for x, y in zip(a, b, strict=True) if x[1] > 0 and y[1] > 0]
    g = len(both)
    if g < 2:
        return None
    d = [ha / ta - hb / tb for (ha, ta), (hb, tb) in both]
    mean = sum(d) / g
    total = sum((x - mean) ** 2 for x in d) / (g - 1)
    repeats = max(1, round(sum(ta + tb for (_, ta), (_, tb) in both) / (2 * g)))
    trials = sum(ta + tb for (_, ta), (_, tb) in both)
    source = f"data: {trials} sessions on {g} tasks"
    if all(ta > 1 and tb > 1 for (_, ta), (_, tb) in both):
        per_session = [_unbiased(ha, ta) + _unbiased(hb, tb) for (ha, ta), (hb, tb) in both]
        noise_now = sum(_unbiased(ha, ta) / ta + _unbiased(hb, tb) / tb for (ha, ta), (hb, tb) in both) / g
        within, between = sum(per_session) / g, max(total - noise_now, 0.0)
    else:
        within, between = total * repeats * (1 - PRIOR_ICC), total * PRIOR_ICC
        source += f" (one session per task: split by the prior's task ICC {PRIOR_ICC})"
    plan = Plan(between, within, g, repeats, unit, "repeats", source)
    widen = _widen(a, b, unit, plan)
    return Plan(between, within, g, repeats, unit, "repeats", source, widen)


def unit_plan(variance: float, units: int, unit: Unit, source: str) -> Plan:
    """Units of their own (sessions without tasks, runs): `variance` is the per-unit variance
    of the difference (var_a + var_b), growth adds units."""
    return Plan(variance, 0.0, units, 1, unit, "clusters", source)


def _unbiased(hits: int, trials: int) -> float:
    """p(1-p) of one session, unbiased from `trials` of them."""
    p = hits / trials
    return p * (1 - p) * trials / (trials - 1)


def _widen(a: Sequence[Cluster], b: Sequence[Cluster], unit: Unit, plan: Plan) -> float:
    """This board's interval half-width over a t interval's at the same standard error."""
    interval = paired_difference(a, b, unit)
    se = plan.se()
    if interval.ci95 is None or se == 0 or plan.clusters < 2:
        return PRIOR_WIDEN
    half = (interval.ci95[1] - interval.ci95[0]) / 2
    return min(max(half / (t975(plan.clusters - 1) * se), 1.0), 1.5)
