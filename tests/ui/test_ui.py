"""The TUI driven by Pilot: what it shows matches the ledger, and its keys act on the campaign."""

from __future__ import annotations

import os
import signal
from decimal import Decimal

import pytest
from support import benchtui, check_accounts, journal, last_states, ledger, money
from support.tui import SIZE, open_app, until
from textual.widgets import OptionList, Static

from benchtui.core.bindings import BINDING_IDS
from benchtui.ui import app as app_module
from benchtui.ui.app import BenchApp
from benchtui.ui.screens.keys import KeysScreen
from benchtui.ui.screens.main import MainScreen
from benchtui.ui.screens.quit import QuitScreen
from benchtui.ui.screens.runner_picker import RunnerPicker
from benchtui.ui.screens.session import SessionScreen
from benchtui.ui.screens.summary import SummaryScreen
from benchtui.ui.sessions import SessionsTable
from benchtui.ui.widgets import ModelPanel, StatusLine, bar_cells

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def open_dialog(pilot, app: BenchApp, key: str, dialog: type, part: str) -> None:
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, dialog) and app.screen.query(part), what=f"{dialog}")


async def quit_with(pilot, app: BenchApp, choice: str) -> None:
    """Press q, then a button of the quit dialog: now | finish | cancel."""
    await open_dialog(pilot, app, "q", QuitScreen, f"#{choice}")
    await pilot.click(f"#{choice}")


def started(run_dir) -> list[str]:
    return [r["session"] for r in journal(run_dir) if r["state"] == "running"]


def panel_vs_ledger(app: BenchApp) -> list[str]:
    """Differences between the money panel (as drawn now) and ledger.toml on disk."""
    app.redraw()
    panel = app.main.query_one(ModelPanel)
    text = panel.render().plain.splitlines()
    shown, doc = panel.shown, ledger(app.prep.run_dir)
    if shown is None:
        return ["nothing shown yet"]
    diffs = []
    for m in shown.models:
        saved = doc["models"][m.name]
        pairs = {
            "cap_usd": m.cap_usd,
            "spent_usd": m.spent_usd,
            "reserved_usd": m.reserved_usd,
            "wasted_usd": m.wasted_usd,
            "sessions_done": m.done,
            "sessions_skipped": m.skipped,
            "sessions_error": m.errors,
            "sessions_killed": m.killed,
            "sessions_running": m.running,
            "certificates": m.certificates,
        }
        diffs += [
            f"{m.name} {k}: shown {v}, saved {saved[k]}"
            for k, v in pairs.items()
            if (money(saved[k]) if k.endswith("_usd") else saved[k]) != v
        ]
        line = next(line for line in text if line.startswith(f" {m.name} "))
        width = sum(line.count(c) for c in "█▒░")
        if (line.count("█"), line.count("▒")) != bar_cells(m.spent_usd, m.reserved_usd, m.cap_usd, width):
            diffs.append(
                f"{m.name}: bar {line!r} does not draw spent {m.spent_usd} reserved {m.reserved_usd}"
            )
        counts = line.split("/")[-1].split()[1:]  # after "$cap": done run skip err kill certs
        if counts != [str(n) for n in (m.done, m.running, m.skipped, m.errors, m.killed, m.certificates)]:
            diffs.append(f"{m.name}: counts {counts} drawn")
    totals = doc["totals"]
    for key, value in (
        ("spent_usd", shown.spent_usd),
        ("reserved_usd", shown.reserved_usd),
        ("budget_usd", shown.budget_usd),
        ("wasted_usd", shown.wasted_usd),
    ):
        if money(totals[key]) != value:
            diffs.append(f"total {key}: shown {value}, saved {totals[key]}")
    return diffs


async def test_bars_and_counts_match_the_ledger_during_and_after_the_campaign(tmp_path):
    app = open_app(tmp_path, sessions=5, parallelism=3, latency=0.3)  # 2 models; 3 fit each cap
    async with app.run_test(size=SIZE) as pilot:

        def mid_campaign_and_matching() -> bool:
            running = ledger(app.prep.run_dir)["totals"]["sessions_running"]
            return running > 0 and app.view.states["done"] > 0 and not panel_vs_ledger(app)

        await until(pilot, mid_campaign_and_matching, what="a mid-campaign moment drawn as saved")
        await until(pilot, lambda: app.finished, what="the end")
        assert panel_vs_ledger(app) == []
        shown = app.main.query_one(ModelPanel).shown
        assert [(m.done, m.skipped) for m in shown.models] == [(3, 2), (3, 2)]
        assert isinstance(app.screen, SummaryScreen)  # the finished summary comes up by itself


