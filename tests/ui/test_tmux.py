"""In a real terminal (tmux): the TUI's keys, `benchtui ctl` from another window, headless keys.

Effects are checked where they matter: the ledger and the journal in the run dir.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from itertools import count
from pathlib import Path

import pytest
from support import benchtui, journal, last_states, ledger, write_campaign
from support.real_parts import require_tools

_servers = count()


class Tmux:
    """A private tmux server (its own socket), killed at the end."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.name = f"benchtui-test-{os.getpid()}-{next(_servers)}"

    def __call__(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.name, *args], check=True, capture_output=True, text=True, timeout=10
        ).stdout

    def start(self, window: str, command: str, *, first: bool = False) -> None:
        shell = f"cd {shlex.quote(str(self.cwd))} && {command}"
        if first:
            self("new-session", "-d", "-s", "t", "-n", window, "-x", "150", "-y", "45", shell)
        else:
            self("new-window", "-t", "t", "-n", window, shell)
        self("set-option", "-t", "t", "remain-on-exit", "on")

    def keys(self, window: str, *keys: str) -> None:
        self("send-keys", "-t", f"t:{window}", *keys)

    def screen(self, window: str) -> str:
        return self("capture-pane", "-p", "-t", f"t:{window}")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def tmux(tmp_path):
    require_tools("tmux")
    server = Tmux(tmp_path)
    yield server
    server.kill()


def until(predicate, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except (FileNotFoundError, ValueError, KeyError):  # files not written yet
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def benchtui_cmd(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", "benchtui", *args))


def started(run_dir: Path) -> list[str]:
    return [r["session"] for r in journal(run_dir) if r["state"] == "running"]


def paused(run_dir: Path) -> bool:
    return ledger(run_dir)["paused"]


def nothing_starts_while_paused(run_dir: Path) -> None:
    before = started(run_dir)
    until(lambda: ledger(run_dir)["totals"]["sessions_running"] == 0, "running sessions to finish")
    time.sleep(0.8)  # longer than a session: a launch would show by now
    assert started(run_dir) == before, "a session started while paused"


def test_tui_keys_in_a_real_terminal_pause_resume_and_quit(tmp_path, tmux):
    write_campaign(tmp_path, sessions=10, models=("fake/model-a",), total="10", parallelism=2, latency=0.5)
    run_dir = tmp_path / "runs" / "t"
    tmux.start("tui", f"{benchtui_cmd('t.toml', '--state-dir', 'runs')}; echo $? > rc", first=True)
    until(lambda: len(started(run_dir)) >= 2, "the TUI to start sessions")

    tmux.keys("tui", "p")
    until(lambda: paused(run_dir), "p to pause")
    until(lambda: "● paused" in tmux.screen("tui"), "the header to say paused")
    nothing_starts_while_paused(run_dir)

    count_paused = len(started(run_dir))
    tmux.keys("tui", "r")
    until(lambda: len(started(run_dir)) > count_paused, "r to resume launching")
    assert not paused(run_dir)

    tmux.keys("tui", "q")
    until(lambda: "Let them finish" in tmux.screen("tui"), "the quit dialog")
    tmux.keys("tui", "n")  # stop now
    until(lambda: (tmp_path / "rc").read_text().strip(), "the TUI to exit")
    assert (tmp_path / "rc").read_text().strip() == "130"  # stopped, resumable
    # The TUI said goodbye as headless does: the per-model table, the results, how to continue.
    farewell = tmux.screen("tui")
    assert "fake/model-a" in farewell.split("results: runs/t/results/")[0], farewell
    assert "not finished: `benchtui --resume t` continues it" in farewell, farewell

    done = benchtui("--no-ui", "--resume", "--state-dir", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert {r["state"] for r in last_states(run_dir).values()} == {"done"}


def test_ctl_from_another_window_and_keys_on_a_headless_run(tmp_path, tmux):
    write_campaign(tmp_path, sessions=40, models=("fake/model-a",), total="10", parallelism=2, latency=0.4)
    run_dir = tmp_path / "runs" / "t"
    tmux.start(
        "run",
        f"{benchtui_cmd('t.toml', '--no-ui', '--state-dir', 'runs')} > log 2>&1; "
        "echo $? > rc; stty -a > stty.txt",
        first=True,
    )
    until(lambda: len(started(run_dir)) >= 2, "the headless run to start sessions")

    tmux.start("ctl", f"{benchtui_cmd('ctl', '--state-dir', 'runs', 'pause')} > pause.out 2>&1")
    until(lambda: paused(run_dir), "ctl pause")
    assert (tmp_path / "pause.out").read_text().startswith("campaign t: paused")
    nothing_starts_while_paused(run_dir)
    count_paused = len(started(run_dir))
    tmux.start("ctl2", f"{benchtui_cmd('ctl', 'runs/t', 'resume')} > resume.out 2>&1")
    until(lambda: len(started(run_dir)) > count_paused, "ctl resume")

    # The same from the keyboard of the headless run (stdin is the terminal): p, r, then q.
    tmux.keys("run", "p")
    until(lambda: paused(run_dir), "p to pause the headless run")
    tmux.keys("run", "r")
    until(lambda: not paused(run_dir), "r to resume it")
    tmux.keys("run", "q")  # stop launching; running sessions finish
    until(lambda: (tmp_path / "rc").read_text().strip(), "the headless run to exit", timeout=20)
    assert (tmp_path / "rc").read_text().strip() == "130"
    assert "keys: p pause launching" in (tmp_path / "log").read_text()
    assert {r["state"] for r in last_states(run_dir).values()} == {"done"}  # none interrupted
    until(lambda: (tmp_path / "stty.txt").read_text(), "stty")
    settings = (tmp_path / "stty.txt").read_text().split()
    assert "icanon" in settings and "echo" in settings  # the terminal is restored


def test_enter_shows_a_real_sessions_story_in_a_real_terminal(tmp_path, tmux):
    """`benchtui demo` (the real mini-swe-agent runner and its scripted model) in the TUI: Enter
    on a session shows the commands it ran with their outputs; Escape goes back."""
    from benchtui.cli.demo import mini_installed

    if not mini_installed():
        pytest.skip("the [mini] extra is not installed")
    demo = benchtui_cmd("demo", "--sessions", "1", "--delay", "0.1", "--dir", "demo")
    tmux.start("tui", f"{demo}; echo $? > rc", first=True)
    until(lambda: "Campaign demo: finished" in tmux.screen("tui"), "the demo to finish", timeout=180)
    tmux.keys("tui", "Escape")  # the summary
    until(lambda: "Campaign demo: finished" not in tmux.screen("tui"), "the summary to close")
    tmux.keys("tui", "Enter")  # the first session: it ran six commands, then submitted
    until(lambda: "$ wc -l src/rules/*.rs" in tmux.screen("tui"), "the story, followed to its end")
    screen = tmux.screen("tui")
    assert "2 src/rules/mis_mvc.rs" in screen, screen  # wc's output, as the model saw it
    assert (
        "why it ended: model_done: submitted without a certificate" in screen
        and "openai_demo-careful-0000" in screen
    )
    tmux.keys("tui", "Escape")
    until(lambda: "money" in tmux.screen("tui") and "events" in tmux.screen("tui"), "the main screen")
    tmux.keys("tui", "q")
    until(lambda: (tmp_path / "rc").exists() and (tmp_path / "rc").read_text().strip(), "the TUI to exit")
