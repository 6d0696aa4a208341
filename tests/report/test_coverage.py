"""The intervals keep their 95% where sessions of a task are correlated, and the power figure
says what a simulation of the campaign shows: synthetic campaigns with known per-task rates
(a probit model: task difficulty shared by the sessions of a task and by both models), 2,000
replicates each, seeded. The unclustered interval is shown falling short on the same data.

`python tests/report/test_coverage.py` prints the table docs/guide/reports.md shows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from benchtui.report.clustered import difference_intervals, rate_intervals
from benchtui.report.power import Plan, paired_plan

REPLICATES = 2000


def task_rates(rng, mean: float, sigma: float, tau: float, shared, size) -> np.ndarray:
    """Per-task rates with population mean `mean`: Φ(α + σ·shared + τ·own), own ~ N(0, 1)."""
    alpha = norm.ppf(mean) * np.sqrt(1 + sigma**2 + tau**2)  # E Φ(α + N(0, s²)) = Φ(α / √(1+s²))
    return norm.cdf(alpha + sigma * shared + tau * rng.standard_normal(size))


def campaign_pairs(rng, tasks, repeats, mean_a, mean_b, sigma, tau, replicates=REPLICATES):
    shared = rng.standard_normal((replicates, tasks))
    pa = task_rates(rng, mean_a, sigma, tau, shared, shared.shape)
    pb = task_rates(rng, mean_b, sigma, tau, shared, shared.shape)
    return rng.binomial(repeats, pa), rng.binomial(repeats, pb)


def wilson(hits, n):
    """The binomial (Wilson) interval over every session as an independent trial."""
    p, z = hits / n, 1.959963984540054
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half / (1 + z * z / n), centre + half / (1 + z * z / n)


def rate_coverage(seed, tasks, repeats, mean, sigma) -> tuple[float, float]:
    """(clustered by task, unclustered Wilson) coverage of the true mean rate."""
    rng = np.random.default_rng(seed)
    hits, _ = campaign_pairs(rng, tasks, repeats, mean, mean, sigma, 0.0)
    clustered = rate_intervals(hits, np.full(hits.shape, repeats))
    low, high = wilson(hits.sum(-1), tasks * repeats)
    return (
        float(np.mean((clustered.low <= mean) & (mean <= clustered.high))),
        float(np.mean((low <= mean) & (mean <= high))),
    )


def as_sessions(hits, repeats):
    """Each session its own cluster: a task's `repeats` sessions, its hits first."""
    return (np.arange(repeats) < hits[..., None]).reshape(hits.shape[0], -1)


def difference_coverage(seed, tasks, repeats, mean_a, mean_b, sigma, tau) -> tuple[float, float]:
    """(clustered by task, sessions as independent pairs) coverage of the true difference."""
    rng = np.random.default_rng(seed)
    ha, hb = campaign_pairs(rng, tasks, repeats, mean_a, mean_b, sigma, tau)
    truth, trials = mean_a - mean_b, np.full(ha.shape, repeats)
    _, low, high = difference_intervals(ha, trials, hb, trials, paired=True)
    sa, sb = as_sessions(ha, repeats), as_sessions(hb, repeats)
    ones = np.ones(sa.shape)
    _, s_low, s_high = difference_intervals(sa, ones, sb, ones, paired=True)
    return (
        float(np.mean((low <= truth) & (truth <= high))),
        float(np.mean((s_low <= truth) & (truth <= s_high))),
    )


RATE_CASES = [  # tasks, repeats, mean rate, σ (task spread on the probit scale)
    (10, 5, 0.3, 1.0),
    (20, 3, 0.1, 1.0),
    (6, 5, 0.5, 1.0),
]
DIFFERENCE_CASES = [  # tasks, repeats, rate a, rate b, σ shared, τ per model
    (20, 3, 0.3, 0.2, 1.0, 0.5),
    (10, 5, 0.1, 0.05, 0.5, 0.3),
]


@pytest.mark.parametrize(("tasks", "repeats", "mean", "sigma"), RATE_CASES)
def test_the_clustered_rate_interval_keeps_its_coverage_where_wilson_falls_short(tasks, repeats, mean, sigma):
    clustered, wilson = rate_coverage(46, tasks, repeats, mean, sigma)
    assert clustered >= 0.94
    assert wilson < 0.93  # the binomial interval over correlated sessions: too narrow


