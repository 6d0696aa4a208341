"""Intervals that respect what sessions share.

Sessions of one task share its difficulty, runs of the benchmark's Top50 share their model's
shortlist: they are not independent trials, and a binomial interval over them is too narrow
(docs/guide/reports.md has the simulation and its table). Every estimate here is given per
*cluster* (a task, a run, or a session that is its own cluster) and says which unit it clustered
and how many clusters it had.

- A rate: the ratio hits / trials, its variance clustered (CR1: G/(G-1) times the sum of squared
  cluster residuals, over trials squared), turned into an effective sample size and a
  Clopper-Pearson interval with t(G-1) degrees of freedom (Korn & Graubard 1998; R survey's
  svyciprop "beta"). The effective size is capped at the number of trials: never narrower than
  independent trials, which is what keeps it near 0 (no hit: no variance to cluster). Clusters
  of one trial each (sessions that share nothing) get Wilson's interval: nothing to cluster.
- A paired difference between two models on the clusters both ran: Newcombe's square-and-add
  (MOVER) of the two models' clustered intervals with their clustered correlation (clipped to
  [0, 1]) for the pairing; unpaired: correlation 0.
- A mean of per-unit values (bugs per run): a t interval on n-1 degrees of freedom.

The array functions take (..., G) arrays (a simulation's replicates at once); the others one
estimate, for the report.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

Unit = Literal["task", "run", "session"]
"""What was clustered: sessions of a task, episodes of a run (or runs), or none (each session)."""
Cluster = tuple[int, int]
"""(hits, trials) of one cluster."""
Array = NDArray[np.float64]
POWER = 0.8
Z975 = 1.959963984540054
"""The normal's 97.5% quantile."""


@dataclass(frozen=True, slots=True)
class Clustered:
    """An estimate with its cluster-robust 95% interval."""

    value: float | None
    ci95: tuple[float, float] | None
    unit: Unit
    clusters: int
    method: str

    def to_json(self) -> dict[str, object]:
        return {
            "value": self.value,
            "ci95": list(self.ci95) if self.ci95 else None,
            "unit": self.unit,
            "clusters": self.clusters,
            "method": self.method,
        }


