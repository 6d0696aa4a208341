"""The TUI's session screen: Enter on a session row opens it, Escape goes back; it shows a real
session's model calls, command outputs, submits and verdicts, and follows a session as its files
grow."""

from __future__ import annotations

import json
import shutil

import pytest
from support.tui import SIZE, open_app, until
from support.view import SESSION, finished_mini_run
from textual.app import App

from benchtui.ui.screens.main import MainScreen
from benchtui.ui.screens.session import SessionScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory):
    return finished_mini_run(tmp_path_factory.mktemp("mini"))


class Host(App[None]):
    CSS_PATH = "../../benchtui/ui/app.tcss"

    def __init__(self, run_dir, session) -> None:
        super().__init__()
        self.opened = SessionScreen(run_dir, session)

    def on_mount(self) -> None:
        self.push_screen(self.opened)


def shown(screen: SessionScreen) -> str:
    return "\n".join(line.text for line in screen.story_log.lines)


def header(screen: SessionScreen) -> str:
    return str(screen.head.render())


async def test_enter_opens_the_selected_session_and_escape_goes_back(tmp_path):
    app = open_app(tmp_path, sessions=2, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.scheduler is not None, what="the scheduler")
        await pilot.press("down", "enter")
        await until(pilot, lambda: isinstance(app.screen, SessionScreen), what="the session screen")
        assert app.screen.session == app.main.table.selected
        await until(pilot, lambda: "pending" in header(app.screen), what="its header")
        assert "No trajectory" in shown(app.screen)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), what="the main screen again")


async def test_a_real_sessions_outputs_submits_and_verdicts(mini_run):
    app = Host(mini_run, SESSION)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.opened
        await until(pilot, lambda: "the agent stopped" in shown(screen), what="the whole story")
        text = shown(screen)
        assert "$ pred --version; pred create MIS" in text  # the command the model asked for
        assert "Wrote source.json" in text  # its output as the model saw it
        assert "submit bad.json REJECTED malformed certificate" in text
        assert "submit cert.json ACCEPTED suboptimal_extraction" in text
        assert "gated pred create MIS" in text and "free" in text
        head = header(screen)
        assert "REJECTED malformed certificate" in head and "(verifier: found by brute-force)" in head


async def test_it_follows_a_running_session(mini_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(mini_run, run_dir)
    trajectory = run_dir / "sessions" / SESSION / "attempt-1.traj.json"
    whole = json.loads(trajectory.read_text())
    early = {**whole, "messages": whole["messages"][:4]}  # two prompts, a call and its output
    trajectory.write_text(json.dumps(early, indent=2))
    app = Host(run_dir, SESSION)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.opened
        await until(pilot, lambda: "Wrote source.json" in shown(screen), what="the first output")
        assert "REJECTED" not in shown(screen)
        written = len(screen.story_log.lines)
        trajectory.write_text(json.dumps(whole, indent=2))  # the session went on
        await until(pilot, lambda: "the agent stopped" in shown(screen), what="the new steps", timeout=15)
        assert "submit bad.json REJECTED" in shown(screen)
        assert shown(screen).count("Wrote source.json") == 1  # appended, not written again
        assert len(screen.story_log.lines) > written
