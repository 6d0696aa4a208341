"""The TUI's summary shows what `benchtui report` says: the same leaderboard cells and the same
fairness verdict, from the same function, at the end of a campaign and on `s` mid-run."""

from __future__ import annotations

import pytest
from support.report import prepare
from support.tui import SIZE, until
from textual.widgets import DataTable, Static

from benchtui.report import build
from benchtui.report.text import leaderboard_row
from benchtui.ui.app import make_app
from benchtui.ui.screens.summary import SHOWN, SummaryScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


CAMPAIGN_S = 20.0
"""A whole campaign to its summary."""


def shown(screen: SummaryScreen) -> tuple[list[tuple[str, ...]], str]:
    table = screen.query_one("#leaderboard-table", DataTable)
    rows = [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
    return rows, str(screen.query_one("#fairness", Static).render())


async def test_the_summary_shows_the_reports_leaderboard_and_verdict(tmp_path):
    prep = prepare(tmp_path, n=6, cap="1", total="2", bugs={"fake/model-a": [0, 1, 4], "fake/model-b": [2]})
    app = make_app(prep)
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            timeout=CAMPAIGN_S,
            predicate=lambda: isinstance(app.screen, SummaryScreen) and app.screen.report,
            what="summary",
        )
        rows, verdict = shown(app.screen)
    report = build([prep.run_dir])
    assert [m.model for m in report.models] == ["fake/model-a", "fake/model-b"]
    expected = [
        tuple(leaderboard_row(report.rank(n), m)[i] for i in SHOWN) for n, m in enumerate(report.models)
    ]
    assert rows == expected
    # Claimed by the fake (no verifier), and one rank shared: 3/6 vs 1/6 cannot be told apart.
    assert ("1", "fake/model-a", "6/6", "1 claimed", "50% [19%, 81%]", "0", "0/3/0/0/0/0", "$0.0600") in rows
    assert rows[1][0] == "1"
    assert "fake/model-a vs fake/model-b: p = 0.55 (Holm), the data cannot separate them" in verdict
    assert "Fairness: fair: no finding" in verdict


async def test_s_mid_run_after_a_runner_switch_shows_unfair(tmp_path):
    # Long enough that it is still running when `s` is pressed: the summary the campaign's end
    # pushes would otherwise race the key (and `s` on a summary closes it).
    prep = prepare(
        tmp_path,
        n=40,
        cap="1",
        total="2",
        latency=0.2,
        extra='[runners.alt]\nkind = "fake"\ncost_usd = 0.01\n',
    )
    app = make_app(prep)
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            timeout=CAMPAIGN_S,
            predicate=lambda: app.scheduler is not None and app.view.states["done"] >= 1,
            what="a session",
        )
        app._control("set_runner", "alt")
        await until(
            pilot,
            timeout=CAMPAIGN_S,
            predicate=lambda: any(
                s.runner == "alt" and s.state == "done" for s in app.view.sessions.values()
            ),
        )
        assert app.view.ended is None and not isinstance(app.screen, SummaryScreen)
        await pilot.press("s")
        await until(
            pilot,
            timeout=CAMPAIGN_S,
            predicate=lambda: isinstance(app.screen, SummaryScreen) and app.screen.report,
            what="summary",
        )
        _, verdict = shown(app.screen)
    assert "Fairness: UNFAIR" in verdict and "runner: switched mid-run" in verdict and "alt" in verdict
