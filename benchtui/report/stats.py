"""The statistics, from scipy rather than hand-written formulas: a Wilson interval for a rate,
Fisher's exact test for two rates (exact at the small counts a campaign has), quantiles."""

from __future__ import annotations

from dataclasses import dataclass

ALPHA = 0.05
"""A difference is called real below this p-value (two-sided, Holm-adjusted over the pairs)."""


@dataclass(frozen=True, slots=True)
class Rate:
    hits: int
    trials: int
    value: float | None
    ci95: tuple[float, float] | None

    def to_json(self) -> dict[str, object]:
        return {
            "hits": self.hits,
            "trials": self.trials,
            "value": self.value,
            "ci95": list(self.ci95) if self.ci95 else None,
        }


def rate(hits: int, trials: int) -> Rate:
    """hits / trials with its 95% Wilson score interval (None when nothing was tried)."""
    if trials == 0:
        return Rate(hits, trials, None, None)
    from scipy.stats import binomtest

    ci = binomtest(hits, trials).proportion_ci(confidence_level=0.95, method="wilson")
    # Wilson's bounds can land a float ulp outside [0, 1] or beside the estimate at 0 or 1.
    value = hits / trials
    return Rate(hits, trials, value, (min(float(ci.low), value), max(float(ci.high), value)))


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