@functools.cache
def t975(df: int) -> float:
    """The t distribution's 97.5% quantile on `df` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.975, df))


@dataclass(frozen=True, slots=True)
class Rates:
    """Rates of (..., G) clusters: the estimate, its clustered variance, its interval."""

    p: Array
    n: Array
    variance: Array
    clusters: NDArray[np.int64]
    low: Array
    high: Array


def rate_intervals(hits: Array, trials: Array) -> Rates:
    """Korn-Graubard intervals of hits / trials over the last axis (clusters); a cluster with no
    trial is not one. Rows with no trial at all have p = nan."""
    from scipy.stats import beta, t

    hits, trials = np.asarray(hits, dtype=float), np.asarray(trials, dtype=float)
    n = trials.sum(-1)
    g = (trials > 0).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = hits.sum(-1) / n
        resid = ((hits - p[..., None] * trials) ** 2).sum(-1)
        variance = np.where(g > 1, g / (g - 1) * resid / n**2, 0.0)
        n_eff = np.where((variance > 0) & (p > 0) & (p < 1), p * (1 - p) / variance, n)
        n_eff = np.minimum(n_eff, n)
        crit = np.where(g > 1, t.ppf(0.975, np.maximum(g - 1, 1)), Z975)
        n_eff = n_eff * (Z975 / crit) ** 2
        x = p * n_eff
        low = np.where(x > 0, beta.ppf(0.025, x, n_eff - x + 1), 0.0)
        high = np.where(x < n_eff, beta.ppf(0.975, x + 1, n_eff - x), 1.0)
        # Every cluster one trial: nothing shared, the trials are independent (Wilson's interval).
        single = (trials <= 1).all(-1)
        centre = (p + Z975**2 / (2 * n)) / (1 + Z975**2 / n)
        half = Z975 / (1 + Z975**2 / n) * np.sqrt(p * (1 - p) / n + Z975**2 / (4 * n**2))
        low, high = np.where(single, centre - half, low), np.where(single, centre + half, high)
    return Rates(p, n, variance, g, np.minimum(low, p), np.maximum(high, p))


def difference_intervals(
    hits_a: Array, trials_a: Array, hits_b: Array, trials_b: Array, *, paired: bool
) -> tuple[Array, Array, Array]:
    """(difference, low, high) of rate a minus rate b over the last axis. Paired: the same
    clusters (a task both ran: where either has no trial, both leave it out), the correlation
    clustered; unpaired: clusters of their own, correlation 0."""
    ha, ta = np.asarray(hits_a, dtype=float), np.asarray(trials_a, dtype=float)
    hb, tb = np.asarray(hits_b, dtype=float), np.asarray(trials_b, dtype=float)
    if paired:
        both = (ta > 0) & (tb > 0)
        ha, ta, hb, tb = ha * both, ta * both, hb * both, tb * both
    a, b = rate_intervals(ha, ta), rate_intervals(hb, tb)
    phi = np.zeros_like(a.p)
    if paired:
        g = a.clusters
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = ((ha - a.p[..., None] * ta) * (hb - b.p[..., None] * tb)).sum(-1)
            cov = np.where(g > 1, g / (g - 1) * cross / (a.n * b.n), 0.0)
            ok = (a.variance > 0) & (b.variance > 0)
            phi = np.clip(np.where(ok, cov / np.sqrt(a.variance * b.variance), 0.0), 0.0, 1.0)
    d = a.p - b.p
    da_low, da_high, db_low, db_high = a.p - a.low, a.high - a.p, b.p - b.low, b.high - b.p
    low = d - np.sqrt(np.maximum(da_low**2 - 2 * phi * da_low * db_high + db_high**2, 0.0))
    high = d + np.sqrt(np.maximum(da_high**2 - 2 * phi * da_high * db_low + db_low**2, 0.0))
    return d, np.maximum(low, -1.0), np.minimum(high, 1.0)


def _one(values: Sequence[Cluster]) -> tuple[Array, Array]:
    return (np.array([h for h, _ in values], dtype=float), np.array([t for _, t in values], dtype=float))


def clustered_rate(clusters: Sequence[Cluster], unit: Unit) -> Clustered:
    """hits / trials over the clusters, with its Korn-Graubard interval (one trial per cluster:
    independent trials, Wilson's interval)."""
    hits, trials = _one(clusters)
    method = "wilson" if (trials <= 1).all() else "korn_graubard"
    if trials.sum() == 0:
        return Clustered(None, None, unit, 0, method)
    r = rate_intervals(hits, trials)
    return Clustered(float(r.p), (float(r.low), float(r.high)), unit, int(r.clusters), method)


def paired_difference(a: Sequence[Cluster], b: Sequence[Cluster], unit: Unit) -> Clustered:
    """Rate of a minus rate of b on the same clusters (a[i] and b[i] are one task)."""
    (ha, ta), (hb, tb) = _one(a), _one(b)
    clusters = int(((ta > 0) & (tb > 0)).sum())
    if clusters == 0:
        return Clustered(None, None, unit, 0, "mover_korn_graubard_paired")
    d, low, high = difference_intervals(ha, ta, hb, tb, paired=True)
    return Clustered(float(d), (float(low), float(high)), unit, clusters, "mover_korn_graubard_paired")


def unpaired_difference(a: Sequence[Cluster], b: Sequence[Cluster], unit: Unit) -> Clustered:
    """Rate of a minus rate of b, each on clusters of its own (no pairing)."""
    (ha, ta), (hb, tb) = _one(a), _one(b)
    clusters = min(int((ta > 0).sum()), int((tb > 0).sum()))
    if clusters == 0:
        return Clustered(None, None, unit, 0, "mover_korn_graubard")
    d, low, high = difference_intervals(ha, ta, hb, tb, paired=False)
    return Clustered(float(d), (float(low), float(high)), unit, clusters, "mover_korn_graubard")


def mean_interval(values: Sequence[float], unit: Unit = "run") -> Clustered:
    """The mean of per-unit values (e.g. bugs per run; each run its own cluster) with a t
    interval on n-1 degrees of freedom (no interval below two values)."""
    n = len(values)
    if n == 0:
        return Clustered(None, None, unit, 0, "t")
    mean = sum(values) / n
    if n < 2:
        return Clustered(mean, None, unit, n, "t")
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return Clustered(mean, (mean - half, mean + half), unit, n, "t")