async def test_p_stops_new_launches_running_ones_finish_and_r_resumes(tmp_path):
    app = open_app(tmp_path, sessions=6, models=("fake/model-a",), total="10", parallelism=2, latency=0.4)
    run_dir = app.prep.run_dir
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.view.states["running"] == 2, what="two sessions running")
        await pilot.press("p")
        await until(pilot, lambda: app.view.paused, what="paused")
        before = started(run_dir)
        await until(pilot, lambda: app.view.states["running"] == 0, what="running ones to finish")
        await pilot.pause(0.5)
        assert started(run_dir) == before, "a session started while paused"
        assert [last_states(run_dir)[s]["state"] for s in before] == ["done"] * len(before)
        assert ledger(run_dir)["paused"] is True
        app.redraw()
        assert "● paused" in app.main.query_one(StatusLine).render().plain
        await pilot.press("r")
        await until(pilot, lambda: app.finished, what="the end")
    assert len(started(run_dir)) == 6
    assert {r["state"] for r in last_states(run_dir).values()} == {"done"}


async def test_k_kills_the_selected_session_and_keeps_its_spend(tmp_path, monkeypatch):
    monkeypatch.setattr(app_module, "KILL_CONFIRM_S", 60.0)  # a loaded machine may take seconds per press
    app = open_app(tmp_path, sessions=2, models=("fake/model-a",), total="10", parallelism=2, latency=30)
    run_dir = app.prep.run_dir
    async with app.run_test(size=SIZE) as pilot:
        # running, and its fake call authorised (a hold on the ledger)
        await until(pilot, lambda: ledger(run_dir)["totals"]["held_usd"] == 0.06, what="two held calls")
        await pilot.press("down")
        assert app.main.table.selected == "fake_model-a-0001"
        await pilot.press("k")  # once: it asks
        await pilot.pause(0.3)
        assert app.view.sessions["fake_model-a-0001"].state == "running"
        assert any("again to kill fake_model-a-0001" in str(n.message) for n in app._notifications)
        await pilot.press("k")  # twice: it kills
        await until(pilot, lambda: app.view.sessions["fake_model-a-0001"].state == "killed", what="the kill")
        assert app.view.sessions["fake_model-a-0000"].state == "running"  # only the selected one
        await quit_with(pilot, app, "now")
        await until(pilot, lambda: not app.guest.running, what="the stop")
        await pilot.press("down")  # the pane of a killed session says why, not "outcome error"
        await pilot.press("up")
        pane = app.main.detail.render().plain
        assert "why killed by the user" in pane and "outcome" not in pane, pane
    killed = last_states(run_dir)["fake_model-a-0001"]
    assert killed["state"] == "killed" and killed["cost_usd"] == 0.03
    assert money(ledger(run_dir)["totals"]["wasted_usd"]) == Decimal("0.06")  # killed + interrupted


async def test_c_switches_the_runner_for_sessions_not_yet_started(tmp_path):
    app = open_app(
        tmp_path,
        sessions=4,
        models=("fake/model-a",),
        total="10",
        parallelism=1,
        latency=1.0,  # the first session outlasts the moment between its start and the pause (loaded CI)
        extra_runners='[runners.alt]\nkind = "fake"\ncost_usd = 0.02\n',
        start_paused=True,
    )
    run_dir = app.prep.run_dir
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the scheduler")
        await pilot.press("r")
        await until(pilot, lambda: app.view.states["running"] == 1, what="the first session")
        await pilot.press("p")  # so that the switch lands before the next launch, whatever the timing
        await open_dialog(pilot, app, "c", RunnerPicker, "OptionList")
        assert [o.id for o in app.screen.query_one(OptionList).options] == ["fake", "alt"]
        await pilot.press("down", "enter")
        await until(pilot, lambda: ledger(run_dir)["runner"] == "alt", what="the switch")
        await pilot.press("r")
        await until(pilot, lambda: app.finished, what="the end")
        assert any("fairness" in line for line in app.view.log)
    runs = {r["session"]: (r["runner"], r["cost_usd"]) for r in journal(run_dir) if r["state"] == "done"}
    assert runs == {
        "fake_model-a-0000": ("fake", 0.03),
        "fake_model-a-0001": ("alt", 0.02),
        "fake_model-a-0002": ("alt", 0.02),
        "fake_model-a-0003": ("alt", 0.02),
    }


