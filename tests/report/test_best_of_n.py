"""Best-of-N beside the mean: the benchmark keeps each model's best run; the exact expected
maximum of N draws from a model's runs says how much that pick adds by luck at its N."""

from __future__ import annotations

import itertools

import pytest

from benchtui.report.stats import best_of_n, expected_max


def brute_force_expected_max(values: list[float], n: int) -> float:
    """Every ordered draw of n runs (with replacement), equally likely."""
    draws = list(itertools.product(values, repeat=n))
    return sum(max(d) for d in draws) / len(draws)


@pytest.mark.parametrize(
    ("values", "n"), [([1, 2, 3], 3), ([0, 0, 4], 2), ([2, 2, 2, 5], 4), ([3, 1, 4, 1, 5], 3), ([7], 5)]
)
def test_the_expected_maximum_is_exact(values: list[float], n: int) -> None:
    assert expected_max(values, n) == pytest.approx(brute_force_expected_max(values, n), abs=1e-12)


def test_one_run_is_not_inflated_and_more_picks_inflate_more() -> None:
    runs = [3.0, 5.0, 4.0, 9.0]
    assert best_of_n(runs, 1).inflation == pytest.approx(0.0)
    inflations = [best_of_n(runs, n).inflation for n in (1, 2, 4, 8, 16)]
    assert inflations == sorted(inflations) and inflations[-1] < 9.0 - 5.25  # bounded by best - mean
    own = best_of_n(runs)
    assert (own.n, own.runs, own.mean, own.best) == (4, 4, 5.25, 9.0)


def test_equal_runs_and_no_runs() -> None:
    assert best_of_n([2.0, 2.0, 2.0]).inflation == 0.0
    assert best_of_n([]).to_json() == {
        "n": 0,
        "runs": 0,
        "mean": None,
        "best": None,
        "expected_best": None,
        "inflation": None,
    }
    with pytest.raises(ValueError):
        expected_max([1.0], 0)
