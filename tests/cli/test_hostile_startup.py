"""Item 8 of issue 15: start-up races and signals.

Two benchtui on one fresh run dir: the loser exits 3. SIGTERM or SIGHUP before the Trio loop runs
acts like one Ctrl-C (exit 130, one line), never the default kill. Staging folders that a killed
start-up left are removed by the next start, unless their creator still holds them.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import benchtui, check_accounts, popen, write_campaign

from benchtui.core.errors import BadInput, RunDirBusy
from benchtui.engine import rundir

FILES = {rundir.CAMPAIGN: b"", rundir.IDENTITY: b"{}"}


def test_the_loser_of_two_fresh_starts_gets_run_dir_busy(tmp_path):
    run_dir = tmp_path / "runs" / "t"
    winner = rundir.create(run_dir, FILES)
    with pytest.raises(RunDirBusy, match="just created by another benchtui"):
        rundir.create(run_dir, FILES)  # it had seen no run dir, then lost the rename (exit 1 before)
    assert sorted(p.name for p in run_dir.parent.iterdir()) == ["t"]  # its staging folder is gone
    winner.release()


def test_a_run_dir_moved_aside_under_our_feet_is_busy_not_a_crash(tmp_path):
    with pytest.raises(RunDirBusy):
        rundir.RunLock(tmp_path / "gone")  # another benchtui moved it aside between look and lock


@pytest.mark.parametrize("where", ["file", "dangling link"])
def test_a_run_dir_that_is_not_a_directory_is_bad_input(tmp_path, where):
    run_dir = tmp_path / "runs" / "t"
    run_dir.parent.mkdir()
    if where == "file":
        run_dir.write_text("x")
        with pytest.raises(BadInput, match="not a run dir"):
            rundir.move_aside(run_dir)
    else:
        run_dir.symlink_to(tmp_path / "nowhere")
        with pytest.raises(BadInput, match="not a run dir"):
            rundir.create(run_dir, FILES)


def test_a_state_dir_that_is_a_file_is_bad_input(tmp_path):
    (tmp_path / "runs").write_text("x")
    with pytest.raises(BadInput, match="state dir"):
        rundir.create(tmp_path / "runs" / "t", FILES)


def test_two_fresh_starts_at_once_one_runs_the_other_exits_3(tmp_path):
    write_campaign(tmp_path, sessions=2, latency=1.0, parallelism=1)
    procs = [popen("t.toml", "--no-ui", cwd=tmp_path) for _ in range(2)]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in procs]
    codes = sorted(rc for rc, _ in results)
    assert codes in ([0, 3], [0, 0]), results  # [0, 0]: the first finished before the second looked
    assert all("Traceback" not in err for _, err in results)
    assert not list((tmp_path / "runs").glob(".t.new-*"))


def _slow_tool(tmp_path):
    """A `tools` entry whose `--version` blocks: benchtui is then inside its start-up checks."""
    marker = tmp_path / "started"
    tool = tmp_path / "slowtool"
    tool.write_text(f"#!/bin/sh\ntouch {marker}\nexec sleep 60\n")
    tool.chmod(0o755)
    return tool, marker


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_before_the_trio_loop_is_one_ctrl_c(tmp_path, signum):
    tool, marker = _slow_tool(tmp_path)
    write_campaign(tmp_path, extra="[environment.x]\n"[:0])
    text = (
        (tmp_path / "t.toml").read_text().replace('path = "target"', f'path = "target"\ntools = ["{tool}"]')
    )
    (tmp_path / "t.toml").write_text(text)
    proc = popen("t.toml", "--no-ui", cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
        time.sleep(0.02)
    proc.send_signal(signum)
    rc = proc.wait(timeout=30)
    err = proc.stderr.read()
    assert rc == 130, (rc, err)  # the default action of SIGTERM/SIGHUP killed it (rc -15 / -1)
    assert err.strip().splitlines() == ["benchtui: interrupted"]
    assert not (tmp_path / "runs").exists()  # it stopped before writing anything


def test_staging_left_by_a_killed_start_up_is_removed_by_the_next_start(tmp_path):
    write_campaign(tmp_path, sessions=1)
    runs = tmp_path / "runs"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = runs / f".t.new-{dead.pid}"  # SIGKILLed between mkdir and lock: no lock file
    stale.mkdir(parents=True)
    (stale / "ledger.toml").write_text("half")
    unlocked = runs / ".t.new-1"  # pid 1 is alive, but the lock has been free for long: gone
    unlocked.mkdir()
    (unlocked / rundir.LOCK).write_text("")
    old = time.time() - 2 * rundir.STALE_STAGING_S
    os.utime(unlocked, (old, old))
    held = runs / f".t.new-{os.getpid()}"  # a live creator holding its lock: never touched
    held.mkdir()
    fd = os.open(held / rundir.LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
        assert sorted(p.name for p in runs.iterdir() if p.name.startswith(".t.new-")) == [held.name]
    finally:
        os.close(fd)


def test_a_live_start_between_creating_its_lock_and_taking_it_keeps_its_staging(tmp_path):
    # The race of issue 23 (1 in 40 four-way starts exited 1, "No such file or directory
    # (.t.new-N/.campaign.toml.tmp)"): another start's cleanup saw this one's lock file before
    # its flock and took the folder for stale. A live creator's fresh folder is never removed.
    write_campaign(tmp_path, sessions=1)
    runs = tmp_path / "runs"
    writing = runs / f".t.new-{os.getpid()}"  # alive (this test), lock file made, not yet locked
    writing.mkdir(parents=True)
    (writing / rundir.LOCK).write_text("")
    (writing / ".campaign.toml.tmp").write_text("being written")
    assert benchtui("t.toml", "--no-ui", cwd=tmp_path).returncode == 0
    assert (writing / ".campaign.toml.tmp").read_text() == "being written"


def test_a_busy_run_dir_names_the_pid_holding_it_and_what_to_do(tmp_path):
    write_campaign(tmp_path, sessions=1)
    run_dir = tmp_path / "runs" / "t"
    run_dir.mkdir(parents=True)
    holder = rundir.RunLock(run_dir)
    try:
        with pytest.raises(RunDirBusy) as caught:
            rundir.RunLock(run_dir)
    finally:
        holder.release()
    message = str(caught.value)
    assert f"pid {os.getpid()}" in message and "benchtui ctl" in message and "--state-dir" in message


def _wait_until_it_handles_sigterm(proc: subprocess.Popen) -> None:
    """Until benchtui's first line runs, the interpreter is starting and nothing is written: only
    the kernel's default action exists. From then on every instant counts."""
    deadline = time.monotonic() + 30
    while True:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.001)


