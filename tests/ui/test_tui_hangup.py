"""A TUI whose terminal goes away exits (issue 33, item 7): in a real terminal (tmux, a pty).

Before: on `tmux kill-server` the TUI stopped launching and its sessions ended, then it hung in
Textual's writer thread restoring the terminal that was gone (a failed write ended that thread;
the next write waited for room in its queue forever), its input thread spun on the hung-up
terminal's endless end of file (25-87% of a core), a later SIGTERM went unhandled, and `--resume`
exited 3: the run dir was still held. Now it lets go of the terminal (nothing more is written to
it; the closing lines go to the run dir's benchtui.log), exits when its sessions end (a second
hang-up interrupts them) and `--resume` works at once.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from support import benchtui, check_accounts, last_states, popen, write_campaign
from support.real_parts import require_tools
from test_tmux import Tmux, benchtui_cmd, started, until

from benchtui.engine import rundir
from benchtui.ui.terminal import LOG

TICKS = os.sysconf("SC_CLK_TCK")


@pytest.fixture
def tmux(tmp_path):
    require_tools("tmux")
    server = Tmux(tmp_path)
    yield server
    server.kill()
    for pid in ours(tmp_path):  # a TUI that did not exit (the test failed): not left running
        os.kill(pid, signal.SIGKILL)


def campaign(tmp_path: Path, *, sessions: int, latency: float, parallelism: int) -> Path:
    write_campaign(
        tmp_path,
        sessions=sessions,
        models=("fake/model-a",),
        total="1000",
        per_session="0.03",
        parallelism=parallelism,
        latency=latency,
    )
    return tmp_path / "runs" / "t"


def tui_in_tmux(tmp_path: Path, tmux: Tmux, **kw) -> tuple[Path, int]:
    run_dir = campaign(tmp_path, **kw)
    tmux.start("tui", benchtui_cmd("t.toml", "--state-dir", "runs"), first=True)
    running = min(kw["sessions"], kw["parallelism"])
    until(lambda: len(started(run_dir)) >= running and "fake/model-a" in tmux.screen("tui"), "the TUI", 60)
    pid = rundir.owner(run_dir)
    assert pid
    return run_dir, pid


def done(run_dir: Path) -> int:
    return sum(1 for r in last_states(run_dir).values() if r["state"] == "done")


def alive(pid: int) -> bool:
    """Running (a zombie has exited: it waits only for its new parent to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def ours(tmp_path: Path) -> list[int]:
    """Live processes started in `tmp_path` (their working directory)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "cwd").startswith(str(tmp_path)):
                found.append(int(proc.name))
        except OSError:
            continue
    return [pid for pid in found if alive(pid) and pid != os.getpid()]


def gone(pid: int, tmp_path: Path) -> None:
    """The process exits within a generous deadline, and nothing of its campaign runs on."""
    until(lambda: not alive(pid), "the TUI to exit after its terminal went away", timeout=30)
    assert ours(tmp_path) == []


def closing_lines_in_the_log(run_dir: Path) -> str:
    """Told by the kernel's SIGHUP or by a failed write, whichever came first."""
    log = (run_dir / LOG).read_text()
    assert "benchtui: the terminal is gone (" in log, log
    assert "not finished: `benchtui --resume t` continues it" in log and "fake/model-a" in log, log
    return log


def resume_to_the_end(tmp_path: Path, run_dir: Path) -> None:
    again = benchtui("t.toml", "--no-ui", "--resume", "--state-dir", "runs", cwd=tmp_path, timeout=240)
    assert again.returncode == 0, again.stdout + again.stderr  # not 3: the run dir was released
    check_accounts(run_dir)


def test_tmux_kill_server_ends_the_tui_its_sessions_finish_and_resume_works(tmp_path, tmux):
    run_dir, pid = tui_in_tmux(tmp_path, tmux, sessions=8, latency=8, parallelism=2)
    before = set(started(run_dir))
    tmux.kill()  # the terminal goes: SIGHUP, then every write fails (EIO), every read is EOF
    time.sleep(1)
    ticks = cpu_ticks(pid)
    time.sleep(2)  # its sessions still sleep in their 8 s: the process waits for them
    spent = cpu_ticks(pid) - ticks
    assert spent < 0.2 * TICKS, f"{spent / TICKS:.2f} s of CPU in 2 s of waiting"  # spinning: 0.64 s
    gone(pid, tmp_path)
    assert set(started(run_dir)) == before  # it stopped launching
    assert all(last_states(run_dir)[s]["state"] == "done" for s in before)  # they finished
    closing_lines_in_the_log(run_dir)
    resume_to_the_end(tmp_path, run_dir)


def test_a_second_hang_up_interrupts_the_running_sessions(tmp_path, tmux):
    run_dir, pid = tui_in_tmux(tmp_path, tmux, sessions=4, latency=120, parallelism=2)
    tmux.kill()
    time.sleep(2)  # past the echoes of the first hang-up (the kernel's SIGHUP, the shell's)
    os.kill(pid, signal.SIGHUP)
    gone(pid, tmp_path)
    interrupted = [last_states(run_dir)[s] for s in started(run_dir)]
    assert interrupted and all(r["state"] == "error" and r["retryable"] for r in interrupted)
    closing_lines_in_the_log(run_dir)
    again = popen("t.toml", "--no-ui", "--resume", "--state-dir", "runs", cwd=tmp_path)
    try:  # sessions of 120 s: it is enough that it takes the run dir and starts them again
        for line in again.stdout:  # type: ignore[union-attr]
            if line.startswith("start "):
                break
        else:
            raise AssertionError(again.stderr.read())  # type: ignore[union-attr]
    finally:
        again.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        again.send_signal(signal.SIGTERM)
        assert again.wait(60) == 130


def test_kill_server_while_the_screen_redraws_at_full_rate(tmp_path, tmux):
    run_dir, pid = tui_in_tmux(tmp_path, tmux, sessions=1500, latency=0.02, parallelism=16)
    until(lambda: done(run_dir) >= 300, "a busy screen: sessions ending all the time", 120)
    tmux.kill()
    gone(pid, tmp_path)
    closing_lines_in_the_log(run_dir)
    resume_to_the_end(tmp_path, run_dir)


def test_a_pty_closed_under_a_busy_screen_without_any_signal(tmp_path):
    # Not its controlling terminal: no SIGHUP comes, only the failed writes tell.
    run_dir = campaign(tmp_path, sessions=1500, latency=0.02, parallelism=16)
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 150, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchtui", "t.toml", "--state-dir", "runs"],
        cwd=tmp_path,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    reading = threading.Event()
    reading.set()

    def drain() -> None:  # a terminal reads what it is sent
        while reading.is_set():
            if select.select([master], [], [], 0.1)[0]:
                try:
                    os.read(master, 1 << 16)
                except OSError:
                    return

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    try:
        until(lambda: done(run_dir) >= 300, "a busy screen: sessions ending all the time", 120)
    finally:
        reading.clear()
        drainer.join()
        os.close(master)  # the terminal is gone
    try:
        assert proc.wait(60) == 130  # stopped, resumable
    finally:
        if proc.poll() is None:
            proc.kill()
    log = closing_lines_in_the_log(run_dir)
    assert "SIGHUP" not in log
    resume_to_the_end(tmp_path, run_dir)


def test_a_headless_run_whose_terminal_goes_away_lets_its_sessions_finish(tmp_path, tmux):
    # Before: its next line to the terminal failed (EIO) and the error ended the run mid-session.
    run_dir = campaign(tmp_path, sessions=8, latency=4, parallelism=2)
    tmux.start("run", benchtui_cmd("t.toml", "--no-ui", "--state-dir", "runs"), first=True)
    until(lambda: len(started(run_dir)) >= 2, "the run to start", 60)
    pid = rundir.owner(run_dir)
    assert pid
    before = set(started(run_dir))
    tmux.kill()
    gone(pid, tmp_path)
    assert set(started(run_dir)) == before
    assert all(last_states(run_dir)[s]["state"] == "done" for s in before)
    resume_to_the_end(tmp_path, run_dir)
