"""Snapshot tests of the TUI (pytest-textual-snapshot): `pytest --snapshot-update` accepts changes.

Deterministic by construction: a fixed clock, parallelism 1 (one event order), zero latency,
and the run dir given relative to the test's cwd.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support import write_campaign

from benchtui.engine import run as engine
from benchtui.ui.app import BenchApp, make_app
from benchtui.ui.screens.keys import KeysScreen
from benchtui.ui.screens.quit import QuitScreen
from benchtui.ui.screens.runner_picker import RunnerPicker
from benchtui.ui.screens.summary import SummaryScreen

SIZE = (130, 36)


@pytest.fixture
def app_in(tmp_path, monkeypatch):
    def build(**kw) -> BenchApp:
        start_paused = kw.pop("start_paused", False)
        monkeypatch.chdir(tmp_path)
        path = write_campaign(tmp_path, parallelism=1, **kw)
        prep = engine.prepare(engine.Options(path.relative_to(tmp_path), Path("runs")))
        return make_app(prep, clock=lambda: 0.0, start_paused=start_paused)

    return build


async def settle(pilot, done) -> None:
    async with asyncio.timeout(20):
        while not done():
            await pilot.pause(0.02)
    pilot.app.redraw()
    await pilot.pause()


class TestMainScreen:
    def test_finished_campaign(self, app_in, snap_compare):
        app = app_in(sessions=5)

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: isinstance(app.screen, SummaryScreen))
            app.pop_screen()
            app.main.table.select("fake_model-b-0001")
            await settle(pilot, lambda: app.main.certificates.get("fake_model-b-0001"))

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)

    def test_paused_before_anything_started(self, app_in, snap_compare):
        app = app_in(sessions=3, start_paused=True)

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: app.view.paused and app.view.accounts is not None)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


class TestSummary:
    def test_finished_summary(self, app_in, snap_compare):
        app = app_in(sessions=5)

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: isinstance(app.screen, SummaryScreen) and app.screen.report)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


class TestDialogs:
    def test_quit_dialog(self, app_in, snap_compare):
        app = app_in(sessions=3, start_paused=True)

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: app.view.paused and app.view.accounts is not None)
            await pilot.press("q")
            await settle(pilot, lambda: isinstance(app.screen, QuitScreen) and app.screen.query("#finish"))

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)

    def test_runner_picker(self, app_in, snap_compare):
        app = app_in(
            sessions=3, start_paused=True, extra_runners='[runners.slow]\nkind = "fake"\nlatency_s = 2.0\n'
        )

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: app.view.paused and app.view.accounts is not None)
            await pilot.press("c")
            await settle(
                pilot, lambda: isinstance(app.screen, RunnerPicker) and app.screen.query("OptionList")
            )

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


class TestLogicalBudgets:
    def test_finished_campaign_with_counters(self, app_in, snap_compare):
        """The detail pane of a campaign with `[budget.per_session]` shows the session's counters."""
        logical = "\n[budget.per_session]\nmodel_calls = 10\nshell_actions = 12\nsubmits = 2\n"
        app = app_in(
            sessions=5, extra_runners=logical + '[budget.per_session.tools]\npred = 24\n"pred solve" = 10\n'
        )

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: isinstance(app.screen, SummaryScreen))
            app.pop_screen()
            app.main.table.select("fake_model-b-0001")
            await settle(pilot, lambda: app.main.certificates.get("fake_model-b-0001"))

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


class TestSessionStory:
    def test_a_finished_fake_session_says_what_it_has(self, app_in, snap_compare):
        """Enter on a finished fake session: no trajectory (the fake runner records none), so the
        story says what the session has — its outcome, its calls, its certificate, claimed."""
        from benchtui.ui.screens.session import SessionScreen

        app = app_in(sessions=3)

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: isinstance(app.screen, SummaryScreen))
            app.pop_screen()
            app.main.table.select("fake_model-b-0001")
            await settle(pilot, lambda: app.main.certificates.get("fake_model-b-0001"))
            await pilot.press("enter")
            await settle(
                pilot,
                lambda: isinstance(app.screen, SessionScreen) and app.screen._written[:1] == ["none"],
            )

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


FIT_SIZES = [(120, 36), (80, 24)]
MODELS = ("acme/coder-xl", "acme/coder-mini", "open/hunter-7b")


class TestFits:
    """The same screens in a 120 × 36 and an 80 × 24 terminal: every column header whole, no
    sideways scrolling (columns left out by priority), and the `?` overlay over the panes."""

    @pytest.mark.parametrize("size", FIT_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
    def test_main_screen(self, app_in, snap_compare, size):
        app = app_in(sessions=4, models=MODELS, total="10")

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: isinstance(app.screen, SummaryScreen))
            app.pop_screen()
            app.main.table.select("acme_coder-mini-0001")
            await settle(pilot, lambda: app.main.certificates.get("acme_coder-mini-0001"))

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @pytest.mark.parametrize("size", FIT_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
    def test_summary(self, app_in, snap_compare, size):
        app = app_in(sessions=4, models=MODELS, total="10")

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: isinstance(app.screen, SummaryScreen) and app.screen.report)

        assert snap_compare(app, terminal_size=size, run_before=run_before)

    @pytest.mark.parametrize("size", FIT_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
    def test_keys_overlay(self, app_in, snap_compare, size):
        app = app_in(sessions=3, models=MODELS, start_paused=True)

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: app.view.paused and app.view.accounts is not None)
            await pilot.press("question_mark")
            await settle(pilot, lambda: isinstance(app.screen, KeysScreen))

        assert snap_compare(app, terminal_size=size, run_before=run_before)