def test_stop_signals_at_many_start_up_instants_leave_a_resumable_run(tmp_path):
    """Whatever instant SIGTERM/SIGINT/SIGHUP hits: exit 0 or 130 without a traceback, no staging
    folder left, and `--resume` finishes the campaign with the accounts right."""
    write_campaign(tmp_path, sessions=2, latency=0.05, parallelism=2)
    signals = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
    for i in range(9):
        proc = popen("t.toml", "--no-ui", "--fresh", cwd=tmp_path)
        _wait_until_it_handles_sigterm(proc)
        time.sleep(0.06 * i)  # from benchtui's first line to mid-campaign
        proc.send_signal(signals[i % 3])
        rc = proc.wait(timeout=60)
        err = proc.stderr.read()
        assert rc in (0, 130) and "Traceback" not in err, (i, rc, err)
        assert not list((tmp_path / "runs").glob(".t.new-*")), i
        if (tmp_path / "runs" / "t" / rundir.CAMPAIGN).exists():
            done = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
            assert done.returncode == 0, (i, done.stderr)
            check_accounts(tmp_path / "runs" / "t")


def test_sighup_mid_campaign_stops_launching_like_one_ctrl_c(tmp_path):
    """A closed terminal (SIGHUP) no longer kills a headless run: running sessions finish, exit 130."""
    write_campaign(tmp_path, sessions=3, latency=1.0, parallelism=1)
    proc = popen("t.toml", "--no-ui", cwd=tmp_path)
    for line in proc.stdout:
        if line.startswith("start "):
            break
    proc.send_signal(signal.SIGHUP)
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 130, proc.stderr.read()
    assert "stopping: no new sessions" in out
    assert "end   fake_model-a-0000 done" in out  # the running session finished
    done = benchtui("t.toml", "--no-ui", "--resume", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    check_accounts(tmp_path / "runs" / "t")


def test_a_stop_signal_wrapped_by_the_code_it_interrupted_still_counts_as_the_stop():
    """Seen at random instants: SIGTERM inside an import's class creation came out as a RuntimeError
    ("Error calling __set_name__") with a traceback and exit 1."""
    from benchtui.cli.stopsignals import STOP_SIGNALS, StopSignals

    saved = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    unraisable = sys.unraisablehook
    stops = StopSignals()
    stops.install()

    class Trigger:
        def __set_name__(self, owner, name):
            os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode: inside class creation

    try:
        with pytest.raises(BaseException) as caught:

            class Owner:
                x = Trigger()

    finally:
        sys.unraisablehook = unraisable
        for signum, handler in saved.items():
            signal.signal(signum, handler)
    assert not isinstance(caught.value, KeyboardInterrupt)  # CPython would exit -2 after one
    assert stops.explains(caught.value)
    assert not StopSignals().explains(RuntimeError("a real bug"))


SWALLOWING_CALLBACK = """
import os, signal, weakref

def noop():
    pass

class Doomed:
    pass

def swallow(ref):  # the import system's module locks end with such a callback
    os.kill(os.getpid(), {signum})
    noop()  # the handler runs here, inside the callback: CPython only prints what it raises

doomed = Doomed()
ref = weakref.ref(doomed, swallow)
del doomed
"""


@pytest.mark.parametrize("front", ["headless", "tui"])
def test_a_stop_raised_inside_a_weakref_callback_is_kept_not_printed_and_lost(front, tmp_path):
    """Seen in CI at a random instant: SIGTERM inside an import's module-lock callback printed
    "Exception ignored in ... Traceback ... Interrupted" and the run went on as if never stopped."""
    script = (
        "from benchtui.core.errors import Interrupted\n"
        "from benchtui.cli.stopsignals import StopSignals\n"
        "stops = StopSignals()\n"
        "stops.install()\n"
        + SWALLOWING_CALLBACK.format(signum="signal.SIGTERM")
        + "assert stops.swallowed\n"
        + (
            "try:\n"
            "    with stops.trio_owns_sigint():\n"
            "        print('went on')\n"
            "except Interrupted:\n"
            "    print('stopped before the loop')\n"
            if front == "headless"
            else "stops.hand_over()\nprint('early stops:', stops.early)\n"
        )
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == ("stopped before the loop" if front == "headless" else "early stops: 1")


def test_ctrl_c_inside_a_weakref_callback_in_the_trio_loop_still_stops_the_run(tmp_path):
    """Before the headless front end's signal receiver opens, Trio raises KeyboardInterrupt
    where the program is unless told to wait for a checkpoint: inside a weakref callback it was
    printed and lost."""
    write_campaign(tmp_path)
    script = (
        "import sys, trio\n"
        "from benchtui.cli import headless, main\n"
        "async def early(prep, printer, keys):\n"
        + "".join(
            "    " + line + "\n" for line in SWALLOWING_CALLBACK.format(signum="signal.SIGINT").splitlines()
        )
        + "    await trio.sleep(1)\n"
        "    print('went on')\n"
        "headless.main = early\n"
        "sys.exit(main.main(['t.toml', '--no-ui', '--fresh']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 130, (done.returncode, done.stdout, done.stderr)
    assert done.stderr == "benchtui: interrupted\n" and "went on" not in done.stdout


def test_ctrl_c_inside_a_trio_nursery_counts_as_the_stop():
    """Seen at random instants: Ctrl-C while the campaign loop started came out of Trio as a
    KeyboardInterrupt inside an exception group: a traceback and exit 1."""
    from benchtui.cli.stopsignals import StopSignals

    nested = BaseExceptionGroup("nursery", [BaseExceptionGroup("inner", [KeyboardInterrupt()])])
    assert StopSignals().explains(nested)
    assert not StopSignals().explains(ExceptionGroup("nursery", [ValueError("a real bug")]))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_after_the_exit_code_is_decided_does_not_replace_it(tmp_path, signum):
    """Seen at random instants: SIGINT during interpreter exit ended a finished run with -2."""
    code = (
        "import os, sys; from benchtui.cli.main import main; rc = main(); "
        f"os.kill(os.getpid(), {int(signum)}); sys.exit(rc)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "nope.toml", "--no-ui"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines() == ["benchtui: nope.toml: no such campaign file"]
