"""In a real terminal (tmux): SIGTERM, SIGHUP, SIGINT and Ctrl-C in the TUI act as in headless.

The first stops launching (running sessions finish), the second interrupts them; the TUI then
exits, the terminal is restored (tmux leaves the alternate screen) and the same closing lines as
headless are printed; exit 130, resumable.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from support import last_states, write_campaign
from support.real_parts import require_tools
from test_tmux import Tmux, benchtui_cmd, started, until

from benchtui.engine import rundir


@pytest.fixture
def tmux(tmp_path):
    require_tools("tmux")
    server = Tmux(tmp_path)
    yield server
    server.kill()


def start_tui(tmp_path, tmux, latency: float):
    write_campaign(tmp_path, sessions=8, models=("fake/model-a",), total="10", parallelism=2, latency=latency)
    run_dir = tmp_path / "runs" / "t"
    tmux.start("tui", f"{benchtui_cmd('t.toml', '--state-dir', 'runs')}; echo $? > rc", first=True)
    until(lambda: len(started(run_dir)) >= 2 and "fake/model-a" in tmux.screen("tui"), "the TUI to start")
    pid = rundir.owner(run_dir)
    assert pid
    return run_dir, pid


def stop(tmux, pid: int, how: str) -> None:
    if how == "ctrl-c":
        tmux.keys("tui", "C-c")
    else:
        os.kill(pid, getattr(signal, how))


def ended_like_headless(tmp_path, tmux) -> str:
    until(lambda: (tmp_path / "rc").read_text().strip(), "the TUI to exit", timeout=30)
    assert (tmp_path / "rc").read_text().strip() == "130"  # stopped, resumable (not 143, not -1)
    assert tmux("display-message", "-p", "-t", "t:tui", "#{alternate_on}").strip() == "0"  # restored
    screen = tmux.screen("tui")
    assert "not finished: `benchtui --resume t` continues it" in screen, screen
    assert "results: runs/t/results/" in screen and "fake/model-a" in screen
    return screen


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGINT", "ctrl-c"])
def test_one_stop_signal_in_the_tui_stops_launching_and_running_sessions_finish(tmp_path, tmux, how):
    run_dir, pid = start_tui(tmp_path, tmux, latency=4)  # none ends before the signal lands
    before = set(started(run_dir))
    stop(tmux, pid, how)
    ended_like_headless(tmp_path, tmux)
    last = last_states(run_dir)
    assert set(started(run_dir)) == before, "a session started after the stop"
    ran = [r for r in last.values() if r["session"] in before]
    assert ran and all(r["state"] == "done" for r in ran)  # they finished, not interrupted


@pytest.mark.parametrize("how", ["SIGTERM", "ctrl-c"])
def test_a_second_stop_signal_interrupts_the_running_sessions(tmp_path, tmux, how):
    run_dir, pid = start_tui(tmp_path, tmux, latency=60)
    stop(tmux, pid, how)
    time.sleep(0.5)
    stop(tmux, pid, how)
    ended_like_headless(tmp_path, tmux)
    running = [r for r in last_states(run_dir).values() if r["session"] in started(run_dir)]
    assert running and all(r["state"] == "error" and r["retryable"] for r in running)
