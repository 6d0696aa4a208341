"""The statistics, from scipy rather than hand-written formulas: a Wilson interval for a rate,
Fisher's exact test for two rates (exact at the small counts a campaign has), quantiles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchtui.report.clustered import Unit

ALPHA = 0.05
"""A difference is called real below this p-value (two-sided, Holm-adjusted over the pairs)."""


@dataclass(frozen=True, slots=True)
class Rate:
    hits: int
    trials: int
    value: float | None
    ci95: tuple[float, float] | None
    """The interval the report shows: clustered (`unit`, `clusters`) where it says so."""
    unit: Unit = "session"
    """What its interval clustered: `task` (sessions of a task), `run`, or `session` (none)."""
    clusters: int = 0
    method: str = "wilson"
    """`wilson` (sessions as independent trials) or `korn_graubard` (report/clustered.py)."""
    ci95_unclustered: tuple[float, float] | None = None
    """The Wilson interval over the same trials as if independent (beside a clustered one)."""

    def to_json(self) -> dict[str, object]:
        unclustered = self.ci95_unclustered if self.method != "wilson" else self.ci95
        return {
            "hits": self.hits,
            "trials": self.trials,
            "value": self.value,
            "ci95": list(self.ci95) if self.ci95 else None,
            "unit": self.unit,
            "clusters": self.clusters,
            "method": self.method,
            "ci95_unclustered": list(unclustered) if unclustered else None,
        }


def rate(hits: int, trials: int) -> Rate:
    """hits / trials with its 95% Wilson score interval (None when nothing was tried)."""
    if trials == 0:
        return Rate(hits, trials, None, None)
    from scipy.stats import binomtest

    ci = binomtest(hits, trials).proportion_ci(confidence_level=0.95, method="wilson")
    # Wilson's bounds can land a float ulp outside [0, 1] or beside the estimate at 0 or 1.
    value = hits / trials
    return Rate(hits, trials, value, (min(float(ci.low), value), max(float(ci.high), value)), clusters=trials)


def clustered(by_cluster: Sequence[tuple[int, int]], unit: Unit) -> Rate:
    """hits / trials over (hits, trials) per cluster, its interval clustered by `unit`
    (Korn-Graubard, report/clustered.py), the Wilson interval beside it."""
    from benchtui.report.clustered import clustered_rate

    hits, trials = sum(h for h, _ in by_cluster), sum(t for _, t in by_cluster)
    plain = rate(hits, trials)
    if trials == 0:
        return Rate(hits, trials, None, None, unit, 0)
    robust = clustered_rate(by_cluster, unit)
    if robust.method == "wilson":  # one trial per cluster: the trials are independent
        return Rate(hits, trials, plain.value, plain.ci95, unit, robust.clusters)
    return Rate(hits, trials, plain.value, robust.ci95, unit, robust.clusters, robust.method, plain.ci95)


def fisher_p(a_hits: int, a_trials: int, b_hits: int, b_trials: int) -> float | None:
    """Two-sided p-value of Fisher's exact test on the 2x2 table hits / misses of A and B."""
    if a_trials == 0 or b_trials == 0:
        return None
    from scipy.stats import fisher_exact

    table = [[a_hits, a_trials - a_hits], [b_hits, b_trials - b_hits]]
    return float(fisher_exact(table, alternative="two-sided").pvalue)


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Two-sided p-value of the exact McNemar test: the discordant pairs (only A found a bug, only
    B did) against a fair coin. No discordant pair: nothing tells the two apart (p = 1)."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(only_a, n, 0.5, alternative="two-sided").pvalue)


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment over the pairs that have a p-value (None stays None)."""
    given = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running, m = 0.0, len(given)
    for step, (p, i) in enumerate(given):
        running = max(running, min(1.0, (m - step) * p))
        adjusted[i] = running
    return adjusted


def quantiles(values: list[float]) -> dict[str, float | None]:
    """Median and 90th percentile (linear interpolation, numpy's default)."""
    if not values:
        return {"median": None, "p90": None}
    import numpy as np

    median, p90 = np.percentile(values, [50, 90])
    return {"median": round(float(median), 3), "p90": round(float(p90), 3)}


@dataclass(frozen=True, slots=True)
class BestOfN:
    """A model's runs read the benchmark's way (its board keeps the best run per model) beside
    their mean, and how much a best-of-N pick is expected to add at this N."""

    n: int
    """Runs picked from (the model's own number of runs, unless asked for another)."""
    runs: int
    """Runs the distribution was taken from."""
    mean: float | None
    best: float | None
    """The best run observed (the benchmark's rule)."""
    expected_best: float | None
    """The exact expected maximum of `n` draws (with replacement) from the runs' empirical
    distribution: what a best-of-`n` pick reports on average for this skill."""

    @property
    def inflation(self) -> float | None:
        """`expected_best - mean`: what picking the best of `n` adds to the mean by luck alone
        (0 for one run, growing with `n`); subtract it to compare boards with different N."""
        if self.expected_best is None or self.mean is None:
            return None
        return self.expected_best - self.mean

    def to_json(self) -> dict[str, object]:
        return {
            "n": self.n,
            "runs": self.runs,
            "mean": self.mean,
            "best": self.best,
            "expected_best": self.expected_best,
            "inflation": self.inflation,
        }


def expected_max(values: Sequence[float], n: int) -> float:
    """The exact expected maximum of `n` independent draws from the empirical distribution of
    `values`: with the k values sorted x(1) <= ... <= x(k), the maximum is x(i) with probability
    (i/k)^n - ((i-1)/k)^n (ties are handled: equal values add their probabilities)."""
    if not values:
        raise ValueError("expected_max of no values")
    if n < 1:
        raise ValueError(f"expected_max of {n} draws (at least 1)")
    ordered = sorted(values)
    k = len(ordered)
    return float(sum(x * ((i / k) ** n - ((i - 1) / k) ** n) for i, x in enumerate(ordered, 1)))


def best_of_n(values: Sequence[float], n: int | None = None) -> BestOfN:
    """Per model: its runs' `values` (e.g. bugs per run), their mean, the best run, and the expected
    best of `n` runs (default: as many as it has) drawn from their empirical distribution. No runs:
    every figure None. `inflation` = expected best - mean: a board of best-of-5 picks is
    inflated by about that much over a board of single runs of the same skill."""
    n = len(values) if n is None else n
    if not values:
        return BestOfN(n, 0, None, None, None)
    return BestOfN(
        n=n,
        runs=len(values),
        mean=float(sum(values)) / len(values),
        best=float(max(values)),
        expected_best=expected_max(values, n),
    )


# The cluster-robust intervals and the power analysis live in their own modules (each about
# 150 lines); they are named here too, so that the report's statistics have one address.
from benchtui.report.clustered import (  # noqa: E402
    Clustered,
    clustered_rate,
    mean_interval,
    paired_difference,
    unpaired_difference,
)
from benchtui.report.power import Plan, paired_plan, prior_plan, unit_plan  # noqa: E402

__all__ = [
    "ALPHA",
    "BestOfN",
    "Clustered",
    "Plan",
    "Rate",
    "best_of_n",
    "clustered_rate",
    "expected_max",
    "fisher_p",
    "holm",
    "mcnemar_exact_p",
    "mean_interval",
    "paired_difference",
    "paired_plan",
    "prior_plan",
    "quantiles",
    "rate",
    "unit_plan",
    "unpaired_difference",
]
