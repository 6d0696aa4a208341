"""The report's three plots as inline SVG (matplotlib, imported only here and only when asked):
bug rate with its 95% interval per model, cumulative spend over time, bugs against spend (verified
ones, or the runner's claims where it has no verifier: the labels say which).

Figures are drawn through the object API (`Figure` + the SVG backend, no pyplot), so nothing
global changes and no GUI backend is ever loaded; text is drawn as paths (the page needs no font).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchtui.report import CampaignReport, Point
from benchtui.report.leaderboard import ModelStats

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_POINTS = 400
"""Per curve: a campaign of 100,000 sessions still makes a page of a few hundred kB."""


def thin(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """At most `limit` points, evenly spread, the first and last always kept."""
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _figure(height: float = 3.2) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.2, height), layout="constrained")
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def _svg(fig: Figure, salt: str) -> str:
    import matplotlib

    # A salt per plot keeps the ids of three inline SVGs apart; no date keeps the page reproducible.
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "path"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def judged(ranked_by: str) -> str:
    """How the plots name the bugs they count."""
    return "verified" if ranked_by == "verified_bugs" else "claimed (no verifier)"


def bug_rate(models: Sequence[ModelStats], ranked_by: str = "verified_bugs") -> str:
    rows = [m for m in models if m.bug_rate.value is not None]
    fig, ax = _figure(max(1.6, 0.55 * len(models) + 1.0))
    labels = [m.model for m in reversed(rows)]
    values = [m.bug_rate.value or 0.0 for m in reversed(rows)]
    low = [v - (m.bug_rate.ci95 or (v, v))[0] for v, m in zip(values, reversed(rows), strict=True)]
    high = [(m.bug_rate.ci95 or (v, v))[1] - v for v, m in zip(values, reversed(rows), strict=True)]
    ax.errorbar(values, labels, xerr=[low, high], fmt="o", capsize=5, color="#1f5fa8")
    ax.set_xlim(-0.02, 1.02)
    ax.xaxis.set_major_formatter("{x:.0%}")
    ax.set_xlabel(f"trials with a {judged(ranked_by)} bug (95% Wilson interval)")
    if not rows:
        ax.text(0.5, 0.5, "no session has run yet", ha="center", transform=ax.transAxes)
    return _svg(fig, "bug-rate")


def spend_over_time(curves: dict[str, list[Point]]) -> str:
    fig, ax = _figure()
    longest = max((p.elapsed_s for pts in curves.values() for p in pts), default=0.0)
    unit, scale = ("h", 3600.0) if longest > 7200 else ("min", 60.0) if longest > 120 else ("s", 1.0)
    for model, points in curves.items():
        pts = thin(points)
        ax.step([p.elapsed_s / scale for p in pts], [p.spent_usd for p in pts], where="post", label=model)
    ax.set_xlabel(f"time into the campaign ({unit})")
    ax.set_ylabel("spent (USD)")
    ax.yaxis.set_major_formatter("${x:,.2f}")
    ax.legend(loc="upper left", fontsize="small")
    return _svg(fig, "spend")


def bugs_against_spend(curves: dict[str, list[Point]], ranked_by: str = "verified_bugs") -> str:
    fig, ax = _figure()
    for model, points in curves.items():
        pts = thin(points)
        ax.step([p.spent_usd for p in pts], [p.verified_bugs for p in pts], where="post", label=model)
    ax.set_xlabel("spent (USD)")
    ax.xaxis.set_major_formatter("${x:,.2f}")
    ax.set_ylabel(f"{judged(ranked_by)} distinct-rule bugs")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper left", fontsize="small")
    return _svg(fig, "bugs-vs-spend")


def all_plots(report: CampaignReport) -> list[tuple[str, str, str]]:
    """(element id, caption, SVG) of each plot."""
    import matplotlib

    curves = report.curves()
    # Model names are text, never mathtext: `$\\macro$` in a name was a matplotlib traceback.
    with matplotlib.rc_context({"text.parse_math": False}):
        return [
            (
                "plot-bug-rate",
                "Bug rate per model, with its 95% interval",
                bug_rate(report.models, report.ranked_by),
            ),
            ("plot-spend", "Cumulative spend over time", spend_over_time(curves)),
            (
                "plot-bugs-vs-spend",
                f"{judged(report.ranked_by).capitalize()} bugs against spend",
                bugs_against_spend(curves, report.ranked_by),
            ),
        ]