@pytest.mark.parametrize(("tasks", "repeats", "a", "b", "sigma", "tau"), DIFFERENCE_CASES)
def test_the_paired_difference_per_task_keeps_its_coverage(tasks, repeats, a, b, sigma, tau):
    by_task, by_session = difference_coverage(46, tasks, repeats, a, b, sigma, tau)
    assert by_task >= 0.94
    assert by_session < by_task - 0.02  # pairing sessions as if independent: too narrow


POWER_CASE = (30, 0.4, 0.2, 1.0, 0.5)  # tasks, rate a, rate b, σ, τ


def true_plan(tasks, repeats, mean_a, mean_b, sigma, tau) -> Plan:
    """The generating model's between-task and within-task variance of the paired difference."""
    rng = np.random.default_rng(0)
    shared = rng.standard_normal(1_000_000)
    pa = task_rates(rng, mean_a, sigma, tau, shared, shared.shape)
    pb = task_rates(rng, mean_b, sigma, tau, shared, shared.shape)
    within = float(np.mean(pa * (1 - pa) + pb * (1 - pb)))
    return Plan(float(np.var(pa - pb)), within, tasks, repeats, "task", "repeats", "the generating model")


def simulated_power(seed, tasks, repeats, mean_a, mean_b, sigma, tau) -> float:
    rng = np.random.default_rng(seed)
    ha, hb = campaign_pairs(rng, tasks, repeats, mean_a, mean_b, sigma, tau)
    trials = np.full(ha.shape, repeats)
    _, low, high = difference_intervals(ha, trials, hb, trials, paired=True)
    return float(np.mean((low > 0) | (high < 0)))


def test_the_power_figure_is_what_a_simulation_of_the_campaign_shows():
    """The repeats the plan says separate 20 points at 80% power, simulated: within 10%."""
    tasks, a, b, sigma, tau = POWER_CASE
    plan = true_plan(tasks, 1, a, b, sigma, tau)
    repeats = plan.needed(a - b)
    assert repeats is not None and 2 <= repeats <= 6
    predicted = plan.power(a - b, repeats=repeats)
    simulated = simulated_power(46, tasks, repeats, a, b, sigma, tau)
    assert predicted >= 0.8 and abs(simulated - predicted) <= 0.1 * simulated
    # And one repeat short of it, the simulation falls short of 80% too (the figure is not slack).
    fewer = simulated_power(47, tasks, repeats - 1, a, b, sigma, tau)
    assert fewer < 0.8 and abs(fewer - plan.power(a - b, repeats=repeats - 1)) <= 0.1 * fewer


if __name__ == "__main__":
    print("| tasks × repeats | rate | σ | clustered (Korn-Graubard) | unclustered (Wilson) |")
    print("|---|---|---|---|---|")
    for tasks, repeats, mean, sigma in RATE_CASES:
        c, w = rate_coverage(46, tasks, repeats, mean, sigma)
        print(f"| {tasks} × {repeats} | {mean:.0%} | {sigma} | {c:.1%} | {w:.1%} |")
    print()
    print("| tasks × repeats | a − b | σ, τ | paired by task | sessions as independent pairs |")
    print("|---|---|---|---|---|")
    for tasks, repeats, a, b, sigma, tau in DIFFERENCE_CASES:
        c, s = difference_coverage(46, tasks, repeats, a, b, sigma, tau)
        print(f"| {tasks} × {repeats} | {a:.0%} − {b:.0%} | {sigma}, {tau} | {c:.1%} | {s:.1%} |")


def test_the_plan_from_a_pilot_campaign_is_the_generating_models_on_average():
    """What `benchtui check` and the report do: split a campaign's own per-task differences into
    between and within; over 200 pilots of 4 repeats the median power figure is the true one."""
    tasks, a, b, sigma, tau = POWER_CASE
    truth = true_plan(tasks, 1, a, b, sigma, tau)
    rng = np.random.default_rng(46)
    ha, hb = campaign_pairs(rng, tasks, 4, a, b, sigma, tau, replicates=200)
    figures = [
        paired_plan([(int(h), 4) for h in row_a], [(int(h), 4) for h in row_b]).power(a - b, repeats=3)
        for row_a, row_b in zip(ha, hb, strict=True)
    ]
    assert abs(float(np.median(figures)) - truth.power(a - b, repeats=3)) <= 0.1