async def test_plus_and_minus_change_parallelism(tmp_path):
    app = open_app(tmp_path, sessions=2, parallelism=2, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the scheduler")
        await pilot.press("plus", "plus", "minus")
        await until(pilot, lambda: app.scheduler.parallelism == 3, what="parallelism 3")
        await until(pilot, lambda: ledger(app.prep.run_dir)["parallelism"] == 3, what="the ledger")


@pytest.mark.parametrize(("choice", "latency", "ended"), [("now", 5.0, "error"), ("finish", 3.0, "done")])
async def test_quitting_saves_state_and_no_ui_resume_finishes_the_campaign(tmp_path, choice, latency, ended):
    app = open_app(
        tmp_path,
        sessions=3,
        total="10",
        parallelism=2,
        latency=latency,
        extra_runners='[runners.quick]\nkind = "fake"\ncost_usd = 0.03\n',
    )
    run_dir = app.prep.run_dir
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.view.states["running"] == 2, what="two sessions running")
        running = [s for s, v in app.view.sessions.items() if v.state == "running"]
        await quit_with(pilot, app, choice)
        await until(pilot, lambda: not app.is_running, what="the app to exit")
    assert app.return_value is False and app.finished is False
    assert [last_states(run_dir)[s]["state"] for s in running] == [ended, ended]
    assert ledger(run_dir)["running"] == {}  # nothing left in flight: the state is saved

    done = benchtui(
        "--no-ui", "--resume", "--state-dir", tmp_path / "runs", "--runner", "quick", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert {r["state"] for r in last_states(run_dir).values()} == {"done"}
    assert len(last_states(run_dir)) == 6
    check_accounts(run_dir)


async def test_every_action_is_in_the_command_palette_and_every_binding_has_an_id(tmp_path):
    app = open_app(tmp_path, sessions=1, start_paused=True)
    async with app.run_test(size=SIZE):
        titles = {c.title for c in app.get_system_commands(app.screen)}
    assert {
        "Pause launching",
        "Resume launching",
        "Kill selected session",
        "Change runner",
        "More parallelism",
        "Less parallelism",
        "Summary",
        "Quit",
        "Keys",
    } <= titles
    ids = [
        b.id
        for screen in (
            MainScreen,
            SessionsTable,
            QuitScreen,
            RunnerPicker,
            SummaryScreen,
            SessionScreen,
            KeysScreen,
        )
        for b in screen.BINDINGS
    ]
    assert all(ids) and sorted(ids) == sorted(BINDING_IDS)  # each can be remapped in [ui.keys]


async def test_the_palette_quit_asks_how_to_stop(tmp_path):
    app = open_app(tmp_path, sessions=1, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the scheduler")
        (quit_command,) = [c for c in app.get_system_commands(app.screen) if c.title == "Quit"]
        assert "as soon as possible" not in quit_command.help
        await quit_command.callback()
        await until(pilot, lambda: isinstance(app.screen, QuitScreen), what="the quit dialog")


async def test_keys_are_remapped_from_the_campaign_ui_keys_table(tmp_path):
    app = open_app(
        tmp_path, sessions=2, extra='ui = { keys = { resume = "z", kill = "ctrl+k" } }\n', start_paused=True
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.scheduler is not None and app.view.paused, what="the scheduler")
        await pilot.press("r")  # no longer bound
        await pilot.pause(0.2)
        assert app.view.paused
        await pilot.press("z")
        await until(pilot, lambda: not app.view.paused, what="z to resume")
        helps = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert helps["Resume launching"].endswith("(z)") and helps["Kill selected session"].endswith(
            "(ctrl+k)"
        )
        assert helps["Pause launching"].endswith("(p)")


@pytest.mark.parametrize("sent", [None, signal.SIGTERM])
async def test_the_stop_toast_names_the_key_or_the_signal_that_was_used(tmp_path, sent):
    """Ctrl-C pressed: "Ctrl-C again"; a SIGTERM (the handler the app installs, called as the
    loop calls it): "SIGTERM received", never a key the user did not press."""
    app = open_app(tmp_path, sessions=2, latency=3, total="10")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.view.states["running"] > 0, what="a running session")
        if sent is None:
            await pilot.press("ctrl+c")
        else:
            os.kill(os.getpid(), sent)
        await until(pilot, lambda: app.interrupts == 1, what="the stop")
        (toast,) = [str(n.message) for n in app._notifications if "no new sessions" in str(n.message)]
        assert ("Ctrl-C again" in toast) == (sent is None)
        assert sent is None or "SIGTERM received" in toast
        await until(pilot, lambda: not app.is_running, timeout=30, what="the app to exit")


async def test_quit_can_be_cancelled(tmp_path):
    app = open_app(tmp_path, sessions=1, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the scheduler")
        await quit_with(pilot, app, "cancel")
        await pilot.pause()
        assert app.screen is app.main and app.guest.running and not app.view.stopping


async def test_the_detail_pane_follows_the_selected_row(tmp_path):
    app = open_app(tmp_path, sessions=3, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down")
        assert app.main.table.selected == "fake_model-a-0001"
        assert app.main.detail.render().plain.startswith("fake_model-a-0001")
        await pilot.press("end")
        assert app.main.table.selected == "fake_model-b-0002"
        await pilot.click("#sessions", offset=(5, 2))  # border, header, then the first row
        assert app.main.table.selected == "fake_model-a-0000"


@pytest.mark.parametrize("choice", ["now", "finish"])
async def test_quitting_after_the_campaign_ended_behind_the_dialog_exits(tmp_path, choice):
    """The campaign may finish while the quit dialog is open: the choice must still quit."""
    app = open_app(tmp_path, sessions=1, total="10", latency=2.0, parallelism=2)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.view.states["running"] == 2, what="two sessions running")
        await open_dialog(pilot, app, "q", QuitScreen, f"#{choice}")
        await until(pilot, lambda: not app.guest.running, what="the campaign to end")
        if not isinstance(app.screen, QuitScreen):  # the summary may have opened on top
            app.pop_screen()
            await until(pilot, lambda: isinstance(app.screen, QuitScreen), what="the quit dialog")
        await pilot.click(f"#{choice}")
        await until(pilot, lambda: not app.is_running, what="the app to exit")
    assert app.finished is True


LOGICAL = """
[budget.per_session]
model_calls = 2
submits = 2
[budget.per_session.tools]
pred = 24
"pred solve" = 10
"""


async def test_the_detail_pane_shows_the_logical_budget_of_a_running_and_an_ended_session(tmp_path):
    app = open_app(tmp_path, sessions=2, total="10", latency=1.0, parallelism=2, extra_runners=LOGICAL)
    run_dir = app.prep.run_dir
    budget = "budget calls 1/2  pred 0/24  pred solve 0/10  submits 0/2\n"
    async with app.run_test(size=SIZE) as pilot:
        # Its one fake call authorised: one `model_calls` unit taken, on disk before the call.
        await until(pilot, lambda: ledger(run_dir)["totals"]["held_usd"] == 0.06, what="two held calls")
        await pilot.press("down")
        assert app.main.table.selected == "fake_model-b-0000"
        await until(pilot, lambda: budget in app.main.detail.render().plain, what="the counters of b-0000")
        assert "state running" in app.main.detail.render().plain
        await until(
            pilot, lambda: isinstance(app.screen, SummaryScreen) and app.screen.report, what="the end"
        )
        summary = str(app.screen.query_one("#fairness", Static).render())
        assert "fake/model-b: ended by a counter 0/2, by submitting 2/2" in summary, summary
        app.pop_screen()
        await pilot.press("down", "up")  # the pane of the ended session, from its end line
        pane = app.main.detail.render().plain
        ended = budget.replace("submits 0/2", "submits 1/2")  # its certificate took a submit
        assert pane.startswith("fake_model-b-0000") and "state done" in pane and ended in pane, pane
    end = last_states(run_dir)["fake_model-b-0000"]
    assert end["counters"] == {"model_calls": 1, "submits": 1, "tools": {"pred": 0, "pred solve": 0}}
