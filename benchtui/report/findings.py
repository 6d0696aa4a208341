"""The two shapes of a fairness finding: sessions that did not all see the same value, and
shares of sessions (skipped, failed, stopped by a counter) that differ markedly between models."""

from __future__ import annotations

from collections import Counter

MARKED_SHARE = 0.2
"""Shares of skipped or failed sessions 'differ markedly' from 20 percentage points apart …"""
MARKED_COUNT = 2
"""… and at least this many sessions apart (one failure among three is not yet a pattern)."""


def spread(values: list[tuple[str, Counter[str]]], what: str) -> list[str]:
    """A finding when the sessions of all models did not all see the same value; `values` has,
    per model, how many sessions saw each value."""
    seen: Counter[str] = Counter()
    for _, counts in values:
        seen.update(counts)
    if len(seen) <= 1:
        return []
    per_model = "; ".join(
        f"{model}: " + ", ".join(f"{value} ({n})" for value, n in counts.most_common())
        for model, counts in values
        if counts
    )
    return [f"{what}: {per_model}"]


def share_gap(counts: list[tuple[str, int, int]], what: str) -> list[str]:
    """A finding when (model, sessions, out of) shares differ markedly between models."""
    shares = [n / whole if whole else 0.0 for _, n, whole in counts]
    if len(counts) < 2 or max(shares) - min(shares) < MARKED_SHARE:
        return []
    if max(n for _, n, _ in counts) - min(n for _, n, _ in counts) < MARKED_COUNT:
        return []
    detail = ", ".join(
        f"{model} {n} of {whole} ({share:.0%})"
        for (model, n, whole), share in zip(counts, shares, strict=True)
    )
    return [f"{what} differ markedly between models: {detail}"]
